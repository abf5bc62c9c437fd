"""Statistics on round samples: best-of-N ratios with a seeded bootstrap interval, and the
Mann-Whitney U test (numpy only).

Mann-Whitney U: two-sided. Exact (the permutation distribution of U, counted by recursion)
when there are no ties and both samples have at most 25 values; otherwise the normal
approximation with the tie correction of the variance and a 0.5 continuity correction."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

DEFAULT_SEED = 20261129


@dataclass(frozen=True)
class Ratio:
    value: float  # best(numerator) / best(denominator)
    lo: float
    hi: float
    level: float


def best_ratio(
    num: np.ndarray,
    den: np.ndarray,
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> Ratio:
    """Ratio of the best (minimum) round times, with a percentile bootstrap interval: each
    resample redraws each arm's rounds with replacement and takes the ratio of the minima."""
    num, den = np.asarray(num, float), np.asarray(den, float)
    if not len(num) or not len(den):
        raise ValueError("a ratio needs at least one sample on each side")
    value = float(num.min() / den.min())
    rng = np.random.default_rng(seed)
    b = max(int(resamples), 1)
    rn = num[rng.integers(0, len(num), (b, len(num)))].min(axis=1)
    rd = den[rng.integers(0, len(den), (b, len(den)))].min(axis=1)
    boot = rn / rd
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(boot, [tail, 1.0 - tail])
    return Ratio(value, float(lo), float(hi), level)


def rank_average(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties given the average of the ranks they span."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), float)
    ranks[order] = np.arange(1, len(x) + 1)
    _, inv, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inv, weights=ranks)
    return sums[inv] / counts[inv]


@cache
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """How many of the C(m+n, m) arrangements give each U = 0..m*n (no ties)."""
    if m == 0 or n == 0:
        return (1,)
    # the largest value belongs to the first sample (it beats all n others) or to the second
    a = _u_counts(m - 1, n)
    b = _u_counts(m, n - 1)
    out = [0] * (m * n + 1)
    for u, c in enumerate(a):
        out[u + n] += c
    for u, c in enumerate(b):
        out[u] += c
    return tuple(out)


@dataclass(frozen=True)
class MannWhitney:
    u: float  # U of the first sample: how many (x, y) pairs have x > y, ties counted 1/2
    p: float  # two-sided
    method: str  # "exact" or "normal"


EXACT_MAX_N = 25


def mann_whitney_u(x, y) -> MannWhitney:
    x, y = np.asarray(x, float), np.asarray(y, float)
    m, n = len(x), len(y)
    if m == 0 or n == 0:
        raise ValueError("Mann-Whitney U needs samples on both sides")
    both = np.concatenate([x, y])
    ranks = rank_average(both)
    u = float(ranks[:m].sum() - m * (m + 1) / 2.0)
    ties = len(np.unique(both)) < len(both)
    if not ties and m <= EXACT_MAX_N and n <= EXACT_MAX_N:
        counts = np.array(_u_counts(m, n), float)
        total = counts.sum()
        k = int(round(u))
        p = 2.0 * min(counts[: k + 1].sum(), counts[k:].sum()) / total
        return MannWhitney(u, float(min(1.0, p)), "exact")
    big_n = m + n
    _, t = np.unique(both, return_counts=True)
    var = m * n / 12.0 * ((big_n + 1) - float((t**3 - t).sum()) / (big_n * (big_n - 1)))
    if var <= 0:  # every value equal: no evidence of a difference
        return MannWhitney(u, 1.0, "normal")
    z = (abs(u - m * n / 2.0) - 0.5) / math.sqrt(var)
    p = math.erfc(max(z, 0.0) / math.sqrt(2.0))
    return MannWhitney(u, min(1.0, p), "normal")
