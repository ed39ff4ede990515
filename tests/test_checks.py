"""Running an item's tests: Python with this interpreter, JavaScript with node; passed, failed (failures,
crashes, timeouts), could not run (a missing module, no runner) or no tests; templated contexts."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from copyedit_lsp.bench import checks
from copyedit_lsp.bench.checks import Outcome, Verdict, program_under_test, run_tests
from copyedit_lsp.common.datasets import EditItem, load_items


@pytest.mark.parametrize("preset", ["humanevalfix-python", "humanevalfix-js", "quixbugs"])
def test_fixed_programs_pass_and_buggy_ones_fail(preset):
    if preset == "humanevalfix-js" and shutil.which("node") is None:
        pytest.skip("node is not installed")
    for item in load_items(preset, limit=8):
        assert run_tests(item, item.after).outcome == Outcome.PASSED, item.id
        assert run_tests(item, item.before).outcome == Outcome.FAILED, item.id


def test_a_javascript_console_assert_fails_the_run():
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    item = EditItem("js", "", "", "", language="javascript", test="console.assert(f() === 2, 'f');")
    assert run_tests(item, "const f = () => 2;").outcome == Outcome.PASSED
    assert run_tests(item, "const f = () => 3;") == Verdict(Outcome.FAILED, "Error: assertion failed f")


def test_a_hanging_test_times_out_as_a_failure():
    item = EditItem("loop", "", "", "", test="while True:\n    pass")
    assert run_tests(item, "x = 1\n", timeout=1.0) == Verdict(Outcome.FAILED, "timed out after 1 s")


def test_context_comes_before_the_text():
    item = EditItem("ctx", "", "", "", test="assert double(2) == 4", context="FACTOR = 2\n")
    assert run_tests(item, "def double(x):\n    return FACTOR * x\n").outcome == Outcome.PASSED


def test_a_templated_context_takes_the_text_at_each_placeholder(tmp_path):
    """An EditEval-layout record whose context holds the code twice: as code, and as a string the tests read."""
    record = {
        "id": "templated",
        "input": "def add(a, b):\n    return a - b\n",
        "output": "def add(a, b):\n    return a + b\n",
        "instruction": "Make add add.",
        "context": "import math\n\n{{Code}}\n\nedited_code = '''\n{{Code}}\n'''\n",
        "test": "assert add(2, 3) == 5 and math.pi\nassert 'a + b' in edited_code and '{{' not in edited_code\n",
    }
    path = tmp_path / "editeval.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    (item,) = load_items(str(path), format="editeval")
    program = program_under_test(item, item.after)
    assert program.startswith("import math\n") and program.count("return a + b") == 2 and "{{Code}}" not in program
    assert run_tests(item, item.after).outcome == Outcome.PASSED
    assert run_tests(item, item.before) == Verdict(Outcome.FAILED, "AssertionError")


def test_a_missing_module_the_item_imports_means_its_tests_could_not_run():
    item = EditItem("dep", "", "", "", test="import copyedit_missing_module.sub\nassert f() == 1\n")
    verdict = run_tests(item, "def f():\n    return 1\n")
    assert verdict == Verdict(Outcome.COULD_NOT_RUN, "module copyedit_missing_module is not installed")
    assert verdict.outcome.passed is None


def test_a_missing_module_only_the_edit_imports_is_a_failure():
    item = EditItem("edit", "", "def f():\n    return 1\n", "", test="assert f() == 1\n")
    verdict = run_tests(item, "import copyedit_missing_module\n\ndef f():\n    return 1\n")
    assert verdict.outcome == Outcome.FAILED and verdict.reason.startswith("ModuleNotFoundError")
    assert verdict.outcome.passed is False


def test_a_missing_npm_package_means_the_tests_could_not_run():
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    test = "const pkg = require('copyedit-missing-package');"
    verdict = run_tests(EditItem("npm", "", "", "", language="javascript", test=test), "const f = () => 2;")
    assert verdict == Verdict(Outcome.COULD_NOT_RUN, "module copyedit-missing-package is not installed")


def test_no_tests_or_no_runner(monkeypatch):
    assert run_tests(EditItem("none", "", "", ""), "x = 1") == Verdict(Outcome.NO_TESTS)
    rust = run_tests(EditItem("rust", "", "", "", language="rust", test="assert!(true);"), "")
    assert rust == Verdict(Outcome.COULD_NOT_RUN, "no test runner for rust")
    monkeypatch.setattr(checks.shutil, "which", lambda name: None)
    node = run_tests(EditItem("js", "", "", "", language="javascript", test="1"), "")
    assert node == Verdict(Outcome.COULD_NOT_RUN, "node is not installed")
    assert [outcome.passed for outcome in Outcome] == [True, False, None, None]


def test_a_test_process_dies_with_the_process_that_runs_it(tmp_path):
    """A benchmark killed mid-test leaves no looping test behind."""
    marker = tmp_path / "pid"
    test = f"import os\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\nwhile True:\n    pass\n"
    script = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from copyedit_lsp.bench.checks import run_tests\n"
        "from copyedit_lsp.common.datasets import EditItem\n"
        f"run_tests(EditItem('x', '', '', '', test={test!r}), 'pass', timeout=60)\n"
    )
    runner = subprocess.Popen([sys.executable, "-c", script, str(Path(__file__).parents[1])])
    for _ in range(200):
        if marker.exists() and marker.read_text():
            break
        time.sleep(0.05)
    child = int(marker.read_text())
    runner.kill()
    runner.wait()
    for _ in range(100):
        if not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]:
            break
        time.sleep(0.05)
    else:
        os.kill(child, 9)
        raise AssertionError("the test process outlived its runner")
