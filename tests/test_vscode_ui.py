"""End-to-end: the packaged VS Code extension inside a real VS Code (code-server 4.100.3, Node 20),
driven through its UI by playwright-core in Debian's chromium, with the real server and model; all
on 127.0.0.1.  ``editors/vscode/ui-test/drive.mjs`` does what a user does and records what it saw;
this test sets the stage, stops code-server by its PID and checks the files on disk, the server's
log and the screenshots.  The screenshots go to the test's own folder (``shots/`` under its
tmp_path), or to the folder ``COPYEDIT_UI_SHOTS`` names: the tracked ones in ``docs/vscode-ui/``,
which the README shows, are only rewritten on purpose (``COPYEDIT_UI_SHOTS=docs/vscode-ui``)."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixes import fix_problems
from mechanism import MODEL
from test_nvim import TWO_BUGS
from texts import STATS, VARIANCE_MERGED, VARIANCE_SNIPPET

ROOT = Path(__file__).resolve().parent.parent
UI = ROOT / "editors" / "vscode" / "ui-test"
CODE_SERVER = UI / "node_modules" / "code-server" / "out" / "node" / "entry.js"
VSIX = ROOT / "editors" / "vscode" / "copyedit-lsp.vsix"
CHROMIUM = shutil.which("chromium")
SCREENSHOTS = ("review", "live", "apply", "restarted")  # what drive.mjs takes (the README shows the first two)

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(
        not CODE_SERVER.exists() or CHROMIUM is None or not VSIX.exists(),
        reason="code-server, chromium or the packaged extension is missing (make vscode vscode-ui)",
    ),
]

INSTRUCTION = "Fix the bug in mean: it must return the plain average."
TWO_HUNKS = "Add a docstring to each function."  # the shipped selector writes one in each: two hunks
SCALE = """def double(x):
    return x * 2


# copyedit: rename x to value
def scale(x, factor):
    result = x * factor
    return result + x
"""
QUIET = ["--disable-telemetry", "--disable-update-check", "--disable-workspace-trust"]
# A chat answer whose code block (lines 4-10) is a change for mean.py, applied from its selection
ANSWER = f"Here is the sample variance:\n\n```python\n{VARIANCE_SNIPPET}```\n\nIt divides by n - 1.\n"
STEPS = "".join(f"def step_{i}(x, y):\n    z = x + y * {i}\n    return z - {i}\n\n\n" for i in range(20))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_settings(log: Path) -> dict:
    return {
        "copyedit.server.command": [sys.executable, "-m", "copyedit_lsp.serve.server", "--log-file", str(log)],
        "copyedit.threads": 2,
        "copyedit.model": MODEL,  # the tests' 0.5B in program mode (tests/mechanism.py)
        "copyedit.mode": "program",
        "workbench.startupEditor": "none",
        "security.workspace.trust.enabled": False,
        "workbench.tips.enabled": False,
        "extensions.autoCheckUpdates": False,
        "extensions.ignoreRecommendations": True,
        "telemetry.telemetryLevel": "off",
        "editor.codeLens": False,
    }


def changed_lines(before: str, after: str) -> list[tuple[int, int]]:
    """The (start, end) line ranges of ``before`` that differ in ``after``."""
    matcher = difflib.SequenceMatcher(a=before.splitlines(True), b=after.splitlines(True), autojunk=False)
    return [(i1, i2) for tag, i1, i2, _, _ in matcher.get_opcodes() if tag != "equal"]


@pytest.mark.timeout(900)  # code-server, chromium and the real model, eight user flows on this machine's cores
def test_the_extension_in_a_real_vs_code(tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    files = {
        "stats.py": STATS,
        "shop.py": TWO_BUGS,
        "scale.py": SCALE,
        "steps.py": STEPS,
        "variance.py": STATS,
        "mean.py": STATS,
        "answer.md": ANSWER,
    }
    for name, text in files.items():
        (workspace / name).write_text(text)
    data, extensions = tmp_path / "data", tmp_path / "extensions"
    settings_file = data / "User" / "settings.json"
    settings_file.parent.mkdir(parents=True)
    log = tmp_path / "server.log"
    settings_file.write_text(json.dumps(server_settings(log), indent=2))
    shots = Path(os.environ.get("COPYEDIT_UI_SHOTS") or tmp_path / "shots")
    shots = shots if shots.is_absolute() else ROOT / shots
    shots.mkdir(parents=True, exist_ok=True)
    for name in SCREENSHOTS:  # none left from an earlier run can stand in for this run's
        (shots / f"{name}.png").unlink(missing_ok=True)

    base = ["node", str(CODE_SERVER), "--user-data-dir", str(data), "--extensions-dir", str(extensions)]
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    installed = subprocess.run(
        [*base, "--install-extension", str(VSIX)], env=env, capture_output=True, text=True, timeout=300
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    port = free_port()
    server = subprocess.Popen(
        [*base, "--auth", "none", "--bind-addr", f"127.0.0.1:{port}", *QUIET, str(workspace)],
        env=env,
        stdout=(tmp_path / "code-server.out").open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        for _ in range(600):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        out = tmp_path / "observations.json"
        config = {
            "url": f"http://127.0.0.1:{port}",
            "workspace": str(workspace),
            "shots": str(shots),
            "chromium": CHROMIUM,
            "instruction": INSTRUCTION,
            "twoHunks": TWO_HUNKS,
            "commentLine": 5,
            "snippet": VARIANCE_SNIPPET,
            "answerChange": {"line": 4, "lines": VARIANCE_SNIPPET.count("\n")},
            "serverLog": str(log),
            "restartPython": "/usr/bin/python3",
            "out": str(out),
            "everyStep": bool(os.environ.get("COPYEDIT_UI_EVERY_STEP")),  # a screenshot after each step
        }
        (tmp_path / "config.json").write_text(json.dumps(config))
        driven = subprocess.run(
            ["node", str(UI / "drive.mjs"), str(tmp_path / "config.json")],
            cwd=UI,
            capture_output=True,
            text=True,
            timeout=1800,
        )
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # its extension host would wait hours for a reconnection
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
    seen = json.loads(out.read_text()) if out.exists() else {}
    server_log = log.read_text() if log.exists() else ""
    assert seen.get("ok"), (seen.get("error"), driven.stderr[-2000:], seen.get("steps"), server_log[-3000:])

    # rejected, then accepted: the file is the fix (mean right, its docstring and variance kept)
    applied = [line for line in server_log.splitlines() if "workspace/applyEdit" in line and ": applied: " in line]
    assert "applied: false" in applied[0] and "applied: true" in applied[1], applied
    assert fix_problems(STATS, (workspace / "stats.py").read_text(), "mean", ([1, 2, 6],), 3.0) == []
    # two hunks proposed, the first taken: the file changed in exactly one place, the first function
    assert "hunks taken: [1]" in applied[2], applied
    shop = (workspace / "shop.py").read_text()
    (change,) = changed_lines(TWO_BUGS, shop)
    assert change[0] < TWO_BUGS.splitlines().index("def total_weight(items):") and '"""' in shop, shop
    # the code action: the comment is gone with the edit (what the 0.5B model makes of "rename x to
    # value" varies), the function above it untouched
    scale = (workspace / "scale.py").read_text()
    assert "# copyedit:" not in scale and scale.startswith("def double(x):\n    return x * 2\n") and scale != SCALE
    # cancel: nothing applied to steps.py
    assert (workspace / "steps.py").read_text() == STEPS
    status = seen["status"]
    assert "not applied" in status["rejected"] and "cancelled" in status["cancelled"], status
    assert "tok/s" in status["live"], status
    # the clipboard's snippet, reviewed with each new line's source shown: the first hunk taken
    assert "hunks taken: [1]" in applied[4], applied
    assert (workspace / "variance.py").read_text() == STATS.replace("the population variance", "the sample variance")
    assert seen["sources"] == ['"← from the change, line 5"', '"← from the change, line 7"'], seen["sources"]
    # the answer's code block, selected in its editor, applied to mean.py whole
    assert "applied: true" in applied[5], applied
    assert (workspace / "mean.py").read_text() == VARIANCE_MERGED
    assert (workspace / "answer.md").read_text() == ANSWER
    # the setting change (made in the Settings editor, saved by VS Code) restarted the server
    assert seen["steps"][-1] == {"step": "restarted", "starts": 1}
    written = [json.loads(f.read_text()).get("copyedit.server.pythonPath") for f in data.glob("*/settings.json")]
    assert "/usr/bin/python3" in written, written
    for name in SCREENSHOTS:
        assert (shots / f"{name}.png").stat().st_size > 10_000
