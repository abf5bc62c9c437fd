"""`host-table`: how noisy the host arms are, from bench_conv records: one row per (rounds rule,
threads, pinned or not, arm, stage/frames) over the runs that share it.

Columns: runs; rounds per run; the within-run CV of the round times (sample standard deviation
over mean, the median over the runs); the drift of best-of-N between runs (max best / min best -
1); and, pooled over the row's rounds, the Pearson correlation of the round time (divided by its
own run's median for the case) with
  speed     the slowest worker's delivered speed: min over workers of min(speed_before.relative,
            speed_after.relative), the speed probe run just before and after the round;
  imbalance the round's "imbalance" (slowest worker's busy time over the mean);
  delay     the largest per-thread share of the round spent runnable but not running:
            max over contention.threads[] of run_delay_s / the round's seconds;
  psi       contention.psi_some_share, the CPU pressure (some) over the round;
  steal     contention.steal_share, the hypervisor's steal of every CPU's time over the round.
A correlation is "-" where fewer than three rounds carry the value or either side is constant.

    convbench-analyze host-table RUN.json ...                the table
    convbench-analyze host-table --doc RUN.json ...          docs/host-noise-h200.md (table,
                                                             findings), from the repository root
    convbench-analyze host-table --doc --out FILE RUN.json   the document, elsewhere

Exit 0, or 2 with one line on stderr for a record that cannot be read or holds no host arm.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
from datetime import datetime
from pathlib import Path

import numpy as np

from . import tables
from .load import InputError

DOC = Path("docs") / "host-noise-h200.md"
COVARIATES = ("speed", "imbalance", "delay", "psi", "steal")


def load_record(path):
    try:
        r = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(str(path), "", f"cannot read a record: {e}") from None
    if not isinstance(r, dict) or not isinstance(r.get("cases"), list):
        raise InputError(str(path), "", "not a bench_conv record (no cases)")
    return r


def rounds_rule(plan):
    """ "fixed N" where every case runs N rounds, else the adaptive rule's host CI target."""
    st = plan.get("stopping") or {}
    lo, hi, ci = st.get("min_rounds"), st.get("max_rounds"), st.get("target_ci_percent")
    if lo is not None and lo == hi:
        return f"fixed {lo}"
    if isinstance(ci, dict):
        ci = ci.get("host_and_per_call")
    return f"CI {ci:g}%" if isinstance(ci, (int, float)) else "adaptive"


def slowest_speed(sample):
    """min over workers of min(speed_before.relative, speed_after.relative), None without one."""
    vals = []
    for w in sample.get("workers") or []:
        for k in ("speed_before", "speed_after"):
            rel = (w.get(k) or {}).get("relative")
            if isinstance(rel, (int, float)):
                vals.append(float(rel))
    return min(vals) if vals else None


def max_delay_share(sample):
    secs = sample.get("seconds")
    threads = (sample.get("contention") or {}).get("threads") or []
    d = [t["run_delay_s"] for t in threads if isinstance(t.get("run_delay_s"), (int, float))]
    return max(d) / secs if d and secs else None


def covariates(sample):
    psi = (sample.get("contention") or {}).get("psi_some_share")
    steal = (sample.get("contention") or {}).get("steal_share")
    imb = sample.get("imbalance")
    return {
        "speed": slowest_speed(sample),
        "imbalance": float(imb) if isinstance(imb, (int, float)) else None,
        "delay": max_delay_share(sample),
        "psi": float(psi) if isinstance(psi, (int, float)) else None,
        "steal": float(steal) if isinstance(steal, (int, float)) else None,
    }


def host_runs(records):
    """Per row key, one entry per run: its round times and each round's covariates."""
    groups = {}
    for path, r in records:
        plan = r.get("plan") or {}
        try:
            threads = int(plan["threads"])
            pinned = bool(plan["placement"]["pinned"])
        except (KeyError, TypeError, ValueError):
            raise InputError(str(path), "", "no plan.threads or plan.placement.pinned") from None
        started = r.get("started_utc")
        for c in r["cases"]:
            if c.get("device") or c.get("staging") != "host":
                continue
            secs = [s.get("seconds") for s in c.get("samples") or []]
            if not secs or not all(isinstance(x, (int, float)) and x > 0 for x in secs):
                raise InputError(str(path), str(c.get("id")), "a round without a positive time")
            key = (rounds_rule(plan), threads, pinned, c["arm"], f"{c['stage']}/{c['frames']}")
            groups.setdefault(key, []).append(
                {
                    "path": str(path),
                    "started": started,
                    "seconds": np.array(secs, dtype=float),
                    "cov": [covariates(s) for s in c["samples"]],
                }
            )
    if not groups:
        raise InputError("the records", "", "no host arm (a case with staging host)")
    return groups


def cv(x):
    return float(np.std(x, ddof=1) / np.mean(x)) if len(x) > 1 else None


def pearson(x, y):
    """Pearson's r over the pairs where y is known; None below three pairs or for a constant."""
    pairs = [(a, b) for a, b in zip(x, y, strict=True) if b is not None]
    if len(pairs) < 3:
        return None
    a, b = np.array(pairs, dtype=float).T
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return float(np.corrcoef(a, b)[0, 1])


def row(key, runs):
    rule, threads, pinned, arm, case = key
    bests = [float(r["seconds"].min()) for r in runs]
    cvs = [v for v in (cv(r["seconds"]) for r in runs) if v is not None]
    norm, cov = [], {k: [] for k in COVARIATES}
    for r in runs:
        med = float(np.median(r["seconds"]))
        norm.extend(r["seconds"] / med)
        for c in r["cov"]:
            for k in COVARIATES:
                cov[k].append(c[k])
    return {
        "rule": rule,
        "threads": threads,
        "pinned": pinned,
        "arm": arm,
        "case": case,
        "runs": len(runs),
        "rounds": sorted(len(r["seconds"]) for r in runs),
        "cv": statistics.median(cvs) if cvs else None,
        "drift": max(bests) / min(bests) - 1 if len(runs) > 1 else None,
        "best": min(bests),
        "n": len(norm),
        "r": {k: pearson(norm, cov[k]) for k in COVARIATES},
        "pooled": (norm, cov),
        "started": sorted(r["started"] for r in runs if r["started"]),
    }


def table_rows(records):
    rows = [row(k, v) for k, v in host_runs(records).items()]
    rows.sort(
        key=lambda x: (
            not x["rule"].startswith("fixed"),
            x["rule"],
            -x["threads"],
            not x["pinned"],
            x["arm"],
            x["case"],
        )
    )
    return rows


def pct(v, digits=1):
    return "-" if v is None else f"{100 * v:.{digits}f}%"


def corr(v):
    return "-" if v is None else f"{v:+.2f}"


def rounds_text(rounds):
    return str(rounds[0]) if rounds[0] == rounds[-1] else f"{rounds[0]}-{rounds[-1]}"


HEADERS = (
    "rounds rule",
    "threads",
    "pinned",
    "arm",
    "stage",
    "runs",
    "rounds per run",
    "CV in run (median)",
    "best drift",
    *(f"r {k}" for k in COVARIATES),
)
ALIGN = ("left", "right", "left", "left", "left", "right", "right", *["right"] * 7)


def cells(x):
    """One row's cells as the table prints them."""
    return [
        x["rule"],
        str(x["threads"]),
        "yes" if x["pinned"] else "no",
        x["arm"],
        x["case"],
        str(x["runs"]),
        rounds_text(x["rounds"]),
        pct(x["cv"]),
        pct(x["drift"]),
    ] + [corr(x["r"][k]) for k in COVARIATES]


def table(rows, fmt):
    return tables.render(HEADERS, [cells(x) for x in rows], fmt, ALIGN)


def data(rows):
    """The rows for --format json: the numbers as computed (fractions, seconds)."""
    keys = ("rule", "threads", "pinned", "arm", "case", "runs", "rounds", "cv", "drift", "best")
    return [{k: x[k] for k in keys} | {"n": x["n"], "r": x["r"]} for x in rows]


def median_of(rows, field, **match):
    vals = [
        x[field] for x in rows if all(x[k] == v for k, v in match.items()) and x[field] is not None
    ]
    return (statistics.median(vals), len(vals)) if vals else (None, 0)


def threads_text(t):
    return f"{t} thread" + ("" if t == 1 else "s")


NAMES = {
    "speed": "the slowest worker's speed",
    "imbalance": "the imbalance",
    "delay": "the largest run-delay share",
    "psi": "PSI some",
    "steal": "the hypervisor's steal",
}


def findings(rows):
    """Sentences formatted from the rows' numbers."""
    out = [pinning_finding(rows), drift_finding(rows)]
    out += adaptive_findings(rows)
    out += [pooled_finding(rows), per_row_finding(rows)]
    return [s for s in out if s]


def pinning_finding(rows):
    fixed = [x for x in rows if x["rule"].startswith("fixed")]
    parts = []
    for t in sorted({x["threads"] for x in fixed}, reverse=True):
        pin, _ = median_of(fixed, "cv", threads=t, pinned=True)
        nopin, _ = median_of(fixed, "cv", threads=t, pinned=False)
        if pin is not None and nopin is not None:
            parts.append(f"{pct(pin)} pinned against {pct(nopin)} unpinned at {threads_text(t)}")
    if not parts:
        return None
    return "With a fixed number of rounds the median within-run CV is " + ", ".join(parts) + "."


def drift_finding(rows):
    drifted = [x for x in rows if x["drift"] is not None]
    if not drifted:
        return None
    worst = max(drifted, key=lambda x: x["drift"])
    pin, npin = median_of(drifted, "drift", pinned=True)
    nopin, nnopin = median_of(drifted, "drift", pinned=False)
    s = (
        f"Best-of-N moves between runs of one setting by up to {pct(worst['drift'])} "
        f"({worst['arm']} {worst['case']}, {threads_text(worst['threads'])}, "
        f"{'pinned' if worst['pinned'] else 'unpinned'}, {worst['rule']} rounds)"
    )
    if pin is not None and nopin is not None:
        s += (
            f"; the median drift is {pct(pin)} over the {npin} pinned rows and {pct(nopin)} "
            f"over the {nnopin} unpinned ones"
        )
    return s + "."


def adaptive_findings(rows):
    adaptive = {}
    for x in rows:
        if not x["rule"].startswith("fixed") and x["drift"] is not None:
            adaptive.setdefault((x["rule"], x["threads"], x["pinned"]), []).append(x)
    out = []
    for (rule, t, pinned), xs in adaptive.items():
        runs = sorted({x["runs"] for x in xs})
        rounds = sorted(n for x in xs for n in x["rounds"])
        out.append(
            f"The {'/'.join(map(str, runs))} runs under the {rule} rule "
            f"({threads_text(t)}, {'pinned' if pinned else 'unpinned'}, "
            f"{rounds_text(rounds)} rounds) keep a within-run CV of "
            + ", ".join(f"{pct(x['cv'])} ({x['arm']} {x['case']})" for x in xs)
            + " and still drift "
            + ", ".join(pct(x["drift"]) for x in xs)
            + " in their best."
        )
    return out


def pooled_finding(rows):
    pooled = {}
    for k in COVARIATES:
        norm, cov = [], []
        for x in rows:
            norm += list(x["pooled"][0])
            cov += x["pooled"][1][k]
        r = pearson(norm, cov)
        if r is not None:
            pooled[k] = (r, sum(v is not None for v in cov))
    if not pooled:
        return None
    n = max(v[1] for v in pooled.values())
    lead = max(pooled, key=lambda k: abs(pooled[k][0]))
    return (
        f"Pooled over all {n} rounds, the normalised round time correlates with "
        + ", ".join(f"{NAMES[k]} at r = {v[0]:+.2f}" for k, v in pooled.items())
        + f" (chance alone stays within about 2/sqrt(N) = {2 / n**0.5:.2f}); the "
        f"strongest, {NAMES[lead]}, accounts for {100 * pooled[lead][0] ** 2:.0f}% of the "
        "variance."
    )


def per_row_finding(rows):
    meds = {}
    for k in COVARIATES:
        vals = [x["r"][k] for x in rows if x["r"][k] is not None]
        if vals:
            meds[k] = (statistics.median(vals), len(vals))
    if not meds:
        return None
    small = min(x["n"] for x in rows)
    return (
        f"Row by row (as few as {small} rounds each) the median r is "
        + ", ".join(f"{v[0]:+.2f} for {NAMES[k]} ({v[1]} rows)" for k, v in meds.items())
        + "."
    )


def command_of(argv):
    """The bench_conv command without its output path, threads as T and --no-pin optional."""
    words, i = ["bench_conv"], 1
    threads = None
    while i < len(argv):
        a = argv[i]
        if a == "--out":
            i += 2
            continue
        if a == "--threads" and i + 1 < len(argv):
            threads = argv[i + 1]
            words += ["--threads", "T"]
            i += 2
            continue
        if a != "--no-pin":
            words.append(a)
        i += 1
    return " ".join(words), threads, "--no-pin" in argv


def commands_sentence(records):
    groups = {}
    for _, r in records:
        cmd, t, nopin = command_of(r.get("argv") or ["bench_conv"])
        g = groups.setdefault(cmd, {"threads": [], "nopin": set(), "n": 0})
        g["n"] += 1
        g["nopin"].add(nopin)
        if t is not None and t not in g["threads"]:
            g["threads"].append(t)
    parts = []
    for cmd, g in groups.items():
        if len(g["nopin"]) == 2:
            cmd = cmd.replace("--threads T", "--threads T [--no-pin]")
        elif True in g["nopin"]:
            cmd += " --no-pin"
        if not g["threads"]:
            cmd = cmd.replace(" --threads T", "")
        ts = f"T = {', '.join(g['threads'])}; " if g["threads"] else ""
        parts.append(f"`{cmd}` ({ts}{g['n']} records)")
    return "The records were written by " + ", ".join(parts) + "."


def machine_sentence(records):
    def distinct(f):
        vals = []
        for _, r in records:
            v = f(r)
            if v is not None and v not in vals:
                vals.append(v)
        return " / ".join(str(v) for v in vals) if vals else "?"

    host = distinct(lambda r: (r.get("host") or {}).get("name"))
    cpu = distinct(lambda r: (r.get("host") or {}).get("cpu_model"))
    cores = distinct(lambda r: (r.get("host") or {}).get("cores"))
    mhz = distinct(lambda r: (r.get("context") or {}).get("mhz_per_cpu"))
    mem = distinct(lambda r: round((r.get("host") or {}).get("memory_bytes", 0) / 2**30) or None)
    gpus = distinct(lambda r: ", ".join(g.get("name", "?") for g in r.get("gpus") or []) or None)
    gov = distinct(
        lambda r: (
            (r.get("host") or {}).get("governor")
            or ((r.get("host") or {}).get("unavailable") or {}).get("governor")
        )
    )
    return (
        f"Machine: host `{host}`, {cpu}, {cores} cores at {mhz} MHz, {mem} GiB, GPU {gpus}; "
        f"frequency governor: {gov}."
    )


def spacing_sentence(rows):
    parts = []
    for rule in dict.fromkeys(x["rule"] for x in rows):
        gaps = []
        for x in rows:
            if x["rule"] != rule:
                continue
            ts = [datetime.fromisoformat(v.replace("Z", "+00:00")) for v in x["started"]]
            gaps += [(b - a).total_seconds() for a, b in zip(ts, ts[1:], strict=False)]
        if gaps:
            lo, hi = f"{min(gaps):.0f}", f"{max(gaps):.0f}"
            parts.append(f"{lo if lo == hi else lo + '-' + hi} s apart under the {rule} rule")
    if not parts:
        return ""
    return (
        "Consecutive runs of one setting started "
        + ", ".join(parts)
        + " (start to start, with the other settings' runs in between)."
    )


def out_dirs(records):
    dirs = []
    for _, r in records:
        argv = r.get("argv") or []
        for a, b in zip(argv, argv[1:], strict=False):
            if a == "--out" and str(Path(b).parent) not in dirs:
                dirs.append(str(Path(b).parent))
    return dirs


def document(records, rows, argv):
    recs = " ".join("results/" + Path(a).name for a in argv)
    where = ", ".join(f"`{d}`" for d in sorted(out_dirs(records))) or "an ignored folder"
    lines = [
        "# Host-arm noise on the H200 machine",
        "",
        machine_sentence(records),
        commands_sentence(records),
        spacing_sentence(rows),
        f"The {len(records)} records are not in git: bench_conv wrote them (`--out`) to "
        f"{where} on the machine; copied into the ignored `results/` folder (git ignores "
        f"`results/*.json`) they give this page again: `convbench-analyze host-table --doc "
        f"{recs}`.",
        "",
        "Columns: see `convbench-analyze host-table --help`. The correlations are pooled over "
        "a row's rounds (runs x rounds per run), each round time divided by its own run's median; "
        "speed is the slowest worker's probed speed (negative r: a slow worker, a slow round), "
        "delay the largest per-thread run-delay share, psi the CPU pressure share.",
        "",
        table(rows, "md"),
        "",
        "## Findings",
        "",
    ]
    lines += [f"- {s}" for s in findings(rows)]
    return "\n".join(lines) + "\n"


def write_atomically(path, text):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)  # no partial document left behind
        raise


def arguments(p) -> None:
    """The `host-table` subcommand's arguments (cli.py registers the command)."""
    import argparse

    p.description = __doc__.split("\n\n")[0].split(": ", 1)[1]
    p.epilog = __doc__.split("\n\n", 1)[1]
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("records", nargs="+", metavar="RUN.json", help="bench_conv result records")
    p.add_argument(
        "--doc", action="store_true", help=f"write the document (table and findings), {DOC}"
    )
    p.add_argument("--out", default=None, metavar="FILE", help=f"the document's path ({DOC})")
    tables.add_format(p, "the rows' numbers as fractions and seconds")


def run(args) -> int:
    records = [(p, load_record(p)) for p in args.records]
    rows = table_rows(records)
    if not args.doc:
        fmt = tables.format_of(args)
        print(tables.dumps(data(rows)) if fmt == "json" else table(rows, fmt))
        return 0
    text = document(records, rows, args.records)
    out = Path(args.out) if args.out else DOC
    write_atomically(out, text)  # an OSError is one line, from cli.main
    print(f"host-table: wrote {out} ({len(rows)} rows)")
    return 0
