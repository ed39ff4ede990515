"""The recipe's synthetic edits, each kind drawn by its builder: a region's edits by
:mod:`.data`, whole-module edits by :mod:`.modules` (which builds on :mod:`.data`)."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from .data import (
    Example,
    Recipe,
    Region,
    collect_regions,
    file_example,
    leaks,
    make_example,
    seeded_rng,
    top_level_run,
    with_context,
    with_intent,
)
from .modules import MODULE_KINDS, module_example


def build(
    recipe: Recipe,
    files: dict[str, list[Path]],
    forbidden: frozenset[str],
    progress: Callable[[int], None] | None = None,
) -> list[Example]:
    """Every synthetic edit of the recipe from ``files`` (by language), in a deterministic order,
    none holding a ``forbidden`` window (:func:`.data.forbidden_windows`); the ``module-`` kinds are
    :mod:`.modules`'."""
    pools = {
        language: list(collect_regions(files.get(language, []), language, recipe))
        for language in ("python", "javascript")
    }
    examples: list[Example] = []
    for kind, count in recipe.counts:
        shares = {"javascript": round(count * recipe.javascript_share), "python": 0}
        shares["python"] = count - shares["javascript"]
        if kind in ("docstring", "types", "module-docstrings", "module-types"):
            shares = {"python": count, "javascript": 0}
        for language, wanted in shares.items():
            pool = pools[language]
            if not pool:
                continue
            rng = seeded_rng(recipe.seed, kind, language)
            order = list(range(len(pool)))
            rng.shuffle(order)
            made = 0
            for index in order:
                if made >= wanted:
                    break
                example = _example(kind, language, pool[index], rng, recipe)
                if example is None or leaks(example, forbidden):
                    continue
                examples.append(example)
                made += 1
                if progress:
                    progress(1)
    return examples


def _example(
    kind: str, language: str, source: tuple[Path, str, list[Region]], rng: random.Random, recipe: Recipe
) -> Example | None:
    """One edit of ``kind`` drawn from ``source`` (a file's path, text and regions), or None where it has none."""
    path, text, regions = source
    if kind in MODULE_KINDS:
        return module_example(kind, text, language, path.name, rng)
    if kind == "file-bug":
        run = top_level_run(text, language, path.name, rng, recipe.max_file_lines)
        return file_example(run, rng) if run else None
    found = next(((r, e) for r in regions if (e := make_example(kind, r, rng))), None)
    example = found and with_context(found[1], found[0].imports, rng, recipe.context_share)
    if example and kind in ("bug", "bugs") and recipe.intent_share:
        example = with_intent(
            example, found[0].name, seeded_rng(recipe.seed, "intent", example.origin), recipe.intent_share
        )
    return example or None
