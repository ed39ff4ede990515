"""The ``copyedit`` command itself, run as a subprocess with the tiny model."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from mechanism import ARGUMENTS, MODEL
from texts import SHAPES

from copyedit_lsp.decode.edit import CUTS
from copyedit_lsp.decode.refusal import UNCHANGED

pytestmark = pytest.mark.model

COPYEDIT = Path(sys.executable).with_name("copyedit")  # the environment's console script


def apply(path: Path, instruction: str, *options: str) -> subprocess.CompletedProcess:
    """``copyedit apply PATH -i INSTRUCTION --write --json`` with the tiny model in program mode, its
    program as the result (no rewrite fallback), and ``options``."""
    command = [str(COPYEDIT), "apply", str(path), "-i", instruction, "--model", "smollm2-135m", "--threads", "2"]
    return subprocess.run(
        [*command, "--mode", "program", "--no-fallback", "--write", "--json", *options],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_apply_exits_3_on_an_incomplete_result_unless_allow_incomplete(tmp_path, tiny_model_path):
    """Asked to write a line again and again, the tiny model's program is cut short at the third
    repeated gen (a line written three times): ``copyedit apply`` prints it, says why on stderr, writes nothing even with
    ``--write`` and exits 3; with ``--allow-incomplete`` it exits 0 and writes it."""
    path = tmp_path / "x.py"
    path.write_text("x = 1\n")
    refused = apply(path, "Write x = 1 again and again.")
    assert refused.returncode == 3, refused.stderr
    printed = json.loads(refused.stdout)
    assert printed["cut"] == "repeated" and max(Counter(printed["text"].splitlines()).values()) >= 3
    assert f"the model's output was cut short: {CUTS['repeated']}; nothing was written" in refused.stderr
    assert path.read_text() == "x = 1\n"
    allowed = apply(path, "Write x = 1 again and again.", "--allow-incomplete")
    assert allowed.returncode == 0, allowed.stderr
    written = json.loads(allowed.stdout)
    assert written["cut"] == "repeated" and path.read_text() == written["text"] == printed["text"]
    assert "cut short" not in allowed.stderr


def test_apply_refuses_an_edit_that_loses_code_unless_allow_loss(tmp_path, tiny_model_path):
    """Told to shorten ``describe`` over the whole file, the tiny model's program writes ``describe``
    where ``area`` and ``perimeter`` were: ``copyedit apply`` names them, writes nothing and exits 4
    (its syntax aside: ``--no-syntax-guard``, else a result that parses worse is refused first);
    ``--allow-loss`` writes it.  Without ``--whole-file`` the edit covers ``describe`` alone, and
    whatever the model writes there, the other two are kept."""
    path = tmp_path / "shapes.py"
    path.write_text(SHAPES)
    refused = apply(path, "Shorten describe.", "--whole-file", "--no-syntax-guard")
    assert refused.returncode == 4, refused.stderr
    printed = json.loads(refused.stdout)
    assert printed["loss"]["definitions"] == ["area", "perimeter"]
    said = next(line for line in refused.stderr.splitlines() if "the edit loses code: it drops" in line)
    assert "area, perimeter" in said  # the lines it counts are the tiny model's and vary with the CPU's kernels
    assert "nothing was written (--allow-loss takes it)" in refused.stderr and path.read_text() == SHAPES
    allowed = apply(path, "Shorten describe.", "--whole-file", "--allow-loss", "--no-syntax-guard")
    assert allowed.returncode == 0, allowed.stderr
    assert path.read_text() == json.loads(allowed.stdout)["text"] == printed["text"]
    path.write_text(SHAPES)
    narrowed = apply(path, "Shorten describe.", "--allow-incomplete", "--no-syntax-guard")  # it may write on
    assert narrowed.returncode == 0, narrowed.stderr
    assert "copyedit: editing function describe (lines 12-15" in narrowed.stderr
    assert path.read_text().startswith(SHAPES[: SHAPES.index("def describe")])


def test_apply_exits_6_when_the_result_changes_nothing(tmp_path, small_model_path):
    """Asked to leave a function as it is, the 0.5B writes it unchanged, in program mode
    (which gives way to a rewrite) and in rewrite mode: exit 6, the reason on stderr, nothing written."""
    path = tmp_path / "add.py"
    path.write_text("def add(a, b):\n    return a + b\n")
    for mode in ("program", "rewrite"):
        command = [str(COPYEDIT), "apply", str(path), "-i", "Leave add as it is.", "--model", MODEL, "--mode", mode]
        done = subprocess.run([*command, "--write", "--threads", "2"], capture_output=True, text=True, timeout=300)
        assert done.returncode == 6, done.stderr
        assert f"copyedit: {UNCHANGED}" in done.stderr and "(no change)" in done.stdout
        assert path.read_text() == "def add(a, b):\n    return a + b\n"


def merge_change(
    path: Path, change: str, *options: str, model: tuple[str, ...] = ARGUMENTS
) -> subprocess.CompletedProcess:
    """``copyedit apply PATH --change - --json`` with the change on stdin; ``model``: the model's
    arguments (by default the tests' 0.5B in program mode)."""
    command = [str(COPYEDIT), "apply", str(path), "--change", "-", "--threads", "2", "--json", *model, *options]
    return subprocess.run(command, input=change, capture_output=True, text=True, timeout=600)


def test_apply_change_merges_blocks_from_stdin_and_writes_them(tmp_path):
    """Search/replace blocks read from stdin, each placed once: merged (the deterministic merge
    answers alone: the shortcut), printed as JSON with the apply program, written with ``--write``."""
    path = tmp_path / "shapes.py"
    path.write_text(SHAPES)
    blocks = (
        "<<<<<<< SEARCH\ndef perimeter(radius):\n    return 2 * math.pi * radius\n=======\n"
        "def perimeter(width, height):\n    return 2 * (width + height)\n>>>>>>> REPLACE\n"
    )
    result = merge_change(path, blocks, "--write")
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert '<copy change="1-2"/>' in printed["program"] and printed["unplaced"] == []
    assert printed["stats"]["mode"] == "merge"
    expected = SHAPES.replace("def perimeter(radius):\n    return 2 * math.pi * radius\n",
                              "def perimeter(width, height):\n    return 2 * (width + height)\n")  # fmt: skip
    assert path.read_text() == printed["text"] == expected


def test_apply_change_refuses_what_it_cannot_place_and_writes_nothing(tmp_path, tiny_model_path):
    """A search block found nowhere, an empty change, a file that is not UTF-8: exit 2, a clear
    error, the file unchanged (the model never runs)."""
    path = tmp_path / "shapes.py"
    path.write_text(SHAPES)
    tiny = ("--model", "smollm2-135m")
    nowhere = "<<<<<<< SEARCH\n    return missing\n=======\n    return 0\n>>>>>>> REPLACE\n"
    for change, message in ((nowhere, "block 1 ('return missing'): matches nowhere"), ("", "the change is empty")):
        refused = merge_change(path, change, "--write", model=tiny)
        assert refused.returncode == 2 and message in refused.stderr and "nothing was changed" in refused.stderr
        assert path.read_text() == SHAPES
    (tmp_path / "latin1.py").write_bytes("x = 'é'\n".encode("latin-1"))
    unreadable = merge_change(tmp_path / "latin1.py", "x = 1\n", model=tiny)
    assert unreadable.returncode == 2 and "cannot be read as UTF-8" in unreadable.stderr
