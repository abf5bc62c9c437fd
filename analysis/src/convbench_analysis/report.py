"""`report`: per run and (stage, frames), every case's own verdict, then the ratios a user asks
for (pairs.py), each gated on its own two cases only, with a bootstrap interval or REFUSED with
every reason; then the fits, the signatures and the A/A twins."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from . import record
from .fit import fit_line, signature
from .gates import Assessment, pair_findings, seconds, spread_of
from .pairs import TWIN, choose, pick_baseline
from .stats import DEFAULT_SEED, best_ratio, median_half_width


def round_drift(cases: list[dict]) -> dict | None:
    """What every device case of a run shares from round to round: interleaving puts each case in
    every round, so a move common to all of them (clocks, neighbours, the machine) shows in the
    median over cases of log(time / the case's geometric mean), round by round. Ratios within a
    round cancel it; each case's CV does not. Dividing it out leaves the case's own noise
    (`cv_without_drift`). None with fewer than 3 device cases timed in all of 3 or more rounds."""
    per = {}
    for c in cases:
        if c["device"]:
            per[c["id"]] = {
                s["round"]: s["seconds"]
                for s in c.get("samples") or []
                if (s.get("seconds") or 0) > 0
            }
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
        "ci_half_width": median_half_width(x),
    }


def _ratio_row(a: Assessment, i: int, num: dict, den: dict, seed: int) -> dict:
    """A ratio is gated on its own two cases (and their run) and on what only the pair shows."""
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
        "ci": None,
        "status": "ok",
        "reasons": [f.as_dict() for f in reasons],
        "notes": [f.as_dict() for f in both if not f.refuses],
    }
    if reasons or not len(x) or not len(bx):
        row["status"] = "REFUSED"
    else:
        r = best_ratio(x, bx, int(th.bootstrap_resamples), th.ci_level, seed)
        row["ratio"], row["ci"] = r.value, [r.lo, r.hi]
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
    seed: int = DEFAULT_SEED,
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
        groups = defaultdict(list)
        for c in run.cases:
            groups[(c["stage"], c["frames"])].append(c)
        for (stage, frames), cases in groups.items():
            by_label = {record.label(c): c for c in cases}
            chosen, note = choose(list(by_label), baseline, pairs)
            g = {
                "file": run.path,
                "stage": stage,
                "frames": frames,
                "baseline": pick_baseline(list(by_label), baseline) if baseline else None,
                "note": note,
                "cases": [_case_row(a, i, by_label[lb], drift) for lb in sorted(by_label)],
                "rows": [_ratio_row(a, i, by_label[n], by_label[d], seed) for n, d in chosen],
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
            out["aa"] += _aa_twins(run.path, stage, frames, by_label, th, seed)
            out["groups"].append(g)
    _fits(out, accepted_points, baseline, th)
    return out


def _fits(out: dict, accepted_points: dict, baseline: str | None, th) -> None:
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
        if not base or base == lb or (model, base) not in fits:
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


def _ctr_text(ctr: dict | None) -> str:
    """The counters column: the path that did most of the arithmetic with its rate and % of its
    peak ("fp64 DMMA 36.6 TFLOP/s = 55% of 66.6"), the other paths above 1% of the FLOP, and the
    paths nobody counted (so a pipe without a counter is never read as idle)."""

    def _pct(v: float) -> str:
        return f"{v:.1f}%" if v < 10 else f"{v:.0f}%"

    if ctr is None:
        return "-"
    if ctr["status"] == "unavailable":
        return f"unavailable ({ctr['why']})"
    dom = ctr.get("dominant")
    parts = []
    if dom:
        rate = f"{dom['name']} {dom['tflops']:.3g} TFLOP/s"
        if dom["pct_peak"] is not None:
            rate += f" = {_pct(dom['pct_peak'])} of {dom['peak_tflops']:.3g}"
        else:
            rate += " (no peak known)"
        parts.append(rate)
        for p in sorted(ctr["paths"], key=lambda p: -p["flop"]):
            if p is not dom and p["flop"] > 0 and (p["share_pct"] or 0) >= 1.0:
                parts.append(f"{p['name']} {p['tflops']:.3g} ({_pct(p['share_pct'])} of FLOP)")
    else:
        parts.append("collected, no FLOP counted")
    missing = ctr.get("not_counted") or []
    if missing:
        names = ", ".join(m["name"] for m in missing)
        parts.append(f"not counted: {names} ({missing[0]['why']})")
    return "; ".join(parts)


def _finding_lines(fs: list[dict], own_case: str | None, indent: str, tag: str = "") -> list:
    lines = []
    for f in fs:
        whose = "" if f["case"] in (own_case, None) and own_case else f" [{f['case'] or 'run'}]"
        if f["refuses"]:
            lines.append(f"{indent}{tag}{f['code']}{whose}: {f['detail']} (fix: {f['remedy']})")
        else:
            lines.append(f"{indent}note {f['code']}{whose}: {f['detail']}")
    return lines


def _render_runs(rep: dict) -> list[str]:
    lines = []
    for s in rep["runs"]:
        lines.append(
            f"run {s['path']}: host {s['host']}, GPU {s['gpu']}, model {s['model']}, "
            f"device timing {s['device_timing']}, lease {s['lease']}"
            + (f" ({s['lease_backend']}, token {s['lease_token']})" if s["lease_backend"] else "")
        )
        lines += _finding_lines(s["findings"], None, "  ", "run REFUSED  ")
        lines += _finding_lines(s.get("notes", []), None, "  ")
        d = s.get("round_drift")
        if d:
            moves = ", ".join(
                f"r{r} {x:+.2%}" for r, x in zip(d["rounds"], d["drift"], strict=True)
            )
            lines.append(
                f"  round drift, shared by the {d['cases']} device cases: {moves} (range "
                f"{d['range']:.2%}); their CV, median {d['cv_median']:.2%}, is "
                f"{d['cv_without_drift_median']:.2%} without it (ratios within a round cancel it)"
            )
    return lines


def _render_group(g: dict) -> list[str]:
    lines = [
        "",
        f"{g['stage']} / {g['frames']} frames  [{g['file']}]"
        + (f"  baseline {g['baseline']}" if g["baseline"] else "")
        + (f"  ({g['note']})" if g["note"] else ""),
        f"  {'case':<24}{'best':>12}{'n':>4}{'CV':>8}{'median CI':>11}  {'verdict':<9}"
        f"{'TFLOP/s':>9}  counters",
    ]
    for r in g["cases"]:
        nom = f"{r['nominal_tflops']:.3g}" if r["nominal_tflops"] is not None else "-"
        cv = f"{r['cv']:.2%}" if r["cv"] is not None else "-"
        hw = r.get("ci_half_width")
        ci = f"+-{hw:.2%}" if hw is not None else "-"
        lines.append(
            f"  {r['arm']:<24}{_t(r['best_s']):>12}{r['n']:>4}{cv:>8}{ci:>11}  {r['status']:<9}"
            f"{nom:>9}  {_ctr_text(r['counters'])}"
        )
        lines += _finding_lines(r["reasons"], r["case"], "      ")
        lines += _finding_lines(r["notes"], r["case"], "      ")
    if g["rows"]:
        lines.append(f"  {'ratio':<44}{'value':>9}  95% CI")
    for r in g["rows"]:
        val = "REFUSED" if r["status"] == "REFUSED" else f"{r['ratio']:.4g}"
        ci = f"[{r['ci'][0]:.4g}, {r['ci'][1]:.4g}]" if r["ci"] else ""
        lines.append(f"  {r['arm'] + ' / ' + r['den']:<44}{val:>9}  {ci}")
        for f in r["reasons"]:
            lines.append(f"      {f['code']} [{f['case'] or 'run'}]: {f['detail']}")
        lines += _finding_lines(r["notes"], r["case"], "      ")
    return lines


def render(rep: dict) -> str:
    lines = _render_runs(rep)
    for g in rep["groups"]:
        lines += _render_group(g)
    fits = [f for f in rep["fits"] if "distinct sizes" not in f.get("error", "")]
    if fits:  # a run at one size has nothing to fit: no line for it
        lines.append("")
        lines.append("fit over the sweep (accepted cases): time = a + b x FLOPs")
        for f in fits:
            if "error" in f:
                lines.append(f"  {f['model']} {f['arm']}: no fit ({f['error']})")
            else:
                lines.append(
                    f"  {f['model']} {f['arm']}: a = {_t(f['a_s'])}, rate 1/b = "
                    f"{f['rate_tflops']:.4g} TFLOP/s, R^2 = {f['r2']:.4f}, n = {f['n']}"
                )
    for s in rep["signatures"]:
        lines.append(f"  {s['arm']} / {s['baseline']}: {s['text']}")
    lines += _render_aa(rep)
    lines.append("")
    lines.append(
        f"{rep['refused']} ratio(s) refused, {rep['refused_cases']} case(s) refused"
        if rep["refused"] or rep["refused_cases"]
        else "all cases and ratios accepted"
    )
    return "\n".join(lines)


def _render_aa(rep: dict) -> list[str]:
    if not rep["aa"]:
        return []
    tol = rep["thresholds"]["aa_tolerance"]
    lines = ["", f"A/A twins (best of the twin / best of its arm; limit 1 +- {tol:g}):"]
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
    return lines
