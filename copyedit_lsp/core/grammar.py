"""The program grammar: the GBNF in ``grammars/``, its instantiation for n lines, the digit mask."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache, lru_cache
from pathlib import Path

from .program import CHANGE_COPY_OPEN, COPY_OPEN

GRAMMAR_FILE = "copyedit.gbnf"
_NUM_RULE = re.compile(r"^num\s*::=.*$", re.MULTILINE)
_CNUM_RULE = re.compile(r"^cnum\s*::=.*$", re.MULTILINE)
_OP_RULE = re.compile(r"^op\s*::=.*$", re.MULTILINE)


def grammar_path() -> Path:
    """The GBNF file: inside the installed package, else the repository's ``grammars/``."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "grammars" / GRAMMAR_FILE, package.parent / "grammars" / GRAMMAR_FILE):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{GRAMMAR_FILE} is neither in {package / 'grammars'} nor in {package.parent / 'grammars'}")


@cache
def grammar_template() -> str:
    """The normative grammar, with a ``num`` rule that admits any positive number."""
    return grammar_path().read_text(encoding="utf-8")


def _digits(lo: int, hi: int) -> str:
    return f'"{lo}"' if lo == hi else f"[{lo}-{hi}]"


def _same_width(lo: str, hi: str) -> list[list[str]]:
    """Sequences of GBNF atoms that together admit exactly the numbers lo..hi of one width."""
    if not lo:
        return [[]]
    first, last, rest = int(lo[0]), int(hi[0]), len(lo) - 1
    if first == last:
        return [[_digits(first, first), *tail] for tail in _same_width(lo[1:], hi[1:])]
    low_full, high_full = lo[1:] == "0" * rest, hi[1:] == "9" * rest
    sequences = [] if low_full else [[_digits(first, first), *t] for t in _same_width(lo[1:], "9" * rest)]
    middle = (first if low_full else first + 1, last if high_full else last - 1)
    if middle[0] <= middle[1]:
        sequences.append([_digits(*middle), *["[0-9]"] * rest])
    if not high_full:
        sequences += [[_digits(last, last), *t] for t in _same_width("0" * rest, hi[1:])]
    return sequences


def range_rule(lo: int, hi: int) -> str:
    """A GBNF expression, built from digits and digit ranges, that admits exactly the numbers lo..hi."""
    if not 1 <= lo <= hi:
        raise ValueError(f"a line range is 1 <= lo <= hi, not {lo}..{hi}")
    sequences = []
    for width in range(len(str(lo)), len(str(hi)) + 1):
        sequences += _same_width(str(max(lo, 10 ** (width - 1))), str(min(hi, 10**width - 1)))
    return " | ".join(f"({' '.join(s)})" if len(s) > 1 else s[0] for s in sequences)


def number_rule(n: int) -> str:
    """A GBNF expression that admits exactly the numbers 1..n."""
    if n < 1:
        raise ValueError(f"a document has at least one line to copy, not {n}")
    return range_rule(1, n)


def instantiate(n_lines: int, n_change: int = 0) -> str:
    """The GBNF for programs over a document of ``n_lines`` lines (copies inside 1..n); with
    ``n_change`` change lines, for apply programs (change copies inside 1..m)."""
    grammar = _NUM_RULE.sub(lambda _: f"num ::= {number_rule(n_lines)}", grammar_template(), count=1)
    if n_change:
        grammar = _CNUM_RULE.sub(lambda _: f"cnum ::= {number_rule(n_change)}", grammar, count=1)
        grammar = _OP_RULE.sub("op       ::= copy | change-copy | gen", grammar, count=1)
    return grammar


def _reachable(prefix: int, width: int, lo: int, hi: int, skip: frozenset[int]) -> bool:
    """Whether some number in [lo, hi] and not in ``skip`` has the decimal ``prefix`` (``width``
    digits so far)."""
    for extra in range(len(str(hi)) - width + 1):
        scale = 10**extra
        low, high = max(prefix * scale, lo), min((prefix + 1) * scale - 1, hi)
        if low <= high and high - low + 1 > sum(low <= n <= high for n in skip):
            return True
    return False


def digit_choices(prefix: str, lo: int, hi: int, skip: frozenset[int] = frozenset()) -> tuple[str, bool]:
    """The digits that may follow ``prefix`` in a number in [lo, hi] and not in ``skip``, and
    whether it may end here.

    This is the decoder's token-level mask for line numbers (Qwen2 writes numbers one digit
    per token): ``lo`` is 1 for a copy's start and the start for its end; ``skip`` holds the
    lines no copy may hold (a change's elision markers).
    """
    value = int(prefix) if prefix else 0
    digits = "".join(
        c
        for c in "0123456789"
        if (prefix or c != "0") and _reachable(value * 10 + int(c), len(prefix) + 1, lo, hi, skip)
    )
    return digits, bool(prefix) and lo <= value <= hi and value not in skip


def copy_reach(markers: frozenset[int], start: int, last: int) -> int:
    """The last line a copy from ``start`` may hold: the line before the next of ``markers``,
    else ``last``."""
    return min((number for number in markers if number > start), default=last + 1) - 1


def copyable_from(markers: frozenset[int], first: int, last: int) -> bool:
    """Whether one of the lines ``first``..``last`` is not a marker (a copy of them may come)."""
    return last - first + 1 > sum(first <= number <= last for number in markers)


_RULE = re.compile(r"^([a-z0-9-]+)\s*::=.*$", re.MULTILINE)
_GEN_RULES = re.compile(r"gen|last-gen|line|eol|partial|s[0-9]+")  # s<k>: the states of a gen's line
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


@lru_cache(maxsize=32)  # asked for before every op of an edit, mostly with the same arguments
def op_grammar(
    n_lines: int,
    first: int = 1,
    *,
    after_gens: bool = False,
    n_change: int = 0,
    change_first: int = 1,
    markers: frozenset[int] = frozenset(),
) -> str:
    """GBNF for exactly one op of a program over ``n_lines`` lines: a copy of lines I..J with
    ``first`` <= I <= J <= n (none when ``first`` > n), a gen, or the program's end; with
    ``after_gens``, gens may come before that op (one request then runs to the next copy).  An
    apply program's change of ``n_change`` lines adds a change copy of lines I..J with
    ``change_first`` <= I <= J <= m holding none of the ``markers`` (none when no such line is left).

    The remote backend asks for one op per request, or with ``after_gens`` for the gens up to the
    next copy and that copy: a request must end where a copy closes, for its lines are spliced into
    the next request's prompt.  Unlike :func:`instantiate`, I <= J holds by the grammar: the
    start's digits walk a trie whose every complete start is followed by the range of ends it
    allows."""
    rules = {match[1]: match[0] for match in _RULE.finditer(grammar_template())}
    lines = [rule for name, rule in rules.items() if _GEN_RULES.fullmatch(name)]
    ends = ["last-gen", '"</program>"']
    if copyable_from(markers, change_first, n_change):
        ends.insert(0, "change-copy")
        lines += _copy_rules("change-copy", "k", CHANGE_COPY_OPEN, change_first, n_change, markers)
    if first <= n_lines:
        ends.insert(0, "copy")
        lines += _copy_rules("copy", "c", COPY_OPEN, first, n_lines, frozenset())
    root = f"gen+ ({' | '.join(ends)})?" if after_gens else "gen"
    return "\n".join([f"root ::= {' | '.join([root, *ends])}", *lines]) + "\n"


def _copy_rules(name: str, trie: str, opening: str, first: int, last: int, skip: frozenset[int]) -> list[str]:
    """The rules of a copy tag ``name`` (``opening`` I-J) with ``first`` <= I <= J <= ``last`` and
    none of ``skip`` in I..J: a trie of the start's digits (rules ``trie`` + the digits so far)."""
    rules = [f'{name} ::= "{_literal(opening)}" {trie}']
    prefixes = [""]
    while prefixes:
        prefix = prefixes.pop()
        digits, can_end = digit_choices(prefix, first, last, skip)
        alternatives = [f'"{d}" {trie}{prefix}{d}' for d in digits]
        if can_end:
            start = int(prefix)
            alternatives.append(f'"-" ({range_rule(start, copy_reach(skip, start, last))}) "\\"/>\\n"')
        rules.append(f"{trie}{prefix} ::= {' | '.join(alternatives)}")
        prefixes += [prefix + d for d in digits]
    return rules


@cache
def gen_rest_grammar() -> str:
    """GBNF for the rest of a gen body that must write at least one more line before ``</gen>``
    (the remote backend's continuation of a gen that so far changes nothing: see
    :func:`~copyedit_lsp.decode.edit.repeats_input`)."""
    rules = {match[1]: match[0] for match in _RULE.finditer(grammar_template())}
    lines = [rule for name, rule in rules.items() if _GEN_RULES.fullmatch(name) and name not in ("gen", "last-gen")]
    return "\n".join(['root ::= line+ "</gen>\\n" | line* partial "</gen>\\n"', *lines]) + "\n"


def literal_grammar(text: str) -> str:
    """GBNF that admits exactly ``text`` (a scripted op, for the remote backend's forced mode)."""
    return choice_grammar([text])


def choice_grammar(texts: Sequence[str]) -> str:
    """GBNF that admits exactly one of ``texts``."""
    return "root ::= " + " | ".join(f'"{_literal(text)}"' for text in texts) + "\n"


def _literal(text: str) -> str:
    return "".join(_ESCAPES.get(c, c if c >= " " else f"\\x{ord(c):02x}") for c in text)
