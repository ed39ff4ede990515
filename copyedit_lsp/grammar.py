"""The program grammar: the GBNF in ``grammars/``, its instantiation for n lines, the digit mask."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

GRAMMAR_FILE = "copyedit.gbnf"
_NUM_RULE = re.compile(r"^num\s*::=.*$", re.MULTILINE)


def grammar_path() -> Path:
    """The GBNF file: inside the installed package, else the repository's ``grammars/``."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "grammars" / GRAMMAR_FILE, here.parent / "grammars" / GRAMMAR_FILE):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{GRAMMAR_FILE} is neither in {here / 'grammars'} nor in {here.parent / 'grammars'}")


@cache
def grammar_template() -> str:
    """The normative grammar, with a ``num`` rule that admits any positive number."""
    return grammar_path().read_text(encoding="utf-8")


def _any_digits(count: int) -> str:
    """GBNF for exactly ``count`` digits 0-9."""
    return " ".join(["[0-9]"] * count)


def _up_to_digits(count: int) -> str:
    """GBNF for 0..``count`` digits 0-9, unambiguous (nested optionals)."""
    rule = ""
    for _ in range(count):
        rule = f"([0-9] {rule})?" if rule else "[0-9]?"
    return rule


def _digit_range(lo: int, hi: int) -> str:
    return f"[{lo}]" if lo == hi else f"[{lo}-{hi}]"


def number_rule(n: int) -> str:
    """A GBNF expression, built from digit ranges, that admits exactly the numbers 1..n."""
    if n < 1:
        raise ValueError(f"a document has at least one line to copy, not {n}")
    digits = str(n)
    width = len(digits)
    alternatives = []
    if width > 1:  # every number shorter than n
        alternatives.append(f"[1-9] {_up_to_digits(width - 2)}".strip())
    for i, d in enumerate(map(int, digits)):  # same width: equal prefix, then a smaller digit
        low = 1 if i == 0 else 0
        if d > low:
            piece = " ".join(filter(None, [f'"{digits[:i]}"' if i else "", _digit_range(low, d - 1), _any_digits(width - i - 1)]))
            alternatives.append(piece)
    alternatives.append(f'"{digits}"')
    return " | ".join(f"({a})" if " " in a else a for a in alternatives)


def instantiate(n_lines: int) -> str:
    """The GBNF for programs over a document of ``n_lines`` lines (copies inside 1..n)."""
    return _NUM_RULE.sub(lambda _: f"num ::= {number_rule(n_lines)}", grammar_template(), count=1)


def _reachable(prefix: int, width: int, lo: int, hi: int) -> bool:
    """Whether some number in [lo, hi] has the decimal ``prefix`` (``width`` digits so far)."""
    for extra in range(len(str(hi)) - width + 1):
        scale = 10**extra
        if prefix * scale <= hi and (prefix + 1) * scale - 1 >= lo:
            return True
    return False


def digit_choices(prefix: str, lo: int, hi: int) -> tuple[str, bool]:
    """The digits that may follow ``prefix`` in a number in [lo, hi], and whether it may end here.

    This is the decoder's token-level mask for line numbers (Qwen2 writes numbers one digit
    per token): ``lo`` is 1 for a copy's start and the start for its end.
    """
    value = int(prefix) if prefix else 0
    digits = "".join(
        c
        for c in "0123456789"
        if (prefix or c != "0") and _reachable(value * 10 + int(c), len(prefix) + 1, lo, hi)
    )
    return digits, bool(prefix) and lo <= value <= hi
