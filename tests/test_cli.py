"""The ``copyedit`` command itself, run as a subprocess with the tiny model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from copyedit_lsp.edit import CUTS

pytestmark = pytest.mark.model

COPYEDIT = Path(sys.executable).with_name("copyedit")  # the environment's console script


def apply(path: Path, instruction: str, *options: str) -> subprocess.CompletedProcess:
    """``copyedit apply PATH -i INSTRUCTION --write --json`` with the tiny model, its program as the
    result (no rewrite fallback), and ``options``."""
    command = [str(COPYEDIT), "apply", str(path), "-i", instruction, "--model", "smollm2-135m", "--threads", "2"]
    return subprocess.run(
        [*command, "--no-fallback", "--write", "--json", *options], capture_output=True, text=True, timeout=300
    )


def test_apply_exits_3_on_an_incomplete_result_unless_allow_incomplete(tmp_path, tiny_model_path):
    """Asked to write a line again and again, the tiny model's program is cut short at the third
    repeated gen: ``copyedit apply`` prints it, says why on stderr, writes nothing even with
    ``--write`` and exits 3; with ``--allow-incomplete`` it exits 0 and writes it."""
    path = tmp_path / "x.py"
    path.write_text("x = 1\n")
    refused = apply(path, "Write x = 1 again and again.")
    assert refused.returncode == 3, refused.stderr
    printed = json.loads(refused.stdout)
    assert printed["cut"] == "repeated" and printed["text"].count("x = 1\n") >= 3
    assert f"the model's output was cut short: {CUTS['repeated']}; nothing was written" in refused.stderr
    assert path.read_text() == "x = 1\n"
    allowed = apply(path, "Write x = 1 again and again.", "--allow-incomplete")
    assert allowed.returncode == 0, allowed.stderr
    written = json.loads(allowed.stdout)
    assert written["cut"] == "repeated" and path.read_text() == written["text"] == printed["text"]
    assert "cut short" not in allowed.stderr
