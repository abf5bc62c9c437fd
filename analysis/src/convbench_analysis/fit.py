"""Per arm, time = a + b x FLOPs by least squares over a sweep: a is the fixed per-call cost,
1/b the rate. Residuals are weighted by 1/time (relative error): round noise is a share of the
time, and unweighted, the largest sizes' noise would swamp a (microseconds against seconds).
Then the signature of a ratio between two arms over sizes:
  flat    - the ratio barely moves from the smallest to the largest size: a rate difference;
  falling - the numerator arm's ratio shrinks with size: its fixed cost dominates small sizes;
  rising  - the ratio grows with size: the denominator's fixed cost dominates small sizes
            (or the numerator's rate worsens at scale)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Fit:
    a: float  # seconds per call, fixed
    b: float  # seconds per FLOP
    r2: float
    n: int

    @property
    def rate(self) -> float:
        return 1.0 / self.b if self.b > 0 else float("inf")

    def share_fixed(self, flops: float) -> float:
        """The fraction of the predicted time at `flops` that is the fixed cost a."""
        t = self.a + self.b * flops
        return self.a / t if t > 0 else float("nan")


def fit_line(flops, seconds) -> Fit:
    x, y = np.asarray(flops, float), np.asarray(seconds, float)
    if len(x) < 2 or len(np.unique(x)) < 2:
        raise ValueError("a fit needs at least two distinct sizes")
    if (y <= 0).any():
        raise ValueError("a fit needs positive times")
    w = 1.0 / y
    scale = float(np.abs(x).max())  # FLOPs ~1e10 beside a column of ones: keep it conditioned
    design = np.column_stack([np.ones_like(x), x / scale]) * w[:, None]
    (a, b), *_ = np.linalg.lstsq(design, y * w, rcond=None)
    b /= scale
    resid = y - (a + b * x)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((resid**2).sum()) / ss_tot if ss_tot > 0 else 1.0
    return Fit(float(a), float(b), r2, len(x))


@dataclass(frozen=True)
class Signature:
    kind: str  # "flat", "falling", "rising"
    ratio_small: float  # numerator / denominator time at the smallest size
    ratio_large: float  # ... at the largest size
    flops_small: float
    flops_large: float
    fixed_share_num: float | None  # numerator's a / time at the smallest size (from its fit)
    fixed_share_den: float | None

    def text(self) -> str:
        head = (
            f"ratio {self.ratio_small:.3g} at {self.flops_small:.3g} FLOP -> "
            f"{self.ratio_large:.3g} at {self.flops_large:.3g} FLOP"
        )
        shares = ""
        if self.fixed_share_num is not None and self.fixed_share_den is not None:
            shares = (
                f"; fixed cost is {self.fixed_share_num:.0%} (numerator) and "
                f"{self.fixed_share_den:.0%} (denominator) of the time at the smallest size"
            )
        what = {
            "flat": "flat across sizes: a rate difference",
            "falling": "falling with size: a fixed per-call overhead in the numerator arm",
            "rising": "rising with size: a fixed overhead in the denominator arm, or the "
            "numerator's rate worsens at scale",
        }[self.kind]
        return f"{what} ({head}{shares})"


def signature(
    flops,
    t_num,
    t_den,
    fit_num: Fit | None = None,
    fit_den: Fit | None = None,
    flat_tol: float = 0.15,
) -> Signature:
    """`flops`, `t_num`, `t_den`: best times of the two arms at the same sizes."""
    x = np.asarray(flops, float)
    r = np.asarray(t_num, float) / np.asarray(t_den, float)
    if len(x) < 2 or len(np.unique(x)) < 2:
        raise ValueError("a signature needs at least two distinct sizes")
    i_small, i_large = int(np.argmin(x)), int(np.argmax(x))
    # several cases may share the smallest/largest FLOPs (different stages): average them
    rs, rl = float(r[x == x[i_small]].mean()), float(r[x == x[i_large]].mean())
    change = rl / rs
    if abs(change - 1.0) <= flat_tol:
        kind = "flat"
    elif change < 1.0:
        kind = "falling"
    else:
        kind = "rising"
    return Signature(
        kind,
        rs,
        rl,
        float(x[i_small]),
        float(x[i_large]),
        fit_num.share_fixed(x[i_small]) if fit_num else None,
        fit_den.share_fixed(x[i_small]) if fit_den else None,
    )
