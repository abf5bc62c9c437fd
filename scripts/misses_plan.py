#!/usr/bin/env python3
"""The bench_conv runs that measure again, with counters, every case a record missed a target on.

Reads records, judges them as `convbench-analyze targets` does, and prints one line per run: the
arguments of one bench_conv run (shell-quoted) covering the missed cases of one length and one
reference arm, their candidates beside it, so that the targets table can name what limits each (the
kernel's dominant pipe, % of peak, DRAM) where the sweep ran with --no-counters. Causal stages
carry their length in their name and run without --frames. Nothing missed: no line, exit 0.

Usage: misses_plan.py RUN.json [RUN.json ...]
"""

import json
import shlex
import subprocess
import sys
from collections import defaultdict


def plan(judged: dict) -> list[list[str]]:
    """One argument list per length and reference arm: the missed stages, with every candidate
    that missed there (candidates of one reference share a run where they missed the same
    stages)."""
    stages: dict[tuple, set] = defaultdict(set)  # (frames, reference, candidate) -> stages
    for t in judged["targets"]:
        for r in t["rows"]:
            if r["status"] == "MISSED":
                frames = -1 if r["stage"].startswith("causal.") else r["frames"]
                stages[(frames, t["target"]["reference"], r["candidate"])].add(r["stage"])
    runs: dict[tuple, set] = defaultdict(set)  # (frames, reference, stages) -> arms
    for (frames, ref, cand), st in stages.items():
        runs[(frames, ref, tuple(sorted(st)))].update((ref, cand))
    out = []
    for (frames, _ref, st), arms in sorted(runs.items()):
        args = ["--stage", ",".join(st), "--arms", ",".join(sorted(arms))]
        out.append(args + ([] if frames < 0 else ["--frames", str(frames)]))
    return out


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    p = subprocess.run(
        [sys.executable, "-m", "convbench_analysis", "targets", *argv, "--format", "json"],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["no message"])[-1]
        print(f"misses_plan: {last}", file=sys.stderr)
        return 2
    for args in plan(json.loads(p.stdout)):
        print(shlex.join(args))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
