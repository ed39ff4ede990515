"""Self-distillation: the base model's own greedy rewrites of real code, kept where they parse.

Each kept rewrite becomes an edit whose target is its oracle program, so the selector learns to
write, as a program, what the model would write anyway.  Rewrites run in ``lookup`` mode (the
greedy rewrite, drafted by prompt lookup) with the base model, no adapter.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from ..edit import EditOptions
from ..program import Copy
from ..resolver import oracle_program
from ..scope import syntax_errors
from .data import Example, Region

INSTRUCTIONS = {
    "python": (
        "Add type hints to {name}.",
        "Add input validation to {name}.",
        "Add error handling to {name}.",
        "Add logging to {name}.",
        "Add a docstring to {name}.",
        "Simplify {name}.",
    ),
    "javascript": (
        "Add input validation to {name}.",
        "Add error handling to {name}.",
        "Add a JSDoc comment to {name}.",
        "Use const where a variable is never reassigned in {name}.",
        "Simplify {name}.",
    ),
}
MIN_COPIED = 0.3  # of the before-text's lines: a rewrite that keeps less is a rewrite, not an edit


def kept(before: str, after: str, language: str) -> bool:
    """Whether a rewrite is worth learning: it parses, changes something, and keeps enough lines."""
    if after == before or not after.strip() or syntax_errors(after, language) != 0:
        return False
    copied = sum(op.end - op.start + 1 for op in oracle_program(before, after).ops if isinstance(op, Copy))
    return copied >= MIN_COPIED * before.count("\n") and after.count("\n") <= 2 * before.count("\n") + 10


def distill(
    decoder, regions: list[Region], count: int, seed: int, progress: Callable[[int], None] | None = None
) -> list[Example]:
    """Up to ``count`` distilled edits, trying ``regions`` in a seeded order (about 2 tries per kept edit)."""
    rng = random.Random(seed)
    order = list(regions)
    rng.shuffle(order)
    examples = []
    for region in order[: 3 * count]:
        if len(examples) >= count:
            break
        instruction = rng.choice(INSTRUCTIONS[region.language]).format(name=region.name)
        result = decoder.edit(region.text, instruction, EditOptions(mode="lookup", language=region.language))
        if progress:
            progress(1)
        if kept(region.text, result.text, region.language):
            examples.append(Example("distill", region.language, instruction, region.text, result.text, region.origin))
    return examples
