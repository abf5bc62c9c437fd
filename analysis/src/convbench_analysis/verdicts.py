"""What a ratio or a case says when nothing refuses it: a value with an interval whose coverage is
measured, and a verdict against an equivalence band.

- A ratio is the paired estimate of stats.paired_ratio over the rounds both cases took, its
  signed-rank interval widened by the run's own A/A twins: two instances of one arm, prepared and
  timed in the same rounds, still land apart (buffers at other addresses, another cuDNN workspace,
  the order within rounds), and no interval may be narrower than what the run shows its twins of
  that kind of case (host, per-call, resident) disagree by. The widening is
  max(aa_floor_<kind>, |log twin ratio| of the run's twins of that kind), added in quadrature.
  A twin's own interval is widened by the other twins of its kind only (its own disagreement
  would make its coverage true by construction), so the A/A table tests the method.
- Verdicts (like nvbench's robust comparator): FASTER / SLOWER when the whole interval is beyond
  the band (1 -+ equivalence_band), SAME when it lies within it, AMBIGUOUS when it straddles an
  edge of the band or has no interval (too few rounds).
- A case is imprecise when its median's interval is wider than its own target; the rounds that
  would reach it follow from the run's own spread (the half-width falls as 1 / sqrt(rounds))."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from . import record
from .findings import Finding
from .stats import PairedRatio, paired_ratio, paired_rounds, widen

KINDS = ("host", "per-call", "resident")


def rounds_of(case: dict) -> dict[int, float]:
    return {s.round: s.seconds for s in record.Case.of(case).samples if s.seconds > 0}


def kind_of(case: dict) -> str:
    c = record.Case.of(case)
    return c.staging or ("resident" if c.device else "host")


def floor_of(kind: str, th) -> float:
    return {
        "host": th.aa_floor_host,
        "per-call": th.aa_floor_per_call,
        "resident": th.aa_floor_resident,
    }.get(kind, max(th.aa_floor_host, th.aa_floor_per_call))


def twin_original(case: dict, by_id: dict[str, dict]) -> dict | None:
    """The case an A/A twin repeats: the record's twin_of, else the arm without its #n suffix."""
    c = record.Case.of(case)
    if c.twin_of:
        return by_id.get(c.twin_of)
    if not record.is_twin_arm(c.get("arm", "")):
        return None
    want = f"{c.stage}/{c.frames}/{record.twin_base(c.arm)}/{c.staging}"
    return by_id.get(want)


def is_twin(case: dict) -> bool:
    c = record.Case.of(case)
    return bool(c.twin_of) or record.is_twin_arm(c.get("arm", ""))


@dataclass(frozen=True)
class Twin:
    twin: dict
    arm: dict
    kind: str
    ratio: PairedRatio
    kernels_differ: tuple[str, str] | None  # what each instance chose when it differs

    @property
    def disagreement(self) -> float:
        """|log| of the twin's ratio: how far two instances of one arm landed apart here."""
        return abs(math.log(self.ratio.value))


def twins(cases: list[dict], level: float) -> list[Twin]:
    """Every A/A twin of one run with its ratio to the case it repeats."""
    by_id = {c.id: c for c in map(record.Case.of, cases)}
    out = []
    for c in cases:
        first = twin_original(c, by_id)
        if first is None:
            continue
        a, b = paired_rounds(rounds_of(c), rounds_of(first))
        if not len(a):
            continue
        chose = (record.kernel_choice(c)["algorithm"], record.kernel_choice(first)["algorithm"])
        out.append(
            Twin(
                c,
                first,
                kind_of(first),
                paired_ratio(a, b, level),
                chose if chose[0] != chose[1] else None,
            )
        )
    return out


def kind_errors(ts: list[Twin], th, leave_out: Twin | None = None) -> dict[str, float]:
    """Per kind of case, the log half-width every interval of that kind is widened by: the floor,
    or the largest disagreement of the run's twins of the kind (twins that ran different kernels
    measure the provider's choice, not the instrument, and are left out)."""
    out = {k: floor_of(k, th) for k in KINDS}
    for t in ts:
        if t is leave_out or t.kernels_differ:
            continue
        out[t.kind] = max(out.get(t.kind, floor_of(t.kind, th)), t.disagreement)
    return out


def extra_width(num: dict, den: dict, errors: dict[str, float], th) -> float:
    """The instances' share of a ratio's error: each side's kind contributes its twins' spread
    (a twin pair's disagreement is two instances' worth: sqrt(2) x one instance's)."""
    e1 = errors.get(kind_of(num), floor_of(kind_of(num), th))
    e2 = errors.get(kind_of(den), floor_of(kind_of(den), th))
    return math.sqrt((e1 * e1 + e2 * e2) / 2.0)


def verdict(lo: float | None, hi: float | None, band: float) -> str:
    if lo is None or hi is None:
        return "AMBIGUOUS"
    if hi < 1.0 - band:
        return "FASTER"
    if lo > 1.0 + band:
        return "SLOWER"
    if lo >= 1.0 - band and hi <= 1.0 + band:
        return "SAME"
    return "AMBIGUOUS"


@dataclass(frozen=True)
class Statement:
    value: float
    best_ratio: float
    lo: float | None
    hi: float | None
    rounds: int
    widened_by: float  # the log half-width the twins added
    verdict: str
    method: str  # of the interval before widening: signed-rank, t (2-5 rounds) or none

    def as_dict(self) -> dict:
        return {
            "ratio": self.value,
            "best_ratio": self.best_ratio,
            "ci": [self.lo, self.hi] if self.lo is not None else None,
            "paired_rounds": self.rounds,
            "widened_by": self.widened_by,
            "verdict": self.verdict,
            "interval_method": self.method,
        }


def state(num: dict, den: dict, errors: dict[str, float], th) -> Statement | None:
    """The ratio num / den with its widened interval and verdict; None without paired rounds."""
    a, b = paired_rounds(rounds_of(num), rounds_of(den))
    if not len(a):
        return None
    r = paired_ratio(a, b, th.ci_level)
    w = extra_width(num, den, errors, th)
    lo, hi = (None, None) if r.lo is None else widen(r.value, r.lo, r.hi, w)
    return Statement(
        r.value, r.best_ratio, lo, hi, r.rounds, w, verdict(lo, hi, th.equivalence_band), r.method
    )


@dataclass(frozen=True)
class Precision:
    target: float | None  # the half-width the case asked for (its stopping rule's)
    half_width: float | None  # of its median's 95% interval, as a fraction of the median
    more_rounds: int | None  # rounds that would reach the target at this run's spread

    @property
    def imprecise(self) -> bool:
        if self.target is None or self.target <= 0:
            return False
        return self.half_width is None or self.half_width > self.target


def precision(case: dict, th, half_width: float | None) -> Precision:
    target = record.ci_target(case) or th.precision_target or None
    n = len(rounds_of(case))
    more = None
    if half_width is not None and target and half_width > target:
        more = max(1, math.ceil(n * (half_width / target) ** 2) - n)
    elif half_width is None and target:
        more = max(0, 6 - n) or None  # an order-statistic interval needs 6 rounds
    return Precision(target, half_width, more)


def twin_statement(t: Twin, ts: list[Twin], th) -> Statement | None:
    """A twin against its arm, widened by the other twins of its kind and the floor only."""
    return state(t.twin, t.arm, kind_errors(ts, th, leave_out=t), th)


def aa_findings(run, th) -> list:
    """aa-unstable on every case of a kind whose twins disagree beyond the band, interval
    included (twins that ran different kernels are said by the A/A table, not refused here)."""
    strict = replace(th, ci_level=th.aa_unstable_level)
    ts = twins(run.cases, th.ci_level)
    out = []
    for t in ts:
        if t.kernels_differ:
            continue
        s = twin_statement(t, ts, strict)
        band = th.equivalence_band
        if s is None or s.verdict not in ("FASTER", "SLOWER"):
            continue
        detail = (
            f"twin {record.label(t.twin)} / {record.label(t.arm)} = {s.value:.4g}, its "
            f"{strict.ci_level:.1%} interval [{s.lo:.4g}, {s.hi:.4g}] over {s.rounds} paired "
            f"rounds lies beyond 1 -+ {band:g}"
        )
        for c in run.cases:
            if kind_of(c) == t.kind:
                out.append(Finding("aa-unstable", detail, run.path, c.id))
    return out
