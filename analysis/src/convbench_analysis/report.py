"""`report`: per run and (stage, frames), every case's own verdict (ok, imprecise with the rounds
that would make it precise, or REFUSED for a named cause), then the ratios a user asks for
(pairs.py): each with its paired estimate and an interval widened by the run's own A/A twins
(verdicts.py), FASTER / SLOWER / SAME / AMBIGUOUS, or not admissible for a cause of its own two
cases (the value and interval still shown); then the fits, the size signatures (one layer at
three or more sizes only) and the A/A twins with their coverage."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from . import ceilings, record, verdicts
from .checks import pair_findings, seconds, spread_of
from .findings import Assessment
from .fit import fit_line
from .pairs import choose, pick_baseline
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


def _ci_text(ci) -> str:
    return f"[{ci[0]:.4g}, {ci[1]:.4g}]" if ci else "[no interval]"


def _imprecise_line(r: dict) -> str:
    p = r["precision"]
    hw = f"+-{p['half_width']:.2%}" if p["half_width"] is not None else "no interval yet"
    more = p["more_rounds"]
    if more and more > 10 * max(r["n"], 1):
        why = (
            " (per-call staging: --staging resident times the kernel alone)"
            if r["arm"].endswith("/per-call")
            else " (the CPUs deliver changing speed between rounds: the notes name slow ones)"
            if r["arm"].endswith("/host")
            else ""
        )
        tail = f"; about {more} more rounds at this run's spread: out of reach{why}"
    elif more:
        tail = (
            f"; about {more} more round(s) at this run's spread would reach it (bench_conv "
            f"--reps {r['n'] + more} --target-ci 0, or a longer --max-time)"
        )
    else:
        tail = ""
    return f"      imprecise: median {hw} against its {p['target']:.2%} target{tail}"


def _render_group(g: dict) -> list[str]:
    lines = [
        "",
        f"{g['stage']} / {g['frames']} frames  [{g['file']}]"
        + (f"  baseline {g['baseline']}" if g["baseline"] else "")
        + (f"  ({g['note']})" if g["note"] else ""),
        f"  {'case':<24}{'best':>11}{'median':>11}{'+-95%':>8}{'n':>4}{'CV':>8}  {'verdict':<10}"
        f"{'TFLOP/s':>8}  counters",
    ]
    for r in g["cases"]:
        nom = f"{r['nominal_tflops']:.3g}" if r["nominal_tflops"] is not None else "-"
        cv = f"{r['cv']:.2%}" if r["cv"] is not None else "-"
        hw = r.get("ci_half_width")
        ci = f"{hw:.2%}" if hw is not None else "-"
        lines.append(
            f"  {r['arm']:<24}{_t(r['best_s']):>11}{_t(r['median_s']):>11}{ci:>8}{r['n']:>4}"
            f"{cv:>8}  {r['verdict']:<10}{nom:>8}  {_ctr_text(r['counters'])}"
        )
        lines += _finding_lines(r["reasons"], r["case"], "      ")
        if r["verdict"] == "imprecise":
            lines.append(_imprecise_line(r))
        lines += _finding_lines(r["notes"], r["case"], "      ")
    if g["rows"]:
        lines.append(
            f"  {'ratio (time; < 1: faster)':<44}{'value':>8}  {'95% CI':<20}{'best/best':>10}"
            "  verdict"
        )
    for r in g["rows"]:
        val = f"{r['ratio']:.4g}" if r["ratio"] is not None else "-"
        best = f"{r['best_ratio']:.4g}" if r["best_ratio"] is not None else "-"
        verdict = r["verdict"] if r["admissible"] else "not admissible"
        lines.append(
            f"  {r['arm'] + ' / ' + r['den']:<44}{val:>8}  {_ci_text(r['ci']):<20}{best:>10}"
            f"  {verdict}"
        )
        for f in r["reasons"]:
            lines.append(f"      {f['code']} [{f['case'] or 'run'}]: {f['detail']}")
        lines += _finding_lines(r["notes"], r["case"], "      ")
    return lines


def render(rep: dict) -> str:
    lines = _render_runs(rep)
    for g in rep["groups"]:
        lines += _render_group(g)
    fits = rep["fits"]
    if fits:  # one layer at three or more sizes: nothing to fit otherwise
        lines.append("")
        lines.append("fit over the sweep (accepted cases, one layer): time = a + b x FLOPs")
        for f in fits:
            if "error" in f:
                lines.append(f"  {f['model']} {f['stage']} {f['arm']}: no fit ({f['error']})")
            else:
                lines.append(
                    f"  {f['model']} {f['stage']} {f['arm']}: a = {_t(f['a_s'])}, rate 1/b = "
                    f"{f['rate_tflops']:.4g} TFLOP/s, R^2 = {f['r2']:.4f}, n = {f['n']}"
                )
    if rep["signatures"]:
        lines.append("")
        lines.append("size signatures (one layer at three or more sizes):")
    for s in rep["signatures"]:
        lines.append(f"  {s['arm']} / {s['baseline']}: {s['text']}")
    lines += _render_aa(rep)
    lines += ceilings.render_lines(rep["ceilings"])
    lines.append("")
    lines.append(summary_line(rep))
    return "\n".join(lines)


def summary_line(rep: dict) -> str:
    rows = [r for g in rep["groups"] for r in g["rows"]]
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("FASTER", "SLOWER", "SAME")}
    said = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    parts = [
        f"{len(rows)} ratio(s)" + (f": {said}" if said else ""),
        f"{rep['ambiguous']} ambiguous" if rep["ambiguous"] else "",
        f"{rep['imprecise_cases']} case(s) imprecise" if rep["imprecise_cases"] else "",
        f"{rep['refused']} ratio(s) and {rep['refused_cases']} case(s) refused for a cause"
        if rep["refused"] or rep["refused_cases"]
        else "nothing refused",
    ]
    return "; ".join(p for p in parts if p)


def _render_aa(rep: dict) -> list[str]:
    if not rep["aa"]:
        return []
    n = len(rep["aa"])
    cover = sum(r["covers_one"] for r in rep["aa"])
    lines = [
        "",
        f"A/A twins (an arm timed twice; the interval widened by the other twins of its kind "
        f"only): {cover} of {n} intervals hold 1",
    ]
    for r in rep["aa"]:
        lines.append(
            f"  {r['stage']}/{r['frames']} {r['twin']:<26} {r['ratio']:.4f}  "
            f"{_ci_text(r['ci']):<20}  {r['verdict']}"
            + ("" if r["covers_one"] or r["ci"] is None else "  (1 outside the interval)")
            + (
                f"  (not one kernel: the twin ran {r['kernels_differ'][0]}, its arm "
                f"{r['kernels_differ'][1]})"
                if r.get("kernels_differ")
                else ""
            )
        )
    return lines
