"""What each page shows, as template data: a run (the report's verdicts and ratios, every case's
timeline with the host's and GPU's state, the sweep figures and fits, the counters), two runs
side by side (compare), one case over time (history), a fleet (per host, across hosts). Every
number comes from the module that computes it for the terminal (report, compare, history_view,
fleet); this module only arranges it."""

from __future__ import annotations

from collections import Counter

from .. import compare, fleet, frontier, history_view, record, report, report_view
from ..findings import Assessment
from . import figures
from .rounds import lanes, marked_rounds

RATIO_VERDICTS = ("FASTER", "SLOWER", "SAME", "AMBIGUOUS", "REFUSED")
CASE_VERDICTS = ("ok", "imprecise", "REFUSED")


def one_run(a: Assessment, i: int) -> Assessment:
    """The assessment of run i alone, its findings as judged among every run given (overlap and
    drift against the others stay said): a run's page reports that run only."""
    sub = Assessment([a.runs[i]], a.thresholds)
    sub.run_findings = {0: a.run_findings.get(i, [])}
    sub.run_notes = {0: a.run_notes.get(i, [])}
    sub.case_findings = {(0, c): fs for (j, c), fs in a.case_findings.items() if j == i}
    sub.case_notes = {(0, c): fs for (j, c), fs in a.case_notes.items() if j == i}
    return sub


def explainer(run, a: Assessment):
    """The one-line explanation of a ratio row of run (index 0 of a), from explain.py where the
    package has it; None where it has not (the ratio table then shows no explanation line)."""
    try:
        from .. import explain
    except ImportError:
        return None

    def line(row: dict) -> str:
        return explain.explain_ratio(run, (row["case"], row["den_case"]), a, 0).line

    return line


def _ratio_row(r: dict, explain) -> dict:
    said = explain(r) if explain else None
    return {
        "name": f"{r['arm']} / {r['den']}",
        "value": f"{r['ratio']:.4g}" if r["ratio"] is not None else "-",
        "ci": report_view._ci_text(r["ci"]) if r["ratio"] is not None else "-",
        "best": f"{r['best_ratio']:.4g}" if r["best_ratio"] is not None else "-",
        "rounds": r["paired_rounds"],
        "verdict": r["verdict"],
        "shown": r["verdict"] if r["admissible"] else "not admissible",
        "reasons": r["reasons"],
        "notes": r["notes"],
        "explanation": said or None,
    }


def _case_row(r: dict) -> dict:
    hw = r.get("ci_half_width")
    return {
        "arm": r["arm"],
        "case": r["case"],
        "best": report_view._t(r["best_s"]),
        "median": report_view._t(r["median_s"]),
        "pm": f"{hw:.2%}" if hw is not None else "-",
        "n": r["n"],
        "cv": f"{r['cv']:.2%}" if r["cv"] is not None else "-",
        "verdict": r["verdict"],
        "tflops": f"{r['nominal_tflops']:.3g}" if r["nominal_tflops"] is not None else "-",
        "counters": report_view._ctr_text(r["counters"]),
        "reasons": r["reasons"],
        "notes": r["notes"],
        "imprecise": report_view._imprecise_text(r) if r["verdict"] == "imprecise" else None,
    }


def _group(g: dict, band: float, explain) -> dict:
    rows = [_ratio_row(r, explain) for r in g["rows"]]
    plot = None
    if any(r["ratio"] is not None for r in g["rows"]):
        plot = figures.intervals(
            [r["name"] for r in rows],
            [r["ratio"] for r in g["rows"]],
            [r["ci"] for r in g["rows"]],
            band,
            f"{g['stage']} / {g['frames']} frames: ratio (time; < 1 faster) with its 95% "
            f"interval; shaded: 1 -+ {band:g}",
        )
    return {
        "title": f"{g['stage']} / {g['frames']} frames",
        "baseline": g["baseline"],
        "note": g["note"],
        "cases": [_case_row(r) for r in g["cases"]],
        "ratios": rows,
        "plot": plot,
    }


def _timeline(run, case, th) -> dict:
    ls = lanes(run, case, th)
    x = [float(s.seconds) for s in case.samples]
    return {
        "case": case.id,
        "arm": record.label(case),
        "lanes": [lane.name for lane in ls],
        "marked": marked_rounds(ls),
        "plot": figures.timeline(case.id, [s.round for s in case.samples], x, ls)
        if case.samples
        else None,
    }


def _counters(run) -> list[dict]:
    out = []
    for c in run.cases:
        ctr = record.achieved(c)
        if ctr is None:
            continue
        paths = [
            {
                "name": p["name"],
                "tflops": f"{p['tflops']:.3g}" if p["tflops"] is not None else "-",
                "peak": f"{p['peak_tflops']:.3g}" if p["peak_tflops"] else "-",
                "pct": f"{p['pct_peak']:.1f}%" if p["pct_peak"] is not None else "-",
                "util": f"{p['util_pct']:.1f}%" if p["util_pct"] is not None else "-",
                "share": f"{p['share_pct']:.1f}%" if p["share_pct"] is not None else "-",
            }
            for p in ctr.get("paths", [])
        ]
        out.append(
            {
                "case": c.id,
                "text": report_view._ctr_text(ctr),
                "status": ctr["status"],
                "paths": paths,
            }
        )
    return out


def is_sweep(run) -> bool:
    """A sweep: some stage of the run timed at more than one number of frames."""
    frames: dict[str, set] = {}
    for c in run.cases:
        frames.setdefault(c.stage, set()).add(c.frames)
    return any(len(f) > 1 for f in frames.values())


def verdict_counts(rep: dict) -> dict:
    ratios = Counter(r["verdict"] for g in rep["groups"] for r in g["rows"])
    cases = Counter(r["verdict"] for g in rep["groups"] for r in g["cases"])
    return {
        "ratios": [(v, ratios[v]) for v in RATIO_VERDICTS if ratios[v]],
        "cases": [(v, cases[v]) for v in CASE_VERDICTS if cases[v]],
    }


def _frontier(fr: dict | None) -> dict | None:
    """The frontier's summary (`convbench-analyze frontier --summary`): per case with two
    candidate arms or more, the fastest arm within each consumer tolerance, the fastest of all."""
    rows = [r for r in frontier.summary_rows(fr) if r["arms"] > 1] if fr else []
    if not rows:
        return None
    tols = [t["id"] for t in fr["tolerances"]]
    return {
        "tolerances": tols,
        "rows": [
            {
                "case": f"{r['stage']}/{r['frames']} {r['staging']}",
                "picks": [frontier.arm_time(r["picks"][t]) for t in tols],
                "fastest": frontier.arm_time(r["fastest"]),
                "meets": ", ".join(r["fastest"]["meets"]) if r["fastest"] else "",
            }
            for r in rows
        ],
    }


def run_page(a: Assessment, i: int, baseline: str | None, pairs=None) -> dict:
    sub = one_run(a, i)
    run, th = sub.runs[0], sub.thresholds
    rep = report.build(sub, baseline, pairs)
    explain = explainer(run, sub)
    sweep = is_sweep(run)
    return {
        "title": f"run {run.path}",
        "summary": rep["runs"][0],
        "status": record.run_status(run),
        "line": report_view.summary_line(rep),
        "counts": verdict_counts(rep),
        "drift": rep["runs"][0].get("round_drift"),
        "groups": [_group(g, th.equivalence_band, explain) for g in rep["groups"]],
        "timelines": [_timeline(run, c, th) for c in run.cases],
        "sweep": sweep,
        "sweep_plots": figures.sweep(sub, baseline) if sweep else [],
        "fits": rep["fits"],
        "fit_time": report_view._t,
        "signatures": rep["signatures"],
        "aa": rep["aa"],
        "ceilings": rep["ceilings"],
        "frontier": _frontier(rep.get("frontier")),
        "counters": _counters(run),
        "refused": rep["refused"] + rep["refused_cases"],
    }


# the colour of a comparison's verdict: B faster or slower as a ratio's FASTER or SLOWER
_COMPARE_COLOUR = {"B faster": "FASTER", "B slower": "SLOWER", "REFUSED": "REFUSED"}


def compare_page(a: Assessment, seed: int) -> dict:
    rep = compare.build(a, None, seed)
    ok = [r for r in rep["rows"] if r["status"] == "ok"]
    plot = None
    if ok:
        plot = figures.intervals(
            [r["case"] for r in ok],
            [r["ratio_b_over_a"] for r in ok],
            [r["ci"] for r in ok],
            None,
            "B / A, best time (< 1: B faster), bootstrap 95% interval",
        )
    return {
        "title": f"compare {rep['a']['path']} and {rep['b']['path']}",
        "a": rep["a"],
        "b": rep["b"],
        "alpha": rep["alpha"],
        "headers": compare.HEADERS,
        "rows": [
            {
                "cells": compare.cells(r),
                "verdict": r.get("verdict") or r["status"],
                "colour": _COMPARE_COLOUR.get(r.get("verdict") or r["status"], "none"),
                "raw": r,
            }
            for r in rep["rows"]
        ],
        "run_findings": rep["run_findings"],
        "plot": plot,
        "refused": rep["refused"],
    }


def history_page(rep: dict, th) -> dict:
    return {
        "title": f"history of {rep['case']}",
        "rep": rep,
        "headers": history_view.HEADERS,
        "rows": [{"cells": history_view.cells(p), "raw": p} for p in rep["points"]],
        "plot": figures.history(rep, th),
    }


def _verdicts_of(a: Assessment, baseline: str | None) -> dict:
    """(file, stage, frames, arm, baseline) -> the report's verdict of that ratio (the fleet's
    per-host rows are the report's rows, which say ok or REFUSED only)."""
    rep = report.build(a, baseline)
    return {
        (g["file"], g["stage"], g["frames"], r["arm"], r["den"]): r["verdict"]
        for g in rep["groups"]
        for r in g["rows"]
    }


def fleet_page(a: Assessment, baseline: str | None) -> dict:
    rep = fleet.build(a, baseline)
    verdict = _verdicts_of(a, baseline)
    hosts = []
    for name, h in sorted(rep["hosts"].items(), key=lambda kv: fleet.natural(kv[0])):
        hosts.append(
            {
                "name": name,
                "runs": [r | {"job": fleet._job(r["slurm"])} for r in h["runs"]],
                "ratios": [
                    r
                    | {
                        "text": fleet._ratio_text(r),
                        "verdict": verdict[
                            (r["file"], r["stage"], r["frames"], r["arm"], r["baseline"])
                        ],
                    }
                    for r in h["ratios"]
                    if r["arm"] != r["baseline"]
                ],
            }
        )
    outliers = [
        {"case": f"{x['stage']}/{x['frames']}", "arm": x["arm"]} | o
        for x in rep["arms"]
        for o in x["outliers"]
    ]
    return {
        "title": f"fleet: {len(rep['hosts'])} host(s)",
        "rep": rep,
        "hosts": hosts,
        "spread_headers": fleet.SPREAD_HEADERS,
        "spread": [fleet._spread_cells(x) for x in rep["arms"]],
        "outliers": outliers,
        "plots": figures.fleet_figures(rep),
        "runs": sum(len(h["runs"]) for h in rep["hosts"].values()),
    }
