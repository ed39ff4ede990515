"""``copyedit bench check-gold``: the edit sets' gold answers all pass; a set's failures and tests that
could not run are counted apart and named."""

import json
import shutil

import pytest
from quick import SAMPLE

from copyedit_lsp.bench.checks import Outcome
from copyedit_lsp.bench.gold import check_gold
from copyedit_lsp.cli.bench import EDIT_SETS
from copyedit_lsp.cli.main import main
from copyedit_lsp.common.datasets import data_dir, load_items
from copyedit_lsp.core.loss import lost_code


@pytest.mark.parametrize("preset", EDIT_SETS)
def test_every_gold_answer_of_the_shared_sets_passes(preset):
    """JavaScript/162 needs the npm package js-md5 (make bench-npm)."""
    items = load_items(preset, limit=SAMPLE)
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
        "refused_by_guard": {},
    }


def test_tests_that_could_not_run_are_named_but_do_not_fail_the_check(tmp_path, capsys):
    path = write(tmp_path / "set.jsonl", [RIGHT, MISSING])
    assert main(["bench", "check-gold", path, "--format", "editeval"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{path}: 2 gold answers: 1 passed, 0 failed, 1 could not run",
        "  missing: could not run: module copyedit_missing_module is not installed",
        "  refused by the loss guard: 0 of 2 (0.0%)",
    ]


GUARDED_SETS = [*EDIT_SETS, "humanevalfix-python-files", "humanevalfix-js-files"]


@pytest.mark.parametrize("source", [*GUARDED_SETS, "canitedit", "canitedit-lazy"])
def test_the_loss_guard_refuses_at_most_2_percent_of_gold_answers(source):
    """Gold answers fed through the guard as results: it is not a refuse-everything switch."""
    if source.startswith("canitedit"):
        items = load_items(str(data_dir() / "canitedit" / "test.jsonl"), format=source)
    else:
        items = load_items(source)
    refused = {item.id for item in items if lost_code(item.before, item.after, item.language, item.instruction)}
    assert len(refused) <= 0.02 * len(items), refused


def test_a_gold_answer_that_drops_a_function_unasked_is_refused_and_named(tmp_path, capsys):
    before = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    records = [{"id": "dropped", "input": before, "output": "def f():\n    return 1\n", "instruction": "Tidy up."}]
    path = write(tmp_path / "set.jsonl", records)
    assert main(["bench", "check-gold", path, "--format", "editeval", "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out).values()
    assert report["refused_by_guard"] == {"dropped": lost_code(before, records[0]["output"], "python").describe()}
    assert "g" in report["refused_by_guard"]["dropped"]
