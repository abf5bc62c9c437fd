"""Each convolution arm against the ceilings timed on the same case of the same run: "% of
ceiling" = the ceiling's time / the arm's time (100% = as fast as the ceiling). The ceilings are
bench_conv arms of role "ceiling" timed in the same interleaved rounds as the arms they judge, so
the value is the paired estimate over those rounds with its interval (stats.paired_ratio), never
a ratio across runs:
- cuBLAS (cublas-sgemm, cublas-tf32, cublas-bf16, cublas-dgemm): the case's GEMM, the same
  multiply-adds with no scatter and no bias; it judges the arms of its precision (the record's
  "precision" field; for records without it, read from the arm's name): f32 and f32x3 ->
  cublas-sgemm, tf32 -> cublas-tf32, bf16 -> cublas-bf16, f64 -> cublas-dgemm.
- cuda-copy: a device-to-device copy of the case's least bytes (half read, half written); its
  % is the arm's share of the measured copy bandwidth (the memory-bound causal pair's target:
  >= 90%). cuda-launch: an empty launch; 50% is an arm within 2x of it (a decode step's target).
  Both judge every device arm, whatever its precision.
Host arms, the reference and the ceilings themselves are not judged."""

from __future__ import annotations

from . import record, stats, verdicts
from .findings import Assessment

CEILING_OF = {
    "f32": "cublas-sgemm",
    "f32x3": "cublas-sgemm",
    "tf32": "cublas-tf32",
    "bf16": "cublas-bf16",
    "f64": "cublas-dgemm",
}


def precision(case: dict) -> str | None:
    """The case's precision (record.arm_facts: the record's field, else the arm's name)."""
    return record.arm_facts(case).precision


def role(case: dict) -> str:
    """The case's role (record.arm_facts: the record's field, else the arm's name)."""
    return record.arm_facts(case).role


# The ceilings of the hardware itself, no arithmetic: they judge every device arm.
EVERY_ARM = ("cuda-copy", "cuda-launch")


def ceilings_of(case: dict) -> list[str]:
    """The ceiling arms that judge this case's arm, the GEMM of its precision first; [] for what
    no ceiling judges."""
    if role(case) not in ("candidate", "peer") or not case.get("device"):
        return []
    gemm = CEILING_OF.get(precision(case) or "")
    return ([gemm] if gemm else []) + list(EVERY_ARM)


def _timed(case: dict | None) -> bool:
    return bool(case) and case["gate"]["result"] == "pass" and bool(verdicts.rounds_of(case))


def _row(a: Assessment, i: int, arm: dict, ceiling: dict) -> dict:
    num, den = stats.paired_rounds(verdicts.rounds_of(ceiling), verdicts.rounds_of(arm))
    refused = sorted({f.code for f in a.for_case(i, arm["id"]) + a.for_case(i, ceiling["id"])})
    row = {
        "file": a.runs[i].path,
        "stage": arm["stage"],
        "frames": arm["frames"],
        "case": arm["id"],
        "arm": arm["arm"],
        "ceiling": ceiling["arm"],
        "ceiling_case": ceiling["id"],
        "arm_best_s": min(verdicts.rounds_of(arm).values()),
        "ceiling_best_s": min(verdicts.rounds_of(ceiling).values()),
        "percent": None,
        "ci_percent": None,
        "paired_rounds": int(len(num)),
        "refused": refused,
    }
    if len(num):
        r = stats.paired_ratio(num, den)
        row["percent"] = 100.0 * r.value
        if r.lo is not None:
            row["ci_percent"] = [100.0 * r.lo, 100.0 * r.hi]
    return row


def build(a: Assessment) -> list[dict]:
    """One row per timed device arm and each of its ceilings timed on the same case of the same
    run."""
    rows = []
    for i, run in enumerate(a.runs):
        by_case: dict[tuple, dict[str, dict]] = {}
        for c in run.cases:
            if c.get("twin_of"):
                continue  # an A/A twin repeats its arm; the calibration reads it
            by_case.setdefault((c["stage"], c["frames"]), {})[c["arm"]] = c
        for cases in by_case.values():
            for c in sorted(cases.values(), key=lambda c: c["id"]):
                for name in ceilings_of(c):
                    ceiling = cases.get(name)
                    if _timed(c) and _timed(ceiling):
                        rows.append(_row(a, i, c, ceiling))
    return rows


def percent_text(row: dict) -> str:
    """The % of the ceiling with its interval ("50.0% [48.1, 52.0]"); "-" when not timed."""
    if row["percent"] is None:
        return "-"
    ci = row["ci_percent"]
    return f"{row['percent']:.1f}%" + (f" [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else " [no interval]")
