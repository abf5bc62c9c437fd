"""`targets`: the performance targets (data/targets.json) judged across records, one row per case
the target covers: the candidate's and the reference's best times, their ratio, the bound, and
met / MISSED / no data.

A target names a candidate arm (or several: a row each), a reference arm, the ratio
(candidate / reference, or reference / candidate where a higher ratio is better, as a copy's
time over the kernel's), a bound with its direction (<=, <, >=), the stages it covers (a regular
expression the whole stage name matches), optionally the shapes (fields of the case's shape, as
l_in >= 1024) and a least candidate time (cases where the candidate's best time is under it are
left out, and counted), and a sentence for the reader.

A case is covered when its stage and shape match and either arm ran it. The two arms are
compared on one staging: resident where both have it, else a staging both ran; A/A twins
(arm#n) are never compared. The ratio is the paired estimate `report` states (verdicts.state:
the rounds both arms took, the interval widened by the run's twins) with its 95% interval; with
one paired round, or none, best over best ("best of rounds"). It is judged by its value; where
the interval reaches across the bound, the row says so. "no data" says why: an arm not measured
in that record, or a cause the analysis refuses the case or the pair for (gate-failed,
cut-short, ...; `convbench-analyze report` says more). A MISSED row names the candidate's kernel
and, where the record has its counters, what they say (explain.counters: the dominant pipe, its
% of peak, DRAM TB/s against the copy).

`--format md` is a document: the records (file, device, start, status), the command that made
it, then a section per target; `--doc-file FILE` names the file in that command."""

from __future__ import annotations

import operator
import re
from collections import defaultdict
from pathlib import Path

from . import checks, entries, explain, record, tables, verdicts
from .errors import InputError
from .findings import Assessment

OPS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge}
SHAPE_OPS = OPS | {">": operator.gt, "==": operator.eq}
RATIOS = ("candidate/reference", "reference/candidate")
MET, MISSED, NO_DATA = "met", "MISSED", "no data"


# ---- the targets ----------------------------------------------------------------------------


def _field(t: dict, key: str) -> str:
    return f"targets[{t.get('id')!r}].{key}"


def _arms(t: dict, where: str) -> list[str]:
    v = t.get("candidate")
    arms = [v] if isinstance(v, str) else v
    if not isinstance(arms, list) or not arms or not all(isinstance(a, str) and a for a in arms):
        raise InputError(where, _field(t, "candidate"), "an arm or a list of arms is needed")
    return arms


def _shape(t: dict, where: str) -> dict:
    shape = t.get("shape") or {}
    if not isinstance(shape, dict):
        raise InputError(where, _field(t, "shape"), 'e.g. {"l_in": [">=", 1024]} is needed')
    for k, cond in shape.items():
        ok = isinstance(cond, list) and len(cond) == 2 and cond[0] in SHAPE_OPS
        if not ok or isinstance(cond[1], bool) or not isinstance(cond[1], (int, float)):
            raise InputError(
                where,
                _field(t, f"shape.{k}"),
                f"[op, number] is needed, op one of {', '.join(SHAPE_OPS)}",
            )
    return shape


def _checked(t, where: str) -> dict:
    """One target as read, every field checked."""
    if not isinstance(t, dict) or not isinstance(t.get("id"), str) or not t["id"]:
        raise InputError(where, "targets[]", "each entry needs an id (a string)")
    if not isinstance(t.get("reference"), str) or not t["reference"]:
        raise InputError(where, _field(t, "reference"), "an arm is needed")
    if t.get("op") not in OPS:
        raise InputError(where, _field(t, "op"), f"one of {', '.join(OPS)} is needed")
    bound = t.get("bound")
    if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not bound > 0:
        raise InputError(where, _field(t, "bound"), "a number > 0 is needed")
    if t.get("ratio", RATIOS[0]) not in RATIOS:
        raise InputError(where, _field(t, "ratio"), f"one of {', '.join(RATIOS)} is needed")
    try:
        re.compile(t.get("stages"))
    except (TypeError, re.error) as e:
        raise InputError(where, _field(t, "stages"), f"a regular expression: {e}") from None
    least = t.get("min_candidate_s", 0.0)
    if isinstance(least, bool) or not isinstance(least, (int, float)) or not least >= 0:
        raise InputError(where, _field(t, "min_candidate_s"), "seconds >= 0 are needed")
    if not isinstance(t.get("says", ""), str):
        raise InputError(where, _field(t, "says"), "a sentence is needed")
    return dict(t) | {
        "candidate": _arms(t, where),
        "ratio": t.get("ratio", RATIOS[0]),
        "bound": float(bound),
        "shape": _shape(t, where),
        "min_candidate_s": float(least),
        "says": t.get("says", ""),
    }


def builtin_targets() -> list[dict]:
    return entries.builtin("targets", _checked)


def load_targets(path: str | None = None) -> list[dict]:
    """The built-in targets, with a file's entries added (the same id: the file's)."""
    return entries.with_file(builtin_targets(), path, "targets", _checked)


def describe(t: dict) -> str:
    """'cuda-f32x3 / cudnn-f32 <= 0.5' (a candidate list: 'cuda-copy / (a | b) >= 0.9')."""
    cands = t["candidate"][0] if len(t["candidate"]) == 1 else f"({' | '.join(t['candidate'])})"
    num, den = (cands, t["reference"]) if t["ratio"] == RATIOS[0] else (t["reference"], cands)
    return f"{num} / {den} {t['op']} {t['bound']:g}"


def _where(t: dict) -> str:
    out = f"stages matching `{t['stages']}`"
    out += "".join(f", {k} {op} {v:g}" for k, (op, v) in t["shape"].items())
    if t["min_candidate_s"]:
        out += f", the candidate's best time >= {tables.time_text(t['min_candidate_s'])}"
    return out


# ---- one row --------------------------------------------------------------------------------


def _best(case) -> float | None:
    x = checks.seconds(case)
    return float(x.min()) if len(x) else None


def _shape_holds(t: dict, case) -> bool:
    shape = case.get("shape") or {}
    return all(
        isinstance(shape.get(k), (int, float)) and SHAPE_OPS[op](shape[k], v)
        for k, (op, v) in t["shape"].items()
    )


def _staging(cand: dict, ref: dict) -> str | None:
    """resident where both arms have it, else a staging both ran; None if they share none."""
    both = set(cand) & set(ref)
    return "resident" if "resident" in both else (min(both) if both else None)


def _under_least(t: dict, cand: dict) -> bool:
    """The candidate's case (resident where it ran so) of a matching shape, timed under the
    target's least candidate time: left out, and counted."""
    c = cand.get("resident") or next(iter(cand.values()), None)
    best = None if c is None else _best(c)
    return best is not None and _shape_holds(t, c) and best < t["min_candidate_s"]


def _refusals(a: Assessment, i: int, case) -> list[str]:
    codes = sorted({f.code for f in a.for_case(i, case.id)})
    if not codes and not len(checks.seconds(case)):
        codes = ["not timed"]
    return codes


def _counters(case) -> str:
    """The kernel and, where recorded, what its counters say."""
    name = record.kernel_choice(case)["name"] or "kernel not recorded"
    text, _figs, _gaps = explain.counters(case)
    return name + (f"; {text.split(': ', 1)[1]}" if text else "; no counters in this record")


def _row(ctx, t: dict, arm: str, stage: str, frames: int, by_arm: dict) -> dict | None:
    """The target on one case of one candidate arm; None when neither arm ran the case or the
    candidate's best time is under the target's least time."""
    a, i, run, errors = ctx
    if record.is_twin_arm(arm) or record.is_twin_arm(t["reference"]):
        return None  # an A/A twin times its arm again: no target of its own
    cand, ref = by_arm.get(arm, {}), by_arm.get(t["reference"], {})
    row = {"file": Path(run.path).name, "stage": stage, "frames": frames, "candidate": arm}
    row |= {"staging": None, "candidate_s": None, "reference_s": None, "ratio": None}
    row |= {"ci": None, "method": None, "status": NO_DATA, "why": "", "kernel": None}
    if not cand and not ref:
        return None
    some = cand.get("resident") or next(iter((cand or ref).values()))
    if not _shape_holds(t, some) or _under_least(t, cand):
        return None
    missing = [x for x, cases in ((arm, cand), (t["reference"], ref)) if not cases]
    if missing:
        row["why"] = f"{missing[0]} not measured in this record"
        if cand:
            row["candidate_s"] = _best(cand.get("resident") or next(iter(cand.values())))
        else:
            row["reference_s"] = _best(ref.get("resident") or next(iter(ref.values())))
        return row
    staging = _staging(cand, ref)
    if staging is None:
        row["why"] = f"no staging both ran ({arm}: {', '.join(cand)}; ref: {', '.join(ref)})"
        return row
    c, r = cand[staging], ref[staging]
    row["staging"], row["candidate_s"], row["reference_s"] = staging, _best(c), _best(r)
    said = {x.arm: ", ".join(_refusals(a, i, x)) for x in (c, r) if _refusals(a, i, x)}
    same = len(said) == 2 and len(set(said.values())) == 1
    refused = [f"both arms: {said[c.arm]}"] if same else [f"{k}: {v}" for k, v in said.items()]
    num, den = (c, r) if t["ratio"] == RATIOS[0] else (r, c)
    found = checks.pair_findings(run, num, run, den, a.thresholds)
    pair = sorted({f.code for f in found if f.refuses})
    if refused or pair:
        row["why"] = "; ".join(refused + ([f"the pair: {', '.join(pair)}"] if pair else []))
        return row
    st = verdicts.state(num, den, errors, a.thresholds)
    if st is not None and st.lo is not None:
        row["ratio"], row["ci"], row["method"] = st.value, [st.lo, st.hi], "paired"
    else:
        row["ratio"], row["method"] = _best(num) / _best(den), "best of rounds"
    holds = OPS[t["op"]]
    row["status"] = MET if holds(row["ratio"], t["bound"]) else MISSED
    if row["ci"] and holds(row["ci"][0], t["bound"]) != holds(row["ci"][1], t["bound"]):
        row["why"] = "its interval reaches across the bound"
    if row["status"] == MISSED:
        row["kernel"] = _counters(c)
    return row


def _cases(run) -> dict:
    """(stage, frames) -> arm -> staging -> case, in the record's order; twins left out."""
    out: dict = defaultdict(lambda: defaultdict(dict))
    for c in run.cases:
        if not verdicts.is_twin(c):
            out[(c.stage, c.frames)][c.arm][c.staging] = c
    return out


def build(a: Assessment, targets: list[dict] | None = None) -> dict:
    """Every target's rows over every run, with its summary."""
    targets = builtin_targets() if targets is None else targets
    out = {"records": [_record(run) for run in a.runs], "targets": []}
    ctxs = []
    for i, run in enumerate(a.runs):
        errors = verdicts.kind_errors(
            verdicts.twins(run.cases, a.thresholds.ci_level), a.thresholds
        )
        ctxs.append(((a, i, run, errors), _cases(run)))
    for t in targets:
        rows, left_out = [], 0
        stages = re.compile(t["stages"])
        for ctx, by_case in ctxs:
            for (stage, frames), by_arm in by_case.items():
                if not stages.fullmatch(stage):
                    continue
                for arm in t["candidate"]:
                    row = _row(ctx, t, arm, stage, frames, by_arm)
                    left_out += _under_least(t, by_arm.get(arm, {}))
                    if row is not None:
                        rows.append(row)
        out["targets"].append({"target": t, "rows": rows, "summary": _summary(rows, left_out)})
    return out


def build_each(assessments: list[Assessment], targets: list[dict] | None = None) -> dict:
    """build() over records judged one by one: each record is its own measurement, so a kernel
    that differs between two records (a plan changed between them) is no finding here."""
    reports = [build(a, targets) for a in assessments]
    out = {"records": [r for rep in reports for r in rep["records"]], "targets": []}
    for i, first in enumerate(reports[0]["targets"] if reports else []):
        rows = [row for rep in reports for row in rep["targets"][i]["rows"]]
        left_out = sum(rep["targets"][i]["summary"]["under_min_time"] for rep in reports)
        out["targets"].append(
            {"target": first["target"], "rows": rows, "summary": _summary(rows, left_out)}
        )
    return out


def _summary(rows: list[dict], left_out: int) -> dict:
    return {
        "cases": len(rows),
        "met": sum(r["status"] == MET for r in rows),
        "missed": sum(r["status"] == MISSED for r in rows),
        "no_data": sum(r["status"] == NO_DATA for r in rows),
        "under_min_time": left_out,
    }


def _record(run) -> dict:
    gpu = record.gpu_of(run) or {}
    return {
        "file": Path(run.path).name,
        "device": gpu.get("name") or "no GPU",
        "started_utc": run.data.get("started_utc"),
        "status": record.run_status(run),
        "cases": len(run.cases),
    }


# ---- what a person reads --------------------------------------------------------------------


HEADERS = ["record", "stage", "frames", "candidate", "best", "reference best", "ratio"]
HEADERS += ["95% interval", "bound", "status", "why / kernel and counters"]


def _ratio_cells(r: dict) -> list[str]:
    if r["ratio"] is None:
        return ["-", "-"]
    ci = "best of rounds" if r["method"] != "paired" else f"[{r['ci'][0]:.3g}, {r['ci'][1]:.3g}]"
    return [f"{r['ratio']:.3g}", ci]


def _cells(t: dict, r: dict) -> list:
    why = "; ".join(x for x in (r["why"], r["kernel"]) if x)
    return [
        r["file"].removesuffix(".json"),
        r["stage"],
        r["frames"],
        r["candidate"],
        tables.time_text(r["candidate_s"]),
        tables.time_text(r["reference_s"]),
        *_ratio_cells(r),
        f"{t['op']} {t['bound']:g}",
        r["status"],
        why,
    ]


def summary_line(t: dict, s: dict) -> str:
    line = f"{t['id']}: met on {s['met']} of {s['cases']} cases ({s['no_data']} without data)"
    if s["under_min_time"]:
        least = tables.time_text(t["min_candidate_s"])
        line += f"; {s['under_min_time']} more left out, the candidate under {least}"
    return line


def _files(files: list[str]) -> str:
    """The records as given, or DIR/*.json where they are every record of one folder."""
    folders = {str(Path(f).parent) for f in files}
    if len(files) > 1 and len(folders) == 1:
        folder = folders.pop()
        every = sorted(str(Path(folder) / p.name) for p in Path(folder).glob("*.json"))
        if every == sorted(str(Path(f)) for f in files):
            return str(Path(folder) / "*.json")
    return " ".join(files)


def _command(rep: dict, argv: dict) -> str:
    cmd = f"convbench-analyze targets {_files(argv['files'])} --format md"
    if argv.get("targets"):
        cmd += f" --targets {argv['targets']}"
    if argv.get("doc_file"):
        cmd += f" --doc-file {argv['doc_file']} > {argv['doc_file']}"
    return cmd


def _doc_head(rep: dict, argv: dict) -> list[str]:
    devices = sorted({r["device"] for r in rep["records"]})
    head = [f"# Performance targets on {', '.join(devices)}", ""]
    head += [
        f"Generated by `{_command(rep, argv)}`; do not edit. The records are measured outputs "
        "kept out of git; each target's rows come from its own record's cases.",
        "",
    ]
    rows = [
        [r["file"], r["device"], r["started_utc"], r["status"], r["cases"]] for r in rep["records"]
    ]
    head += [
        tables.render(
            ["record", "device", "started (UTC)", "status", "cases"], rows, "md", compact=True
        )
    ]
    head += [
        "",
        "Per target, one row per case: the candidate's and the reference's best times, their "
        "ratio (the paired estimate over the rounds both took, with its 95% interval, as "
        "`convbench-analyze report` states it; 'best of rounds' where fewer than two rounds "
        "pair), the bound, and met / MISSED / no data (why: an arm not measured in that record, "
        "or the cause the analysis refuses it for). A MISSED row names the candidate's kernel "
        "and what its counters say where the record has them.",
    ]
    return head


def render(rep: dict, fmt: str = "text", argv: dict | None = None) -> str:
    """text (a table per target), md (the document: the records, the command, a section per
    target), csv (one table of every row) or json (the data). argv: the files, --targets and
    --doc-file the command was given (md names them in its header)."""
    if fmt == "json":
        return tables.dumps(rep)
    if fmt == "csv":
        rows = [
            [x["target"]["id"], *_cells(x["target"], r)] for x in rep["targets"] for r in x["rows"]
        ]
        return tables.render(["target", *HEADERS], rows, "csv")
    lines = []
    if fmt == "md":
        lines = _doc_head(rep, argv or {"files": [r["file"] for r in rep["records"]]})
    for x in rep["targets"]:
        t, s = x["target"], x["summary"]
        title = f"{t['id']}: {describe(t)}"
        lines += ["", f"## {title}" if fmt == "md" else title, ""]
        lines += [tables.sentence(f"{t['says']} On {_where(t)}.", fmt), ""]
        if x["rows"]:
            cells = [_cells(t, r) for r in x["rows"]]
            lines += [tables.render(HEADERS, cells, fmt, compact=True), ""]
        lines.append(tables.sentence(summary_line(t, s), fmt))
    said = [summary_line(x["target"], x["summary"]) for x in rep["targets"]]
    if fmt == "md":
        lines += ["", "## Summary", "", *(f"- {line}" for line in said)]
    else:
        lines += ["", "Summary:", *(f"  {line}" for line in said)]
    return "\n".join(lines).lstrip("\n")
