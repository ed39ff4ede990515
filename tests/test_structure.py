"""Structural placement: snippets as assistants write them, placed by the definitions they name."""

import pytest
from texts import STATS, VARIANCE_MERGED, VARIANCE_SNIPPET

from copyedit_lsp.core.change import ChangeError, read_change
from copyedit_lsp.core.structure import placements
from copyedit_lsp.decode.edit import EditOptions
from copyedit_lsp.decode.fast_apply import answers_alone, apply_change

SHOP = """import math


class Cart:
    def __init__(self):
        self.items = []

    def add(self, item):
        self.items.append(item)

    def total(self):
        return sum(item.price for item in self.items)


class Order:
    def total(self):
        return 0


def ship(cart):
    return math.ceil(len(cart.items) / 3)


def tax(amount):
    return amount * 0.2
"""

CASES = {
    "a definition given whole, markers around it": (
        STATS,
        VARIANCE_SNIPPET,
        VARIANCE_MERGED,
    ),
    "two definitions with a marker between": (
        SHOP,
        "# ... existing code ...\ndef ship(cart):\n    return math.ceil(len(cart.items) / 4)\n\n"
        "# ... existing code ...\n\ndef tax(amount):\n    return amount * 0.25\n",
        SHOP.replace("/ 3)", "/ 4)").replace("* 0.2\n", "* 0.25\n"),
    ),
    "a class with markers around one method": (
        SHOP,
        "class Cart:\n    # ... existing code ...\n\n    def add(self, item):\n        if item is not None:\n"
        "            self.items.append(item)\n\n    # ... rest of the class unchanged ...\n",
        SHOP.replace(
            "    def add(self, item):\n        self.items.append(item)\n",
            "    def add(self, item):\n        if item is not None:\n            self.items.append(item)\n",
        ),
    ),
    "a definition a marker stands for between two shown is kept, not deleted": (
        SHOP,
        "class Order:\n    def total(self):\n        return 1\n\n\n# ...\n\n\ndef tax(amount):\n    return 0\n",
        SHOP.replace("        return 0\n", "        return 1\n").replace("return amount * 0.2", "return 0"),
    ),
    "a new function after a shown one, an import with it": (
        SHOP,
        "import json\n# ...\n\ndef ship(cart):\n    return math.ceil(len(cart.items) / 3)\n\n\n"
        "def receipt(cart):\n    return json.dumps([item.name for item in cart.items])\n\n# ...\n",
        SHOP.replace("import math\n", "import math\nimport json\n").replace(
            "/ 3)\n", "/ 3)\n\n\ndef receipt(cart):\n    return json.dumps([item.name for item in cart.items])\n"
        ),
    ),
    "a new method at the end of its class": (
        SHOP,
        "class Order:\n    # ... existing methods ...\n\n    def empty(self):\n        return True\n",
        SHOP.replace("        return 0\n", "        return 0\n\n    def empty(self):\n        return True\n"),
    ),
    "a line of no definition, rewritten: the file line most like it": (
        SHOP,
        "import math, os\n# ... existing code ...\n",
        SHOP.replace("import math\n", "import math, os\n"),
    ),
    "no marker: one changed definition of many": (
        SHOP,
        "def tax(amount):\n    return round(amount * 0.2, 2)\n",
        SHOP.replace("return amount * 0.2", "return round(amount * 0.2, 2)"),
    ),
    "a marker inside a function body": (
        STATS,
        "def mean(values):\n    # ... existing code ...\n    for value in values:\n        total += value * 1.0\n"
        "    return total / len(values)\n",
        STATS.replace("return total / len(values) - 1", "return total / len(values)").replace(
            "total += value\n", "total += value * 1.0\n"
        ),
    ),
    "a Python marker right under a function, indented: the rest of its body": (
        STATS,
        'def mean(values):\n    """Return the arithmetic mean of values."""\n    if not values:\n        return 0.0\n'
        "    total = 0\n    # ... existing code ...\n",
        STATS.replace("    total = 0\n", "    if not values:\n        return 0.0\n    total = 0\n", 1),
    ),
    "a decorated definition given without its decorator": (
        "class A:\n    @property\n    def size(self):\n        return 1\n",
        "    def size(self):\n        return 2\n",
        "class A:\n    @property\n    def size(self):\n        return 2\n",
    ),
    "javascript: an exported function and a class method": (
        "export function area(r) {\n  return Math.PI * r * r;\n}\n\nclass Box {\n  size() {\n    return 1;\n  }\n\n"
        "  name() {\n    return 'box';\n  }\n}\n",
        "// ... existing code ...\nclass Box {\n  // ...\n  name() {\n    return 'crate';\n  }\n}\n",
        "export function area(r) {\n  return Math.PI * r * r;\n}\n\nclass Box {\n  size() {\n    return 1;\n  }\n\n"
        "  name() {\n    return 'crate';\n  }\n}\n",
    ),
    "typescript: an arrow function const": (
        "const double = (x: number): number => x * 2;\n\nconst half = (x: number): number => x / 2;\n",
        "// ... existing code ...\nconst half = (x: number): number => x / 2.0;\n",
        "const double = (x: number): number => x * 2;\n\nconst half = (x: number): number => x / 2.0;\n",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_snippet_is_placed_by_the_definitions_it_names(case):
    text, snippet, expected = CASES[case]
    language = "typescript" if case.startswith("typescript") else "javascript" if "javascript" in case else "python"
    change = read_change(snippet)
    (merged,) = placements(text, change, language)
    assert merged.text == expected, merged.text
    assert merged.placed_by == "structure" and answers_alone(change, merged)


LEFT_TO_OTHERS = {
    "a whole file": (STATS, STATS.replace("- 1", "")),
    "a change that leaves out a definition between two it shows": (
        SHOP,
        "class Order:\n    def total(self):\n        return 1\n\n\ndef tax(amount):\n    return 0\n",
    ),
    "a definition that drops the file's export": (
        "export function f() {\n  return 1;\n}\n",
        "// ...\nfunction f() {\n  return 2;\n}\n",
    ),
    "a Python marker right under a function, at its indentation": (
        STATS,
        "def mean(values):\n    if not values:\n        return 0.0\n    total = 0\n# ... existing code ...\n",
    ),
    "a snippet that does not parse": (STATS, "# ...\ndef variance(values:\n    return 0\n"),
}


@pytest.mark.parametrize("case", LEFT_TO_OTHERS)
def test_what_structure_cannot_say_is_left_to_the_anchors_and_the_model(case):
    """No placement of structure's passes the checks: the whole file's own merge answers, or
    without a model nothing is applied."""
    text, snippet = LEFT_TO_OTHERS[case]
    language = "javascript" if "export" in case else "python"
    try:
        applied = apply_change(None, text, read_change(snippet), EditOptions(language=language), shortcut=True)
    except ChangeError as error:
        assert "only the model" in str(error)
    else:
        assert applied.result.stats.mode == "merge" and read_change(snippet).form == "file"


CHOICES = {
    "a method name in two classes, given without its class": (
        SHOP,
        "# ...\ndef total(self):\n    return len(self.items)\n",
        2,
    ),
    "a definition that renames one of the file's or is new": (
        SHOP,
        "# ...\ndef ship_cart(cart):\n    count = len(cart.items)\n    return math.ceil(count / 3)\n",
        2,
    ),
}


@pytest.mark.parametrize("case", CHOICES)
def test_where_structure_leaves_a_choice_it_gives_each_placement(case):
    text, snippet, count = CHOICES[case]
    found = placements(text, read_change(snippet), "python")
    assert len(found) == count and len({merged.text for merged in found}) == count


RUNS = """def runs(text):
    out, start, end = "", 0, 0
    for i, ch in enumerate(text):
        if ch == " ":
            end += 1
        else:
            if end - start > 2:
                out += "-" + ch
            elif end - start > 0:
                out += "_" + ch
            start = end = i + 1
    if end - start > 2:
        out += "-"
    elif end - start > 0:
        out += "__"
    return out
"""
FIX = """const fix = (text) => {
  let t = ''
  let c = 0
  for (let i = 0; i < text.length; i++) {
    if (text[i] == '  ') { c++ }
    else {
      if (c == 1) { t += '_' }
      t += text[i]
      c = 0
    }
  }
  if (c == 1) { t += '__' }
  return t
}

const other = (x) => {
  return x + 1
}
"""
GAME = """const diff = (game, guess) => {
  for (let i = 0; i < guess.length; i++) {
    game[i] -= guess[i]
    if (game[i] < 0)
      game[i] = -game[i];
      if (guess[i] != 0)
        game[i] -= guess[i]; }
  return game
}
"""
PIECES = {
    "a context line the file has twice, told apart by its indentation": (
        RUNS,
        '# ...\n        out += "-"\n    elif end - start > 0:\n        out += "_"\n    return out\n',
        RUNS.replace('out += "__"', 'out += "_"'),
    ),
    "two pieces of one definition, merged into it together": (
        FIX,
        "// ...\n  for (let i = 0; i < text.length; i++) {\n    if (text[i] == ' ') { c++ }\n// ...\n  }\n"
        "  if (c == 1) { t += '_' }\n  return t\n// ...\n",
        FIX.replace("'  '", "' '").replace("'__'", "'_'"),
    ),
    "lines the snippet writes a rewrite of in their place, the rest of the run deleted": (
        GAME,
        "// ...\n    if (game[i] < 0)\n      game[i] = -game[i]; }\n  return game\n// ...\n",
        GAME.replace(
            "      game[i] = -game[i];\n      if (guess[i] != 0)\n        game[i] -= guess[i]; }\n",
            "      game[i] = -game[i]; }\n",
        ),
    ),
}


@pytest.mark.parametrize("case", PIECES)
def test_pieces_of_a_body_are_placed_by_their_lines(case):
    """Diff-like pieces (changed lines with context, markers between, no definition's first
    line) applied alone, without a model, checks and all."""
    text, snippet, expected = PIECES[case]
    language = "python" if text is RUNS else "javascript"
    applied = apply_change(None, text, read_change(snippet), EditOptions(language=language), shortcut=True)
    assert applied.complete and applied.result.stats.mode == "structure"
    assert applied.result.text == expected, applied.result.text


def test_lines_merely_left_out_between_two_shown_are_not_deleted():
    """A snippet that writes new lines beside a run it leaves out (the docstring under a header)
    does not delete the run: nothing is applied without the model."""
    snippet = "def mean(values):\n    if not values:\n        return 0.0\n    total = 0\n    # ...\n"
    with pytest.raises(ChangeError, match="only the model"):
        apply_change(None, STATS, read_change(snippet), EditOptions(language="python"), shortcut=True)
