"""Source texts more than one test module edits."""

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
