"""The copy check's judgement of one copied token, on logits made by hand, where copies may
resume after a gen, and the mask of unescaped openings in a gen (no model)."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from copyedit_lsp.core.program import Copy, Gen
from copyedit_lsp.decode.edit import COPY_CHECK, EditOptions, repeats_input
from copyedit_lsp.decode.prompt import SourceView
from copyedit_lsp.decode.tokens import UNESCAPED_OPENINGS, CopyCheck, OpeningMask, ProgramTokens, reopening
from copyedit_lsp.decode.writer import repeating, replaced_through

OPS = ProgramTokens(
    ops={"copy": [0, 1], "gen": [0, 2], "end": [3]},
    change_copy=[0, 4],
    digit={str(d): 10 + d for d in range(10)},
    dash=[20],
    copy_close=[21],
    gen_close=[3, 2],
    gen_close_starts=[3],
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


def test_a_gen_that_only_repeats_the_input_after_the_last_op_changes_nothing():
    """Such a gen cannot end: the selector that opens a gen on the line before its fix writes on."""
    view = SourceView.of(SOURCE)  # 8 lines: the import, two blanks, the def, 4 body lines
    assert repeats_input(view, "", 5)  # nothing written yet: the grammar wants a line anyway
    assert repeats_input(view, "    best = numbers[0]\n", 5)
    assert repeats_input(view, "    best = numbers[0]\n    for n in numbers:\n", 5)
    assert not repeats_input(view, "    best = numbers[0]\n", 6)  # line 5 again, written after it
    assert not repeats_input(view, "    best = numbers[0]\n    for n in numbers:\n        pass\n", 5)
    assert not repeats_input(view, "        best = max(best, n)\n", 7)  # the fix
    assert not repeats_input(view, "    # why\n    best = numbers[0]\n", 5)  # an insertion
    assert repeats_input(view, "    \n\n", 2)  # a line of whitespace repeats a blank line
    assert not repeats_input(view, "    best = numbers[0]\n    \n", 5)  # ... not a line of text
    assert not repeats_input(view, "def largest(numbers: List[int]) -> int:\n", 2)  # blank lines dropped
    # a gen that writes out every line to the input's end may end: the program is then complete
    assert not repeats_input(view, "        best = min(best, n)\n    return best\n", 7)
    assert replaced_through(view, "        best = min(best, n)\n    return best\n", None, first=7) == 8
    assert replaced_through(view, "\n\n", None, first=2) == 3  # blank lines repeated stand in for them


def test_a_program_caught_in_a_loop_of_gens_is_seen_at_the_third_round():
    """The loop a whole-file program fell into (two gens, again and again until the budget ran
    out) is caught once its run is written three times, for runs of up to four ops; twice is not a
    loop, nor are gens that differ or runs broken by a copy."""
    step, end, other = Gen("            i += 1\n"), Gen("            end = i\n"), Gen("    return x\n")
    assert repeating([other, step, end, step, end, step, end])
    assert not repeating([other, step, end, step, end, step])
    assert repeating([step, step, step]) and not repeating([step, step])
    assert repeating([Copy(1, 2), *[step, end, other, Gen("\n")] * 3])
    assert not repeating([*[step, end, other, Gen("\n"), Gen("x\n")] * 3])  # a run of five
    assert not repeating([step, Copy(3, 4), step, Copy(5, 6), step])
    assert not repeating([other, Gen("            i += 2\n"), end, step, end, step, end])


def test_a_gen_that_opens_by_repeating_the_input_rewrites_it_line_for_line():
    """Written on past its repeated lines (repeats_input), the gen's next line, where it resembles
    the input line in step with it, is that line rewritten: the copy after it starts after that line."""
    view = SourceView.of(SOURCE)
    fixed = "    for n in numbers:\n        best = max(best, n)\n"
    assert replaced_through(view, fixed, None, first=6) == 7
    assert replaced_through(view, fixed + "    return best\n", None, first=6) == 8
    # a new line in step with an unlike input line is an insertion: the input line stays to copy
    assert replaced_through(view, "    for n in numbers:\n        print(n)\n", None, first=6) == 6
    assert replaced_through(view, "from typing import List\n\n\ndef largest(numbers):\n", None, first=1) == 4
    # a gen that does not open with the input line in front of it makes no such claim
    assert replaced_through(view, "        best = max(best, n)\n", None, first=7) == 0


PIECES = [b"<", b"</", b"gen", b">", b"gen>", b">\n", b"co", b"py", b"copy", b"program", b"pro", b"gram>", b"ram",
          b"/", b"/program>", b"x<gen>y", b" <", b"a", b"\n", b"e", b"n", b"p", b"c", b"<copyright", b"</gen>\n"]  # fmt: skip


@settings(max_examples=800, deadline=None)
@given(st.lists(st.integers(0, len(PIECES) - 1), max_size=12))
def test_the_opening_mask_excludes_exactly_the_tokens_that_complete_an_unescaped_opening(tokens):
    """Against the definition, on bodies a gen could have written so far (no opening in them but
    <gen> where a line other than the first starts, which the decoder reads as the gen closed and
    another opened)."""
    mask = OpeningMask(PIECES)
    body = b"".join(PIECES[t] for t in tokens)
    assume(not any(_bare(body, 0, opening) for opening in UNESCAPED_OPENINGS))
    completes = [
        t for t, piece in enumerate(PIECES) if any(_bare(body + piece, len(body), o) for o in UNESCAPED_OPENINGS)
    ]
    assert mask.excluded(body) == completes


def _bare(text: bytes, end_after: int, opening: bytes) -> bool:
    """Whether ``opening`` occurs in ``text`` ending after ``end_after``, other than <gen> where a
    line other than the first starts."""
    return any(
        text.startswith(opening, at)
        and at + len(opening) > end_after
        and not (opening == b"<gen>" and at > 0 and text[at - 1 : at] == b"\n")
        for at in range(len(text))
    )


def test_reopening_is_found_only_where_a_line_starts():
    assert reopening(b"x = 1\n<gen>  y\n", 0) == 6
    assert reopening(b"<gen>\n", 0) == -1  # the gen's first line: it would close an empty gen
    assert reopening(b"x <gen>\n", 0) == -1 and reopening(b"a\n<gen>", 3) == -1
