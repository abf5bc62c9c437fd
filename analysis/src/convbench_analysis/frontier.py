"""`frontier`: per case (stage and frames) and staging, every arm's accuracy against the reference
beside its time, and the fastest arm that meets each consumer's tolerance.

Accuracy is what the correctness gate recorded (the case's `gate` block): the relative L2 error
||y - ref||_2 / ||ref||_2, the worst cell's absolute error max |y - ref| and relative error
max |y - ref| / |ref|, and per absolute floor A of a grid (0, then 1e-9 to 1e-3 by half-decades:
1e-9, 3e-9, 1e-8, ...) the least rel that makes allclose hold, R_min(A) = max over cells of
max(0, |y - ref| - A) / |ref| (`allclose_rel_needed`; null where a cell whose reference is 0
differs by more than A: no rel suffices); all against the reference's output as the gate holds it
(the f64-accumulated reference, stored as f32 cells). Older records hold no relative errors: a
tolerance that needs them is undetermined there, never taken as met.

An arm MEETS a tolerance ("yes") when its gate passed and its recorded errors prove it; "no" when
they prove the opposite; "?" (undetermined) when they cannot tell:
  rel-l2 T        rel L2 <= T (the gate's own measure);
  max-abs T       max abs <= T;
  allclose R / A  every cell |y - ref| <= A + R |ref| (torch's allclose). R_min only falls as A
                  grows, so: met when R >= R_min(A') for the largest grid floor A' <= A;
                  beyond when R < R_min(A'') for the smallest grid floor A'' >= A (both exact
                  when A is on the grid, up to f64 rounding); else (A between floors and R
                  between their needs, or a record without the grid) met when max abs <= A, as
                  R |ref| >= 0, beyond when the output is not finite, "?" otherwise;
  unstated T      the consumer gave a number without its metric: "yes" when both recorded
                  readings (max abs and rel L2) are within T, "no" when both exceed it, "?" when
                  they disagree.
A missing error is "?"; a non-finite output errs without bound ("no"). An arm whose gate did not
pass (failed, or never run) meets nothing: it does not compute what it promises, and it has no
time. Values are compared as the gate compares them (<=).

Candidates: the arms of one case on one staging (resident against resident, host against host;
a per-call arm pays for its staging, a resident one does not), except the reference (role
"reference"), the ceilings (role "ceiling": a GEMM, a copy, a launch; no convolution) and the
A/A twins. Peers (cuDNN) are candidates: the arm a user would pick instead. Roles are the
record's arm facts.

Time: each arm's median over its rounds with its 95% order-statistic interval, judged as
`report` judges a case: ok; imprecise (the interval is wider than the case's target: it may be
chosen, and says so); REFUSED (a check refused the case: never chosen, listed apart).

The PICK for a tolerance is the candidate with the lowest median among those that meet it with a
time not refused. Beside it: the runner-up with the paired ratio pick / runner-up and its verdict
(verdicts.state: FASTER is a pick distinctly faster; SAME or AMBIGUOUS a tie at this run's
precision); every faster candidate that does not meet the tolerance, with its ratio to the pick
and the named tolerances it does meet (a looser tolerance buys its speed); faster candidates
whose compliance is undetermined; candidates that meet it but whose time was refused.

A point is on the FRONTIER when no other candidate with a time not refused is at least as fast
(median) and at least as accurate (max abs and rel L2), and strictly better in one of the three.

The consumers' tolerances: data/tolerances.json (the metric, the value, who states it and in which
words); `--tolerances FILE` adds entries of the same form, an entry of the same id replaces one."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from . import checks, entries, record, tables, verdicts
from .errors import InputError
from .findings import Assessment
from .stats import median_half_width, median_interval

METRICS = ("rel-l2", "max-abs", "allclose", "unstated")
YES, NO, UNKNOWN, GATE = "yes", "no", "?", "gate"
_NOT_CANDIDATE = {"reference": "the reference", "ceiling": "a ceiling (no convolution)"}


# ---- the consumers' tolerances ------------------------------------------------------------


def _number(t: dict, key: str, where: str) -> float:
    v = t.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise InputError(where, f"tolerances[{t.get('id')!r}].{key}", "a number >= 0 is needed")
    return float(v)


def _checked(t, where: str) -> dict:
    """One tolerance entry as read, its numbers checked for its metric."""
    if not isinstance(t, dict) or not isinstance(t.get("id"), str) or not t["id"]:
        raise InputError(where, "tolerances[]", "each entry needs an id (a string)")
    if t.get("metric") not in METRICS:
        raise InputError(
            where, f"tolerances[{t['id']!r}].metric", f"one of {', '.join(METRICS)} is needed"
        )
    keys = ("rel", "abs") if t["metric"] == "allclose" else ("value",)
    return dict(t) | {k: _number(t, k, where) for k in keys}


def builtin_tolerances() -> list[dict]:
    return entries.builtin("tolerances", _checked)


def load_tolerances(path: str | None = None) -> list[dict]:
    """The built-in tolerances, with a file's entries added (the same id: the file's)."""
    return entries.with_file(builtin_tolerances(), path, "tolerances", _checked)


def describe(t: dict) -> str:
    """A tolerance in the words of its metric: 'allclose rel 1e-05 / abs 1e-06'."""
    if t["metric"] == "allclose":
        return f"allclose rel {t['rel']:g} / abs {t['abs']:g}"
    if t["metric"] == "unstated":
        return f"{t['value']:g}, metric unstated"
    return f"{'rel L2' if t['metric'] == 'rel-l2' else 'max abs'} <= {t['value']:g}"


# ---- accuracy -----------------------------------------------------------------------------


def errors_of(case: dict) -> dict:
    """The gate's verdict and recorded errors (None where not recorded)."""
    g = record.Case.of(case).gate
    return {
        "kind": g.get("kind"),
        "result": g.get("result"),
        "max_abs_err": g.get("max_abs_err"),
        "rel_l2_err": g.get("rel_l2_err"),
        "max_rel_err": g.get("max_rel_err"),
        "allclose_rel_needed": g.get("allclose_rel_needed"),
        "gate_tolerance": g.get("tolerance"),
    }


def _within(err: float | None, bound: float) -> str:
    if err is None:
        return UNKNOWN
    return YES if err <= bound else NO  # inf (a non-finite output) is beyond every bound


def _allclose_by_floors(err: dict, rel: float, floor: float) -> str:
    """allclose(rel, floor) from the recorded R_min per grid floor (null: no rel suffices), which
    falls as the floor grows: yes, no, or ? when the floor lies between grid floors whose needs
    straddle rel, or the record has no grid."""
    need = err.get("allclose_rel_needed")
    if not need:
        return UNKNOWN
    grid = sorted((float(a), math.inf if r is None else r) for a, r in need.items())
    below = [r for a, r in grid if a <= floor]
    above = [r for a, r in grid if a >= floor]
    if below and rel >= below[-1]:
        return YES
    if above and rel < above[0]:
        return NO
    return UNKNOWN


def meets(err: dict, t: dict) -> str:
    """yes, no, ? (undetermined from what the record holds) or gate (its gate did not pass)."""
    if err["result"] != "pass":
        return GATE
    mx, l2 = err["max_abs_err"], err["rel_l2_err"]
    m = t["metric"]
    if m == "rel-l2":
        return _within(l2, t["value"])
    if m == "max-abs":
        return _within(mx, t["value"])
    if m == "allclose":
        by_floors = _allclose_by_floors(err, t["rel"], t["abs"])
        if by_floors != UNKNOWN:
            return by_floors
        return YES if _within(mx, t["abs"]) == YES else (NO if mx == math.inf else UNKNOWN)
    readings = {_within(mx, t["value"]), _within(l2, t["value"])}
    return readings.pop() if len(readings) == 1 else UNKNOWN


# ---- time ---------------------------------------------------------------------------------


def timing(a: Assessment, i: int, case: dict) -> dict:
    """The case's median with its interval and its verdict, as `report` judges a case."""
    c = record.Case.of(case)
    own = a.for_case(i, c.id)
    x = checks.seconds(c)
    if not len(x):
        why = sorted({f.code for f in own})
        return {
            "n": 0,
            "median_s": None,
            "ci": None,
            "half_width": None,
            "verdict": "not timed",
        } | {"reasons": why}
    hw = median_half_width(x)
    iv = median_interval(x, a.thresholds.ci_level)
    prec = verdicts.precision(c, a.thresholds, hw)
    return {
        "n": int(len(x)),
        "median_s": float(np.median(x)),
        "ci": list(iv) if iv else None,
        "half_width": hw,
        "verdict": "REFUSED" if own else ("imprecise" if prec.imprecise else "ok"),
        "reasons": sorted({f.code for f in own}),
    }


def accepted(p: dict) -> bool:
    return p["time"]["verdict"] in ("ok", "imprecise")


def _ratio(run, num: dict, den: dict, errors: dict, th) -> dict | None:
    """num / den paired over their rounds, widened by the run's twins, with its verdict; REFUSED
    when the pair's own check refuses it (throttling that differs between the two)."""
    st = verdicts.state(num, den, errors, th)
    if st is None:
        return None
    refused = sorted({f.code for f in checks.pair_findings(run, num, run, den, th) if f.refuses})
    return {
        "ratio": st.value,
        "ci": [st.lo, st.hi] if st.lo is not None else None,
        "verdict": "REFUSED" if refused else st.verdict,
        "reasons": refused,
    }


# ---- the frontier of one case on one staging ----------------------------------------------


def not_candidate(case: dict) -> str | None:
    """Why an arm is not a candidate (the reference, a ceiling, an A/A twin); None if it is."""
    if verdicts.is_twin(case):
        return "an A/A twin"
    return _NOT_CANDIDATE.get(record.arm_facts(case).role)


def _dominates(q: dict, p: dict) -> bool:
    a = (q["time"]["median_s"], q["max_abs_err"], q["rel_l2_err"])
    b = (p["time"]["median_s"], p["max_abs_err"], p["rel_l2_err"])
    if any(v is None for v in a + b):
        return False
    return all(x <= y for x, y in zip(a, b, strict=True)) and a != b


def _point(a: Assessment, i: int, c: dict, tols: list[dict]) -> dict:
    f = record.arm_facts(c)
    err = errors_of(c)
    return {
        "arm": record.label(c),
        "case": c["id"],
        "role": f.role,
        "precision": f.precision,
        **err,
        "time": timing(a, i, c),
        "meets": {t["id"]: meets(err, t) for t in tols},
    }


def _pick(run, t: dict, points: list[dict], by: dict, errors: dict, th) -> dict:
    """The fastest candidate that meets t with a time not refused, and what stands beside it."""
    tid = t["id"]
    timed = sorted((p for p in points if accepted(p)), key=lambda p: p["time"]["median_s"])
    ok = [p for p in timed if p["meets"][tid] == YES]
    out = {"tolerance": tid, "arm": ok[0]["arm"] if ok else None, "runner_up": None}
    out["refused_time"] = [p["arm"] for p in points if p["meets"][tid] == YES and not accepted(p)]
    faster = timed[: timed.index(ok[0])] if ok else timed
    out["faster_beyond"], out["faster_undetermined"] = [], []
    for p in faster:
        entry = {"arm": p["arm"], "median_s": p["time"]["median_s"], "ratio": None}
        if ok:
            entry["ratio"] = _ratio(run, by[p["arm"]], by[ok[0]["arm"]], errors, th)
        entry["meets"] = [k for k, v in p["meets"].items() if v == YES]
        key = "faster_undetermined" if p["meets"][tid] == UNKNOWN else "faster_beyond"
        out[key].append(entry)
    if len(ok) > 1:
        out["runner_up"] = {"arm": ok[1]["arm"]} | (
            _ratio(run, by[ok[0]["arm"]], by[ok[1]["arm"]], errors, th) or {"ratio": None}
        )
    return out


def _group(a: Assessment, i: int, key: tuple, cases: list[dict], tols, errors) -> dict:
    stage, frames, staging = key
    by = {record.label(c): c for c in cases}
    points = [_point(a, i, c, tols) for c in cases if not not_candidate(c)]
    points.sort(key=lambda p: (p["time"]["median_s"] is None, p["time"]["median_s"] or 0.0))
    for p in points:
        rivals = [q for q in points if q is not p and accepted(q)]
        p["frontier"] = accepted(p) and not any(_dominates(q, p) for q in rivals)
    run = a.runs[i]
    picks = [_pick(run, t, points, by, errors, a.thresholds) for t in tols]
    for p in points:
        p["fastest_for"] = [pk["tolerance"] for pk in picks if pk["arm"] == p["arm"]]
    return {
        "file": run.path,
        "stage": stage,
        "frames": frames,
        "staging": staging,
        "points": points,
        "picks": picks,
        "not_candidates": [
            {"arm": record.label(c), "why": not_candidate(c)} for c in cases if not_candidate(c)
        ],
    }


def build(a: Assessment, tols: list[dict] | None = None) -> dict:
    """Every run's cases, grouped by (stage, frames, staging), with their points and picks."""
    tols = builtin_tolerances() if tols is None else tols
    out = {"tolerances": tols, "groups": []}
    for i, run in enumerate(a.runs):
        errors = verdicts.kind_errors(
            verdicts.twins(run.cases, a.thresholds.ci_level), a.thresholds
        )
        groups = defaultdict(list)
        for c in run.cases:
            groups[(c.stage, c.frames, verdicts.kind_of(c))].append(c)
        for key, cases in groups.items():
            out["groups"].append(_group(a, i, key, cases, tols, errors))
    return out


# ---- what a person reads ------------------------------------------------------------------


def _e(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g}"


def _pm(tm: dict) -> str:
    return "-" if tm["half_width"] is None else f"{100 * tm['half_width']:.2f}%"


def _row(g: dict, p: dict, tols: list[dict], whole: bool) -> list:
    """A point's cells; whole (csv): with its case, role, precision and picks, which text and md
    say around the table."""
    tm = p["time"]
    head = [g["file"], g["stage"], g["frames"], g["staging"]] if whole else []
    facts = [p["role"], p["precision"] or "-"] if whole else []
    cells = [_e(p["rel_l2_err"]), _e(p["max_abs_err"]), tables.time_text(tm["median_s"]), _pm(tm)]
    cells += [tm["verdict"], *(p["meets"][t["id"]] for t in tols), "yes" if p["frontier"] else ""]
    return head + [p["arm"], *facts, *cells] + ([" ".join(p["fastest_for"])] if whole else [])


def _headers(tols: list[dict], whole: bool) -> list[str]:
    head = ["file", "stage", "frames", "staging", "arm", "role", "precision"] if whole else ["arm"]
    cols = ["rel L2", "max abs", "median", "+-95%", "time", *(t["id"] for t in tols), "frontier"]
    return head + cols + (["fastest for"] if whole else [])


def _ratio_text(r: dict | None, whose: str) -> str:
    """'0.61x {whose} [0.6085, 0.6122] FASTER' (a paired ratio of times)."""
    if not r or r.get("ratio") is None:
        return "no paired rounds"
    ci = "no interval" if not r["ci"] else f"[{r['ci'][0]:.4g}, {r['ci'][1]:.4g}]"
    why = f" ({', '.join(r['reasons'])})" if r.get("reasons") else ""
    return f"{r['ratio']:.4g}x {whose} {ci} {r['verdict']}{why}"


def _beside(pk: dict, e: dict) -> str:
    """A faster arm beside the pick: its time as a ratio to the pick's, or its median when no arm
    was picked; then the named tolerances it meets."""
    named = ", ".join(e["meets"]) or "none of the named tolerances"
    when = (
        _ratio_text(e["ratio"], "the pick's time") if pk["arm"] else tables.time_text(e["median_s"])
    )
    return f"{e['arm']} ({when}); it meets {named}"


def _pick_lines(pk: dict, t: dict, by: dict) -> list[str]:
    head = f"{t['id']} ({describe(t)}): "
    if pk["arm"] is None:
        lines = [head + "no candidate meets it with a time not refused"]
    else:
        tm = by[pk["arm"]]["time"]
        line = f"{head}{pk['arm']} {tables.time_text(tm['median_s'])} {tm['verdict']}"
        ru = pk["runner_up"]
        if ru:
            line += f"; next within it {ru['arm']} ({_ratio_text(ru, 'its time')})"
        lines = [line]
    faster = "faster, " if pk["arm"] else ""
    for e in pk["faster_beyond"]:
        lines.append(f"  {faster}beyond it: {_beside(pk, e)}")
    for e in pk["faster_undetermined"]:
        lines.append(f"  {faster}undetermined (its recorded errors cannot tell): " + _beside(pk, e))
    if pk["refused_time"]:
        lines.append(f"  meets it, time refused: {', '.join(pk['refused_time'])}")
    return lines


def _say(text: str, fmt: str) -> str:
    """A line under a table: wrapped in text; in md an item of a list (indented: a sub-item)."""
    if fmt != "md":
        return tables.sentence(text, fmt, indent=" " * (len(text) - len(text.lstrip()) + 4))
    return f"{text[: len(text) - len(text.lstrip())]}- {text.lstrip()}"


def _tolerance_lines(tols: list[dict]) -> list[str]:
    out = ["tolerances (yes: met; no: beyond; ?: the record cannot tell; gate: its gate failed):"]
    for t in tols:
        who = "; ".join(x for x in (t.get("consumer"), t.get("owner")) if x)
        text = f"  {t['id']}: {describe(t)}" + (f" ({who})" if who else "")
        if t.get("stated"):
            text += f', stated as "{t["stated"]}"'
        out.append(text + (f"; {t['note']}" if t.get("note") else ""))
    return out


def render(rep: dict, fmt: str = "text") -> str:
    """The frontier in text or md (a table per case and staging, the picks under it), csv (one
    table of every point) or json (the data)."""
    tols = rep["tolerances"]
    if fmt == "json":
        return tables.dumps(rep)
    if fmt == "csv":
        rows = [_row(g, p, tols, True) for g in rep["groups"] for p in g["points"]]
        return tables.render(_headers(tols, True), rows, "csv")
    lines = []
    for g in rep["groups"]:
        by = {p["arm"]: p for p in g["points"]}
        lines += ["", f"{g['stage']} / {g['frames']} frames, {g['staging']}  [{g['file']}]", ""]
        said = []
        if g["points"]:
            rows = [_row(g, p, tols, False) for p in g["points"]]
            lines += [tables.render(_headers(tols, False), rows, fmt), ""]
            for pk, t in zip(g["picks"], tols, strict=True):
                said += _pick_lines(pk, t, by)
        else:
            said.append("no candidate arm")
        refused = [
            f"{p['arm']} ({', '.join(p['time']['reasons'])})"
            for p in g["points"]
            if p["time"]["verdict"] == "REFUSED"
        ]
        if refused:
            said.append(f"time refused (convbench-analyze report says why): {', '.join(refused)}")
        if g["not_candidates"]:
            said.append(
                "not candidates: "
                + ", ".join(f"{n['arm']} ({n['why']})" for n in g["not_candidates"])
            )
        lines += [_say(x, fmt) for x in said]
    lines += ["", *(_say(x, fmt) for x in _tolerance_lines(tols))]
    return "\n".join(lines).lstrip("\n")


def summary_rows(rep: dict) -> list[dict]:
    """A row per case and staging: per tolerance the fastest arm within it (None: none with a time
    not refused) and its median; the fastest timed arm of all and the tolerances it meets."""
    rows = []
    for g in rep["groups"]:
        by = {p["arm"]: p for p in g["points"]}
        timed = [p for p in g["points"] if accepted(p)]
        fastest = min(timed, key=lambda p: p["time"]["median_s"]) if timed else None
        picks = {}
        for pk in g["picks"]:
            arm = pk["arm"]
            picks[pk["tolerance"]] = {
                "arm": arm,
                "median_s": by[arm]["time"]["median_s"] if arm else None,
            }
        rows.append(
            {
                "file": g["file"],
                "stage": g["stage"],
                "frames": g["frames"],
                "staging": g["staging"],
                "picks": picks,
                "fastest": None
                if fastest is None
                else {
                    "arm": fastest["arm"],
                    "median_s": fastest["time"]["median_s"],
                    "meets": [k for k, v in fastest["meets"].items() if v == YES],
                },
                "refused": [p["arm"] for p in g["points"] if not accepted(p)],
                "arms": len(g["points"]),
            }
        )
    return rows


def arm_time(x: dict | None) -> str:
    """'cuda-f32x3 45.1 us' (the staging left out), or 'none timed'."""
    if not x or not x["arm"]:
        return "none timed"
    arm = x["arm"].removesuffix("/resident")
    return f"{arm} {tables.time_text(x['median_s'])}"


def render_summary(rep: dict, fmt: str = "text") -> str:
    """The frontier in one table: a row per case, per tolerance its fastest arm (the answer a
    consumer asks for), then the fastest arm of all and what it meets; json: the rows."""
    tols = rep["tolerances"]
    rows = summary_rows(rep)
    if fmt == "json":
        return tables.dumps({"tolerances": tols, "rows": rows})
    head = ["stage", "frames", "staging", *(f"fastest within {t['id']}" for t in tols)]
    head += ["fastest of all", "it meets", "time refused"]
    cells = []
    for r in rows:
        f = r["fastest"]
        cells.append(
            [r["stage"], r["frames"], r["staging"]]
            + [arm_time(r["picks"][t["id"]]) for t in tols]
            + [
                arm_time(f),
                ", ".join(f["meets"]) if f and f["meets"] else "none",
                len(r["refused"]),
            ]
        )
    out = tables.render(head, cells, fmt)
    if fmt == "csv":
        return out
    notes = ["", *(_say(x, fmt) for x in _tolerance_lines(tols))]
    notes.append(
        _say(
            "time refused: how many arms of the case had their time refused (cut short, gate "
            "failed, ...): `convbench-analyze frontier` without --summary names them and why",
            fmt,
        )
    )
    return out + "\n" + "\n".join(notes)


def frontier_section(source, tols: list[dict] | None = None, fmt: str = "text") -> str:
    """The frontier as a section of another document: from an Assessment, a loaded Run (assessed
    alone) or what build() returned."""
    if isinstance(source, record.Run):
        from .assess import assess

        source = assess([source])
    rep = source if isinstance(source, dict) else build(source, tols)
    return render(rep, fmt)
