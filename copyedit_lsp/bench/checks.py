"""Run an edit item's tests against an edited text: Python with this interpreter, JavaScript with node."""

from __future__ import annotations

import ctypes
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from .datasets import EditItem

# console.assert only logs; the tests of HumanEvalFix JS rely on it failing the run.
JS_ASSERT = (
    "console.assert = (condition, ...message) => {\n"
    "  if (!condition) throw new Error('assertion failed ' + message.join(' '));\n"
    "};\n"
)
RUNNERS = {"python": ("py", [sys.executable, "-I"]), "javascript": ("js", ["node"])}


def die_with_parent() -> None:
    """Linux: the test process is killed when the process that runs it dies (a killed benchmark
    must not leave a looping test behind on the cores)."""
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def program_under_test(item: EditItem, text: str) -> str:
    """The program that tests ``text``: the item's context, the text, then its tests."""
    head = JS_ASSERT if item.language == "javascript" else ""
    return f"{head}{item.context}{text}\n{item.test}\n"


def run_tests(item: EditItem, text: str, *, timeout: float = 10.0) -> bool | None:
    """Whether ``text`` passes the item's tests (a run that fails, crashes or times out does not);
    None when the item has no tests or its language has no runner here."""
    if not item.test or item.language not in RUNNERS:
        return None
    suffix, command = RUNNERS[item.language]
    if shutil.which(command[0]) is None:
        return None
    with tempfile.TemporaryDirectory(prefix="copyedit-test-") as folder:
        path = Path(folder) / f"item.{suffix}"
        path.write_text(program_under_test(item, text), encoding="utf-8")
        try:
            done = subprocess.run(
                [*command, str(path)],
                cwd=folder,
                capture_output=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                preexec_fn=die_with_parent,
            )
        except subprocess.TimeoutExpired:
            return False
    return done.returncode == 0
