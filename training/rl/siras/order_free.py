"""Mean and standard deviation whose bits do not depend on the order of the values.

A float sum rounds after every addition, so ``np.mean`` of a permutation can differ in the last
bit. ``math.fsum`` returns the correctly rounded exact sum: the same float for every order, and one
correctly rounded division keeps it so. SIRAS takes its group and batch statistics from these, which
is what makes permuting the siblings permute the shaped advantages bit for bit.
"""

from __future__ import annotations

import math

import numpy as np


def exact_mean(values: np.ndarray) -> float:
    """The correctly rounded mean of `values` (any order gives the same float); NaN when empty."""
    v = np.asarray(values, dtype=np.float64).ravel()
    return math.fsum(v.tolist()) / v.size if v.size else math.nan


def exact_std(values: np.ndarray, ddof: int = 0) -> float:
    """sqrt(Σ(x − mean)² / (n − ddof)) with both sums exact: order-free; NaN when n <= ddof."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size <= ddof:
        return math.nan
    dev = v - exact_mean(v)
    return math.sqrt(math.fsum((dev * dev).tolist()) / (v.size - ddof))
