"""The GBNF grammar: llama.cpp accepts it for every n, and it agrees with the parser."""

import ctypes
import re

import llama_cpp.llama_cpp as llama
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from quick import examples
from strategies import programs
from test_program import damaged_programs

from copyedit_lsp.core.grammar import (
    digit_choices,
    gen_rest_grammar,
    grammar_template,
    instantiate,
    literal_grammar,
    number_rule,
    op_grammar,
    range_rule,
)
from copyedit_lsp.core.program import ProgramError, parse_program
from copyedit_lsp.decode.llama_model import Vocabulary

SIZES = [1, 9, 10, 99, 100, 347, 5000, 100000]


class GbnfChecker:
    """Runs text through llama.cpp's own grammar sampler, token by token, with a model's vocabulary."""

    def __init__(self, model_path):
        self.vocabulary = Vocabulary(model_path)
        self.vocab = self.vocabulary.vocab
        self.eos = llama.llama_vocab_eos(self.vocab)

    def sampler(self, gbnf: str):
        return llama.llama_sampler_init_grammar(self.vocab, gbnf.encode(), b"root")

    def tokenize(self, text: str) -> list[int]:
        return self.vocabulary.tokenize(text, special=True)

    def round_trips(self, text: str) -> bool:
        """Whether the vocabulary spells ``text`` exactly (a tokenizer may drop bytes it lacks) and
        ``text`` has no NUL (llama.cpp's grammar reads a NUL as the end of a token's text)."""
        pieces = [self.vocabulary.piece(token) for token in self.tokenize(text)]
        return b"".join(pieces) == text.encode() and "\x00" not in text

    def accepts(self, gbnf: str, text: str) -> bool:
        sampler = self.sampler(gbnf)
        assert sampler, "llama.cpp rejected the grammar"
        try:
            for token in self.tokenize(text):
                if not self._allowed(sampler, token):
                    return False
                llama.llama_sampler_accept(sampler, token)
            return self._allowed(sampler, self.eos)  # end of text only where the grammar can end
        finally:
            llama.llama_sampler_free(sampler)

    @staticmethod
    def _allowed(sampler, token: int) -> bool:
        data = (llama.llama_token_data * 1)(llama.llama_token_data(token, 0.0, 0.0))
        candidates = llama.llama_token_data_array(data, 1, -1, False)
        llama.llama_sampler_apply(sampler, ctypes.byref(candidates))
        return data[0].logit != float("-inf")


@pytest.fixture(scope="module")
def gbnf(tiny_model_path):
    return GbnfChecker(tiny_model_path)


def test_template_is_valid_gbnf_on_its_own(gbnf):
    assert gbnf.accepts(grammar_template(), '<program>\n<copy lines="123456789-987654321"/>\n</program>')


@pytest.mark.parametrize("n", SIZES)
def test_instantiated_grammar_loads_and_bounds_line_numbers(gbnf, n):
    grammar = instantiate(n)
    assert len(grammar) < len(grammar_template()) + 400  # digit ranges, not an n-way alternation
    sampler = gbnf.sampler(grammar)
    assert sampler
    llama.llama_sampler_free(sampler)

    def copy(i, j):
        return f'<program>\n<copy lines="{i}-{j}"/>\n</program>'

    assert gbnf.accepts(grammar, copy(1, n))
    assert gbnf.accepts(grammar, copy(n, n))
    assert not gbnf.accepts(grammar, copy(1, n + 1))
    assert not gbnf.accepts(grammar, copy(0, 1))
    assert not gbnf.accepts(grammar, copy("01", 1))
    if n >= 10:
        assert gbnf.accepts(grammar, copy(n // 3 + 1, n - 1))


@pytest.mark.parametrize(
    "text",
    [
        "<program>\n</program>",
        '<program>\n<copy lines="2-5"/>\n<gen>\n    return x</gen>\n</program>',
        "<program>\n<gen>\na\r\nb\rc\n</gen>\n</program>",
        "<program>\n<gen>\n</gen\n<<\\/gen>\n</gen>\n</program>",
        "<program>\n<gen>\nx</gen>\n</program>",
        "<program>\n<gen>\nx</gen>\n<gen>\ny\n</gen>\n</program>",
        "<program>\n<gen>\n\n</gen>\n</program>",
        "<program>\n<gen>\n</gen>\n</program>",
        "<program>\n<gen>\nx\n</gen>\n</program>\n",
        '<program>\n<copy lines="3"/>\n</program>',
        "<program>\n<gen>\na </gen> b\n</gen>\n</program>",
        "<program>\n<gen>\n<gen>\nx\n</gen>\n</program>",
        '<program>\n<gen>\n  <copy lines="1-2"/>\n</gen>\n</program>',
        "<program>\n<gen>\nx </program>\n</gen>\n</program>",
        "<program>\n<gen>\n<<program>\n</gen>\n</program>",
        "<program>\n<gen>\n<\\gen> <cop <progra> </prog <gen <ge>\n</gen>\n</program>",
    ],
)
def test_grammar_and_parser_agree_on_examples(gbnf, text):
    assert gbnf.accepts(instantiate(10), text) == _parses(text, 10)


def _parses(text: str, n: int) -> bool | None:
    """True if the parser accepts, False if it rejects, None if it accepts once every copy's
    start and end are put in order: start <= end is the one rule a compact grammar cannot
    state (see copyedit.gbnf)."""

    def accepted(program_text: str) -> bool:
        try:
            parse_program(program_text, n_lines=n)
        except ProgramError:
            return False
        return True

    if accepted(text):
        return True
    ordered = re.sub(
        r'<copy lines="([1-9][0-9]*)-([1-9][0-9]*)"',
        lambda m: '<copy lines="{}-{}"'.format(*sorted(map(int, m.groups()))),
        text,
    )
    return None if ordered != text and accepted(ordered) else False


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(programs().map(lambda p: p.to_text()), damaged_programs()))
def test_grammar_and_parser_agree_on_generated_programs(gbnf, text):
    assume(gbnf.round_trips(text))
    expected = _parses(text, 150)
    accepted = gbnf.accepts(instantiate(150), text)
    if expected is None:  # only start > end is wrong: the grammar admits it, the parser does not
        assert accepted
    else:
        assert accepted == expected


@pytest.mark.parametrize("n", SIZES)
def test_digit_mask_agrees_with_number_rule(n):
    rule = re.compile("(?:" + number_rule(n).replace('"', "").replace(" ", "") + ")$")
    samples = {1, 2, n, n - 1, n + 1, n // 2, n // 7 + 3, 10, 99, 100, 1000}
    for value in sorted(v for v in samples if v >= 1):
        text = str(value)
        reachable = all(text[k] in digit_choices(text[:k], 1, n)[0] for k in range(len(text)))
        complete = reachable and digit_choices(text, 1, n)[1]
        assert complete == bool(rule.match(text)) == (1 <= value <= n), value


def test_digit_mask_keeps_end_at_or_after_start():
    assert digit_choices("", 120, 347) == ("123", False)
    assert digit_choices("1", 120, 347) == ("23456789", False)  # 120..199 only
    assert digit_choices("12", 120, 347) == ("0123456789", False)
    assert digit_choices("11", 120, 347) == ("", False)
    assert digit_choices("34", 120, 347) == ("01234567", False)


@given(st.integers(1, 300), st.integers(0, 300), st.frozensets(st.integers(1, 300), max_size=12))
def test_digit_mask_writes_exactly_the_numbers_in_range_but_the_skipped(lo, extra, skip):
    hi = lo + extra

    def written(prefix: str) -> set[int]:
        digits, can_end = digit_choices(prefix, lo, hi, skip)
        found = {int(prefix)} if can_end else set()
        return found.union(*(written(prefix + d) for d in digits))

    assert written("") == set(range(lo, hi + 1)) - skip


def _as_regex(rule: str) -> re.Pattern:
    return re.compile("(?:" + rule.replace('"', "").replace(" ", "") + ")")


@given(st.integers(1, 10**6), st.integers(0, 10**6), st.integers(0, 2 * 10**6))
def test_range_rule_admits_exactly_its_range(lo, extra, probe):
    hi = lo + extra
    rule = _as_regex(range_rule(lo, hi))
    for value in {lo - 1, lo, hi, hi + 1, probe, lo + extra // 2, 10 ** len(str(lo)), 10 ** len(str(lo)) - 1}:
        assert bool(rule.fullmatch(str(value))) == (lo <= value <= hi), value


def test_range_rule_refuses_an_empty_range():
    with pytest.raises(ValueError):
        range_rule(5, 4)


@pytest.mark.parametrize("n, first", [(1, 1), (12, 3), (150, 1), (347, 120), (40, 41)])
def test_op_grammar_admits_exactly_one_op_with_ordered_lines(gbnf, n, first):
    grammar = op_grammar(n, first)

    def copy(i, j):
        return f'<copy lines="{i}-{j}"/>\n'

    assert gbnf.accepts(grammar, "<gen>\nx = 1\n</gen>\n")
    assert gbnf.accepts(grammar, "<gen>\nlast line</gen>\n")
    assert gbnf.accepts(grammar, "</program>")
    assert not gbnf.accepts(grammar, "<gen>\nx\n</gen>\n</program>")  # one op, no more
    assert not gbnf.accepts(grammar, "<program>\n")
    if first > n:
        assert not gbnf.accepts(grammar, copy(n, n))
        return
    assert gbnf.accepts(grammar, copy(first, n)) and gbnf.accepts(grammar, copy(n, n))
    assert gbnf.accepts(grammar, copy(first, first))
    assert not gbnf.accepts(grammar, copy(first, n + 1))
    assert not gbnf.accepts(grammar, copy(first, n) + copy(n, n))
    if n > first:
        assert not gbnf.accepts(grammar, copy(n, n - 1))  # the end is never before the start
        assert gbnf.accepts(grammar, copy(first + 1, n))
    if first > 1:
        assert not gbnf.accepts(grammar, copy(first - 1, n))


@pytest.mark.parametrize("n, first", [(12, 3), (150, 120)])
def test_op_grammar_after_gens_runs_to_the_next_copy(gbnf, n, first):
    """With ``after_gens`` a request may write gens and then one op: a copy ends it."""
    grammar = op_grammar(n, first, after_gens=True)
    copy = f'<copy lines="{first}-{n}"/>\n'
    assert gbnf.accepts(grammar, copy)
    assert gbnf.accepts(grammar, "<gen>\nx = 1\n</gen>\n")
    assert gbnf.accepts(grammar, "<gen>\nx = 1\n</gen>\n" + copy)
    assert gbnf.accepts(grammar, "<gen>\na\n</gen>\n<gen>\nb\n</gen>\n</program>")
    assert gbnf.accepts(grammar, "<gen>\na\n</gen>\n<gen>\nlast line</gen>\n")
    assert not gbnf.accepts(grammar, copy + "<gen>\nx\n</gen>\n")  # a copy ends the request
    assert not gbnf.accepts(grammar, copy + copy)
    assert not gbnf.accepts(grammar, f'<gen>\nx\n</gen>\n<copy lines="{first - 1}-{n}"/>\n')


@pytest.mark.parametrize("first, markers", [(1, {1, 5}), (3, {5}), (2, {2, 4, 5, 12}), (6, set())])
def test_op_grammar_copies_an_apply_programs_change_forward_between_its_markers(gbnf, first, markers):
    """An apply program's request admits a change copy I..J with ``first`` <= I <= J <= 12 holding
    no marker, beside the file's copies."""
    grammar = op_grammar(40, 7, n_change=12, change_first=first, markers=frozenset(markers))

    def copy(i, j):
        return f'<copy change="{i}-{j}"/>\n'

    assert gbnf.accepts(grammar, '<copy lines="7-40"/>\n') and not gbnf.accepts(grammar, '<copy lines="6-6"/>\n')
    for start in range(1, 14):
        for end in range(start, 14):
            allowed = first <= start and end <= 12 and not any(start <= m <= end for m in markers)
            assert gbnf.accepts(grammar, copy(start, end)) == allowed, (start, end)
    assert not gbnf.accepts(grammar, copy(first + 1, first))


def test_op_grammar_has_no_change_copy_once_only_markers_are_left(gbnf):
    grammar = op_grammar(4, 1, after_gens=True, n_change=3, change_first=3, markers=frozenset({3}))
    assert "change-copy" not in grammar and gbnf.accepts(grammar, '<gen>\nx\n</gen>\n<copy lines="1-4"/>\n')
    assert not gbnf.accepts(grammar, '<copy change="3-3"/>\n')


def test_the_rest_of_a_gen_is_at_least_one_more_line_then_its_end(gbnf):
    grammar = gen_rest_grammar()
    assert gbnf.accepts(grammar, "    return a\n</gen>\n")
    assert gbnf.accepts(grammar, "x = 1\n\ny = 2\n</gen>\n")
    assert gbnf.accepts(grammar, "    <div>\n</gen>\n")
    assert gbnf.accepts(grammar, "last line</gen>\n")  # a document without a final newline
    assert not gbnf.accepts(grammar, "</gen>\n")  # the gen cannot end where it stands
    assert not gbnf.accepts(grammar, "x = 1\n")  # nor go on without its end
    assert not gbnf.accepts(grammar, "x = 1\n</gen>\n<copy")
    assert not gbnf.accepts(grammar, "a = '</gen>'\n</gen>\n")  # a line never holds the end tag


@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=40))
@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_literal_grammar_admits_exactly_its_text(gbnf, text):
    assume(text and gbnf.round_trips(text))
    grammar = literal_grammar(text)
    assert gbnf.accepts(grammar, text)
    assert not gbnf.accepts(grammar, text + "x")
    assert not gbnf.accepts(grammar, text[:-1] + ("y" if text[-1] != "y" else "z"))
