"""`report`: per run and (stage, frames), the ratio of each arm's best time to the baseline's,
with a bootstrap interval, or REFUSED with every reason; then the fits and the signatures."""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from . import record
from .fit import fit_line, signature
from .gates import Assessment, seconds, spread_of
from .stats import DEFAULT_SEED, best_ratio

REFERENCE_ARM = "cpu-f64/host"
TWIN = re.compile(r"#\d+$")  # an A/A twin's suffix: cuda-f32#2


def round_drift(cases: list[dict]) -> dict | None:
    """What every device case of a run shares from round to round: interleaving puts each case in
    every round, so a move common to all of them (clocks, neighbours, the machine) shows in the
    median over cases of log(time / the case's geometric mean), round by round. Ratios within a
    round cancel it; each case's CV does not. Dividing it out leaves the case's own noise
    (`cv_without_drift`). None with fewer than 3 device cases timed in all of 3 or more rounds."""
    per = {}
    for c in cases:
        if c["device"]:
            per[c["id"]] = {s["round"]: s["seconds"] for s in c.get("samples") or []
                            if (s.get("seconds") or 0) > 0}
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


def pick_baseline(labels: list[str], wanted: str | None) -> str | None:
    if not wanted:
        return REFERENCE_ARM if REFERENCE_ARM in labels else (sorted(labels) or [None])[0]
    if wanted in labels:
        return wanted
    same_arm = [lb for lb in labels if lb.split("/")[0] == wanted]
    return same_arm[0] if len(same_arm) == 1 else None


def build(a: Assessment, baseline: str | None = None, seed: int = DEFAULT_SEED) -> dict:
    th = a.thresholds
    out = {
        "thresholds": {n: getattr(th, n) for n in th.names()},
        "runs": [],
        "groups": [],
        "fits": [],
        "signatures": [],
        "aa": [],
        "refused": 0,
    }
    accepted_points = defaultdict(dict)  # (model, label) -> {(stage, frames): (flops, best)}
    for i, run in enumerate(a.runs):
        s = record.summary(run)
        s["findings"] = [f.as_dict() for f in a.run_findings.get(i, [])]
        drift = round_drift(run.cases)
        s["round_drift"] = (
            None
            if drift is None
            else {k: drift[k] for k in ("rounds", "cases", "drift", "range")}
            | {
                "cv_median": float(np.median(list(drift["cv"].values()))),
                "cv_without_drift_median": float(
                    np.median(list(drift["cv_without_drift"].values()))
                ),
            }
        )
        out["runs"].append(s)
        groups = defaultdict(list)
        for c in run.cases:
            groups[(c["stage"], c["frames"])].append(c)
        for (stage, frames), cases in groups.items():
            by_label = {record.label(c): c for c in cases}
            base = pick_baseline(list(by_label), baseline)
            g = {
                "file": run.path,
                "stage": stage,
                "frames": frames,
                "baseline": base,
                "note": None
                if base
                else f"baseline {baseline!r} not among {', '.join(sorted(by_label))}",
                "rows": [],
            }
            out["aa"] += _aa_twins(run.path, stage, frames, by_label, th, seed)
            base_case = by_label.get(base)
            base_findings = a.for_case(i, base_case["id"]) if base_case else []
            for lb in sorted(by_label, key=lambda x: (x != base, x)):
                c = by_label[lb]
                own = a.for_case(i, c["id"])
                x = seconds(c)
                row = {
                    "arm": lb,
                    "case": c["id"],
                    "n": int(len(x)),
                    "best_s": float(x.min()) if len(x) else None,
                    "median_s": float(np.median(x)) if len(x) else None,
                    "nominal_tflops": (
                        c["flops"] / x.min() / 1e12 if len(x) and x.min() > 0 else None
                    ),
                    "counters": record.achieved(c),
                    "ratio": None,
                    "ci": None,
                    "status": "ok",
                    "reasons": [f.as_dict() for f in own],
                    "cv": spread_of(x)[0] if len(x) else None,
                    "cv_without_drift": (drift or {}).get("cv_without_drift", {}).get(c["id"]),
                }
                if not own and len(x):
                    accepted_points[(s["model"], lb)][(stage, frames)] = (
                        c["flops"],
                        float(x.min()),
                    )
                if base_case is not None:
                    reasons = own + (
                        [f for f in base_findings if f not in own] if lb != base else []
                    )
                    row["reasons"] = [f.as_dict() for f in reasons]
                    bx = seconds(base_case)
                    if reasons or not len(x) or not len(bx):
                        row["status"] = "REFUSED"
                        out["refused"] += 1
                    else:
                        r = best_ratio(x, bx, int(th.bootstrap_resamples), th.ci_level, seed)
                        row["ratio"], row["ci"] = r.value, [r.lo, r.hi]
                elif own:
                    row["status"] = "REFUSED"
                    out["refused"] += 1
                g["rows"].append(row)
            out["groups"].append(g)
    fits = {}
    for (model, lb), pts in sorted(accepted_points.items()):
        xs, ys = zip(*pts.values(), strict=True)
        try:
            f = fit_line(xs, ys)
        except ValueError as e:
            out["fits"].append({"model": model, "arm": lb, "error": str(e)})
            continue
        fits[(model, lb)] = (f, pts)
        out["fits"].append(
            {
                "model": model,
                "arm": lb,
                "a_s": f.a,
                "b_s_per_flop": f.b,
                "rate_tflops": f.rate / 1e12,
                "r2": f.r2,
                "n": f.n,
            }
        )
    for (model, lb), (f, pts) in fits.items():
        base = pick_baseline([k[1] for k in fits if k[0] == model], baseline)
        if not base or base == lb:
            continue
        fb, bpts = fits[(model, base)]
        common = sorted(set(pts) & set(bpts))
        xs = [pts[k][0] for k in common]
        if len(set(xs)) < 2:
            continue
        sig = signature(
            xs,
            [pts[k][1] for k in common],
            [bpts[k][1] for k in common],
            f,
            fb,
            th.signature_flat_tol,
        )
        out["signatures"].append(
            {
                "model": model,
                "arm": lb,
                "baseline": base,
                "kind": sig.kind,
                "ratio_small": sig.ratio_small,
                "ratio_large": sig.ratio_large,
                "text": sig.text(),
            }
        )
    return out


def _aa_twins(path, stage, frames, by_label, th, seed) -> list[dict]:
    """Each A/A twin (an arm listed twice: cuda-f32#2 next to cuda-f32) against its arm: best
    time ratio with its bootstrap interval. The instrument's own error: a ratio of the two runs
    of one arm beyond aa_tolerance means no ratio finer than that can be told from noise."""
    rows = []
    for lb, c in sorted(by_label.items()):
        arm, staging = lb.rsplit("/", 1)
        if not TWIN.search(arm):
            continue
        first = by_label.get(f"{TWIN.sub('', arm)}/{staging}")
        x, bx = seconds(c), (seconds(first) if first else np.array([]))
        if not len(x) or not len(bx):
            continue
        r = best_ratio(x, bx, int(th.bootstrap_resamples), th.ci_level, seed)
        # What each instance chose when prepared (cuDNN: its Find's algorithm): twins that ran
        # different kernels are not an A/A pair of one kernel, whatever their ratio says.
        chose = [_chosen(c), _chosen(first)]
        rows.append(
            {
                "file": path,
                "stage": stage,
                "frames": frames,
                "twin": lb,
                "arm": record.label(first),
                "ratio": r.value,
                "ci": [r.lo, r.hi],
                "within": abs(r.value - 1.0) <= th.aa_tolerance,
                "kernels_differ": chose if chose[0] != chose[1] else None,
            }
        )
    return rows


def _chosen(case: dict) -> str | None:
    """The algorithm a prepared case recorded it chose (kernel.algorithm), else None."""
    k = case.get("kernel")
    return k.get("algorithm") if isinstance(k, dict) else None


def _t(s: float | None) -> str:
    if s is None:
        return "-"
    # By magnitude: a fitted fixed cost can come out negative (-17.25 us, not -1.725e+04 ns).
    for unit, k in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(s) >= k:
            return f"{s / k:.4g} {unit}"
    return f"{s / 1e-9:.4g} ns"


def render(rep: dict) -> str:
    lines = []
    for s in rep["runs"]:
        lines.append(
            f"run {s['path']}: host {s['host']}, GPU {s['gpu']}, model {s['model']}, "
            f"device timing {s['device_timing']}, lease {s['lease']}"
            + (f" ({s['lease_backend']}, token {s['lease_token']})" if s["lease_backend"] else "")
        )
        for f in s["findings"]:
            lines.append(f"  run REFUSED  {f['code']}: {f['detail']} (fix: {f['remedy']})")
        d = s.get("round_drift")
        if d:
            moves = ", ".join(f"r{r} {x:+.2%}" for r, x in zip(d["rounds"], d["drift"], strict=True))
            lines.append(
                f"  round drift, shared by the {d['cases']} device cases: {moves} (range "
                f"{d['range']:.2%}); their CV, median {d['cv_median']:.2%}, is "
                f"{d['cv_without_drift_median']:.2%} without it (ratios within a round cancel it)"
            )
    for g in rep["groups"]:
        lines.append("")
        lines.append(
            f"{g['stage']} / {g['frames']} frames  [{g['file']}]  baseline "
            f"{g['baseline'] or '-'}" + (f"  ({g['note']})" if g["note"] else "")
        )
        lines.append(
            f"  {'arm':<22}{'best':>12}{'n':>4}  {'ratio':>8}  {'95% CI':<19}"
            f"{'TFLOP/s':>9}  counters"
        )
        for r in g["rows"]:
            ratio = (
                "REFUSED"
                if r["status"] == "REFUSED"
                else "-"
                if r["ratio"] is None
                else f"{r['ratio']:.4g}"
            )
            ci = f"[{r['ci'][0]:.4g}, {r['ci'][1]:.4g}]" if r["ci"] else ""
            nom = f"{r['nominal_tflops']:.3g}" if r["nominal_tflops"] is not None else "-"
            ctr = r["counters"]
            if ctr is None:
                ctr_txt = "-"
            elif ctr["status"] == "unavailable":
                ctr_txt = f"unavailable ({ctr['why']})"
            else:
                parts = []
                for prec in ("fp64", "fp32"):
                    if prec in ctr:
                        v = ctr[prec]
                        pct = (
                            f" = {v['pct_peak']:.1f}% of {v['peak_tflops']:.3g}"
                            if v["pct_peak"] is not None
                            else ""
                        )
                        parts.append(f"{prec} {v['tflops']:.3g} TFLOP/s{pct}")
                ctr_txt = "; ".join(parts) or "collected, no FLOP counts"
            lines.append(
                f"  {r['arm']:<22}{_t(r['best_s']):>12}{r['n']:>4}  {ratio:>8}  "
                f"{ci:<19}{nom:>9}  {ctr_txt}"
            )
            for f in r["reasons"]:
                whose = "" if f["case"] == r["case"] else f" [{f['case'] or 'run'}]"
                lines.append(f"      {f['code']}{whose}: {f['detail']} (fix: {f['remedy']})")
    if rep["fits"]:
        lines.append("")
        lines.append("fit over the sweep (accepted cases): time = a + b x FLOPs")
        for f in rep["fits"]:
            if "error" in f:
                lines.append(f"  {f['model']} {f['arm']}: no fit ({f['error']})")
            else:
                lines.append(
                    f"  {f['model']} {f['arm']}: a = {_t(f['a_s'])}, rate 1/b = "
                    f"{f['rate_tflops']:.4g} TFLOP/s, R^2 = {f['r2']:.4f}, n = {f['n']}"
                )
    for s in rep["signatures"]:
        lines.append(f"  {s['arm']} / {s['baseline']}: {s['text']}")
    if rep["aa"]:
        tol = rep["thresholds"]["aa_tolerance"]
        lines.append("")
        lines.append(f"A/A twins (best of the twin / best of its arm; limit 1 +- {tol:g}):")
        for r in rep["aa"]:
            lines.append(
                f"  {r['stage']}/{r['frames']} {r['twin']:<24} {r['ratio']:.4f}  "
                f"[{r['ci'][0]:.4f}, {r['ci'][1]:.4f}]  {'within' if r['within'] else 'OUTSIDE'}"
                + (
                    f"  (not one kernel: the twin ran {r['kernels_differ'][0]}, its arm "
                    f"{r['kernels_differ'][1]})"
                    if r.get("kernels_differ")
                    else ""
                )
            )
    lines.append("")
    lines.append(f"{rep['refused']} ratio(s) refused" if rep["refused"] else "all ratios accepted")
    return "\n".join(lines)
