"""Statistics on round samples, through scipy: best-of-N ratios with a seeded percentile
bootstrap interval (`scipy.stats.bootstrap`), and the two-sided Mann-Whitney U test
(`scipy.stats.mannwhitneyu`): exact when there are no ties and both samples have at most 25
values, otherwise the normal approximation with the tie-corrected variance and a 0.5 continuity
correction."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

DEFAULT_SEED = 20261129
EXACT_MAX_N = 25
# scipy 1.15 renamed bootstrap's random_state to rng; Debian 12 ships 1.10
_RNG_KEYWORD = "rng" if "rng" in inspect.signature(sps.bootstrap).parameters else "random_state"


@dataclass(frozen=True)
class Ratio:
    value: float  # best(numerator) / best(denominator)
    lo: float
    hi: float
    level: float


def _ratio_of_minima(num, den, axis=-1):
    return np.min(num, axis=axis) / np.min(den, axis=axis)


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
    if len(num) == 1 and len(den) == 1:  # nothing to resample
        return Ratio(value, value, value, level)
    res = sps.bootstrap(
        (num, den),
        _ratio_of_minima,
        n_resamples=max(int(resamples), 1),
        confidence_level=level,
        method="percentile",
        paired=False,
        vectorized=True,
        **{_RNG_KEYWORD: np.random.default_rng(seed)},
    )
    lo, hi = res.confidence_interval
    # a bootstrap of minima is discrete: the interval may touch but never exclude the estimate
    return Ratio(value, float(min(lo, value)), float(max(hi, value)), level)


def rank_average(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties given the average of the ranks they span."""
    return sps.rankdata(x, method="average")


@dataclass(frozen=True)
class MannWhitney:
    u: float  # U of the first sample: how many (x, y) pairs have x > y, ties counted 1/2
    p: float  # two-sided
    method: str  # "exact" or "normal"


def mann_whitney_u(x, y) -> MannWhitney:
    x, y = np.asarray(x, float), np.asarray(y, float)
    m, n = len(x), len(y)
    if m == 0 or n == 0:
        raise ValueError("Mann-Whitney U needs samples on both sides")
    both = np.concatenate([x, y])
    if len(np.unique(both)) == 1:  # every value equal: no evidence of a difference
        return MannWhitney(float(m * n / 2.0), 1.0, "normal")
    ties = len(np.unique(both)) < len(both)
    exact = not ties and m <= EXACT_MAX_N and n <= EXACT_MAX_N
    r = sps.mannwhitneyu(
        x,
        y,
        alternative="two-sided",
        use_continuity=True,
        method="exact" if exact else "asymptotic",
    )
    return MannWhitney(
        float(r.statistic), float(min(1.0, r.pvalue)), "exact" if exact else "normal"
    )


def median_interval(x, confidence: float = 0.95) -> tuple[float, float] | None:
    """The median's distribution-free interval from order statistics, as the bench's stopping
    rule computes it: the widest symmetric pair of ranks (k, n + 1 - k) whose coverage
    1 - 2 P(Binomial(n, 1/2) <= k - 1) is still >= confidence. None when no such k exists
    (fewer than 6 samples at 95%)."""
    from scipy.stats import binom

    x = np.sort(np.asarray(x, dtype=float))
    n = len(x)
    best = 0
    for k in range(1, n // 2 + 1):
        if 1 - 2 * binom.cdf(k - 1, n, 0.5) < confidence:
            break
        best = k
    if best == 0:
        return None
    return float(x[best - 1]), float(x[n - best])


def median_half_width(x) -> float | None:
    """The half-width (a fraction of the median) of the median's interval above, as the bench's
    stopping rule defines it: max(median - lo, hi - median) / median; None without an interval."""
    iv = median_interval(x)
    m = float(np.median(x)) if len(x) else 0.0
    if iv is None or m <= 0:
        return None
    return max(m - iv[0], iv[1] - m) / m
