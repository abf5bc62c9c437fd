"""`report`: per run and (stage, frames), every case's own verdict (ok, imprecise with the rounds
that would make it precise, or REFUSED for a named cause), then the ratios a user asks for
(pairs.py): each with its paired estimate and an interval widened by the run's own A/A twins
(verdicts.py), FASTER / SLOWER / SAME / AMBIGUOUS, or not admissible for a cause of its own two
cases (the value and interval still shown); then the fits, the size signatures (one layer at
three or more sizes only) and the A/A twins with their coverage. report_view.py prints it
(text, md, csv)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from . import ceilings, record, verdicts
from .checks import pair_findings, seconds, spread_of
from .findings import Assessment
from .fit import fit_line
from .pairs import choose, pick_baseline

# the report's view, read here by the commands and pages that print it
from .report_view import _ctr_text, _t, render, summary_line  # noqa: F401
from .stats import median_half_width, median_interval


def round_drift(cases: list[dict]) -> dict | None:
    """What every device case of a run shares from round to round: interleaving puts each case in
    every round, so a move common to all of them (clocks, neighbours, the machine) shows in the
    median over cases of log(time / the case's geometric mean), round by round. Ratios within a
    round cancel it; each case's CV does not. Dividing it out leaves the case's own noise
    (`cv_without_drift`). None with fewer than 3 device cases timed in all of 3 or more rounds."""
    per = {c["id"]: verdicts.rounds_of(c) for c in cases if c["device"]}
    rounds = sorted({r for v in per.values() for r in v})
    full = {cid: v for cid, v in per.items() if rounds and all(r in v for r in rounds)}
    if len(full) < 3 or len(rounds) < 3:
        return None
    logs = {cid: np.log([v[r] for r in rounds]) for cid, v in full.items()}
    d = np.median(np.array([lg - lg.mean() for lg in logs.values()]), axis=0)
    return {
        "rounds": rounds,
        "cases": len(full),
        "drift": [float(np.expm1(x)) for x in d],
        "range": float(np.expm1(d.max() - d.min())),
        "cv": {cid: spread_of(np.exp(lg))[0] for cid, lg in logs.items()},
        "cv_without_drift": {cid: spread_of(np.exp(lg - d))[0] for cid, lg in logs.items()},
    }


def _case_row(a: Assessment, i: int, c: dict, drift: dict | None) -> dict:
    own = a.for_case(i, c["id"])
    x = seconds(c)
    hw = median_half_width(x)
    prec = verdicts.precision(c, a.thresholds, hw)
    iv = median_interval(x, a.thresholds.ci_level) if len(x) else None
    return {
        "arm": record.label(c),
        "case": c["id"],
        "n": int(len(x)),
        "best_s": float(x.min()) if len(x) else None,
        "median_s": float(np.median(x)) if len(x) else None,
        "nominal_tflops": (c["flops"] / x.min() / 1e12 if len(x) and x.min() > 0 else None),
        "counters": record.achieved(c),
        "status": "REFUSED" if own or not len(x) else "ok",
        "reasons": [f.as_dict() for f in own],
        "notes": [f.as_dict() for f in a.notes_for_case(i, c["id"])],
        "cv": spread_of(x)[0] if len(x) else None,
        "cv_without_drift": (drift or {}).get("cv_without_drift", {}).get(c["id"]),
        "ci_half_width": hw,
        "median_ci": list(iv) if iv else None,
        "twin_of": c.get("twin_of"),
        "precision": {
            "target": prec.target,
            "half_width": prec.half_width,
            "more_rounds": prec.more_rounds,
        },
        "imprecise": bool(len(x)) and not own and prec.imprecise,
        "verdict": "REFUSED" if own or not len(x) else ("imprecise" if prec.imprecise else "ok"),
    }


def _ratio_row(a: Assessment, i: int, num: dict, den: dict, errors: dict) -> dict:
    """A ratio is gated on its own two cases (and their run) and on what only the pair shows;
    refused or not, it carries its value and interval (a refused one is not admissible)."""
    th, run = a.thresholds, a.runs[i]
    reasons = a.for_case(i, num["id"])
    reasons += [f for f in a.for_case(i, den["id"]) if f not in reasons]
    both = pair_findings(run, num, run, den, th)
    reasons += [f for f in both if f.refuses]
    x, bx = seconds(num), seconds(den)
    row = {
        "arm": record.label(num),
        "den": record.label(den),
        "case": num["id"],
        "den_case": den["id"],
        "n": int(len(x)),
        "ratio": None,
        "best_ratio": None,
        "ci": None,
        "paired_rounds": 0,
        "widened_by": None,
        "verdict": None,
        "status": "ok",
        "admissible": True,
        "reasons": [f.as_dict() for f in reasons],
        "notes": [f.as_dict() for f in both if not f.refuses],
    }
    st = verdicts.state(num, den, errors, th) if len(x) and len(bx) else None
    if st is not None:
        row.update(st.as_dict())
    if reasons or st is None:
        row["status"], row["admissible"] = "REFUSED", False
        row["verdict"] = "REFUSED"
    return row


def _run_summary(a: Assessment, i: int) -> tuple[dict, dict | None]:
    run = a.runs[i]
    s = record.summary(run)
    s["findings"] = [f.as_dict() for f in a.run_findings.get(i, [])]
    s["notes"] = [f.as_dict() for f in a.run_notes.get(i, [])]
    drift = round_drift(run.cases)
    s["round_drift"] = (
        None
        if drift is None
        else {k: drift[k] for k in ("rounds", "cases", "drift", "range")}
        | {
            "cv_median": float(np.median(list(drift["cv"].values()))),
            "cv_without_drift_median": float(np.median(list(drift["cv_without_drift"].values()))),
        }
    )
    return s, drift


def build(
    a: Assessment,
    baseline: str | None = None,
    pairs: list[tuple[str, str]] | None = None,
) -> dict:
    th = a.thresholds
    out = {
        "thresholds": {n: getattr(th, n) for n in th.names()},
        "runs": [],
        "groups": [],
        "fits": [],
        "signatures": [],
        "aa": [],
        "refused": 0,
        "refused_cases": 0,
    }
    accepted_points = defaultdict(dict)  # (model, label) -> {(stage, frames): (flops, best)}
    for i, run in enumerate(a.runs):
        s, drift = _run_summary(a, i)
        out["runs"].append(s)
        ts = verdicts.twins(run.cases, th.ci_level)
        errors = verdicts.kind_errors(ts, th)
        s["twin_widening"] = errors
        groups = defaultdict(list)
        for c in run.cases:
            groups[(c["stage"], c["frames"])].append(c)
        for (stage, frames), cases in groups.items():
            by_label = {record.label(c): c for c in cases}
            chosen, note = choose(by_label, baseline, pairs)
            g = {
                "file": run.path,
                "stage": stage,
                "frames": frames,
                "baseline": pick_baseline(list(by_label), baseline) if baseline else None,
                "note": note,
                "cases": [_case_row(a, i, by_label[lb], drift) for lb in sorted(by_label)],
                "rows": [_ratio_row(a, i, by_label[n], by_label[d], errors) for n, d in chosen],
            }
            for row in g["cases"]:
                if row["status"] == "ok":
                    c = by_label[row["arm"]]
                    accepted_points[(s["model"], row["arm"])][(stage, frames)] = (
                        c["flops"],
                        row["best_s"],
                    )
            out["refused_cases"] += sum(r["status"] == "REFUSED" for r in g["cases"])
            out["refused"] += sum(r["status"] == "REFUSED" for r in g["rows"])
            out["groups"].append(g)
        out["aa"] += _aa_twins(run.path, ts, th)
    out["imprecise_cases"] = sum(r["imprecise"] for g in out["groups"] for r in g["cases"])
    out["ambiguous"] = sum(r["verdict"] == "AMBIGUOUS" for g in out["groups"] for r in g["rows"])
    _fits(out, accepted_points, th)
    out["signatures"] = _signatures(out, th)
    out["ceilings"] = ceilings.build(a)
    return out


def _fits(out: dict, accepted_points: dict, th) -> None:
    """time = a + b x FLOPs per arm over one layer at several sizes (a fit across layers would
    set different shapes on one line)."""
    by_stage = defaultdict(dict)
    for (model, lb), pts in accepted_points.items():
        for (stage, frames), v in pts.items():
            by_stage[(model, stage, lb)][frames] = v
    for (model, stage, lb), pts in sorted(by_stage.items()):
        if len(pts) < 3:
            continue  # two points fit any line exactly: nothing to learn from a
        xs, ys = zip(*pts.values(), strict=True)
        try:
            f = fit_line(xs, ys)
        except ValueError as e:
            out["fits"].append({"model": model, "stage": stage, "arm": lb, "error": str(e)})
            continue
        out["fits"].append(
            {
                "model": model,
                "stage": stage,
                "arm": lb,
                "a_s": f.a,
                "b_s_per_flop": f.b,
                "rate_tflops": f.rate / 1e12,
                "r2": f.r2,
                "n": f.n,
            }
        )


def _signatures(out: dict, th) -> list[dict]:
    """The size signature of each ratio measured on one layer at three or more sizes: falling
    (the numerator's fixed per-call cost dominates small sizes) or rising only when the ratios at
    the smallest and the largest size have disjoint intervals and differ by more than
    signature_flat_tol; otherwise flat (a rate difference: a fixed cost large enough to matter
    would move the ratio)."""
    series = defaultdict(list)
    for g in out["groups"]:
        for r in g["rows"]:
            if r["status"] == "ok" and r["ci"]:
                series[(g["file"], g["stage"], r["arm"], r["den"])].append((g["frames"], r))
    sigs = []
    for (path, stage, num, den), pts in sorted(series.items()):
        pts = sorted(pts, key=lambda p: p[0])
        if len({p[0] for p in pts}) < 3:
            continue
        small, large = pts[0][1], pts[-1][1]
        moved = large["ratio"] / small["ratio"] - 1.0
        beyond = large["ci"][1] < small["ci"][0] or large["ci"][0] > small["ci"][1]
        if beyond and abs(moved) > th.signature_flat_tol and moved < 0:
            kind, what = "falling", "falling with size beyond the intervals: a fixed per-call "
            what += "cost in the numerator arm dominates the small sizes"
        elif beyond and abs(moved) > th.signature_flat_tol:
            kind, what = "rising", "rising with size beyond the intervals: a fixed cost in the "
            what += "denominator arm, or the numerator's rate worsens at scale"
        elif beyond:
            kind = "flat"
            what = (
                f"flat within {th.signature_flat_tol:.0%} ({moved:+.1%} over the sizes, beyond "
                "the intervals): a rate difference"
            )
        else:
            kind = "flat"
            what = (
                "no size effect within the intervals: a rate difference (an overhead per call "
                "large enough to matter would move the ratio)"
            )
        sizes = ", ".join(f"{p[0]}: {p[1]['ratio']:.4g}" for p in pts)
        sigs.append(
            {
                "file": path,
                "stage": stage,
                "arm": num,
                "baseline": den,
                "kind": kind,
                "ratio_small": small["ratio"],
                "ratio_large": large["ratio"],
                "ci_small": small["ci"],
                "ci_large": large["ci"],
                "text": f"{what} ({stage} at frames {sizes})",
            }
        )
    return sigs


def _aa_twins(path: str, ts: list, th) -> list[dict]:
    """Each A/A twin (an arm timed twice: cuda-f32#2 beside cuda-f32) against its arm, with the
    interval every other ratio gets, widened by the other twins of its kind (not its own): the
    instrument's own error. Its interval should hold 1 (at the stated level), its verdict SAME
    or AMBIGUOUS; twins that ran different kernels are no A/A pair of one kernel."""
    rows = []
    for t in ts:
        st = verdicts.twin_statement(t, ts, th)
        if st is None:
            continue
        rows.append(
            {
                "file": path,
                "stage": t.twin["stage"],
                "frames": t.twin["frames"],
                "kind": t.kind,
                "twin": record.label(t.twin),
                "arm": record.label(t.arm),
                **st.as_dict(),
                "covers_one": st.lo is not None and st.lo <= 1.0 <= st.hi,
                "within": abs(st.value - 1.0) <= th.aa_tolerance,
                "kernels_differ": list(t.kernels_differ) if t.kernels_differ else None,
            }
        )
    return rows
