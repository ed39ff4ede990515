"""End-to-end: `make demo`'s own command (read from the Makefile's demo target), run through the real
``copyedit`` CLI with the real default model: the server's edit is applied to a copy in memory, what
it prints is that edit (its program, its diff, its stats) and nothing else, the function is fixed,
and the file on disk is never written."""

from __future__ import annotations

import ast
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from fixes import fix_problems

from copyedit_lsp.core.change import read_change
from copyedit_lsp.core.merge import merge
from copyedit_lsp.decode import models
from copyedit_lsp.decode.edit import DEFAULT_MODEL

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent
COPYEDIT = Path(sys.executable).parent / "copyedit"  # the console script of this environment
PROCESS_TIMEOUT = 1500  # a bound on a hang, not a speed check: the machine may be busy with other models


def demo_arguments() -> list[str]:
    """The arguments `make demo` gives ``copyedit``: the recipe line of the Makefile's demo target."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^demo:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert recipe, "the Makefile has no demo target"
    lines = [line for line in recipe[1].splitlines() if re.search(r"/copyedit demo ", line)]
    assert len(lines) == 1, recipe[1]
    arguments = shlex.split(lines[0].split("/copyedit ", 1)[1])
    assert arguments[0] == "demo"
    return arguments


def test_make_demo_fixes_mean_in_memory_and_leaves_the_file_alone():
    models.resolve_model(DEFAULT_MODEL, fetch_missing=True)  # what `make demo` fetches first: the demo runs on it
    arguments = demo_arguments()
    assert arguments[1] == "examples/stats.py" and "--line" in arguments and "--instruction" in arguments
    source = ROOT / arguments[1]
    original, modified = source.read_bytes(), source.stat().st_mtime_ns
    text = original.decode()

    process = subprocess.run(
        [str(COPYEDIT), *arguments],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
    )
    assert process.returncode == 0, (process.stdout, process.stderr[-4000:])
    stdout = process.stdout

    # the file on disk: not written
    assert source.read_bytes() == original and source.stat().st_mtime_ns == modified
    # the server's progress came through: the function at the cursor line was edited
    assert "editing function mean (lines 1-6)" in process.stderr, process.stderr[-4000:]

    # what it printed, and nothing else: the program, the diff, the stats (no log message of the server's)
    program, diff, last = re.fullmatch(
        r"(<program>\n.*?\n</program>)\n(--- a/stats.py\n.*?)(applied: .*)\n", stdout, re.S
    ).groups()
    assert "<copy" in program and "<gen>" in program, program
    assert "Ignoring" not in process.stderr and "logMessage" not in process.stderr, process.stderr[-4000:]

    # the diff it printed (of the copy the server's edits were applied to), merged into the text:
    # mean fixed, its docstring and variance kept
    edited = merge(text, read_change(diff)).text
    assert fix_problems(text, edited, "mean", ([1, 2, 6],), 3.0) == [], edited
    assert "differ from the server's result" not in stdout and "(no change)" not in stdout

    # the last line: applied, with the stats of a program that copied lines through the splice
    applied = re.fullmatch(r"applied: (True|False); stats: (\{.*\})", last)
    assert applied and applied[1] == "True", stdout
    stats = ast.literal_eval(applied[2])
    assert stats["fallback"] is None and stats["ops"] >= 2, stats
    assert stats["splicedTokens"] > 0 and stats["generatedTokens"] > 0, stats
