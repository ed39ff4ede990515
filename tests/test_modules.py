"""Whole-module training edits (model-free): windows of real files and the edits developers ask of them."""

import difflib
import random
import re

import pytest

from copyedit_lsp.cli.train import kind_counts
from copyedit_lsp.core.loss import lost_code
from copyedit_lsp.core.resolver import split_lines
from copyedit_lsp.core.scope import definitions, syntax_errors
from copyedit_lsp.train.data import Recipe
from copyedit_lsp.train.examples import build
from copyedit_lsp.train.modules import MODULE_KINDS, WINDOW_LINES, module_example, window

# A module of the shape the kinds need: imports, a constant used in several places, functions
# with docstrings and type hints, a class, and uses of the functions across it.
MODULE = '''"""Inventory records."""
import json
from dataclasses import dataclass

LIMIT = 250


@dataclass
class Item:
    name: str
    count: int

    def total(self, price: float) -> float:
        """Return what all of this item cost at price each."""
        return self.count * price


def load_items(text: str) -> list:
    """Read items from a JSON list of objects."""
    rows = json.loads(text)
    return [Item(row["name"], min(row["count"], LIMIT)) for row in rows]


def count_all(items: list) -> int:
    """Return the number of pieces of every item together."""
    total = 0
    for item in items:
        total += item.count
    return total


def over_limit(items: list) -> list:
    """Return the items whose count reached the limit."""
    return [item for item in items if item.count >= LIMIT]


def describe(items: list) -> str:
    """Return one line per item with its name and count."""
    lines = []
    for item in items:
        lines.append(f"{item.name}: {item.count}")
    return "\\n".join(lines)


def summary(text: str) -> str:
    """Return the count of pieces and the names over the limit."""
    items = load_items(text)
    full = over_limit(items)
    names = ", ".join(item.name for item in full)
    return f"{count_all(items)} pieces; at the limit: {names or 'none'}"
'''


def test_a_window_is_a_run_of_top_level_statements_within_bounds():
    text = MODULE + "\n\n" + MODULE.replace("def ", "def more_").replace("class Item", "class MoreItem")
    for seed in range(20):
        chosen = window(text, "python", random.Random(seed))
        if chosen is None:
            continue
        assert WINDOW_LINES[0] <= chosen.count("\n") <= WINDOW_LINES[1] and chosen in text
        assert sum(not d.outer for d in definitions(chosen, "python")) >= 2
        assert syntax_errors(chosen, "python") == 0


def examples(kind: str) -> list:
    made = [module_example(kind, MODULE, "python", "inventory.py", random.Random(seed)) for seed in range(40)]
    return [e for e in made if e is not None]


def test_a_module_bug_is_one_changed_function_told_by_its_symptom():
    made = examples("module-bug")
    assert made
    for example in made:
        changed = [d.name for d in definitions(example.after, "python") if d.name in example.instruction]
        assert changed and not re.search(r"\blines? \d", example.instruction)  # never where
        (target,) = [d for d in definitions(example.after, "python") if d.name == changed[0]]
        matcher = difflib.SequenceMatcher(None, split_lines(example.after), split_lines(example.before))
        edits = [(i1, i2) for tag, i1, i2, _, _ in matcher.get_opcodes() if tag != "equal"]
        assert edits and all(target.start_line <= i1 and i2 <= target.end_line for i1, i2 in edits)


def test_a_module_rename_changes_the_definition_and_every_use():
    made = examples("module-rename")
    assert made
    for example in made:
        old, new = re.search(r"Rename (?:the function )?(\w+) to (\w+)", example.instruction).groups()
        assert re.search(rf"\b{old}\b", example.before) and not re.search(rf"(?<![.\w]){old}\b", example.after)
        assert example.after.count(new) == example.before.count(old) >= 2


def test_module_docstrings_and_types_cover_two_functions_or_more():
    for kind in ("module-docstrings", "module-types"):
        made = examples(kind)
        assert made, kind
        for example in made:
            assert example.after in MODULE and example.before != example.after
            assert example.instruction.count(",") + example.instruction.count(" and ") >= 1


def test_a_module_constant_is_written_out_where_it_was_used():
    (example, *_) = examples("module-constant")
    assert "LIMIT = 250" not in example.before and example.before.count("250") == 2
    assert "LIMIT" in example.instruction and "250" in example.instruction


def test_a_module_add_asks_for_a_missing_definition_by_signature_and_intent():
    """The window lacks one definition (and the blank lines after it) that nothing else names; the
    instruction gives its signature (a method's without self, and its class) and its docstring's intent."""
    method = '    def label(self, prefix: str) -> str:\n        """Return the name after prefix."""\n        return prefix + self.name\n\n'
    module = MODULE.replace("    def total(", method + "    def total(")
    made = [module_example("module-add", module, "python", "x.py", random.Random(seed)) for seed in range(60)]
    made = [e for e in made if e is not None]
    asked = {re.search(r"`(\w+)\(", e.instruction).group(1) for e in made}
    assert {"label", "describe", "summary"} <= asked, asked
    for example in made:
        name = re.search(r"`(\w+)\(", example.instruction).group(1)
        assert [d.name for d in definitions(example.after, "python") if d.name not in example.before] == [name]
        gone = [
            line[2:]
            for line in difflib.ndiff(split_lines(example.after), split_lines(example.before))
            if line[:1] == "-" and line[2:].strip()
        ]
        assert gone[0].lstrip().startswith("def ") and "should " in example.instruction, (gone, example.instruction)
        if name == "label":
            assert "`label(prefix: str)` to `Item`" in example.instruction or "`Item` needs" in example.instruction


@pytest.mark.parametrize("kind", MODULE_KINDS)
def test_the_loss_guard_passes_every_module_edit(kind):
    """A training edit is a right answer: the guard must never refuse one."""
    for example in examples(kind):
        assert lost_code(example.before, example.after, "python", example.instruction) is None, example.instruction


def test_the_builder_makes_module_kinds_from_files(tmp_path):
    path = tmp_path / "inventory.py"
    path.write_text(MODULE)
    recipe = Recipe(counts=(("module-rename", 1), ("module-bug", 1)))
    built = build(recipe, {"python": [path]}, frozenset())
    assert [e.kind for e in built] == ["module-rename", "module-bug"]


def test_train_kinds_are_counts_of_known_kinds():
    assert kind_counts("module-bug=3,bug=2") == (("module-bug", 3), ("bug", 2))
    with pytest.raises(Exception, match="KIND=COUNT"):
        kind_counts("module-bugs=3")
