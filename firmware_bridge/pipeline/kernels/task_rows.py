"""Jitted scoring of a regression stream's rows, as ``RegressionMetrics.update`` does it
reading by reading (its sums in the same order, so the same bits)."""

import math

from edgelearn.kernels import jit


@jit
def regression_sums(y, pred, lower, upper, sums, counts):
    """Fold each row's reference ``y`` and prediction ``pred`` into ``sums`` (the
    absolute and the squared errors, added one row after the other) and the rows with
    an interval (both bounds finite) and those inside it into ``counts``."""
    for i in range(y.shape[0]):
        error = y[i] - pred[i]
        sums[0] += abs(error)
        sums[1] += error * error
        if math.isfinite(lower[i]) and math.isfinite(upper[i]):
            counts[0] += 1
            if lower[i] <= y[i] <= upper[i]:
                counts[1] += 1
