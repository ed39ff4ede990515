"""One typed refusal: its kinds in the order a result is checked, each message written once in the
package, and what each front end maps it to."""

from pathlib import Path

import pytest

from copyedit_lsp.core.loss import Loss
from copyedit_lsp.decode.edit import CUTS, EditResult, EditStats
from copyedit_lsp.decode.refusal import KINDS, Refusal, check

PACKAGE = Path(__file__).parent.parent / "copyedit_lsp"
BEFORE = "def f(x):\n    return x\n"


def result(text: str, **fields) -> EditResult:
    return EditResult(None, text, EditStats(), **fields)


def test_every_refusal_message_is_written_once_in_the_package():
    """No string in the package opens with a refusal's message but the one in refusal.py."""
    sources = {path: path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py")}
    for kind, (_, _, opening) in KINDS.items():
        quoted = [f'"{opening[:30]}', f"'{opening[:30]}", f'f"{opening[:30]}']
        holders = [path.name for path, text in sources.items() if any(q in text for q in quoted)]
        assert holders == ["refusal.py"], (kind, holders)


LOSS = Loss(("g",), ((3, 4),), 2)
CASES = [
    ("cut_short", result("def f(x):\n", cut="max_new_tokens"), {}, CUTS["max_new_tokens"]),
    ("not_placed", result("def f(x):\n    return 2\n"), {"unplaced": ("part 1 ('y')",)}, "part 1 ('y')"),
    ("line_invented", result("def f(x):\n    return 2\n"), {"invented": ("z = 3",)}, "'z = 3'"),
    ("syntax_worse", result("def f(x:\n    return x\n"), {}, ""),
    ("unchanged", result(BEFORE), {}, ""),
    ("not_asked", result("def f(x):\n    return 2\n", mismatch="it lacks g"), {}, "it lacks g"),
    ("code_lost", result("def f(x):\n    return 2\n", loss=LOSS), {}, LOSS.describe()),
]


@pytest.mark.parametrize(("kind", "edited", "parts", "detail"), CASES, ids=[c[0] for c in CASES])
def test_each_kind_of_refusal_is_told_and_mapped(kind, edited, parts, detail):
    refusal = check(BEFORE, edited.text, edited, "python", **parts)
    assert refusal == Refusal(kind, detail)
    exit_status, code, opening = KINDS[kind]
    assert refusal.exit_status == exit_status and refusal.code == code and refusal.message.startswith(opening)


def test_the_first_reason_is_told_and_the_kinds_a_user_takes_are_passed():
    cut_and_lost = result("def f(x):\n", cut="repeated", loss=LOSS)
    assert check(BEFORE, cut_and_lost.text, cut_and_lost, "python").kind == "cut_short"
    taken = frozenset({"cut_short"})
    assert check(BEFORE, cut_and_lost.text, cut_and_lost, "python", syntax_guard=False, taken=taken).kind == "code_lost"
    everything = frozenset({"cut_short", "code_lost"})
    assert check(BEFORE, cut_and_lost.text, cut_and_lost, "python", syntax_guard=False, taken=everything) is None
    fine = result("def f(x):\n    return 2\n")
    assert check(BEFORE, fine.text, fine, "python") is None
