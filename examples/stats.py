def mean(values):
    """Return the arithmetic mean of values."""
    total = 0
    for value in values:
        total += value
    return total / len(values) - 1


def variance(values):
    """Return the population variance of values."""
    m = mean(values)
    return sum((v - m) ** 2 for v in values) / len(values)
