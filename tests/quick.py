"""The inner loop's sizes: ``make check`` sets ``COPYEDIT_QUICK=1``, and the property tests draw a
tenth of their examples and the sweeps over whole edit sets take a sample; ``make test`` runs them
in full."""

import os

QUICK = os.environ.get("COPYEDIT_QUICK") == "1"
SAMPLE = 20 if QUICK else None  # the items of an edit set a sweep reads (None: all)


def examples(n: int) -> int:
    """A property test's Hypothesis examples: ``n``, or a tenth of it (at least 50) in the inner loop."""
    return max(50, n // 10) if QUICK else n
