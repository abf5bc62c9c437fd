"""Statistics on round samples, through scipy and numpy: the ratio of two cases' best times
over the rounds both were timed in (`paired_ratio`: a Hodges-Lehmann estimate with its
signed-rank interval, what the report states), best-of-N ratios
with a seeded percentile bootstrap interval (`scipy.stats.bootstrap`, kept for `compare`, whose
two runs share no rounds), and the two-sided Mann-Whitney U test
(`scipy.stats.mannwhitneyu`): exact when there are no ties and both samples have at most 25
values, otherwise the normal approximation with the tie-corrected variance and a 0.5 continuity
correction."""

from __future__ import annotations

import inspect
import math
import sys
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


@dataclass(frozen=True)
class PairedRatio:
    value: float  # the Hodges-Lehmann estimate of the per-round ratio num[r] / den[r]
    lo: float | None  # None: too few paired rounds for an interval at this level; 0: unbounded
    hi: float | None  # inf: unbounded (a few rounds far apart at a high level)
    level: float
    rounds: int  # paired rounds (both cases timed in them)
    best_ratio: float  # best(num) / best(den) over the paired rounds
    method: str = "signed-rank"  # "signed-rank", "t" (2-5 rounds), "none" (one round)


def paired_rounds(num: dict[int, float], den: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    """The two cases' seconds in the rounds both were timed in ({round: seconds} each)."""
    common = sorted(set(num) & set(den))
    return (
        np.array([num[r] for r in common], dtype=float),
        np.array([den[r] for r in common], dtype=float),
    )


EXACT_SIGNED_RANK_MAX_N = 60


def _signed_rank_k(n: int, alpha: float) -> int | None:
    """The largest k with P(W+ <= k - 1) <= alpha / 2 for the Wilcoxon signed-rank statistic of
    n pairs (exact distribution by counting subsets up to EXACT_SIGNED_RANK_MAX_N, the normal
    approximation with continuity correction beyond); None when no k >= 1 exists (n < 6 at 95%).
    The interval of the Hodges-Lehmann estimate is then [w_(k), w_(M + 1 - k)] over the M
    sorted Walsh averages."""
    if n <= EXACT_SIGNED_RANK_MAX_N:
        top = n * (n + 1) // 2
        counts = np.zeros(top + 1)
        counts[0] = 1.0
        for i in range(1, n + 1):
            counts[i:] = counts[i:] + counts[:-i].copy()
        cdf = np.cumsum(counts) / 2.0**n
        k = int(np.searchsorted(cdf, alpha / 2.0, side="right"))  # cdf[k-1] <= alpha/2 < cdf[k]
        return k if k >= 1 else None
    mean, sd = n * (n + 1) / 4.0, math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
    k = int(math.floor(mean - sps.norm.ppf(1 - alpha / 2.0) * sd - 0.5)) + 1
    return k if k >= 1 else None


def paired_ratio(num, den, level: float = 0.95) -> PairedRatio:
    """The ratio of two cases timed in the same rounds, from the per-round log ratios
    d[r] = log num[r] - log den[r]: the Hodges-Lehmann estimate (the median of the Walsh averages
    (d[i] + d[j]) / 2) with the interval that inverts the Wilcoxon signed-rank test.

    Why this and not a bootstrap of best over best: interleaving times every case once per round,
    so what the machine does in a round (clocks, neighbours, drift) reaches both cases of a pair
    and cancels in d[r]; a minimum is decided by one round and carries that round's drift whole.
    A bootstrap of minima cannot reach past the sample's extremes and came out too narrow (an arm
    6% faster than its own A/A twin). The signed-rank interval's coverage holds at its level for
    any noise distribution while rounds are independent and, for an A/A pair, exchangeable; it
    needs 6 paired rounds at 95%. With 2-5 rounds the interval is Student's t on the log ratios
    (method "t": normal noise assumed); with one, lo and hi are None."""
    a, b = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if len(a) != len(b) or not len(a):
        raise ValueError("a paired ratio needs the same rounds, at least one, on both sides")
    if (a <= 0).any() or (b <= 0).any():
        raise ValueError("a paired ratio needs positive times")
    d = np.log(a) - np.log(b)
    i, j = np.triu_indices(len(d))
    walsh = np.sort((d[i] + d[j]) / 2.0)
    value = math.exp(float(np.median(walsh)))
    best = float(a.min() / b.min())
    k = _signed_rank_k(len(d), 1.0 - level)
    if k is not None:
        lo, hi = walsh[k - 1], walsh[len(walsh) - k]
        return PairedRatio(
            value, math.exp(float(lo)), math.exp(float(hi)), level, len(d), best, "signed-rank"
        )
    if len(d) < 2:
        return PairedRatio(value, None, None, level, len(d), best, "none")
    # 2-5 rounds: no distribution-free interval reaches the level; Student's t on the log ratios
    # (normal per-round noise assumed, said in `method`), around their mean.
    # With one degree of freedom and a high level the half-width can pass what a double holds:
    # the bound is then unbounded (inf, or 0 below), said so, never an overflow.
    half = sps.t.ppf(0.5 + level / 2.0, len(d) - 1) * float(d.std(ddof=1)) / math.sqrt(len(d))
    m = float(d.mean())
    return PairedRatio(_exp(m), _exp(m - half), _exp(m + half), level, len(d), best, "t")


_LOG_MAX = math.log(sys.float_info.max)


def _exp(x: float) -> float:
    """exp(x), inf past the largest double instead of an OverflowError."""
    return math.inf if x > _LOG_MAX else math.exp(x)


def widen(value: float, lo: float, hi: float, extra: float) -> tuple[float, float]:
    """An interval [lo, hi] around value widened on each side, in log space, by `extra` (a log
    half-width) added in quadrature; a bound at 0 or inf (unbounded) stays there."""
    v = math.log(value)
    dlo = v - math.log(lo) if lo > 0 else math.inf  # an unbounded side stays unbounded
    dhi = math.log(hi) - v if math.isfinite(hi) else math.inf
    return _exp(v - math.hypot(dlo, extra)), _exp(v + math.hypot(dhi, extra))


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
