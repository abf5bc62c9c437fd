"""`tile-table`: the tensor-core kernels' tile sweep, per case: the plan's choice against every
forced tile and split.

Reads records of `bench_conv --arms 'cuda-tf32,cuda-tf32@*'` (scripts/h200.sh tiles): per (stage,
frames) and arm family (cuda-tf32, cuda-f32x3, cuda-f64-dmma, cuda-f32), the arm's own case (the
plan's choice, named by its kernel block) and each hidden variant (the wgmma kernels'
`<arm>@rows-n<N>-s<split>`, rows on M, `<arm>@pos-n<N>-g<groups>`, positions on M, and the plan's
own tile as `<arm>@persistent` and `<arm>@one-tile` blocks, and with at most S pipeline buffers,
`<arm>@stages<S>`; the DMMA kernels' `cuda-f64-dmma@t<rows>x<cols>-s<split>`; cuda-f32's forward
tile kernel's `cuda-f32@fwd-<bm>x<bn>-s<split>`; its block shapes `cuda-f32@t...` are another
sweep's), by best round time (recomputed from the samples; a case that failed its gate has none).
One row per case: the plan's time, the best variant and its time, their ratio, and the plan's rank
among the variants; then how many cases the plan got within 5% of the best. Exit 2 on a bad
record."""

from __future__ import annotations

import re
from pathlib import Path

from . import tables
from .load import load_run

FAMILIES = ("cuda-tf32", "cuda-f32x3", "cuda-f64-dmma", "cuda-f32")
VARIANT = re.compile(
    r"^(?:(?P<wg>cuda-tf32|cuda-f32x3)"
    r"@(?P<wv>(?:rows|pos)-n\d+-[sg]\d+|persistent|one-tile|stages\d+)"
    r"|(?P<dm>cuda-f64-dmma)@(?P<dv>t\d+x\d+-s\d+)"
    r"|(?P<fw>cuda-f32)@(?P<fv>fwd-\d+x\d+-s\d+))$"
)
NEAR = 1.05  # the plan "within 5%" of the best variant
HEADERS = ("record", "case", "arm", "plan us", "best us", "best", "plan/best", "rank", "kernel")
ALIGN = ("left", "left", "left", "right", "right", "left", "right", "right", "left")


def best(case):
    if case["gate"]["result"] != "pass" or not case["samples"]:
        return None
    return min(s["seconds"] for s in case["samples"])


def rows(run):
    """{(stage, frames, family): {"plan": (time, kernel), "variants": {name: time}}}"""
    out = {}
    for c in run.cases:
        if c["staging"] != "resident":
            continue
        m = VARIANT.match(c["arm"])
        family = (m["wg"] or m["dm"] or m["fw"]) if m else c["arm"]
        if family not in FAMILIES:
            continue
        r = out.setdefault((c["stage"], c["frames"], family), {"plan": None, "variants": {}})
        t = best(c)
        if m:
            if t is not None:
                r["variants"][m["wv"] or m["dv"] or m["fv"]] = t
        else:
            r["plan"] = (t, (c.get("kernel") or {}).get("name", "?"))
    return out


def sweep(name, run) -> list[dict]:
    """One entry per (stage, frames, family) of a record: the plan against its best variant."""
    out = []
    for (stage, frames, family), r in sorted(rows(run).items()):
        e = {"record": name, "stage": stage, "frames": frames, "arm": family}
        v = r["variants"]
        if r["plan"] is None or r["plan"][0] is None or not v:
            out.append(e | {"plan_s": None, "note": "no plan time or no variant"})
            continue
        t, kernel = r["plan"]
        bname, bt = min(v.items(), key=lambda kv: kv[1])
        rank = 1 + sum(1 for x in v.values() if x < t)
        e |= {"plan_s": t, "kernel": kernel, "best": bname, "best_s": bt, "ratio": t / bt}
        out.append(e | {"rank": rank, "variants": len(v), "near": t <= NEAR * bt})
    return out


def cells(e) -> list:
    case = f"{e['stage']}/{e['frames']}"
    if e["plan_s"] is None:
        return [e["record"], case, e["arm"], "-", "-", e["note"], "", "", ""]
    return [
        e["record"],
        case,
        e["arm"],
        f"{e['plan_s'] * 1e6:.1f}",
        f"{e['best_s'] * 1e6:.1f}",
        e["best"],
        f"{e['ratio']:.3f}",
        f"{e['rank']}/{e['variants']}",
        e["kernel"],
    ]


def arguments(p) -> None:
    """The `tile-table` subcommand's arguments (cli.py registers the command)."""
    p.description = __doc__.split(": ", 1)[1]
    p.add_argument("records", nargs="+", metavar="RUN.json", help="records of a tile sweep")
    tables.add_format(p, "one object per case, times in seconds")


def run(args) -> int:
    entries = []
    for path in args.records:
        entries += sweep(Path(path).name, load_run(path))
    fmt = tables.format_of(args)
    if fmt == "json":
        print(tables.dumps(entries))
        return 0
    print(tables.render(HEADERS, [cells(e) for e in entries], fmt, ALIGN))
    if fmt != "csv":
        judged = [e for e in entries if e["plan_s"] is not None]
        near = sum(e["near"] for e in judged)
        print(f"\nthe plan within 5% of the best variant in {near} of {len(judged)} cases")
    return 0
