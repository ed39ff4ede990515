"""Self-distillation: the base model's own greedy rewrites, kept where they parse.

Of real code under instructions that add something (:func:`distill`), and of synthetic bugs under
their fix instruction (:func:`distill_fixes`: the model's fix, not the reversed bug).  Each kept
rewrite becomes an edit whose target is its oracle program, so the selector learns to write, as a
program, what the model would write anyway.  Rewrites run in ``lookup`` mode (the
greedy rewrite, drafted by prompt lookup) with the base model, no adapter.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace

from ..core.program import Copy
from ..core.resolver import oracle_program
from ..core.scope import syntax_errors
from ..decode.edit import EditOptions
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
    tasks = [
        Example("distill", r.language, rng.choice(INSTRUCTIONS[r.language]).format(name=r.name), r.text, "", r.origin)
        for r in order[: 3 * count]
    ]
    return rewritten(decoder, tasks, count, progress)


def distill_fixes(
    decoder, bugs: list[Example], count: int, seed: int, progress: Callable[[int], None] | None = None
) -> list[Example]:
    """Up to ``count`` synthetic-bug edits whose target is the base model's own rewrite under the
    bug's instruction instead of the reversed bug: the selector learns to fix, as a program, what
    the model would fix in a rewrite (kind ``distill-fix``)."""
    order = list(bugs)
    random.Random(seed).shuffle(order)
    tasks = [replace(bug, kind="distill-fix") for bug in order[: 3 * count]]
    return rewritten(decoder, tasks, count, progress)


def rewritten(
    decoder, tasks: list[Example], count: int, progress: Callable[[int], None] | None = None
) -> list[Example]:
    """The ``tasks`` (their before-text and instruction) with the base model's greedy rewrite as the
    after-text, the first ``count`` that are worth learning (:func:`kept`)."""
    examples = []
    for task in tasks:
        if len(examples) >= count:
            break
        result = decoder.edit(task.before, task.instruction, EditOptions(mode="lookup", language=task.language))
        if progress:
            progress(1)
        after = framed(task.before, result.text)
        if kept(task.before, after, task.language):
            examples.append(replace(task, after=after))
    return examples


def framed(before: str, rewrite: str) -> str:
    """``rewrite`` between the blank lines that begin and end ``before``: a rewrite drops them, and
    a selector that learned that would drop them from every edit."""
    core = rewrite.strip("\n")
    if not core:
        return rewrite
    lead = before[: len(before) - len(before.lstrip("\n"))]
    return lead + core + before[len(before.rstrip("\n")) :]
