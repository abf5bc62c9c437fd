"""One node's GPUs side by side (bench_conv --gpus): which GPU is SLOW (slower than its siblings
while its neighbours are idle) and which is COUPLED (its times move with its neighbours' load),
naming power, thermal or host from the figures recorded around the same samples.

A sample's neighbour load is the highest utilisation among the node's other GPUs read after it
(`neighbours` in each sample). Both calls are rank tests (Mann-Whitney, one-sided) at ALPHA with
an effect of at least MIN_EFFECT on the medians, so run-to-run noise alone does not make either.
"""

from __future__ import annotations

import re
from pathlib import Path
from statistics import median

from scipy.stats import mannwhitneyu, spearmanr

from . import tables
from .load import InputError, load_run, load_schema, parse
from .report import _t

BUSY_UTIL = 50.0  # percent: a neighbour at or above this is busy
IDLE_UTIL = 10.0  # percent: every neighbour at or below this: the sample ran alone
ALPHA = 0.01
MIN_EFFECT = 0.02  # 2% on the median
MIN_SAMPLES = 5  # per group: fewer cannot reach ALPHA in a rank test
SHARE_RISE = 0.05  # violation share or host foreign CPU share, busy minus idle
TEMP_RISE_C = 5.0


def arguments(p) -> None:
    p.add_argument("files", nargs="+", help="a node summary, or the per-GPU records of one node")
    tables.add_format(p, "the analysis, times in seconds", json_flag=True)


def _record_path(summary: Path, given: str) -> Path:
    for p in (Path(given), summary.parent / given, summary.parent / Path(given).name):
        if p.is_file():
            return p
    raise InputError(str(summary), "gpus[].record", f"{given}: no such record beside the summary")


def load_node(files: list[str], schema=None) -> list[dict]:
    """[{index, uuid, run}] from a node summary or from per-GPU records."""
    first = Path(files[0])
    try:
        head = parse(first.read_bytes(), str(first))
    except OSError as e:
        raise InputError(str(first), "", e.strerror or str(e)) from None
    if isinstance(head, dict) and head.get("kind") == "convbench-node":
        if len(files) > 1:
            raise InputError(files[1], "", "give one node summary, or per-GPU records, not both")
        out = []
        for g in head.get("gpus", []):
            if not g.get("record_written"):
                continue
            run = load_run(_record_path(first, g["record"]), schema)
            out.append({"index": g["index"], "uuid": g.get("uuid"), "run": run})
        if not out:
            raise InputError(str(first), "gpus", "no GPU of this node wrote its record")
        return out
    out = []
    for i, f in enumerate(files):
        m = re.search(r"\.gpu(\d+)\.json$", f)
        out.append({"index": int(m.group(1)) if m else i, "uuid": None, "run": load_run(f, schema)})
    return out


def neighbour_load(sample: dict) -> float | None:
    utils = [n["util_pct"] for n in sample.get("neighbours") or [] if n.get("util_pct") is not None]
    return max(utils) if utils else None


def _greater(a: list[float], b: list[float]) -> tuple[float, float] | None:
    """(median ratio a/b, one-sided p that a is larger), or None with too few samples."""
    if len(a) < MIN_SAMPLES or len(b) < MIN_SAMPLES:
        return None
    return median(a) / median(b), float(mannwhitneyu(a, b, alternative="greater").pvalue)


def _mean(values) -> float | None:
    v = [x for x in values if x is not None]
    return sum(v) / len(v) if v else None


def _figures(samples: list[dict]) -> dict:
    def share(s, policy):
        return (s.get("violation_share") or {}).get(policy)

    return {
        "power_violation_share": _mean(share(s, "power") for s in samples),
        "thermal_violation_share": _mean(share(s, "thermal") for s in samples),
        "temperature_c": _mean((s.get("gpu_after") or {}).get("temperature_c") for s in samples),
        "foreign_cpu_share": _mean(s.get("foreign_cpu_share") for s in samples),
    }


def mechanism(busy: list[dict], idle: list[dict]) -> list[str]:
    """What rose with the neighbours' load: power, thermal, host (empty: none of them)."""
    b, i = _figures(busy), _figures(idle)

    def rose(key, by):
        return b[key] is not None and i[key] is not None and b[key] - i[key] >= by

    named = []
    if rose("power_violation_share", SHARE_RISE):
        named.append("power")
    if rose("thermal_violation_share", SHARE_RISE) or rose("temperature_c", TEMP_RISE_C):
        named.append("thermal")
    if rose("foreign_cpu_share", SHARE_RISE):
        named.append("host")
    return named


def _coupling(samples: list[dict]) -> dict:
    loaded = [(neighbour_load(s), s) for s in samples]
    loaded = [(u, s) for u, s in loaded if u is not None]
    busy = [s for u, s in loaded if u >= BUSY_UTIL]
    idle = [s for u, s in loaded if u <= IDLE_UTIL]
    out = {"busy_samples": len(busy), "idle_samples": len(idle), "coupled": False}
    if len(loaded) >= MIN_SAMPLES and len({u for u, _ in loaded}) > 1:
        rho, p = spearmanr([u for u, _ in loaded], [s["seconds"] for _, s in loaded])
        out["spearman_rho"], out["spearman_p"] = float(rho), float(p)
    test = _greater([s["seconds"] for s in busy], [s["seconds"] for s in idle])
    if test:
        out["busy_over_idle"], out["p"] = test
        out["coupled"] = test[1] < ALPHA and test[0] > 1 + MIN_EFFECT
    if out["coupled"]:
        out["through"] = mechanism(busy, idle)
    return out


def analyse(gpus: list[dict]) -> dict:
    cases: dict[str, dict[int, list[dict]]] = {}
    for g in gpus:
        for c in g["run"].cases:
            cases.setdefault(c["id"], {})[g["index"]] = c["samples"]
    rows = []
    for cid, per_gpu in sorted(cases.items()):
        idle = {
            i: [s["seconds"] for s in ss if (u := neighbour_load(s)) is not None and u <= IDLE_UTIL]
            for i, ss in per_gpu.items()
        }
        for i, ss in sorted(per_gpu.items()):
            siblings = [t for j, ts in idle.items() if j != i for t in ts]
            slow = _greater(idle[i], siblings)
            rows.append(
                {
                    "case": cid,
                    "gpu": i,
                    "median_s": median(s["seconds"] for s in ss) if ss else None,
                    "samples": len(ss),
                    "slow": bool(slow and slow[1] < ALPHA and slow[0] > 1 + MIN_EFFECT),
                    "alone_over_siblings": slow[0] if slow else None,
                    "coupling": _coupling(ss),
                }
            )
    return {
        "gpus": [{"index": g["index"], "uuid": g["uuid"], "record": g["run"].path} for g in gpus],
        "cases": rows,
        "slow": sorted({r["gpu"] for r in rows if r["slow"]}),
        "coupled": sorted({r["gpu"] for r in rows if r["coupling"]["coupled"]}),
    }


HEADERS = ("case", "GPU", "median", "n", "verdict")
ALIGN = ("left", "right", "right", "right", "left")


def verdict(r: dict) -> str:
    c = r["coupling"]
    words = []
    if r["slow"]:
        words.append(f"SLOW: {r['alone_over_siblings']:.3f}x its siblings while alone")
    elif r["alone_over_siblings"] is None:
        words.append("slowness not judged (too few samples with every neighbour idle)")
    if c["coupled"]:
        through = ", ".join(c["through"]) or "not power, thermal or host by the figures"
        words.append(f"COUPLED ({through}): {c['busy_over_idle']:.3f}x when a neighbour is busy")
    elif "busy_over_idle" in c:
        words.append("no coupling seen")
    else:
        words.append(
            f"coupling not judged ({c['busy_samples']} busy, {c['idle_samples']} idle "
            f"samples; {MIN_SAMPLES} of each needed)"
        )
    return "; ".join(words)


def render(rep: dict, fmt: str = "text") -> str:
    rows = [
        [r["case"], r["gpu"], _t(r["median_s"]), r["samples"], verdict(r)] for r in rep["cases"]
    ]
    table = tables.render(HEADERS, rows, fmt, ALIGN)
    if fmt == "csv":
        return table
    gpus = [[g["index"], g["uuid"] or g["record"]] for g in rep["gpus"]]
    return tables.render(("GPU", "uuid / record"), gpus, fmt, ("right", "left")) + "\n\n" + table


def run(args) -> int:
    schema = None
    if getattr(args, "schema", None):
        try:
            schema = load_schema(args.schema)
        except (OSError, ValueError) as e:
            raise InputError(args.schema, "", f"unreadable schema: {e}") from None
    rep = analyse(load_node(args.files, schema))
    fmt = tables.format_of(args)
    print(tables.dumps(rep) if fmt == "json" else render(rep, fmt))
    return 0
