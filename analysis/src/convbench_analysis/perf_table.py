"""The performance targets table of one record, and the generated H200 results document.

Per (model, stage, frames): best-of-N of cuda-f32 against cudnn-f32 and the fp32 FMA floor,
cuda-f64 (and cuda-f64-fma) against cudnn-f64 and the fp64 floors, as markdown; then, per
target, in how many cases it is met and which cases miss it (the chain against the sum of its
stages' best times from the same run). A ratio the analysis refuses (a check refused one of
its two cases) is marked with a dagger; `convbench-analyze report` names why.

Then the tensor-core arms' targets, per case: cuda-tf32 within 1.2x of cuBLAS TF32 on the same
multiply-adds and faster than cudnn-tf32, cuda-f32x3 at least 2x faster than cudnn-f32 (1536
frames) and no less accurate than cuda-f32 (relative L2 against cpu-f64, from the gates of one
run), with the kernel each arm ran.

Then, per case, our arms against cuBLAS on the stage's polyphase GEMM: cuda-tf32 / cublas-tf32,
cuda-f32 / cublas-sgemm, cuda-f64-dmma / cublas-dgemm (the ceiling of each arm's precision,
ceilings.CEILING_OF). The ceilings are arms of the same record (bench_conv --arms ...,cublas-*),
timed in the same rounds; '-' stands where either side was not measured.

    convbench-analyze perf-table RUN.json                           the tables of one record
    convbench-analyze perf-table --doc RUN.json ... > FILE.md       the results document, a
                                                                    section per record
    convbench-analyze perf-table --doc --doc-file docs/NAME.md ...  naming FILE in its header
                                                                    (default docs/results-h200.md)
"""

from pathlib import Path

from . import assess, ceilings, load, report, tables

TARGETS = (
    "cuda-f32 faster than cudnn-f32",
    "cuda-f32 within 1.3x of the fp32 FMA floor (floor >= 20 us)",
    "cuda-f64 within 1.3x of the no-FMA fp64 floor (floor >= 20 us)",
    "cuda-f64 faster than cudnn-f64",
    "cuda-f64-fma (the same bits) faster than cudnn-f64",
    "chain within 1.1x of the sum of its stages",
)


# (our arm, the cuBLAS ceiling of its precision, the ceiling's column name)
CEILINGS = tuple(
    (ours, ceilings.CEILING_OF[precision], name)
    for ours, precision, name in (
        ("cuda-tf32", "tf32", "cuBLAS TF32"),
        ("cuda-f32", "f32", "cuBLAS SGEMM"),
        ("cuda-f64-dmma", "f64", "cuBLAS DGEMM"),
    )
)
BF16_CEILING = ceilings.CEILING_OF["bf16"]


def best(cases, arm):
    """The best round time, recomputed from the samples (never the stored summary)."""
    c = cases.get(arm)
    if not c or not c["samples"] or c["gate"]["result"] != "pass":
        return None
    return min(s["seconds"] for s in c["samples"])


def refused(cases, *arms):
    """True when the analysis refuses a ratio between these arms' cases (cases[arm]["refused"])."""
    return any(cases.get(a, {}).get("refused") for a in arms)


def mark(text, cases, *arms):
    return text + ("†" if text != "-" and refused(cases, *arms) else "")


def limit(cases, arm):
    """What the counters say about a floor miss: time / floor ~ (issued / valid multiply-adds) /
    (pipe busy), so the miss is tile waste, an idle pipe, or both. '' without counters."""
    d = ((cases.get(arm) or {}).get("counters") or {}).get("derived") or {}
    waste = d.get("counted_over_nominal_flop")
    if "f64" in arm:
        pct = d.get("fp64_pipe_util_pct")
        busy = None if pct is None else f"fp64 pipe {pct:.0f}%"
    else:
        pct = d.get("fp32_pct_of_peak")
        busy = None if pct is None else f"fp32 {pct:.0f}% of peak"
    if waste is None or busy is None:
        return ""
    return f" (issued/valid {waste:.2f}, {busy})"


def fmt_us(s):
    return "-" if s is None else f"{s * 1e6:.1f}"


def ratio(a, b):
    return "-" if a is None or b is None else f"{a / b:.2f}"


def _checks(stage, cases, floor, stage_sum):
    f32, n32, f64 = best(cases, "cuda-f32"), best(cases, "cudnn-f32"), best(cases, "cuda-f64")
    f64f, n64 = best(cases, "cuda-f64-fma"), best(cases, "cudnn-f64")
    out = []
    if f32 is not None and n32 is not None:
        out.append((TARGETS[0], f32 < n32, f32 / n32, refused(cases, "cuda-f32", "cudnn-f32"), ""))
    fl32, fl64 = floor.get("fp32_fma"), floor.get("fp64_nofma")
    if stage != "chain" and f32 is not None and fl32 and fl32 >= 20e-6:
        out.append(
            (
                TARGETS[1],
                f32 <= 1.3 * fl32,
                f32 / fl32,
                refused(cases, "cuda-f32"),
                limit(cases, "cuda-f32"),
            )
        )
    if stage != "chain" and f64 is not None and fl64 and fl64 >= 20e-6:
        out.append(
            (
                TARGETS[2],
                f64 <= 1.3 * fl64,
                f64 / fl64,
                refused(cases, "cuda-f64"),
                limit(cases, "cuda-f64"),
            )
        )
    for name, arm, t in ((TARGETS[3], "cuda-f64", f64), (TARGETS[4], "cuda-f64-fma", f64f)):
        if t is not None and n64 is not None:
            out.append((name, t < n64, t / n64, refused(cases, arm, "cudnn-f64"), ""))
    if stage == "chain" and f32 is not None and stage_sum:
        r = f32 / stage_sum
        out.append((TARGETS[5], r <= 1.1, r, refused(cases, "cuda-f32"), ""))
    return out


def targets(rows):
    """rows: (model, stage, frames, cases, floor). [(target, met, total, misses, span, refused)]"""
    out = {k: [0, 0, [], [], 0] for k in TARGETS}
    stage_sum = {}
    for model, stage, frames, cases, _ in rows:
        f32 = best(cases, "cuda-f32")
        if stage != "chain" and f32 is not None:
            stage_sum[(model, frames)] = stage_sum.get((model, frames), 0.0) + f32
    for model, stage, frames, cases, floor in rows:
        for name, ok, r, no, why in _checks(stage, cases, floor, stage_sum.get((model, frames))):
            v = out[name]
            v[0], v[1], v[4] = v[0] + ok, v[1] + 1, v[4] + no
            v[3].append(r)
            if not ok:
                v[2].append(f"{model} {stage}/{frames} {r:.2f}{why}")
    return [
        (k, v[0], v[1], v[2], (min(v[3]), max(v[3])) if v[3] else None, v[4])
        for k, v in out.items()
    ]


TC_TARGETS = (
    "cuda-tf32 within 1.2x of cuBLAS TF32 (same run)",
    "cuda-tf32 faster than cudnn-tf32",
    "cuda-f32x3 at least 2x faster than cudnn-f32 (1536 frames)",
    "cuda-f32x3 no less accurate than cuda-f32 (relative L2)",
    "cuda-f64-dmma within 1.5x of the DMMA floor (floor >= 20 us)",
)


def rel_l2(cases, arm):
    c = cases.get(arm)
    return None if not c else c["gate"].get("rel_l2_err")


def _tc_checks(stage, frames, cases, floor):
    t32, cub, n32 = (best(cases, a) for a in ("cuda-tf32", "cublas-tf32", "cudnn-tf32"))
    x3, nf = best(cases, "cuda-f32x3"), best(cases, "cudnn-f32")
    e3, ef = rel_l2(cases, "cuda-f32x3"), rel_l2(cases, "cuda-f32")
    out = []
    if t32 is not None and cub is not None:
        r = t32 / cub
        out.append((TC_TARGETS[0], r <= 1.2, r, refused(cases, "cuda-tf32", "cublas-tf32")))
    if t32 is not None and n32 is not None:
        r = t32 / n32
        out.append((TC_TARGETS[1], r < 1.0, r, refused(cases, "cuda-tf32", "cudnn-tf32")))
    if frames == 1536 and x3 is not None and nf is not None:
        r = x3 / nf
        out.append((TC_TARGETS[2], r <= 0.5, r, refused(cases, "cuda-f32x3", "cudnn-f32")))
    if e3 is not None and ef is not None and ef > 0:
        r = e3 / ef
        out.append((TC_TARGETS[3], r <= 1.0, r, False))
    dm, fl = best(cases, "cuda-f64-dmma"), floor.get("fp64_dmma")
    if stage != "chain" and dm is not None and fl and fl >= 20e-6:
        r = dm / fl
        out.append((TC_TARGETS[4], r <= 1.5, r, refused(cases, "cuda-f64-dmma")))
    return out


TC_HEADERS = (
    "model", "stage", "frames", "cuda-tf32 us", "cuBLAS TF32 us", "tf32 / cuBLAS",
    "cudnn-tf32 us", "tf32 / cuDNN", "cuda-f32x3 us", "cudnn-f32 us", "f32x3 / cuDNN",
    "f32x3 rel-L2", "cuda-f32 rel-L2", "cuda-f64-dmma us", "x DMMA floor", "cuda-tf32 kernel",
)  # fmt: skip


def print_tensor_core(rows, out) -> None:
    """The tensor-core arms against their targets, per case, then met / total per target."""
    if not any(
        best(c, "cuda-f32x3") or best(c, "cudnn-tf32") or best(c, "cuda-f64-dmma")
        for *_, c, _ in rows
    ):
        return
    out.say(
        "Tensor-core arms: cuda-tf32 against cuBLAS TF32 on the same multiply-adds (measured "
        "in the same run) and cudnn-tf32; cuda-f32x3 against cudnn-f32, and its "
        "relative L2 error against cpu-f64 beside cuda-f32's (the gates of the same run).\n"
    )
    cells = []
    met = {k: [0, 0, [], [], 0] for k in TC_TARGETS}
    for model, stage, frames, cases, floor in rows:
        t32, cub = best(cases, "cuda-tf32"), best(cases, "cublas-tf32")
        dm = best(cases, "cuda-f64-dmma")
        n32, x3, nf = best(cases, "cudnn-tf32"), best(cases, "cuda-f32x3"), best(cases, "cudnn-f32")
        e3, ef = rel_l2(cases, "cuda-f32x3"), rel_l2(cases, "cuda-f32")
        kernel = ((cases.get("cuda-tf32") or {}).get("kernel") or {}).get("name", "-")
        # The chain's is every stage's: the stages' rows name them.
        kernel = "-" if stage == "chain" else kernel.replace(" (weights packed)", "")
        cells.append(
            [model, stage, frames, fmt_us(t32), fmt_us(cub)]
            + [mark(ratio(t32, cub), cases, "cuda-tf32", "cublas-tf32"), fmt_us(n32)]
            + [mark(ratio(t32, n32), cases, "cuda-tf32", "cudnn-tf32"), fmt_us(x3), fmt_us(nf)]
            + [mark(ratio(x3, nf), cases, "cuda-f32x3", "cudnn-f32")]
            + ["-" if e3 is None else f"{e3:.2e}", "-" if ef is None else f"{ef:.2e}"]
            + [fmt_us(dm), mark(ratio(dm, floor.get("fp64_dmma")), cases, "cuda-f64-dmma")]
            + [kernel]
        )
        for name, ok, r, no in _tc_checks(stage, frames, cases, floor):
            v = met[name]
            v[0], v[1], v[4] = v[0] + ok, v[1] + 1, v[4] + no
            v[3].append(r)
            if not ok:
                v[2].append(f"{model} {stage}/{frames} {r:.2f}")
    out.table("tensor_core", TC_HEADERS, cells)
    out.say("")
    for name, (n_met, total, misses, span, no) in met.items():
        if total:
            out.say(
                f"- {name}: met in {n_met} of {total} (ratios {min(span):.2f}-{max(span):.2f})"
                + (f", {no} of the {total} refused by the analysis" if no else "")
                + (f"; misses (ratio): {', '.join(misses)}" if misses else "")
            )
    out.say("")


def _by_case(run, assessed):
    by = {}
    for c in run.cases:
        if c["staging"] in ("resident", "host"):
            c = dict(c, refused=bool(assessed.for_case(0, c["id"])))
            by.setdefault((c["stage"], c["frames"]), {})[c["arm"]] = c
    return by


def table_rows(run, assessed):
    """Per (stage, frames) of the run: its cases by arm (the cuBLAS ceilings among them) and the
    case's floors."""
    by = _by_case(run, assessed)
    model = run.data["plan"]["model"]
    for (stage, frames), cases in sorted(by.items(), key=lambda k: (k[0][1], k[0][0])):
        floor = next((c["floor_s"] for c in cases.values() if c.get("floor_s")), None) or {}
        yield model, stage, frames, cases, floor


class Out:
    """Where the tables go: md prints them as the results document has them (one row a line,
    unpadded), text fits them to the terminal (tables.render), csv prints the tables alone (each
    with its header row, a blank line between them), json collects them by name."""

    def __init__(self, fmt: str = "md"):
        self.fmt, self.tables = fmt, {}

    def say(self, text: str) -> None:
        if self.fmt == "md":
            print(text)
        elif self.fmt == "text":
            print(tables.sentence(text, "text", "  ") if text.strip() else "")

    def table(self, name: str, headers, rows) -> None:
        rows = [[str(v) for v in r] for r in rows]
        if self.fmt == "md":
            print("| " + " | ".join(headers) + " |")
            print("| --- " * len(headers) + "|")
            for r in rows:
                print("| " + " | ".join(r) + " |")
        elif self.fmt == "json":
            self.tables[name] = [dict(zip(headers, r, strict=True)) for r in rows]
        else:
            print(
                ("\n" if self.fmt == "csv" and self.tables else "")
                + tables.render(headers, rows, self.fmt)
            )
            self.tables[name] = rows

    def finish(self) -> None:
        if self.fmt == "json":
            print(tables.dumps(self.tables))


TARGET_HEADERS = (
    "model", "stage", "frames", "cuda-f32 us", "cudnn-f32 us", "f32 vs cuDNN", "f32 x floor",
    "cuda-f64 us", "x no-FMA floor", "cuda-f64-fma us", "x FMA floor", "cudnn-f64 us",
    "f64-fma vs cuDNN",
)  # fmt: skip


def print_table(runs, out=None) -> None:
    """runs: [(run, assessed)]."""
    out = out or Out()
    cells, rows = [], []
    for run, assessed in runs:
        for model, stage, frames, cases, floor in table_rows(run, assessed):
            f32, n32 = best(cases, "cuda-f32"), best(cases, "cudnn-f32")
            f64, f64f = best(cases, "cuda-f64"), best(cases, "cuda-f64-fma")
            n64 = best(cases, "cudnn-f64")
            cells.append(
                [model, stage, frames, fmt_us(f32), fmt_us(n32)]
                + [mark(ratio(f32, n32), cases, "cuda-f32", "cudnn-f32")]
                + [mark(ratio(f32, floor.get("fp32_fma")), cases, "cuda-f32"), fmt_us(f64)]
                + [mark(ratio(f64, floor.get("fp64_nofma")), cases, "cuda-f64"), fmt_us(f64f)]
                + [mark(ratio(f64f, floor.get("fp64_fma")), cases, "cuda-f64-fma"), fmt_us(n64)]
                + [mark(ratio(f64f, n64), cases, "cuda-f64-fma", "cudnn-f64")]
            )
            rows.append((model, stage, frames, cases, floor))
    out.table("targets", TARGET_HEADERS, cells)
    out.say("")
    out.say(
        "† the analysis refuses this ratio: a check refused one of its cases "
        "(`convbench-analyze report` names it)"
    )
    out.say("")
    for name, met, total, misses, span, no in targets(rows):
        if not total:
            continue
        out.say(
            f"- {name}: met in {met} of {total}"
            + (f" (ratios {span[0]:.2f}-{span[1]:.2f})" if span else "")
            + (f", {no} of the {total} refused by the analysis" if no else "")
            + (f"; misses (ratio): {', '.join(misses)}" if misses else "")
        )
    out.say("")
    print_tensor_core(rows, out)
    print_ceilings(rows, out)


CEILING_HEADERS = (
    "model", "stage", "frames", "cuda-tf32 us", "cuBLAS TF32 us", "tf32 / cuBLAS TF32",
    "cuBLAS BF16 us", "cuda-f32 us", "cuBLAS SGEMM us", "f32 / cuBLAS SGEMM", "cuda-f64-dmma us",
    "cuBLAS DGEMM us", "f64-dmma / cuBLAS DGEMM",
)  # fmt: skip


def print_ceilings(rows, out) -> None:
    out.say(
        "Against cuBLAS on each stage's polyphase GEMM (the cublas-* arms of the same run, timed "
        "in the same rounds): our case over the ceiling of its precision on the same stage and "
        "frames; '-' where either was not measured (the chain has no single GEMM).\n"
    )
    spans = {name: [] for _, _, name in CEILINGS}
    table = []
    for model, stage, frames, cases, _ in rows:
        cells = [model, stage, frames]
        for ours, ceil, name in CEILINGS:
            t, c = best(cases, ours), best(cases, ceil)
            if t is not None and c is not None:
                spans[name].append((t / c, refused(cases, ours, ceil)))
            cells += [fmt_us(t), fmt_us(c), mark(ratio(t, c), cases, ours, ceil)]
            if ceil.endswith("tf32"):
                cells.append(fmt_us(best(cases, BF16_CEILING)))
        table.append(cells)
    out.table("ceilings", CEILING_HEADERS, table)
    out.say("")
    for ours, _, name in CEILINGS:
        r = spans[name]
        if r:
            no = sum(x for _, x in r)
            out.say(
                f"- {ours} / {name}: {len(r)} cases, ratios "
                f"{min(x for x, _ in r):.2f}-{max(x for x, _ in r):.2f}"
                + (f", {no} of the {len(r)} refused by the analysis" if no else "")
            )
        else:
            out.say(f"- {ours} / {name}: no case has both in one run")


def print_doc(runs, argv, doc_file="docs/results-h200.md") -> None:
    print("# Results on the H200\n")
    committed = all(Path(a).parent.as_posix().endswith("results/examples") for a in argv)
    print(
        f"Generated from the {'committed ' if committed else ''}records by "
        f"`convbench-analyze perf-table --doc {' '.join(argv)} > {doc_file}`; do not edit. "
        + (
            "`results/examples/README.md` says how each record was made.\n"
            if committed
            else "The records are measured outputs kept out of git (over a few hundred KB each); "
            "the command under each heading made its record.\n"
        )
    )
    for run, assessed in runs:
        d = run.data
        gpu = (d["gpus"] or [{}])[0]
        print(f"\n## `{Path(run.path).name}`\n")
        print(f"`bench_conv {' '.join(d['argv'][1:])}`  ")
        print(
            f"{d['started_utc']}, {gpu.get('name', 'no GPU')} (driver {gpu.get('driver')}), "
            f"{d['host'].get('cores')} CPUs, lease {d['lease'].get('verdict')}, "
            f"device timing {d['plan'].get('device_timing', 'launched')}\n"
        )
        # The targets: against the peer, the floors and the ceilings timed in the same run.
        if any(c["arm"].startswith(("cudnn-", "cublas-")) for c in run.cases):
            print("Targets against the peer and the floors:\n")
            print_table([(run, assessed)])
            print()
        print_cases(assessed)


def print_cases(assessed) -> None:
    rep = report.build(assessed)
    print("| case | best | n | CV | verdict | why |")
    print("| --- | --- | --- | --- | --- | --- |")
    for g in rep["groups"]:
        for r in g["cases"]:
            why = "; ".join(f["code"] for f in r["reasons"] + r["notes"]) or ""
            cv = "-" if r["cv"] is None else f"{r['cv']:.2%}"
            print(
                f"| {r['case']} | {report._t(r['best_s'])} | {r['n']} | {cv} "
                f"| {r['verdict']} | {why} |"
            )
    ratios = [r for g in rep["groups"] for r in g["rows"]]
    if ratios:
        print("\n| ratio | value | 95% CI | verdict |")
        print("| --- | --- | --- | --- |")
        for r in ratios:
            v = "-" if r["ratio"] is None else f"{r['ratio']:.4g}"
            ci = "" if r["ci"] is None else f"[{r['ci'][0]:.4g}, {r['ci'][1]:.4g}]"
            verdict = r["verdict"] if r["admissible"] else "not admissible"
            print(f"| {r['case']} / {r['den']} | {v} | {ci} | {verdict} |")
    if rep["aa"]:
        print("\n| A/A twin | ratio | 95% CI | holds 1 |")
        print("| --- | --- | --- | --- |")
        for r in rep["aa"]:
            held = "yes" if r["covers_one"] else "no"
            ci = "[no interval]" if r["ci"] is None else f"[{r['ci'][0]:.4f}, {r['ci'][1]:.4f}]"
            print(f"| {r['stage']}/{r['frames']} {r['twin']} | {r['ratio']:.4f} | {ci} | {held} |")


def arguments(p) -> None:
    p.add_argument("files", nargs="+", metavar="RUN.json", help="one record (--doc: one or more)")
    p.add_argument("--doc", action="store_true", help="the results document, a section per record")
    p.add_argument(
        "--doc-file",
        default="docs/results-h200.md",
        metavar="FILE",
        help="the document's name in its header (default docs/results-h200.md)",
    )
    tables.add_format(p, "every table's rows by name", default="md")


def check_arguments(args) -> None:
    if not args.doc and len(args.files) != 1:
        raise load.InputError(
            "command line", "", "perf-table reads one record (--doc: a section per record)"
        )


def run(args, runs, th) -> int:
    """The tables of one record, or (--doc) the document of every record given; each record's
    ratios from its own cases alone."""
    assessed = [(r, assess.assess([r], th)) for r in runs]
    if args.doc:
        print_doc(assessed, args.files, args.doc_file)
    else:
        out = Out(tables.format_of(args))
        print_table(assessed, out)
        out.finish()
    return 0
