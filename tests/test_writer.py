"""The program writer both decoders drive: the policy of writing a program, with no model."""

import pytest

from copyedit_lsp.core.program import ChangeCopy, Copy, Gen, Program, ProgramError
from copyedit_lsp.decode.writer import ProgramWriter

SOURCE = "def area(w, h):\n    result = w * h\n    return result\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n"


def test_ordered_copies_start_after_what_was_copied():
    writer = ProgramWriter(SOURCE)
    assert writer.first == 1 and writer.lines == 7
    writer.copy(Copy(1, 2))
    assert writer.first == 3
    assert ProgramWriter(SOURCE, ordered=False).first == 1


def test_a_gen_opened_at_a_doubted_line_stands_in_for_it():
    writer = ProgramWriter(SOURCE)
    writer.copy(Copy(1, 1))
    writer.doubt(2)
    assert writer.first == 2
    assert not writer.gen("    result = w * h * 1\n", doubted=2)
    assert writer.first == 3  # the gen rewrote line 2: the next copy starts at 3
    writer.copy(Copy(3, 7))
    assert writer.text() == SOURCE.replace("w * h\n", "w * h * 1\n")
    assert writer.program() == Program((Copy(1, 1), Gen("    result = w * h * 1\n"), Copy(3, 7)))


def test_a_gen_inserted_without_a_doubt_moves_nothing():
    writer = ProgramWriter(SOURCE)
    writer.copy(Copy(1, 3))
    assert not writer.gen("# areas and perimeters\n")
    assert writer.first == 4


def test_a_gen_that_writes_out_the_last_line_ends_the_program():
    writer = ProgramWriter(SOURCE)
    writer.copy(Copy(1, 5))
    assert writer.gen("def perimeter(w, h):\n    return 2 * w + 2 * h\n")
    assert writer.cut is None  # complete, not cut short
    unordered = ProgramWriter(SOURCE, ordered=False)
    unordered.copy(Copy(1, 5))
    assert not unordered.gen("def perimeter(w, h):\n    return 2 * w + 2 * h\n")


def test_a_loop_of_gens_is_cut_as_repeated():
    writer = ProgramWriter(SOURCE)
    writer.copy(Copy(1, 2))
    ends = [writer.gen(text) for text in ["    i += 1\n", "    end = i\n"] * 3]
    assert ends == [False] * 5 + [True] and writer.cut == "repeated"


def test_a_reopened_gen_that_says_the_same_again_is_not_taken():
    writer = ProgramWriter(SOURCE)
    writer.copy(Copy(1, 2))
    writer.gen("    return w * h\n")
    assert not writer.says_again("    return result\n") and writer.cut is None
    assert writer.says_again("    return w * h\n") and writer.cut == "repeated"
    assert len(writer.ops) == 2


def test_a_script_is_followed_op_by_op_and_judged_by_nothing():
    script = Program((Copy(1, 2), Gen("    return w * h\n"), Gen("    return w * h\n"), Gen("x\n"), Copy(4, 7)))
    writer = ProgramWriter(SOURCE, script=script)
    assert writer.goal() == Copy(1, 2) and len(writer.rest()) == 5
    writer.copy(Copy(1, 2))
    for _ in range(3):
        assert not writer.gen(writer.goal().text)
    assert writer.goal() == Copy(4, 7) and writer.cut is None
    writer.copy(Copy(4, 7))
    assert writer.goal() is None and writer.rest() == ()
    with pytest.raises(ProgramError):
        ProgramWriter(SOURCE, script=Program((Copy(1, 9),)))


def test_an_apply_program_copies_the_change_in_order_and_ends_only_when_both_are_written_out():
    change = ("def perimeter(w, h):\n", "    return 2 * w + 2 * h\n")
    writer = ProgramWriter(SOURCE, change=change)
    assert writer.change_left and writer.change_after == 1
    writer.copy(Copy(1, 5))
    writer.copy(ChangeCopy(1, 2))
    assert writer.first == 6 and writer.change_after == 3 and not writer.change_left
    assert writer.text() == SOURCE.replace("2 * (w + h)", "2 * w + 2 * h")
    early = ProgramWriter(SOURCE, change=change)
    early.copy(Copy(1, 5))
    assert not early.gen("def perimeter(w, h):\n    return 2 * (w + h)\n")  # the file is written out, the change is not
    with pytest.raises(ProgramError, match="change lines 1-3 is outside 1..2"):
        ProgramWriter(SOURCE, script=Program((ChangeCopy(1, 3),)), change=change)
