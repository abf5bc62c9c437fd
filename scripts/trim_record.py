#!/usr/bin/env python3
"""Make a small fixture of a real record by keeping only some of its stages' cases.

Nothing measured is changed: the kept cases, their samples, the run's lease, host and GPU blocks
are copied as written; the dropped cases and their Google Benchmark rows are removed, plan.stages
names the kept stages, plan.order stays the realised order of the whole run (it tells what ran
between two kept samples), and a top-level `trimmed` block says what was dropped and from which
file (its sha256), so the record stays valid and honest.

Usage: trim_record.py IN.json OUT.json [--stages up0,up1] [--arms cpu-f64,cuda-f32/resident]
(an arm alone keeps all its stagings; arm/staging keeps one). The output is compact JSON.
"""

import argparse
import hashlib
import json
import sys
from pathlib import Path


def _kept(case: dict, stages: list[str] | None, arms: list[str] | None) -> bool:
    if stages and case["stage"] not in stages:
        return False
    return not arms or case["arm"] in arms or f"{case['arm']}/{case['staging']}" in arms


def trim(
    data: dict, stages: list[str] | None, source: bytes, arms: list[str] | None = None
) -> dict:
    keep = [c for c in data["cases"] if _kept(c, stages, arms)]
    if not keep:
        raise ValueError(
            f"no case of stages {','.join(stages or ['*'])} and arms {','.join(arms or ['*'])} "
            "in the record"
        )
    stages = stages or sorted({c["stage"] for c in keep}, key=data["plan"]["stages"].index)
    ids = {c["id"] for c in keep}
    out = dict(data)
    out["cases"] = keep
    out["benchmarks"] = [
        b
        for b in data.get("benchmarks", [])
        if b.get("run_name", b.get("name")) in ids
        or any(b.get("name", "").startswith(i + "_") for i in ids)
    ]
    out["plan"] = dict(data["plan"], stages=[s for s in data["plan"]["stages"] if s in stages])
    out["trimmed"] = {
        "by": "scripts/trim_record.py",
        "kept_stages": out["plan"]["stages"],
        "kept_arms": sorted({f"{c['arm']}/{c['staging']}" for c in keep}),
        "dropped_cases": len(data["cases"]) - len(keep),
        "source_sha256": hashlib.sha256(source).hexdigest(),
    }
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("--stages")
    p.add_argument("--arms")
    args = p.parse_args(argv)
    if not args.stages and not args.arms:
        print("trim_record: give --stages, --arms or both", file=sys.stderr)
        return 2
    try:
        raw = Path(args.src).read_bytes()
        split = lambda v: v.split(",") if v else None  # noqa: E731
        out = trim(json.loads(raw), split(args.stages), raw, split(args.arms))
    except (OSError, ValueError, KeyError) as e:
        print(f"trim_record: {args.src}: {e}", file=sys.stderr)
        return 2
    tmp = Path(args.dst + ".tmp")
    tmp.write_text(json.dumps(out, sort_keys=True, separators=(",", ":")) + "\n")
    tmp.replace(args.dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
