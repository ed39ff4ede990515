"""Running an item's tests: Python with this interpreter, JavaScript with node; failures, crashes, timeouts."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from copyedit_lsp.bench import checks
from copyedit_lsp.bench.checks import run_tests
from copyedit_lsp.bench.datasets import EditItem, load_items


@pytest.mark.parametrize("preset", ["humanevalfix-python", "humanevalfix-js", "quixbugs"])
def test_fixed_programs_pass_and_buggy_ones_fail(preset):
    if preset == "humanevalfix-js" and shutil.which("node") is None:
        pytest.skip("node is not installed")
    for item in load_items(preset, limit=8):
        assert run_tests(item, item.after) is True, item.id
        assert run_tests(item, item.before) is False, item.id


def test_a_javascript_console_assert_fails_the_run():
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    item = EditItem("js", "", "", "", language="javascript", test="console.assert(f() === 2, 'f');")
    assert run_tests(item, "const f = () => 2;") is True
    assert run_tests(item, "const f = () => 3;") is False


def test_a_hanging_test_times_out_as_a_failure():
    item = EditItem("loop", "", "", "", test="while True:\n    pass")
    assert run_tests(item, "x = 1\n", timeout=1.0) is False


def test_context_comes_before_the_text():
    item = EditItem("ctx", "", "", "", test="assert double(2) == 4", context="FACTOR = 2\n")
    assert run_tests(item, "def double(x):\n    return FACTOR * x\n") is True


def test_no_tests_or_no_runner_gives_none(monkeypatch):
    assert run_tests(EditItem("none", "", "", ""), "x = 1") is None
    assert run_tests(EditItem("rust", "", "", "", language="rust", test="assert!(true);"), "") is None
    monkeypatch.setattr(checks.shutil, "which", lambda name: None)
    assert run_tests(EditItem("js", "", "", "", language="javascript", test="1"), "") is None


def test_a_test_process_dies_with_the_process_that_runs_it(tmp_path):
    """A benchmark killed mid-test leaves no looping test behind."""
    marker = tmp_path / "pid"
    test = f"import os\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\nwhile True:\n    pass\n"
    script = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from copyedit_lsp.bench.checks import run_tests\n"
        "from copyedit_lsp.bench.datasets import EditItem\n"
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
