"""Small helpers the tests share: load synthetic runs, list what tripped, run the CLI."""

import subprocess
import sys

from convbench_analysis import assess, checks, load


def cli(*args, timeout=300):
    """convbench-analyze ARGS... in its own process: (exit status, stdout, stderr)."""
    p = subprocess.run(
        [sys.executable, "-m", "convbench_analysis", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return p.returncode, p.stdout, p.stderr


def assess_files(paths, **overrides):
    th = checks.Thresholds().with_overrides([f"{k}={v}" for k, v in overrides.items()])
    return assess.assess([load.load_run(p) for p in paths], th)


def tripped(a) -> set:
    """{(run index, case id or None, code)} of every finding."""
    out = set()
    for i, fs in a.run_findings.items():
        out |= {(i, None, f.code) for f in fs}
    for (i, cid), fs in a.case_findings.items():
        out |= {(i, cid, f.code) for f in fs}
    return out
