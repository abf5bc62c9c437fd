"""The report (report.build's dict) as a newcomer reads it: in text fitted to the terminal's
width, in md, or in csv as one table (json is the dict itself).

A SUMMARY first (the run, its host and lease, the cases' verdicts, the top causes of refusal,
the A/A twins' measured error); then each run once with the causes of the whole run; then per
(stage, frames) the cases' table and the ratios' table, each with the sentences of its own
causes below it; then the fits, the A/A twins and the ceilings."""

from __future__ import annotations

from . import ceilings, tables

_t = tables.time_text  # the name compare, fleet, gpus, perf_table and html use


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


# A cause that belongs to the whole run (its lease, its instrument, a process beside it for
# the whole run: a finding without a case) is said once, in the run's block at the top; the
# cases and ratios it refuses say REFUSED and point to it, without repeating it.

# the counters (a sentence each) go below the table in text and md, in a column in csv
CASE_HEADERS = ("case", "best", "median", "+-95%", "n", "CV", "verdict", "TFLOP/s")
CASE_ALIGN = ("left", "right", "right", "right", "right", "right", "left", "right")
RATIO_HEADERS = ("ratio (time; < 1: faster)", "value", "95% CI", "best/best", "verdict")
RATIO_ALIGN = ("left", "right", "left", "right", "left")
AA_HEADERS = ("case", "twin", "twin / arm", "95% CI", "verdict", "remark")
FIT_HEADERS = ("stage", "arm", "a (fixed)", "rate 1/b TFLOP/s", "R^2", "n")
CEILING_HEADERS = ("case", "ceiling", "% of ceiling [95%]", "rounds", "refused")
# --format csv: one table, a row per case, ratio and A/A twin (the `table` column says which)
CSV_HEADERS = (
    "table", "file", "stage", "frames", "arm", "against", "n", "best", "median", "+-95%", "CV",
    "value", "95% CI", "best/best", "verdict", "causes", "counters",
)  # fmt: skip
RUN_WIDE = "run"  # what a case or ratio refused for its run's causes says instead of them


class _Doc:
    """The report's lines in blocks: text wraps each sentence to the terminal's width (between
    words), md makes each a list item; tables come rendered by tables.render."""

    def __init__(self, fmt: str):
        self.fmt, self.blocks = fmt, [[]]
        self.first = {}  # (file, code, detail, remedy) -> the case that said it first

    def finding(self, f: dict, whose: str, level: int = 1) -> None:
        """A case's finding; one that another case of its run said word for word already (the
        same foreign process in every case) points there instead of repeating it."""
        key = (f["file"], f["code"], f["detail"], f["remedy"])
        if key in self.first:
            tag = "REFUSED" if f["refuses"] else "note"
            self.say(f"{whose}{tag} {f['code']}, as for {self.first[key]} above", level)
        else:
            self.first[key] = whose.rstrip(": ")
            self.say(_finding(f, whose), level)

    def say(self, text: str, level: int = 0) -> None:
        pad = "  " * level
        if self.fmt == "md":
            self.blocks[-1].append(f"{pad}- {text}")
        else:
            self.blocks[-1].append(tables.sentence(pad + text, "text", pad + "    "))

    def heading(self, text: str) -> None:
        self.gap()
        self.blocks[-1].append(f"### {text}" if self.fmt == "md" else tables.sentence(text, "text"))
        if self.fmt == "md":
            self.gap()

    def table(self, headers, rows, align=None) -> None:
        """The table; in text and md without a column that says nothing ("-" in every row)."""
        keep = [i for i in range(len(headers)) if any(r[i] not in ("-", "") for r in rows)]
        keep = keep if self.fmt != "csv" and len(keep) > 1 else range(len(headers))
        headers = [headers[i] for i in keep]
        align = [align[i] for i in keep] if align else None
        rows = [[r[i] for i in keep] for r in rows]
        self.gap()
        self.blocks[-1].append(tables.render(headers, rows, self.fmt, align))
        self.gap()

    def gap(self) -> None:
        if self.blocks[-1]:
            self.blocks.append([])

    def text(self) -> str:
        return "\n\n".join("\n".join(b) for b in self.blocks if b)


def _is_run_wide(f: dict) -> bool:
    return f["case"] is None


def _finding(f: dict, whose: str = "") -> str:
    if f["refuses"]:
        return f"{whose}REFUSED {f['code']}: {f['detail']} (fix: {f['remedy']})"
    return f"{whose}note {f['code']}: {f['detail']}"


def _ci_text(ci) -> str:
    return f"[{ci[0]:.4g}, {ci[1]:.4g}]" if ci else "[no interval]"


def _codes(fs: list[dict]) -> str:
    """The causes' codes, once each; a run's causes as one word (said at the top)."""
    own = [f["code"] for f in fs if not _is_run_wide(f)]
    run = [RUN_WIDE] if any(_is_run_wide(f) for f in fs) else []
    return ", ".join(dict.fromkeys(run + own))


def _case_cells(r: dict) -> list:
    nom = f"{r['nominal_tflops']:.3g}" if r["nominal_tflops"] is not None else "-"
    cv = f"{r['cv']:.2%}" if r["cv"] is not None else "-"
    hw = r.get("ci_half_width")
    verdict = r["verdict"] + (f" ({_codes(r['reasons'])})" if r["reasons"] else "")
    return [
        r["arm"],
        _t(r["best_s"]),
        _t(r["median_s"]),
        f"{hw:.2%}" if hw is not None else "-",
        r["n"],
        cv,
        verdict,
        nom,
    ]


def _ratio_cells(r: dict) -> list:
    val = f"{r['ratio']:.4g}" if r["ratio"] is not None else "-"
    best = f"{r['best_ratio']:.4g}" if r["best_ratio"] is not None else "-"
    verdict = r["verdict"]
    if not r["admissible"]:
        verdict = "not admissible" + (f" ({_codes(r['reasons'])})" if r["reasons"] else "")
    return [f"{r['arm']} / {r['den']}", val, _ci_text(r["ci"]), best, verdict]


def _imprecise_text(r: dict) -> str:
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
    return f"imprecise: median {hw} against its {p['target']:.2%} target{tail}"


def _top_causes(rep: dict, n: int = 3) -> str:
    """The codes that refused the most cases, most first; a run's cause marked so."""
    counts, run_wide = {}, set()
    for g in rep["groups"]:
        for r in g["cases"]:
            for code in dict.fromkeys(f["code"] for f in r["reasons"]):
                counts[code] = counts.get(code, 0) + 1
            run_wide |= {f["code"] for f in r["reasons"] if _is_run_wide(f)}
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    return ", ".join(
        f"{code} ({k} case(s){', the whole run' if code in run_wide else ''})" for code, k in top
    )


def _run_text(s: dict) -> str:
    lease = f"lease {s['lease']}" + (
        f" ({s['lease_backend']}, token {s['lease_token']})" if s["lease_backend"] else ""
    )
    return (
        f"{s['path']}: host {s['host']}, GPU {s['gpu']}, model {s['model']}, "
        f"device timing {s['device_timing']}, {lease}"
    )


def _summary(doc: _Doc, rep: dict) -> None:
    cases = [r for g in rep["groups"] for r in g["cases"]]
    verdicts_ = {v: sum(r["verdict"] == v for r in cases) for v in ("ok", "imprecise", "REFUSED")}
    doc.heading("SUMMARY")
    if len(rep["runs"]) == 1:
        doc.say("run: " + _run_text(rep["runs"][0]), 1)
    else:
        hosts = ", ".join(dict.fromkeys(s["host"] for s in rep["runs"]))
        leases = {}
        for s in rep["runs"]:
            leases[s["lease"]] = leases.get(s["lease"], 0) + 1
        said = ", ".join(f"{v} {k}" for k, v in leases.items())
        doc.say(f"runs: {len(rep['runs'])} on host(s) {hosts}; leases {said}", 1)
    doc.say(
        f"cases: {len(cases)}: {verdicts_['ok']} ok, {verdicts_['imprecise']} imprecise, "
        f"{verdicts_['REFUSED']} refused",
        1,
    )
    doc.say("ratios: " + summary_line(rep), 1)
    if rep["refused_cases"] or rep["refused"]:
        doc.say("top causes of refusal: " + _top_causes(rep), 1)
    aa = [r for r in rep["aa"] if r["ratio"] is not None]
    if aa:
        err = max(abs(r["ratio"] - 1.0) for r in aa)
        cover = sum(r["covers_one"] for r in aa)
        doc.say(
            f"A/A twins (an arm timed twice): {len(aa)}, measured error up to {err:.2%} "
            f"(|twin / arm - 1|); {cover} of {len(aa)} intervals hold 1",
            1,
        )
    else:
        doc.say("A/A twins: none in these runs (bench_conv --twins kinds, the default, or all)", 1)


def _runs(doc: _Doc, rep: dict) -> None:
    """Each run once, with every cause and note of the whole run: said here and nowhere else."""
    several = len(rep["runs"]) > 1
    for s in rep["runs"]:
        if several:
            doc.heading("run " + _run_text(s))
        elif s["findings"] or s.get("notes") or s.get("round_drift"):
            doc.heading("the run as a whole:")
        if s["findings"]:
            doc.say("REFUSED for the whole run (every case and ratio of it; said here once):", 1)
        for f in s["findings"]:
            doc.say(_finding(f), 2)
        for f in s.get("notes", []):
            doc.say(_finding(f), 1)
        d = s.get("round_drift")
        if d:
            moves = ", ".join(
                f"r{r} {x:+.2%}" for r, x in zip(d["rounds"], d["drift"], strict=True)
            )
            doc.say(
                f"round drift, shared by the {d['cases']} device cases: {moves} (range "
                f"{d['range']:.2%}); their CV, median {d['cv_median']:.2%}, is "
                f"{d['cv_without_drift_median']:.2%} without it (ratios within a round cancel it)",
                1,
            )


def _group(doc: _Doc, g: dict, several_runs: bool) -> None:
    head = f"{g['stage']} / {g['frames']} frames" + (f"  [{g['file']}]" if several_runs else "")
    head += f"  baseline {g['baseline']}" if g["baseline"] else ""
    doc.heading(head + (f"  ({g['note']})" if g["note"] else ""))
    said = set()
    doc.table(CASE_HEADERS, [_case_cells(r) for r in g["cases"]], CASE_ALIGN)
    for r in g["cases"]:
        if r["counters"] is not None:
            doc.say(f"{r['arm']}: counters: {_ctr_text(r['counters'])}", 1)
    for r in g["cases"]:
        own = [f for f in r["reasons"] if not _is_run_wide(f)]
        said |= {(f["code"], f["case"], f["detail"]) for f in r["reasons"]}
        for f in own:
            doc.finding(f, f"{r['arm']}: ")
        if r["verdict"] == "imprecise":
            doc.say(f"{r['arm']}: {_imprecise_text(r)}", 1)
        for f in r["notes"]:
            if not _is_run_wide(f):
                doc.finding(f, f"{r['arm']}: ")
    if not g["rows"]:
        return
    doc.table(RATIO_HEADERS, [_ratio_cells(r) for r in g["rows"]], RATIO_ALIGN)
    for r in g["rows"]:
        whose = f"{r['arm']} / {r['den']}: "
        if r.get("explain"):
            doc.say(f"{whose}why: {r['explain']}", 1)
        for f in r["reasons"]:  # what only the pair shows; its cases' causes are said above
            if (f["code"], f["case"], f["detail"]) not in said:
                doc.finding(f, whose)
        for f in r["notes"]:
            if not _is_run_wide(f):
                doc.finding(f, whose)


def _fits_and_signatures(doc: _Doc, rep: dict) -> None:
    if rep["fits"]:  # one layer at three or more sizes: nothing to fit otherwise
        doc.heading("fit over the sweep (accepted cases, one layer): time = a + b x FLOPs")
        for model in dict.fromkeys(f["model"] for f in rep["fits"]):
            rows = [
                [f["stage"], f["arm"], "no fit", f["error"], "", ""]
                if "error" in f
                else [f["stage"], f["arm"], _t(f["a_s"]), f"{f['rate_tflops']:.4g}"]
                + [f"{f['r2']:.4f}", f["n"]]
                for f in rep["fits"]
                if f["model"] == model
            ]
            doc.say(f"model {model}:")
            doc.table(FIT_HEADERS, rows)
    if rep["signatures"]:
        doc.heading("size signatures (one layer at three or more sizes):")
    for s in rep["signatures"]:
        doc.say(f"{s['arm']} / {s['baseline']}: {s['text']}", 1)


def _aa_remark(r: dict) -> str:
    if r.get("kernels_differ"):
        twin, arm = r["kernels_differ"]
        return f"not one kernel: the twin ran {twin}, its arm {arm}"
    return "" if r["covers_one"] or r["ci"] is None else "1 outside the interval"


def _aa_cells(r: dict) -> list:
    ratio = f"{r['ratio']:.4f}" if r["ratio"] is not None else "-"
    return [f"{r['stage']}/{r['frames']}", r["twin"], ratio, _ci_text(r["ci"]), r["verdict"]]


def _aa(doc: _Doc, rep: dict) -> None:
    if not rep["aa"]:
        return
    cover = sum(r["covers_one"] for r in rep["aa"])
    doc.heading(
        "A/A twins (an arm timed twice; the interval widened by the other twins of its kind "
        f"only): {cover} of {len(rep['aa'])} intervals hold 1"
    )
    doc.table(AA_HEADERS, [[*_aa_cells(r), _aa_remark(r)] for r in rep["aa"]])


def _ceilings(doc: _Doc, rows: list[dict]) -> None:
    if not rows:  # the run timed no ceiling beside an arm
        return
    doc.heading(
        "% of ceiling (cuBLAS: the case's GEMM in the arm's precision; cuda-copy: a device "
        "copy of the case's bytes, target >= 90% for the memory-bound; cuda-launch: an empty "
        "launch, 50% = within 2x; same rounds; ceiling time / arm time, 95% interval of the "
        "paired rounds):"
    )
    cells = [
        [r["case"], r["ceiling"], ceilings.percent_text(r), r["paired_rounds"]]
        + [", ".join(r["refused"]) if r["refused"] else ""]
        for r in rows
    ]
    doc.table(CEILING_HEADERS, cells)


def _csv(rep: dict) -> str:
    rows = []
    for g in rep["groups"]:
        where = [g["file"], g["stage"], g["frames"]]
        for r in g["cases"]:
            c = _case_cells(r)
            causes = " ".join(dict.fromkeys(f["code"] for f in r["reasons"]))
            rows.append(["case", *where, r["arm"], "", *c[4:5], *c[1:4], c[5]])
            rows[-1] += ["", "", "", r["verdict"], causes, _ctr_text(r["counters"])]
        for r in g["rows"]:
            c = _ratio_cells(r)
            causes = " ".join(dict.fromkeys(f["code"] for f in r["reasons"]))
            rows.append(["ratio", *where, r["arm"], r["den"], r["n"], "", "", "", ""])
            rows[-1] += [*c[1:4], r["verdict"], causes, ""]
    for r in rep["aa"]:
        c = _aa_cells(r)
        rows.append(["aa", r["file"], r["stage"], r["frames"], r["twin"], r["arm"], "", "", ""])
        rows[-1] += ["", "", c[2], c[3], "", r["verdict"], "", ""]
    return tables.render(CSV_HEADERS, rows, "csv")


def _frontier(doc: _Doc, fr: dict | None) -> None:
    """Per case and staging with two candidate arms or more, the fastest arm within each
    consumer tolerance (`convbench-analyze frontier` shows every point and why)."""
    groups = [g for g in (fr or {}).get("groups", []) if len(g["points"]) > 1]
    if not groups:
        return
    doc.gap()
    doc.say(
        "the fastest arm within each consumer tolerance (?: the record cannot tell; every "
        "arm's errors and the tolerances' sources: convbench-analyze frontier):"
    )
    for g in groups:
        said = []
        for pk in g["picks"]:
            undecided = [e["arm"] for e in pk["faster_undetermined"]]
            text = f"{pk['tolerance']}: {pk['arm'] or 'none'}"
            said.append(text + (f" (faster, ?: {', '.join(undecided)})" if undecided else ""))
        doc.say(f"{g['stage']}/{g['frames']} {g['staging']}: " + "; ".join(said), 1)


def render(rep: dict, fmt: str = "text") -> str:
    """The report: its SUMMARY, each run once with its own causes, each (stage, frames) group's
    cases and ratios, the fits, the A/A twins and the ceilings; csv: the one table."""
    if fmt == "csv":
        return _csv(rep)
    doc = _Doc(fmt)
    _summary(doc, rep)
    _runs(doc, rep)
    for g in rep["groups"]:
        _group(doc, g, len(rep["runs"]) > 1)
    _fits_and_signatures(doc, rep)
    _aa(doc, rep)
    _ceilings(doc, rep["ceilings"])
    _frontier(doc, rep.get("frontier"))
    doc.gap()
    doc.say(summary_line(rep))
    return doc.text()


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
