"""Reading edits: presets of the edit sets, JSONL layouts by --format, field overrides, clear errors."""

import json
from dataclasses import replace

import pytest

from copyedit_lsp.common.datasets import FILE_FUNCTIONS, load_items


def write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def test_canitedit_layout(tmp_path):
    path = write(
        tmp_path / "c.jsonl",
        [
            {
                "id": 7,
                "before": "a\n",
                "after": "b\n",
                "instruction_descriptive": "do it",
                "instruction_lazy": "x",
                "tests": "assert True",
            }
        ],
    )
    (item,) = load_items(path, format="canitedit")
    assert (item.id, item.before, item.after, item.instruction, item.test) == (
        "7",
        "a\n",
        "b\n",
        "do it",
        "assert True",
    )
    (lazy,) = load_items(path, format="canitedit-lazy")
    assert lazy == replace(item, instruction="x")
    (field,) = load_items(path, format="canitedit", fields={"instruction": "instruction_lazy"})
    assert field == lazy


def test_editeval_layout_with_context(tmp_path):
    path = write(
        tmp_path / "e.jsonl",
        [
            {"input": "a\n", "output": "b\n", "instruction": "go", "test": "t", "context": "import os\n"},
            {"input": "c\n", "output": "d\n"},
        ],
    )
    first, second = load_items(path, format="editeval", language="javascript")
    assert (first.before, first.after, first.context, first.language) == ("a\n", "b\n", "import os\n", "javascript")
    assert (second.id, second.instruction, second.test) == ("2", "", "")  # the line number stands in for an id


def test_fields_override_the_layout(tmp_path):
    path = write(tmp_path / "o.jsonl", [{"old": "a\n", "new": "b\n", "ask": "why"}])
    (item,) = load_items(path, fields={"before": "old", "after": "new", "instruction": "ask"})
    assert (item.before, item.after, item.instruction) == ("a\n", "b\n", "why")


def test_a_missing_text_field_names_the_line(tmp_path):
    path = write(tmp_path / "m.jsonl", [{"before": "a\n", "after": "b\n"}, {"before": "c\n"}])
    with pytest.raises(ValueError, match=r"line 2: .*'after'"):
        load_items(path)


def test_presets_and_limit():
    items = load_items("humanevalfix-js", limit=3)
    assert len(items) == 3 and items[0].id == "JavaScript/0" and items[0].language == "javascript"
    assert items[0].instruction == "Fix bugs in hasCloseElements." and items[0].test


def test_canitedit_presets_give_both_instruction_styles():
    descriptive, lazy = load_items("canitedit", limit=2), load_items("canitedit-lazy", limit=2)
    assert [i.before for i in descriptive] == [i.before for i in lazy] and descriptive[0].test
    assert all(d.instruction != z.instruction and z.instruction for d, z in zip(descriptive, lazy, strict=True))


def test_a_seed_shuffles_before_the_limit():
    everything = [item.id for item in load_items("quixbugs", seed=3)]
    assert sorted(everything) == sorted(item.id for item in load_items("quixbugs"))
    assert everything != [item.id for item in load_items("quixbugs")]
    assert [item.id for item in load_items("quixbugs", limit=5, seed=3)] == everything[:5]


@pytest.mark.parametrize(
    "name, preset", [("humanevalfix-python-files", "humanevalfix-python"), ("humanevalfix-js-files", "humanevalfix-js")]
)
def test_whole_file_sets_hold_one_bug_among_fixed_functions(name, preset):
    items, files = load_items(preset), load_items(name)
    assert len(files) == len(items)
    for k, (item, file) in enumerate(zip(items[:12], files[:12], strict=False)):
        bug, fix = item.before.strip("\n"), item.after.strip("\n")
        others = [items[k + i].after.strip("\n") for i in range(1, FILE_FUNCTIONS)]
        assert file.id == f"{item.id}-file" and file.test == item.test and file.language == item.language
        assert file.after == file.before.replace(bug, fix, 1) != file.before
        assert all(other in file.before for other in others)
        assert sum(other in file.before[: file.before.index(bug)] for other in others) == k % FILE_FUNCTIONS
    assert [f.id for f in load_items(name, limit=4, seed=3)] != [f.id for f in files[:4]]
