"""The copy check's judgement of one copied token, on logits made by hand, and where copies may
resume after a gen (no model)."""

import math

import numpy as np
import pytest

from copyedit_lsp.edit import COPY_CHECK, EditOptions, replaced_through
from copyedit_lsp.prompt import SourceView
from copyedit_lsp.tokens import CopyCheck, ProgramTokens

OPS = ProgramTokens(
    ops={"copy": [0, 1], "gen": [0, 2], "end": [3]},
    digit={str(d): 10 + d for d in range(10)},
    dash=[20],
    copy_close=[21],
    gen_close=[3, 2],
    newline=[22],
)


def logits(probabilities: dict[int, float], size: int = 40) -> np.ndarray:
    """Logits whose softmax gives ``probabilities`` (the rest of the mass spread over the other tokens)."""
    rest = (1 - sum(probabilities.values())) / (size - len(probabilities))
    return np.log(np.array([probabilities.get(i, rest) for i in range(size)], dtype=np.float32))


def test_a_token_is_doubted_only_when_unlikely_and_not_the_first_choice():
    check = CopyCheck.of(EditOptions(copy_check=0.05), OPS)
    assert check is not None and check.masked == [0, 3]
    assert check.doubts(logits({30: 0.9, 31: 0.01}), 31)
    assert not check.doubts(logits({30: 0.9, 31: 0.01}), 30)  # the first choice
    assert not check.doubts(logits({30: 0.5, 31: 0.2}), 31)  # likely enough
    assert check.doubts(logits({30: 0.5, 31: 0.04}), 31)
    assert not check.doubts(logits({30: 0.03}), 30)  # unlikely, but the first choice of a flat distribution


def test_the_openings_of_ops_do_not_count_against_a_copied_token():
    """At a line's start the model may well expect the next op (``<``); what it expects of the
    copied text is judged without the ops."""
    check = CopyCheck.of(EditOptions(copy_check=0.05), OPS)
    at_line_start = logits({0: 0.95, 31: 0.04, 32: 0.0005})
    assert not check.doubts(at_line_start, 31)  # first choice once the op's opening is left out
    assert check.doubts(at_line_start, 32)
    assert not check.doubts(at_line_start, 0)  # copied text that itself starts like an op


def test_the_check_is_on_by_default_and_off_where_nothing_is_spliced():
    assert CopyCheck.of(EditOptions(), OPS).log_threshold == pytest.approx(math.log(COPY_CHECK))
    assert CopyCheck.of(EditOptions(copy_check=0.0), OPS) is None
    assert CopyCheck.of(EditOptions(splice="none"), OPS) is None
    with pytest.raises(ValueError, match="copy_check"):
        EditOptions(copy_check=1.5).check(["program"], "default")


SOURCE = (
    "from typing import List\n"
    "\n"
    "\n"
    "def largest(numbers: List[int]) -> int:\n"
    "    best = numbers[0]\n"
    "    for n in numbers:\n"
    "        best = min(best, n)\n"
    "    return best\n"
)


def test_a_gen_that_writes_out_a_distinct_input_line_stands_in_for_it():
    """Regenerating the def line after copying the import is no reason to copy the def line again."""
    view = SourceView.of(SOURCE)
    assert view.distinct_line("def largest(numbers: List[int]) -> int:\n") == 4
    assert view.distinct_line("\n") is None  # blank lines are not distinct
    repeated = SourceView.of("total = total + 1\ntotal = total + 1\nreturn total\n")
    assert repeated.distinct_line("total = total + 1\n") is None  # two input lines are equal to it
    assert repeated.distinct_line("return total\n") == 3
    assert SourceView.of("x = 1\nreturn x\n").distinct_line("return x\n") is None  # too short to tell
    assert replaced_through(view, "def largest(numbers: List[int]) -> int:\n", None, first=2) == 4  # past blanks
    assert replaced_through(view, "    # a new comment\n    best = numbers[0]\n", None, first=5) == 5
    # a line moved up: written out where line 5 was, so line 5 must still be copyable after it
    assert replaced_through(view, "    for n in numbers:\n", None, first=5) == 0


def test_a_gen_opened_at_a_doubted_line_replaces_it_only_if_it_resembles_it():
    view = SourceView.of(SOURCE)
    assert replaced_through(view, "        best = max(best, n)\n", 7, first=7) == 7  # the line, rewritten
    assert replaced_through(view, "        print(n)\n", 7, first=7) == 0  # a line put before it
    assert replaced_through(view, "        best = max(best, n)\n", None, first=7) == 0  # no doubt, no guess
