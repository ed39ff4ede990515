"""The inner loop's sizes: ``make check`` sets ``COPYEDIT_QUICK=1``, and the property tests draw a
tenth of their examples and the sweeps over whole edit sets take a sample; ``make test`` runs them
in full."""

import os

QUICK = os.environ.get("COPYEDIT_QUICK") == "1"


def examples(n: int) -> int:
    """A property test's Hypothesis examples: ``n``, or a tenth of it (at least 50) in the inner loop."""
    return max(50, n // 10) if QUICK else n


def sample(n: int | None = None) -> int | None:
    """How many items of an edit set a sweep reads: ``n`` (None: all), or at most 20 in the inner loop."""
    return min(n or 20, 20) if QUICK else n
