#!/bin/bash
# Records the :CopyEdit flow in Neovim inside tmux (before / during / review / after) into demo-capture.txt.
# Usage: editors/nvim/record-demo.sh [OUTPUT]   (needs nvim, tmux, the project's .venv and model)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-$HERE/demo-capture.txt}
INSTRUCTION=${INSTRUCTION:-Fix the bug in mean: it must return the plain average.}
MODE=${MODE:-}  # empty: the server's default mode; or program / rewrite
OPTIONS="nThreads = 2${MODE:+, mode = '$MODE'}"
DIR=$(mktemp -d /tmp/copyedit-demo.XXXXXX)
S=copyedit-demo-$$
cp "$ROOT/examples/stats.py" "$DIR/stats.py"
cat > "$DIR/init.lua" <<LUA
vim.opt.runtimepath:append('$HERE')
vim.opt.swapfile = false
vim.opt.number = true
require('copyedit').setup{
  cmd = { '$ROOT/.venv/bin/copyedit-lsp' },
  init_options = { $OPTIONS },
}
LUA
cd "$DIR"
tmux new-session -d -s "$S" -x 92 -y 24 "nvim -u $DIR/init.lua -i NONE stats.py"
sleep 5
tmux send-keys -t "$S" 3G
sleep 1
{
  echo "\$ nvim stats.py    # $(nvim --version | head -1); editors/nvim on the runtimepath; default model${MODE:+, mode $MODE}"
  echo
  echo "--- before: the cursor in mean(), the command typed ---"
} > "$OUT"
tmux send-keys -t "$S" ":CopyEdit $INSTRUCTION"
sleep 1
tmux capture-pane -p -t "$S" >> "$OUT"
tmux send-keys -t "$S" Enter
during=""
started=$SECONDS
while [ $((SECONDS - started)) -lt 900 ]; do
  sleep 0.2
  pane=$(tmux capture-pane -p -t "$S")
  if echo "$pane" | grep -q "tok/s"; then  # keep the latest progress report
    during=$(echo; echo "--- during: the server's \$/progress on the command line ($((SECONDS - started)) s) ---"; echo "$pane")
  fi
  if echo "$pane" | grep -q "hunk 1 of"; then  # the review: shown, then every hunk taken with a
    { echo "$during"; echo; echo "--- review: the hunk over the lines it replaces; y / n / a / q ($((SECONDS - started)) s) ---"; echo "$pane"; } >> "$OUT"
    during=""
    tmux send-keys -t "$S" a
  fi
  if echo "$pane" | grep -q "copyedit: applied\|copyedit: not applied\|copyedit: .*error"; then
    { [ -n "$during" ] && echo "$during"; echo; echo "--- after: the edit applied, the result reported with vim.notify ($((SECONDS - started)) s) ---"; echo "$pane"; } >> "$OUT"
    break
  fi
done
tmux send-keys -t "$S" Escape ':qa!' Enter
sleep 1
tmux kill-session -t "$S" 2>/dev/null
rm -rf "$DIR"
