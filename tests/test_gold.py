"""``copyedit bench check-gold``: the shared sets' gold answers all pass; a set's failures and tests that
could not run are counted apart and named."""

import json
import shutil

import pytest

from copyedit_lsp.bench.checks import Outcome
from copyedit_lsp.bench.datasets import load_items
from copyedit_lsp.bench.gold import check_gold
from copyedit_lsp.cli import SHARED_SETS, main


@pytest.mark.parametrize("preset", SHARED_SETS)
def test_every_gold_answer_of_the_shared_sets_passes(preset):
    """JavaScript/162 needs the npm package js-md5 (make bench-npm)."""
    items = load_items(preset)
    if items[0].language == "javascript" and shutil.which("node") is None:
        pytest.skip("node is not installed")
    check = check_gold(items, progress=False)
    assert check.count(Outcome.PASSED) == len(items) > 0, check.problems


def write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


RIGHT = {"id": "right", "input": "x = 1\n", "output": "x = 2\n", "test": "assert x == 2"}
WRONG = {"id": "wrong", "input": "y = 1\n", "output": "y = 3\n", "test": "assert y == 2, 'y is not 2'"}
MISSING = {"id": "missing", "input": "z = 1\n", "output": "z = 2\n", "test": "import copyedit_missing_module"}


def test_a_failing_gold_answer_fails_the_check(tmp_path, capsys):
    path = write(tmp_path / "set.jsonl", [RIGHT, WRONG, MISSING, {"id": "untested", "input": "", "output": ""}])
    assert main(["bench", "check-gold", path, "--format", "editeval", "--json"]) == 1
    (report,) = json.loads(capsys.readouterr().out).values()
    assert report == {
        "items": 4,
        "passed": 1,
        "failed": 1,
        "could_not_run": 1,
        "no_tests": 1,
        "problems": [
            {"id": "wrong", "tests": "failed", "reason": "AssertionError: y is not 2"},
            {"id": "missing", "tests": "could_not_run", "reason": "module copyedit_missing_module is not installed"},
        ],
    }


def test_tests_that_could_not_run_are_named_but_do_not_fail_the_check(tmp_path, capsys):
    path = write(tmp_path / "set.jsonl", [RIGHT, MISSING])
    assert main(["bench", "check-gold", path, "--format", "editeval"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{path}: 2 gold answers: 1 passed, 0 failed, 1 could not run",
        "  missing: could not run: module copyedit_missing_module is not installed",
    ]
