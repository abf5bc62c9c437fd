"""`fleet`: runs from many hosts side by side. Per host, the accepted ratios with their intervals
(the report's own rows); across hosts, the spread of each arm's estimator (best time) and the
hosts beyond a robust threshold from the fleet's own distribution; per host, its runs in time
order; a figure of each arm's time per host.

Outliers: the modified z-score of Iglewicz and Hoaglin on log times, z = (log t - median) /
(1.4826 MAD), beyond `z` (3.5), and more than `min_deviation` (2%) from the fleet's median, so a
fleet that agrees to 0.1% does not flag a host 0.3% off. It needs at least MIN_HOSTS hosts.
An outlier host is SLOW (or FAST) when its A/A twins agree: the host differs, not the
instrument on it; NOISY when its twins disagree; undecided when it ran no twin."""

from __future__ import annotations

import argparse
import math
import re
from collections import defaultdict
from pathlib import Path

import numpy as np

from . import record, report, tables
from .checks import seconds
from .findings import Assessment
from .report import _t

MIN_HOSTS = 3
OUTLIER_Z = 3.5
MIN_DEVIATION = 0.02
MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution x this = its standard deviation


class ExpandDirs(argparse.Action):
    """RESULTS may be record files or folders of them (a fleet's results directory)."""

    def __call__(self, parser, namespace, values, option_string=None):
        files = []
        for v in values:
            p = Path(v)
            found = sorted(p.glob("*.json")) if p.is_dir() else [p]
            if p.is_dir() and not found:
                parser.error(f"{v}: no *.json records in this folder")
            files += [str(f) for f in found]
        setattr(namespace, self.dest, files)


def arguments(f) -> None:
    """The `fleet` subcommand's arguments (cli.py registers the command)."""
    f.add_argument(
        "files",
        nargs="+",
        action=ExpandDirs,
        metavar="RESULTS",
        help="record files or folders of records",
    )
    f.add_argument("--baseline", default=None, help="denominator arm (arm or arm/staging)")
    f.add_argument("--out", default=None, help="write the per-host time figures here")
    f.add_argument(
        "--outlier-z",
        type=float,
        default=OUTLIER_Z,
        help=f"a host is an outlier beyond this modified z-score ({OUTLIER_Z:g})",
    )
    f.add_argument(
        "--min-deviation",
        type=float,
        default=MIN_DEVIATION,
        help=f"... and this far from the fleet's median ({MIN_DEVIATION:g})",
    )
    tables.add_format(f, "hosts, spread and outliers, times in seconds", json_flag=True)


SLURM_KEYS = (
    "job_id",
    "array_job_id",
    "array_task_id",
    "partition",
    "state_at_record",
    "reason_at_record",
)


def _slurm(run) -> dict:
    """The job a run was leased by (the slurm lease block), {} for other backends."""
    s = run.data["lease"].get("slurm") or {}
    return {k: s.get(k) for k in SLURM_KEYS} if s else {}


def estimators(a: Assessment) -> tuple[dict, dict]:
    """(model, stage, frames, arm) -> host -> [best time of each accepted case of that host];
    and, for the same keys, the codes that refused the others (a refused case is no estimate)."""
    est = defaultdict(lambda: defaultdict(list))
    refused = defaultdict(set)
    for i, run in enumerate(a.runs):
        host, model = run.data["host"].get("name") or "?", run.data["plan"].get("model")
        for c in run.cases:
            key, x = (model, c["stage"], c["frames"], record.label(c)), seconds(c)
            why = a.for_case(i, c["id"])
            if len(x) and x.min() > 0 and not why:
                est[key][host].append(float(x.min()))
            else:
                refused[key] |= {f.code for f in why} or {"no-samples"}
    return est, refused


def spread(per_host: dict, z_limit: float, min_dev: float) -> dict:
    """The fleet's distribution of one arm's estimator (a host: the median of its runs' bests)."""
    hosts = sorted(per_host)
    v = np.array([float(np.median(per_host[h])) for h in hosts])
    lg = np.log(v)
    med = float(np.median(lg))
    mad = float(np.median(np.abs(lg - med)))
    scale = MAD_TO_SIGMA * mad
    out = {
        "hosts": hosts,
        "per_host_s": v.tolist(),
        "n_hosts": len(hosts),
        "median_s": math.exp(med),
        "min_s": float(v.min()),
        "max_s": float(v.max()),
        "max_over_min": float(v.max() / v.min()),
        "robust_cv": math.expm1(scale),  # 1.4826 MAD of log times, as a relative spread
        "outliers": [],
    }
    if len(hosts) < MIN_HOSTS:
        out["note"] = f"{len(hosts)} host(s): outliers need at least {MIN_HOSTS}"
        return out
    for h, x in zip(hosts, lg, strict=True):
        dev = math.expm1(x - med)
        # Hosts that agree exactly (MAD 0): any real difference is beyond every z (None in JSON).
        z = (x - med) / scale if scale > 0 else None
        if (z is None or abs(z) > z_limit) and abs(dev) > min_dev:
            out["outliers"].append({"host": h, "z": z, "vs_median": dev})
    return out


def _twins_of(rep: dict, files: set, stage, frames) -> list[dict]:
    return [
        t for t in rep["aa"] if t["file"] in files and t["stage"] == stage and t["frames"] == frames
    ]


def classify(outlier: dict, arm: str, twins: list[dict], aa_tol: float) -> dict:
    """SLOW / FAST host (twins agree), NOISY (a twin outside), or undecided (no twin)."""
    own = [t for t in twins if t["arm"] == arm] or twins
    way = "slower" if outlier["vs_median"] > 0 else "faster"
    z = "inf" if outlier["z"] is None else f"{outlier['z']:.3g}"
    head = f"{arm} {abs(outlier['vs_median']):.1%} {way} than the fleet's median (z = {z})"
    if not own:
        return {
            "kind": "undecided",
            "text": f"{head}; no A/A twin on this host tells slow from "
            "noisy: list an arm twice (--arms A,A) to get one",
        }
    bad = [t for t in own if not t["within"]]
    if bad:
        t = bad[0]
        return {
            "kind": "noisy",
            "text": f"NOISY host: {head}, and its A/A twin {t['twin']} reads "
            f"{t['ratio']:.4f} (outside 1 +- {aa_tol:g}): the instrument on this host does "
            "not agree with itself, so its times say nothing of the host",
        }
    worst = max(abs(t["ratio"] - 1) for t in own)
    kind = "slow" if way == "slower" else "fast"
    return {
        "kind": kind,
        "text": f"{kind.upper()} host, not a noisy one: {head}, while its "
        f"A/A twins agree (within {worst:.2%}, limit {aa_tol:g})",
    }


def build(a: Assessment, baseline=None, z_limit=OUTLIER_Z, min_dev=MIN_DEVIATION) -> dict:
    rep = report.build(a, baseline)
    host_of = {run.path: run.data["host"].get("name") or "?" for run in a.runs}
    files_of = defaultdict(set)
    for p, h in host_of.items():
        files_of[h].add(p)
    hosts = {}
    for s, run in zip(rep["runs"], a.runs, strict=True):
        h = hosts.setdefault(s["host"], {"runs": [], "ratios": []})
        h["runs"].append(
            {
                k: s[k]
                for k in ("path", "started_utc", "gpu", "lease", "lease_backend", "lease_token")
            }
            | {"slurm": _slurm(run), "findings": len(s["findings"])}
        )
    for g in rep["groups"]:
        best_of = {c["arm"]: c["best_s"] for c in g["cases"]}
        for r in g["rows"]:
            hosts[host_of[g["file"]]]["ratios"].append(
                {
                    "file": g["file"],
                    "stage": g["stage"],
                    "frames": g["frames"],
                    "arm": r["arm"],
                    "baseline": r["den"],
                    "best_s": best_of.get(r["arm"]),
                    "ratio": r["ratio"],
                    "ci": r["ci"],
                    "status": r["status"],
                    "reasons": sorted({f["code"] for f in r["reasons"]}),
                }
            )
    aa_tol = rep["thresholds"]["aa_tolerance"]
    arms = []
    est, refused = estimators(a)
    for model, stage, frames, arm in sorted(set(est) | set(refused), key=natural):
        per_host = est.get((model, stage, frames, arm))
        if not per_host:
            why = ", ".join(sorted(refused[(model, stage, frames, arm)]))
            arms.append(
                {
                    "model": model,
                    "stage": stage,
                    "frames": frames,
                    "arm": arm,
                    "hosts": [],
                    "per_host_s": [],
                    "n_hosts": 0,
                    "outliers": [],
                    "note": f"no accepted case on any host (refused: {why})",
                }
            )
            continue
        sp = spread(per_host, z_limit, min_dev)
        for o in sp["outliers"]:
            o |= classify(o, arm, _twins_of(rep, files_of[o["host"]], stage, frames), aa_tol)
        arms.append({"model": model, "stage": stage, "frames": frames, "arm": arm} | sp)
    for h in hosts.values():
        h["runs"].sort(key=lambda r: r["started_utc"])
        h["ratios"].sort(key=lambda r: natural((r["stage"], r["frames"], r["arm"], r["file"])))
    return {
        "hosts": hosts,
        "arms": arms,
        "refused": rep["refused"],
        "aa": rep["aa"],
        "thresholds": {"outlier_z": z_limit, "min_deviation": min_dev, "aa_tolerance": aa_tol},
        "history": "the records given, per host in time order (no history index here)",
    }


def natural(key) -> tuple:
    """A sort key that orders the numbers in names and cases by value: up3/8 < up3/32 < up3/128
    (as strings, "128" < "32" < "8")."""
    out = []
    for part in key if isinstance(key, tuple) else (key,):
        bits = re.split(r"(\d+)", "" if part is None else str(part))
        out.append(tuple((0, int(b), "") if b.isdigit() else (1, 0, b) for b in bits if b))
    return tuple(out)


def _job(job: dict) -> str:
    if not job:
        return ""
    text = f"job {job['job_id']}"
    if job.get("array_job_id"):
        text += f" (array {job['array_job_id']}_{job['array_task_id']})"
    return text + (f" {job['partition']}" if job.get("partition") else "")


def _ratio_text(r: dict) -> str:
    if r["status"] == "REFUSED":
        return "REFUSED " + ",".join(r["reasons"])
    return f"{r['ratio']:.4g} [{r['ci'][0]:.4g}, {r['ci'][1]:.4g}]" if r["ci"] else "-"


def _host_tables(name: str, h: dict, fmt: str) -> list[str]:
    keys = ("started_utc", "path", "lease", "lease_backend", "lease_token")
    runs = [[r[k] for k in keys] + [_job(r["slurm"])] for r in h["runs"]]
    if fmt == "text":  # the file's name: its folder is the one the command was given
        for row in runs:
            row[1] = Path(row[1]).name
    ratios = [
        [f"{r['stage']}/{r['frames']}", r["arm"], r["baseline"], _ratio_text(r)]
        for r in h["ratios"]
        if r["arm"] != r["baseline"]
    ]
    out = [
        "",
        f"host {name}: {len(h['runs'])} run(s), in time order",
        tables.render(("started", "record", "lease", "backend", "token", "job"), runs, fmt),
    ]
    if ratios:
        out += ["", tables.render(("case", "arm", "/ baseline", "ratio [95% CI]"), ratios, fmt)]
    return out


SPREAD_HEADERS = ("case", "arm", "hosts", "median", "min", "max", "max/min", "rob. CV", "outliers")
SPREAD_ALIGN = ("left", "left", "right", "right", "right", "right", "right", "right", "left")


def _spread_cells(x: dict) -> list:
    head = [f"{x['stage']}/{x['frames']}", x["arm"], x["n_hosts"]]
    if not x["n_hosts"]:
        return head + ["", "", "", "", "", x["note"]]
    outl = ", ".join(f"{o['host']} ({o['kind']})" for o in x["outliers"]) or (
        f"- (fewer than {MIN_HOSTS} hosts)" if x["n_hosts"] < MIN_HOSTS else "none"
    )
    return head + [
        _t(x["median_s"]),
        _t(x["min_s"]),
        _t(x["max_s"]),
        f"{x['max_over_min']:.4g}",
        f"{x['robust_cv']:.2%}",
        outl,
    ]


def render(rep: dict, fmt: str = "text") -> str:
    """text and md: each host's runs and ratios, then the spread across hosts with each outlier
    said; csv: the spread table alone."""
    spread = tables.render(
        SPREAD_HEADERS, [_spread_cells(x) for x in rep["arms"]], fmt, SPREAD_ALIGN
    )
    if fmt == "csv":
        return spread
    th = rep["thresholds"]
    head = (
        f"fleet: {len(rep['hosts'])} host(s), "
        f"{sum(len(h['runs']) for h in rep['hosts'].values())} run(s); outliers beyond "
        f"|z| > {th['outlier_z']:g} (MAD of log time) and {th['min_deviation']:.0%} from "
        "the median"
    )
    lines = [tables.sentence(head, fmt)]
    for name, h in sorted(rep["hosts"].items(), key=lambda kv: natural(kv[0])):
        lines += _host_tables(name, h, fmt)
    lines += ["", "across hosts (each host: the median of its runs' best times)", spread]
    for x in rep["arms"]:
        for o in x["outliers"]:
            said = f"{x['stage']}/{x['frames']} {x['arm']}, {o['host']}: {o['text']}"
            lines.append(tables.sentence(said, fmt))
    lines += ["", f"{rep['refused']} ratio(s) refused" if rep["refused"] else "all ratios accepted"]
    return "\n".join(lines)


def figures(rep: dict, out: Path) -> list[Path]:
    """One figure per (model, stage, frames): each arm's best time per host, outliers ringed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = defaultdict(list)
    for x in rep["arms"]:
        groups[(x["model"], x["stage"], x["frames"])].append(x)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for (model, stage, frames), arms in sorted(groups.items(), key=lambda kv: natural(kv[0])):
        arms = [x for x in arms if x["n_hosts"]]
        hosts = sorted({h for x in arms for h in x["hosts"]})
        if not hosts:
            continue
        fig, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(hosts) + 2) + 2.5, 4.5))
        colors = plt.get_cmap("tab20").colors
        for k, x in enumerate(arms):
            xs = [hosts.index(h) for h in x["hosts"]]
            (line,) = ax.plot(
                xs, x["per_host_s"], "os^Dv"[k // 20 % 5], color=colors[k % 20], label=x["arm"]
            )
            ax.axhline(x["median_s"], color=line.get_color(), lw=0.8, ls="--")
            for o in x["outliers"]:
                i = x["hosts"].index(o["host"])
                ax.plot(
                    [hosts.index(o["host"])],
                    [x["per_host_s"][i]],
                    "o",
                    ms=14,
                    mfc="none",
                    mec="red",
                )
        ax.set_xticks(range(len(hosts)), hosts, rotation=45, ha="right")
        ax.set_yscale("log")
        ax.set_ylabel("best time per host (s)")
        ax.set_title(
            f"{model} {stage}/{frames}\ntime per host (dashed: fleet median; ringed: outlier)",
            fontsize=9,
        )
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        fig.tight_layout()
        stem = f"fleet-{model}-{stage}-{frames}"
        for ext in ("png", "svg"):
            p = out / f"{stem}.{ext}"
            fig.savefig(p, dpi=120)
            written.append(p)
        plt.close(fig)
    return written


def run(args, a: Assessment) -> int:
    rep = build(a, args.baseline, args.outlier_z, args.min_deviation)
    fmt = tables.format_of(args)
    print(tables.dumps(rep) if fmt == "json" else render(rep, fmt))
    if args.out:
        for p in figures(rep, Path(args.out)):
            print(p)
    return 3 if rep["refused"] else 0
