"""The program's text form: parsing, printing, escaping, strict errors."""

from collections import Counter

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from quick import examples
from strategies import FRAGMENTS, programs

from copyedit_lsp.core.program import RESERVED, Copy, Gen, Program, ProgramError, escape, parse_program, unescape

EXAMPLE = '<program>\n<copy lines="1-3"/>\n<gen>\n    return x + 1\n</gen>\n<copy lines="5-9"/>\n</program>'


def test_parse_example():
    program = parse_program(EXAMPLE)
    assert program.ops == (Copy(1, 3), Gen("    return x + 1\n"), Copy(5, 9))
    assert program.to_text() == EXAMPLE


def test_last_gen_may_end_without_line_break():
    program = Program((Copy(1, 2), Gen("tail")))
    assert program.to_text().endswith("<gen>\ntail</gen>\n</program>")
    assert parse_program(program.to_text()) == program


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", "'<program>\\n'"),
        ("<program>\n", "'<copy', '<gen>' or '</program>'"),
        ('<program>\n<copy lines="0-3"/>\n</program>', "line number"),
        ('<program>\n<copy lines="01-3"/>\n</program>', "line number"),
        ('<program>\n<copy lines="4-3"/>\n</program>', "start 4 > end 3"),
        ('<program>\n<copy lines="1:3"/>\n</program>', "expected '-'"),
        ('<program>\n<copy lines="1-3">\n</program>', "'\"/>\\n'"),
        ("<program>\n<gen>\n</gen>\n</program>", "empty gen"),
        ("<program>\n<gen>\nx\n</program>", "without '</gen>'"),
        ('<program>\n<gen>\nx</gen>\n<copy lines="1-1"/>\n</program>', "only the last gen"),
        ("<program>\n<gen>\nx\n</gen></program>", "'</gen>\\n'"),
        ("<program>\n</program>\n", "text after"),
    ],
)
def test_malformed_programs_name_what_was_expected(text, expected):
    with pytest.raises(ProgramError) as error:
        parse_program(text)
    assert expected in str(error.value)
    assert "offset" in str(error.value)


def test_range_checked_against_line_count():
    text = '<program>\n<copy lines="2-7"/>\n</program>'
    assert parse_program(text, n_lines=7) == Program((Copy(2, 7),))
    with pytest.raises(ProgramError, match="op 1"):
        parse_program(text, n_lines=6)


def test_reserved_strings_are_escaped_in_gens():
    program = Program((Gen("".join(f"{r}\n" for r in RESERVED)),))
    text = program.to_text()
    body = text[len("<program>\n<gen>\n") : -len("</gen>\n</program>")]
    assert not any(r in body for r in RESERVED)
    assert parse_program(text) == program


@pytest.mark.parametrize("opening", ["<copy", "<gen>", "<program>", "</program>"])
def test_an_unescaped_opening_in_a_gen_is_malformed(opening):
    """A gen's body is escaped text: an opening left bare in it is a model opening an op inside
    the gen, and the escaped opening is the text itself."""
    with pytest.raises(ProgramError, match="unescaped"):
        parse_program(f"<program>\n<gen>\n  x {opening}\n</gen>\n</program>")
    escaped = parse_program(f"<program>\n<gen>\n  x {escape(opening)}\n</gen>\n</program>")
    assert escaped == Program((Gen(f"  x {opening}\n"),))


@settings(max_examples=examples(3000), deadline=None)
@given(programs())
def test_print_parse_round_trip(program):
    assert parse_program(program.to_text()) == program


@settings(max_examples=examples(2000), deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4))).map("".join))
def test_escape_is_reversible_and_hides_reserved_strings(text):
    escaped = escape(text)
    assert unescape(escaped) == text
    assert not any(r in escaped for r in RESERVED)
    assert escaped.count("\n") == text.count("\n") and escaped.count("\r") == text.count("\r")


@st.composite
def damaged_programs(draw):
    """Valid program texts with a random slice deleted, duplicated or replaced."""
    text = draw(programs()).to_text()
    i = draw(st.integers(0, len(text)))
    j = draw(st.integers(i, min(len(text), i + 12)))
    filler = draw(
        st.one_of(
            st.sampled_from(['"', "-", "0", "9", "<", "/>", "\n", "</gen>\n", "<gen>\n", "<copy"]), st.text(max_size=3)
        )
    )
    return draw(st.sampled_from([text[:i] + text[j:], text[:j] + text[i:], text[:i] + filler + text[j:]]))


def test_malformed_programs_raise_only_program_error():
    """Damaged program texts and random text: each is refused with a ProgramError or accepted, and an
    accepted one is a program in range whose printed text is exactly the text read.  Some of both
    happen (a run where everything is refused would prove nothing of what is accepted)."""
    outcomes = Counter()

    @settings(max_examples=examples(3000), deadline=None)
    @given(st.one_of(damaged_programs(), st.text(max_size=40)))
    def check(text):
        try:
            program = parse_program(text, n_lines=150)
        except ProgramError:
            outcomes["refused"] += 1
            return
        outcomes["accepted"] += 1
        event("accepted")
        assert program.to_text() == text
        assert parse_program(program.to_text()) == program
        assert all(1 <= op.start <= op.end <= 150 for op in program.ops if isinstance(op, Copy))

    check()
    print(dict(outcomes))
    assert outcomes["accepted"] >= 30 and outcomes["refused"] >= 30, outcomes
