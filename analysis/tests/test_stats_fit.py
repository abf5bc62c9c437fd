"""Statistics and fit against values computed by hand.

Planted faults seen failing (then reverted):
- tie correction dropped from the variance: test_mann_whitney_normal_with_ties failed (0.129);
- exact p one-sided (no factor 2): test_mann_whitney_exact failed;
- the design matrix columns swapped in fit_line: test_fit_recovers_a_and_b failed;
- the signature compared ratio_large/ratio_small against 1 with no tolerance: the flat case
  with 0.2% noise came out 'falling'.
"""

import numpy as np
import pytest

from convbench_analysis.fit import fit_line, signature
from convbench_analysis.stats import best_ratio, mann_whitney_u, rank_average


def test_rank_average_ties():
    assert rank_average(np.array([3.0, 1.0, 3.0, 2.0])).tolist() == [3.5, 1.0, 3.5, 2.0]


def test_mann_whitney_exact():
    r = mann_whitney_u([1, 2, 3], [4, 5, 6])
    assert (r.u, r.method) == (0.0, "exact") and r.p == pytest.approx(2 / 20)
    r = mann_whitney_u(range(6, 11), range(1, 6))
    assert r.u == 25.0 and r.p == pytest.approx(2 / 252)
    assert mann_whitney_u([1, 3, 5], [2, 4, 6]).p == pytest.approx(0.7)


def test_mann_whitney_normal_with_ties():
    # m = n = 4; ties {2 x3, 3 x2}: var = 16/12 (9 - 30/56); z = (|2.5 - 8| - 0.5)/sqrt(var)
    r = mann_whitney_u([1, 2, 2, 3], [2, 3, 4, 5])
    assert r.method == "normal" and r.u == 2.5
    assert r.p == pytest.approx(0.136658, abs=1e-5)


def test_mann_whitney_all_equal():
    assert mann_whitney_u([1.0, 1.0], [1.0, 1.0]).p == 1.0


def test_best_ratio_seeded_and_bracketing():
    rng = np.random.default_rng(3)
    a = 1.0 + rng.random(7) * 0.02
    b = 2.0 + rng.random(7) * 0.02
    r1, r2 = best_ratio(a, b), best_ratio(a, b)
    assert r1 == r2  # same seed, same interval
    assert r1.value == pytest.approx(a.min() / b.min())
    assert r1.lo <= r1.value <= r1.hi and r1.hi - r1.lo < 0.02
    assert best_ratio(a, b, seed=99) != r1 or True  # another seed may differ; must not crash


def test_fit_recovers_a_and_b():
    rng = np.random.default_rng(11)
    a, b = 25e-6, 1 / 15e12
    x = np.array([3.6e9, 7.2e9, 1.45e10, 2.9e10, 5.8e10, 1.16e11])
    y = (a + b * x) * (1 + rng.normal(0, 0.0005, len(x)))
    f = fit_line(x, y)
    assert f.a == pytest.approx(a, rel=0.01) and f.b == pytest.approx(b, rel=0.01)
    assert f.rate == pytest.approx(15e12, rel=0.01) and f.r2 > 0.999


def test_fit_needs_two_sizes():
    with pytest.raises(ValueError):
        fit_line([1e9, 1e9], [1.0, 1.1])


def _times(a, b, x, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    return (a + b * x) * (1 + rng.normal(0, noise, len(x)))


X = np.array([3.6e9, 1.45e10, 5.8e10])


def test_signature_flat_rate_difference():
    num, den = _times(0, 1 / 30e12, X, 0.002, 1), _times(0, 1 / 0.33e12, X, 0.002, 2)
    s = signature(X, num, den, fit_line(X, num), fit_line(X, den))
    assert s.kind == "flat" and s.ratio_small == pytest.approx(0.011, rel=0.02)


def test_signature_falling_fixed_overhead():
    num, den = _times(400e-6, 1 / 30e12, X), _times(0, 1 / 0.33e12, X)
    fn = fit_line(X, num)
    s = signature(X, num, den, fn, fit_line(X, den))
    assert s.kind == "falling"
    assert s.fixed_share_num == pytest.approx(400e-6 / (400e-6 + 3.6e9 / 30e12), rel=0.01)
    assert "fixed per-call overhead" in s.text()


def test_signature_rising():
    num, den = _times(0, 1 / 30e12, X), _times(400e-6, 1 / 30e12, X)
    assert signature(X, num, den).kind == "rising"
