"""Run an edit item's tests against an edited text: Python with this interpreter, JavaScript with node.

A run ends in one of four :class:`Outcome` s: the tests passed; they failed (an assertion, a crash,
a timeout); they could not run (a module the item's own code imports is not installed, no runner
for its language), which says nothing of the text; or the item has none."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ..common.datasets import EditItem

# console.assert only logs; the tests of HumanEvalFix JS rely on it failing the run.
JS_ASSERT = (
    "console.assert = (condition, ...message) => {\n"
    "  if (!condition) throw new Error('assertion failed ' + message.join(' '));\n"
    "};\n"
)
RUNNERS = {"python": ("py", [sys.executable, "-I"]), "javascript": ("js", ["node"])}
# The npm packages the sets' JavaScript tests require (bench/package.json, `make bench-npm`).
BENCH_NODE_MODULES = Path(__file__).resolve().parents[2] / "bench" / "node_modules"
# Where an item's context takes the edited text (EditEval's templated contexts).
CODE_PLACEHOLDER = "{{Code}}"
# What a test process prints when an import finds no module: Python, node (require and import).
MISSING_MODULE = re.compile(r"No module named '?([\w.]+)|Cannot find (?:module|package) '([^']+)'")
# The line an error is reported on: Python's last traceback line, node's thrown error.
ERROR_LINE = re.compile(r"^\s*[\w.]*(?:Error|Exception)\b.*$", re.MULTILINE)


class Outcome(StrEnum):
    """How an item's tests ended on a text."""

    PASSED = "passed"
    FAILED = "failed"
    COULD_NOT_RUN = "could_not_run"  # the environment's doing, not the text's
    NO_TESTS = "no_tests"

    @property
    def passed(self) -> bool | None:
        """True or False when the tests ran; None when they could not run or there are none."""
        return {Outcome.PASSED: True, Outcome.FAILED: False}.get(self)

    @property
    def label(self) -> str:
        """The outcome in words: "could not run"."""
        return self.value.replace("_", " ")


@dataclass(frozen=True)
class Verdict:
    """A test run's outcome and, unless it passed, why (the error, the missing module, the timeout)."""

    outcome: Outcome
    reason: str = ""


def die_with_parent() -> None:
    """Linux: the test process is killed when the process that runs it dies (a killed benchmark
    must not leave a looping test behind on the cores)."""
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def program_under_test(item: EditItem, text: str) -> str:
    """The program that tests ``text``: the item's context with ``text`` at each ``{{Code}}`` (or,
    without one, the context then ``text``), then the item's tests."""
    head = JS_ASSERT if item.language == "javascript" else ""
    if CODE_PLACEHOLDER in item.context:
        code = item.context.replace(CODE_PLACEHOLDER, text)
    else:
        code = item.context + text
    return f"{head}{code}\n{item.test}\n"


def run_tests(item: EditItem, text: str, *, timeout: float = 10.0) -> Verdict:
    """Run the item's tests on ``text``: passed, failed (a failure, crash or timeout), could not run
    (a module the item needs is missing, no runner for its language), or no tests."""
    if not item.test:
        return Verdict(Outcome.NO_TESTS)
    if item.language not in RUNNERS:
        return Verdict(Outcome.COULD_NOT_RUN, f"no test runner for {item.language}")
    suffix, command = RUNNERS[item.language]
    if shutil.which(command[0]) is None:
        return Verdict(Outcome.COULD_NOT_RUN, f"{command[0]} is not installed")
    with tempfile.TemporaryDirectory(prefix="copyedit-test-") as folder:
        path = Path(folder) / f"item.{suffix}"
        path.write_text(program_under_test(item, text), encoding="utf-8")
        try:
            done = subprocess.run(
                [*command, str(path)],
                cwd=folder,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                env=_environment(item.language),
                preexec_fn=die_with_parent,
            )
        except subprocess.TimeoutExpired:
            return Verdict(Outcome.FAILED, f"timed out after {timeout:g} s")
        except OSError as error:
            return Verdict(Outcome.COULD_NOT_RUN, str(error))
    if done.returncode == 0:
        return Verdict(Outcome.PASSED)
    if module := _missing_module(item, done.stderr):
        return Verdict(Outcome.COULD_NOT_RUN, f"module {module} is not installed")
    return Verdict(Outcome.FAILED, _last_error(done.stderr) or f"exit status {done.returncode}")


def _environment(language: str) -> dict[str, str] | None:
    """The test process's environment: node also looks in the benchmarks' npm folder; else inherited."""
    if language != "javascript":
        return None
    paths = [os.environ.get("NODE_PATH", ""), str(BENCH_NODE_MODULES)]
    return os.environ | {"NODE_PATH": os.pathsep.join(filter(None, paths))}


def _missing_module(item: EditItem, stderr: str) -> str | None:
    """The module a run found missing, if the item's own code (tests, context or gold answer) names
    it: a dependency of the set; a module only the edited text imports is the edit's mistake."""
    needs = item.test + item.context + item.after
    for match in MISSING_MODULE.finditer(stderr):
        module = match[1] or match[2]
        if module.split(".")[0] in needs:
            return module
    return None


def _last_error(stderr: str) -> str:
    """The error a failed run ended on: its last error line, else its last line ("" for none)."""
    lines = ERROR_LINE.findall(stderr) or stderr.strip().splitlines()
    return lines[-1].strip()[:200] if lines else ""
