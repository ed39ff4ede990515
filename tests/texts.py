"""Source texts more than one test module edits."""

from pathlib import Path

# The example module the README's demo edits (mean, variance, ...).
STATS = (Path(__file__).resolve().parents[1] / "examples" / "stats.py").read_text()
# A lazy snippet for it that makes the variance the sample's: its docstring (change line 5) and its
# return (line 7); the shipped apply selector merges it, two hunks.
VARIANCE_SNIPPET = (
    '# ... existing code ...\n\n\ndef variance(values):\n    """Return the sample variance of values."""\n'
    "    m = mean(values)\n    return sum((v - m) ** 2 for v in values) / (len(values) - 1)\n"
)
# The file with all of it merged.
VARIANCE_MERGED = STATS.replace("the population variance", "the sample variance").replace(
    "/ len(values)\n", "/ (len(values) - 1)\n"
)

# Three functions; the tiny model told to shorten ``describe`` over all of it writes ``describe``
# where ``area`` and ``perimeter`` were (the loss guard's end-to-end case).
SHAPES = """import math


def area(radius):
    return math.pi * radius ** 2


def perimeter(radius):
    return 2 * math.pi * radius


def describe(radius):
    size = area(radius)
    edge = perimeter(radius)
    return f"circle of area {size:.2f} and perimeter {edge:.2f}"
"""
