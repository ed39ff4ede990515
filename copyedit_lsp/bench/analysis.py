"""Analyses of edit data that need no model: copy ceiling, oracle exact match, span noise."""

from __future__ import annotations

import difflib
import random
from collections.abc import Sequence
from dataclasses import dataclass

from ..common.datasets import EditItem
from ..core.program import Copy, Program
from ..core.resolver import oracle_program, resolve, split_lines

NOISE_EPSILONS = (0, 1, 2, 3, 5)


@dataclass(frozen=True)
class Ceiling:
    """Share of the after-text covered by line-level copies, per-item mean and pooled."""

    items: int
    chars_mean: float
    chars_pooled: float
    tokens_mean: float
    tokens_pooled: float


def _copied_lines(before: str, after: str) -> tuple[list[str], list[bool]]:
    """The after-text's lines and, for each, whether a line diff copies it from the before-text."""
    a, b = split_lines(before), split_lines(after)
    copied = [False] * len(b)
    for block in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
        copied[block.b : block.b + block.size] = [True] * block.size
    return b, copied


def ceiling(items: Sequence[EditItem]) -> Ceiling:
    """The line-level copy ceiling by characters and by whitespace-separated tokens."""
    sums = {"chars": [0, 0], "tokens": [0, 0]}
    ratios: dict[str, list[float]] = {"chars": [], "tokens": []}
    for item in items:
        lines, copied = _copied_lines(item.before, item.after)
        for unit, measure in (("chars", len), ("tokens", lambda line: len(line.split()))):
            total = sum(map(measure, lines))
            kept = sum(measure(line) for line, c in zip(lines, copied, strict=False) if c)
            sums[unit][0] += kept
            sums[unit][1] += total
            if total:
                ratios[unit].append(kept / total)
    return Ceiling(
        items=len(items),
        chars_mean=_mean(ratios["chars"]),
        chars_pooled=_share(*sums["chars"]),
        tokens_mean=_mean(ratios["tokens"]),
        tokens_pooled=_share(*sums["tokens"]),
    )


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def oracle_exact(items: Sequence[EditItem]) -> tuple[int, int]:
    """How many items ``resolve(oracle_program(b, a), b)`` reproduces exactly, out of how many."""
    exact = sum(resolve(oracle_program(i.before, i.after), i.before) == i.after for i in items)
    return exact, len(items)


def perturb(program: Program, n_lines: int, epsilon: int, rng: random.Random) -> Program:
    """Move each copy's start and end by a random offset in [-epsilon, epsilon], kept valid."""

    def moved(line: int) -> int:
        return min(max(line + rng.randint(-epsilon, epsilon), 1), n_lines)

    ops = []
    for op in program.ops:
        if isinstance(op, Copy):
            start, end = sorted((moved(op.start), moved(op.end)))
            op = Copy(start, end)
        ops.append(op)
    return Program(tuple(ops))


def noise(items: Sequence[EditItem], epsilons: Sequence[int] = NOISE_EPSILONS, seed: int = 0) -> dict[int, float]:
    """Exact-match rate of oracle programs whose copy spans are perturbed by ±epsilon lines."""
    rates = {}
    for epsilon in epsilons:
        rng = random.Random(seed)
        exact = 0
        for item in items:
            n = len(split_lines(item.before))
            program = perturb(oracle_program(item.before, item.after), n, epsilon, rng)
            exact += resolve(program, item.before) == item.after
        rates[epsilon] = _share(exact, len(items))
    return rates
