"""End-to-end: headless Neovim, with the plugin in editors/nvim, edits real files through the real
server and a real model.

Each test writes a Lua script that drives Neovim and records what it saw (buffer lines before and
after, the server's response, notifications, errors) as JSON; pytest reads that file and asserts.
Every wait in the scripts is bounded, and a failing script quits with :cquit, so a hang fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixes import fix_problems
from lsprotocol import types
from mechanism import SETTINGS
from texts import STATS, VARIANCE_SNIPPET

from copyedit_lsp.serve.textedits import apply_lsp_edits

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(shutil.which("nvim") is None, reason="nvim is not installed (apt-get install neovim)"),
]

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "editors" / "nvim"
OPTIONS = SETTINGS | {"nThreads": 2}  # the tests' 0.5B in program mode (tests/mechanism.py)
WAIT_MS = 600_000  # a bound on each wait inside Neovim; the machine may be busy with other models
PROCESS_TIMEOUT = 1500  # a bound on the whole Neovim process

INIT = """
vim.opt.runtimepath:prepend({plugin})
vim.opt.swapfile = false
vim.opt.shadafile = 'NONE'
require('copyedit').setup{{
  cmd = {{ {python}, '-m', 'copyedit_lsp.serve.server' }},
  init_options = vim.fn.json_decode({options}),
  progress = false,
}}
"""

# Helpers every test script starts with: bounded waits, a record of notifications, the JSON result.
PRELUDE = """
local OUT = {out}
local copyedit = require('copyedit')
local obs = {{ notifications = {{}}, progress = {{}} }}

local function wait(what, cond)
  if not vim.wait({wait_ms}, cond, 50) then
    error('timed out waiting for ' .. what)
  end
end

local notify = vim.notify
vim.notify = function(message, level, opts)
  table.insert(obs.notifications, {{ message = message, level = level }})
  return notify(message, level, opts)
end

vim.api.nvim_create_autocmd('User', {{
  pattern = 'CopyEditProgress',
  callback = function()
    local p = copyedit.last_progress
    table.insert(obs.progress, {{ kind = p.kind, title = p.title, message = p.message or vim.NIL }})
  end,
}})

local function lines(bufnr)
  return vim.api.nvim_buf_get_lines(bufnr or 0, 0, -1, false)
end

-- answer the review of the next edit with these keys: typeahead, which the plugin reads with getchar()
local function review_with(keys)
  vim.api.nvim_feedkeys(keys, 'n', false)
end

local function attached(bufnr)
  wait('the copyedit client to attach', function()
    local client = copyedit.clients(bufnr)[1]
    return client ~= nil and client.initialized
  end)
  -- the server sees the document once didOpen went out after initialize
  wait('didOpen', function()
    return vim.lsp.util.buf_versions[bufnr] ~= nil
  end)
end

-- edit a file, wait until the server has it, record its lines as obs.before; returns the buffer
local function open(path)
  vim.cmd('edit ' .. vim.fn.fnameescape(path))
  local bufnr = vim.api.nvim_get_current_buf()
  attached(bufnr)
  obs.before = lines(bufnr)
  return bufnr
end

-- wait for the edit's response, then record it and the buffer under obs[prefix .. 'result'|'err'|'after']
local function record_edit(what, bufnr, prefix)
  prefix = prefix or ''
  wait(what, function() return copyedit.last_result ~= nil or copyedit.last_error ~= nil end)
  obs[prefix .. 'result'] = copyedit.last_result or vim.NIL
  obs[prefix .. 'err'] = copyedit.last_error or vim.NIL
  -- the workspace/applyEdit request arrives before the command's response; let the buffer settle
  vim.wait(500)
  obs[prefix .. 'after'] = lines(bufnr)
end

local function finish(ok, err)
  obs.ok = ok
  obs.error = err or vim.NIL
  local file = io.open(OUT, 'w')
  file:write(vim.fn.json_encode(obs))
  file:close()
  if ok then
    vim.cmd('qall!')
  else
    vim.cmd('cquit 3')
  end
end
"""

EPILOGUE = """
local ok, err = xpcall(main, debug.traceback)
finish(ok, err)
"""


def lua_string(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid Lua string literal for these paths


def run_nvim(tmp_path: Path, options: dict, body: str) -> dict:
    """Run ``body`` (a Lua chunk defining ``main()``) in headless Neovim; return its observations."""
    out = tmp_path / "observations.json"
    init = tmp_path / "init.lua"
    init.write_text(
        INIT.format(
            plugin=lua_string(str(PLUGIN)), python=lua_string(sys.executable), options=lua_string(json.dumps(options))
        )
    )
    script = tmp_path / "test.lua"
    script.write_text(PRELUDE.format(out=lua_string(str(out)), wait_ms=WAIT_MS) + body + EPILOGUE)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        process = subprocess.run(
            ["nvim", "--headless", "-u", str(init), "-i", "NONE", "-n", "-c", f"luafile {script}"],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=PROCESS_TIMEOUT,
        )
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"Neovim did not finish in {PROCESS_TIMEOUT} s; stderr: {error.stderr!r:.2000}")
    assert out.exists(), f"Neovim wrote no observations (rc {process.returncode}); stderr:\n{process.stderr[-4000:]}"
    observations = json.loads(out.read_text())
    assert observations["ok"], f"the script failed: {observations['error']}\nstderr:\n{process.stderr[-4000:]}"
    assert process.returncode == 0, process.stderr[-4000:]
    return observations


def buffer_text(lines: list[str]) -> str:
    """The text of a buffer's lines as written to a file (Neovim adds the final newline)."""
    return "".join(line + "\n" for line in lines)


ABOVE = """import os


def read_config(path):
    with open(path) as handle:
        return handle.read()


"""

TARGET = '''def average_price(items):
    """Return the mean price of the items."""
    total = 0
    for item in items:
        total += item["price"]
    return total / len(items) - 1
'''

BELOW = """

def list_files(directory):
    return sorted(os.listdir(directory))
"""


def test_copyedit_command_edits_the_function_under_the_cursor(tmp_path):
    """:CopyEdit <instruction> with the cursor in a function: the buffer becomes the server's
    result text, and every line outside that function is byte-identical."""
    source = tmp_path / "shop.py"
    source.write_text(ABOVE + TARGET + BELOW)
    cursor = ABOVE.count("\n") + 4  # 1-based: a line inside average_price
    body = f"""
local function main()
  local bufnr = open({lua_string(str(source))})
  vim.api.nvim_win_set_cursor(0, {{ {cursor}, 4 }})
  review_with('a')
  vim.cmd('CopyEdit Fix the bug in average_price: it must return the plain average.')
  record_edit('the edit', bufnr)
  obs.modified = vim.bo[bufnr].modified
  obs.review = copyedit.last_review or vim.NIL
end
"""
    seen = run_nvim(tmp_path, OPTIONS, body)
    assert seen["err"] is None, seen["err"]
    result = seen["result"]
    assert buffer_text(seen["before"]) == source.read_text()
    assert result["applied"] is True, result
    assert buffer_text(seen["after"]) == result["text"]
    assert result["stats"]["outputTokens"] > 0

    before, after = seen["before"], seen["after"]
    above, below = ABOVE.count("\n"), BELOW.count("\n")
    assert after[:above] == before[:above]
    assert after[len(after) - below :] == before[len(before) - below :]
    # the shipped selector fixes the bug, the docstring and every other line kept
    prices = ([{"price": 2}, {"price": 4}],)
    assert fix_problems(buffer_text(before), buffer_text(after), "average_price", prices, 3.0) == []
    assert seen["modified"] and any("applied" in n["message"] for n in seen["notifications"])
    # reviewed (the default): one hunk, taken with `a`
    assert seen["review"]["hunks"] == 1 and seen["review"]["taken"] == [1] and result["hunks"] == [1]
    # progress came through the plugin's $/progress handler while the edit ran
    assert any(
        p["kind"] == "begin" and "editing function average_price" in (p["message"] or "") for p in seen["progress"]
    )
    assert any(p["kind"] == "end" for p in seen["progress"])


COMMENTED = """def double(x):
    return x * 2


# copyedit: rename x to value
def scale(x, factor):
    result = x * factor
    return result + x


def triple(x):
    return x * 3
"""


def test_instruction_comment_through_code_action(tmp_path):
    """An instruction comment chosen through vim.lsp.buf.code_action(): the comment line is gone and
    the buffer equals the server's result text."""
    source = tmp_path / "scale.py"
    source.write_text(COMMENTED)
    comment = COMMENTED.splitlines().index("# copyedit: rename x to value")
    body = f"""
local function main()
  local bufnr = open({lua_string(str(source))})
  vim.api.nvim_win_set_cursor(0, {{ {comment + 1}, 0 }})
  -- headless: no one to choose, so pick the instruction comment's action
  obs.titles = {{}}
  vim.ui.select = function(items, opts, on_choice)
    local chosen
    for _, item in ipairs(items) do
      local title = opts.format_item and opts.format_item(item) or item[2].title
      table.insert(obs.titles, title)
      if chosen == nil and title:find('^copyedit:') then
        chosen = item
      end
    end
    on_choice(chosen)
  end
  review_with('a')
  vim.lsp.buf.code_action()
  record_edit('the edit', bufnr)
end
"""
    seen = run_nvim(tmp_path, OPTIONS, body)
    assert "copyedit: rename x to value" in seen["titles"], seen["titles"]
    assert seen["err"] is None, seen["err"]
    result = seen["result"]
    assert result["applied"] is True, result
    after = seen["after"]
    assert buffer_text(after) == result["text"]
    assert "# copyedit: rename x to value" not in after
    assert len(after) >= 1 and after[:3] == seen["before"][:3]  # double() above is untouched
    assert after[-2:] == seen["before"][-2:]  # triple() below is untouched


def long_module(functions: int) -> str:
    parts = []
    for number in range(functions):
        parts.append(
            f"def step_{number}(values, offset):\n"
            f"    result = []\n"
            f"    for value in values:\n"
            f"        result.append(value * {number} + offset)\n"
            f"    return result\n"
        )
    return "\n\n".join(parts)


def test_cancel_during_an_edit_leaves_the_buffer_unchanged(tmp_path):
    """:CopyEditCancel once the edit reports progress: nothing is applied, the buffer is unchanged."""
    source = tmp_path / "steps.py"
    text = long_module(20)
    source.write_text(text)
    body = f"""
local function main()
  local bufnr = open({lua_string(str(source))})
  vim.cmd('%CopyEdit Add a docstring to every function that explains its parameters in detail.')
  wait('a progress report from the edit', function()
    local p = copyedit.last_progress
    return (p ~= nil and p.kind == 'report') or copyedit.last_result ~= nil or copyedit.last_error ~= nil
  end)
  obs.finished_before_cancel = copyedit.last_result ~= nil or copyedit.last_error ~= nil
  vim.cmd('CopyEditCancel')
  wait('the cancel response', function() return copyedit.last_cancel ~= nil end)
  obs.cancelled = copyedit.last_cancel
  record_edit('the edit', bufnr)
  obs.modified = vim.bo[bufnr].modified
end
"""
    seen = run_nvim(tmp_path, OPTIONS, body)
    assert not seen["finished_before_cancel"], "the edit finished before it could be cancelled"
    assert seen["cancelled"]["cancelled"] >= 1, seen["cancelled"]
    assert seen["err"] is None, seen["err"]
    assert seen["result"] == {"applied": False, "reason": "cancelled"}
    assert seen["after"] == seen["before"]
    assert buffer_text(seen["after"]) == text
    assert not seen["modified"]
    assert any(p["kind"] == "end" and "cancelled" in (p["message"] or "") for p in seen["progress"])


def test_missing_instructions_are_asked_for(tmp_path):
    """`:2,3CopyEdit` with no instruction and the "Edit with instruction..." code action both ask with
    vim.ui.input; the range reaches the server as a selection, each answer as its edit's instruction,
    and the buffer shows each edit applied: b renamed in the selection alone, g fixed."""
    source = tmp_path / "small.py"
    text = "def f(a):\n    b = a + 1\n    c = b * 2\n    return c\n\n\ndef g(y):\n    return y - 1\n"
    source.write_text(text)
    answers = ["Rename the variable b to total.", "Fix g: it must return y + 1."]
    body = f"""
local function main()
  local bufnr = open({lua_string(str(source))})
  obs.prompts = {{}}
  local answers = vim.fn.json_decode({lua_string(json.dumps(answers))})
  vim.ui.input = function(opts, on_confirm)
    table.insert(obs.prompts, opts.prompt)
    on_confirm(table.remove(answers, 1))
  end
  review_with('a')
  vim.cmd('2,3CopyEdit')
  record_edit('the range edit', bufnr, 'range_')

  local row = #lines(bufnr)  -- inside g(), the last function
  vim.api.nvim_win_set_cursor(0, {{ row, 4 }})
  vim.ui.select = function(items, opts, on_choice)
    for _, item in ipairs(items) do
      if item[2].title == 'Edit with instruction...' then
        return on_choice(item)
      end
    end
    on_choice(nil)
  end
  obs.action_before = lines(bufnr)
  copyedit.last_result, copyedit.last_error = nil, nil
  review_with('a')
  vim.lsp.buf.code_action()
  record_edit('the code action edit', bufnr, 'action_')
end
"""
    seen = run_nvim(tmp_path, OPTIONS, body)
    assert seen["prompts"] == ["copyedit instruction: ", "copyedit instruction: "]
    begins = [p["message"] for p in seen["progress"] if p["kind"] == "begin" and p["message"].startswith("editing")]
    assert begins == ["editing selection (lines 2-3)", "editing function g (lines 7-8)"], begins
    for name in ("range", "action"):
        assert seen[f"{name}_err"] is None, seen[f"{name}_err"]
        result = seen[f"{name}_result"]
        assert result["applied"] is True and result["edits"] >= 1, result
        assert buffer_text(seen[f"{name}_after"]) == result["text"]
    # the range edit: b renamed in lines 2-3 (where it is used alone), f computes the same, and every
    # line outside the selection is untouched
    renamed = seen["range_after"]
    assert renamed[0] == "def f(a):" and renamed[-5:] == seen["before"][-5:] and len(renamed) == len(seen["before"])
    assert not any(re.search(r"\bb\b", line) for line in renamed[1:3]), renamed
    assert all("total" in line for line in renamed[1:3]), renamed
    assert seen["action_before"] == renamed
    # the code action: g fixed, f (as the range edit left it) untouched
    assert fix_problems(buffer_text(renamed), buffer_text(seen["action_after"]), "g", (1,), 2) == []
    namespace = {}
    exec(buffer_text(seen["action_after"]), namespace)
    assert [namespace["f"](a) for a in (0, 1, 5)] == [2, 4, 12]


TWO_BUGS = """def average_price(items):
    total = 0
    for item in items:
        total += item["price"]
    return total / len(items) - 1


def total_weight(items):
    weight = 1
    for item in items:
        weight += item["weight"]
    return weight
"""


def test_review_accept_all_accept_one_hunk_or_reject(tmp_path):
    """The plugin reviews the server's edit hunk by hunk (review "always", the default): `a` takes
    every hunk, `y` then `q` takes the first only, `q` takes none; the buffer shows exactly what was
    taken and the server hears the truth (applied, the hunks taken)."""
    source = tmp_path / "shop.py"
    source.write_text(TWO_BUGS)
    instruction = "Add a docstring to each function."
    body = f"""
local function main()
  local bufnr = open({lua_string(str(source))})
  for _, case in ipairs({{ {{ 'all', 'a' }}, {{ 'one', 'yq' }}, {{ 'none', 'q' }} }}) do
    copyedit.last_result, copyedit.last_error, copyedit.last_review = nil, nil, nil
    vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, obs.before)
    review_with(case[2])
    vim.cmd('%CopyEdit ' .. {lua_string(instruction)})
    record_edit('the edit (' .. case[1] .. ')', bufnr, case[1] .. '_')
    obs[case[1] .. '_review'] = copyedit.last_review or vim.NIL
  end
end
"""
    seen = run_nvim(tmp_path, OPTIONS, body)
    before = buffer_text(seen["before"])
    for case in ("all", "one", "none"):
        assert seen[f"{case}_err"] is None, seen[f"{case}_err"]
    review = seen["all_review"]
    edits = review["edit"]["documentChanges"][0]["edits"]
    assert review["hunks"] == len(edits) >= 2, review  # a docstring in each function: two hunks
    assert seen["all_result"]["applied"] is True and seen["all_result"]["hunks"] == list(range(1, len(edits) + 1))
    assert buffer_text(seen["all_after"]) == seen["all_result"]["text"] != before
    first = [types.TextEdit(range=range_of(edits[0]["range"]), new_text=edits[0]["newText"])]
    assert seen["one_result"]["applied"] is True and seen["one_result"]["hunks"] == [1]
    assert buffer_text(seen["one_after"]) == apply_lsp_edits(before, first) != seen["all_result"]["text"]
    assert seen["none_result"]["applied"] is False and "hunks" in seen["none_result"]
    assert seen["none_review"]["taken"] == [] and buffer_text(seen["none_after"]) == before


def range_of(value: dict) -> types.Range:
    start, end = value["start"], value["end"]
    return types.Range(
        start=types.Position(line=start["line"], character=start["character"]),
        end=types.Position(line=end["line"], character=end["character"]),
    )


def test_workspace_refactor_is_reviewed_across_files(tmp_path):
    """:CopyEditWorkspace: the refactor's hunks, in every file it changed, go through the same review
    (`a` takes them all); each changed file's buffer then holds its hunks, and the server hears
    which were taken."""
    (tmp_path / ".git").mkdir()  # the workspace root
    files = {"shop.py": TWO_BUGS, "steps.py": "def step(x, y):\n    z = x + y\n    return z * 2\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    body = f"""
local function main()
  local bufnr = open({lua_string(str(tmp_path / "shop.py"))})
  review_with('a')
  copyedit.refactor_workspace({{ instruction = 'Add a docstring to each function.' }})
  wait('the refactor', function() return copyedit.last_result ~= nil or copyedit.last_error ~= nil end)
  obs.result = copyedit.last_result or vim.NIL
  obs.err = copyedit.last_error or vim.NIL
  obs.review = copyedit.last_review or vim.NIL
  obs.buffers = {{}}
  for _, name in ipairs({{ 'shop.py', 'steps.py' }}) do
    local other = vim.fn.bufnr({lua_string(str(tmp_path))} .. '/' .. name)
    obs.buffers[name] = other > 0 and lines(other) or vim.NIL
  end
end
"""
    seen = run_nvim(tmp_path, OPTIONS, body)
    assert seen["err"] is None, seen["err"]
    result, review = seen["result"], seen["review"]
    assert result["applied"] is True and result["changed"] >= 1, result
    changes = review["edit"]["documentChanges"]
    assert review["taken"] == list(range(1, review["hunks"] + 1)) and review["hunks"] == sum(
        len(c["edits"]) for c in changes
    )
    for change in changes:
        name = Path(change["textDocument"]["uri"]).name
        edits = [types.TextEdit(range=range_of(e["range"]), new_text=e["newText"]) for e in change["edits"]]
        assert buffer_text(seen["buffers"][name]) == apply_lsp_edits(files[name], edits), name


def test_the_summary_says_why_a_program_gave_way_to_a_rewrite(tmp_path):
    """The result line names each fallback reason of the server (edit.FALLBACKS) in words."""
    body = """
local function main()
  obs.described = {}
  for _, reason in ipairs({ 'cut', 'syntax', 'loss', 'unchanged' }) do
    local stats = { ops = 2, splicedTokens = 10, generatedTokens = 3, seconds = 1.0, fallback = reason }
    obs.described[reason] = copyedit.describe({ applied = true, stats = stats })
  end
end
"""
    described = run_nvim(tmp_path, OPTIONS, body)["described"]
    words = {"cut": "cut short", "syntax": "broke the syntax", "loss": "lost code", "unchanged": "changed nothing"}
    for reason, said in words.items():
        assert described[reason].endswith(f"rewritten (program {said})"), described


def test_a_change_is_applied_from_a_register_or_another_buffers_lines_with_its_sources_shown(tmp_path):
    """:CopyEditApply merges the change in the `+` register: the review shows, beside each new
    line, that it came from the change; `y` then `q` takes the first hunk only, and the buffer is
    that hunk alone.  :%CopyEditApplyTo, run in a scratch buffer that holds the change, merges it
    into the file's buffer; `a` takes every hunk."""
    source = tmp_path / "stats.py"
    source.write_text(STATS)
    body = f"""
local function main()
  obs.shown = {{}}
  local key = copyedit.review_key
  copyedit.review_key = function()  -- what the review's float shows when it asks
    for _, window in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_config(window).relative ~= '' then
        local float = vim.api.nvim_win_get_buf(window)
        local ns = vim.api.nvim_get_namespaces()['copyedit-review']
        local marks = vim.api.nvim_buf_get_extmarks(float, ns, 0, -1, {{ details = true }})
        local words = {{}}
        for _, mark in ipairs(marks) do
          if mark[4].virt_text then table.insert(words, mark[4].virt_text[1][1]) end
        end
        table.insert(obs.shown, {{ lines = vim.api.nvim_buf_get_lines(float, 0, -1, false), sources = words }})
      end
    end
    return key()
  end
  local bufnr = open({lua_string(str(source))})
  vim.fn.setreg('+', {lua_string(VARIANCE_SNIPPET)})
  review_with('yq')
  vim.cmd('CopyEditApply')
  record_edit('the apply from the register', bufnr, 'register_')
  obs.register_review = copyedit.last_review
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, obs.before)
  copyedit.last_result, copyedit.last_error = nil, nil
  vim.cmd('new')
  vim.api.nvim_buf_set_lines(0, 0, -1, false, vim.split({lua_string(VARIANCE_SNIPPET.rstrip())}, '\\n'))
  review_with('a')
  vim.cmd('%CopyEditApplyTo ' .. bufnr)
  record_edit('the apply from another buffer', bufnr, 'buffer_')
end
"""
    seen = run_nvim(tmp_path, OPTIONS, body)
    docstring = STATS.replace("the population variance", "the sample variance")
    assert seen["register_err"] is None and seen["register_result"]["applied"] is True, seen["register_result"]
    assert seen["register_result"]["hunks"] == [1] and buffer_text(seen["register_after"]) == docstring
    review = seen["register_review"]
    assert review["sources"] == [{"removes": 1, "lines": [{"source": "change", "line": n}]} for n in (5, 7)]
    first = seen["shown"][0]
    assert first["sources"] == ["  <- from the change, line 5"], first
    assert '+     """Return the sample variance of values."""' in first["lines"], first
    assert seen["buffer_err"] is None and seen["buffer_result"]["hunks"] == [1, 2], seen["buffer_result"]
    assert buffer_text(seen["buffer_after"]) == docstring.replace("/ len(values)\n", "/ (len(values) - 1)\n")
