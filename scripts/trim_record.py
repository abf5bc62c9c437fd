#!/usr/bin/env python3
"""Make a small fixture of a real record by keeping only some of its stages' cases.

Nothing measured is changed: the kept cases, their samples, the run's lease, host and GPU blocks
are copied as written; the dropped cases and their Google Benchmark rows are removed, plan.stages
names the kept stages, plan.order stays the realised order of the whole run (it tells what ran
between two kept samples), and a top-level `trimmed` block says what was dropped and from which
file (its sha256), so the record stays valid and honest.

Usage: trim_record.py IN.json OUT.json --stages up0,up1
"""

import argparse
import hashlib
import json
import sys
from pathlib import Path


def trim(data: dict, stages: list[str], source: bytes) -> dict:
    keep = [c for c in data["cases"] if c["stage"] in stages]
    if not keep:
        raise ValueError(f"no case of stages {','.join(stages)} in the record")
    ids = {c["id"] for c in keep}
    out = dict(data)
    out["cases"] = keep
    out["benchmarks"] = [
        b for b in data.get("benchmarks", []) if b.get("run_name", b.get("name")) in ids
        or any(b.get("name", "").startswith(i + "_") for i in ids)
    ]
    out["plan"] = dict(data["plan"], stages=[s for s in data["plan"]["stages"] if s in stages])
    out["trimmed"] = {
        "by": "scripts/trim_record.py",
        "kept_stages": out["plan"]["stages"],
        "dropped_cases": len(data["cases"]) - len(keep),
        "source_sha256": hashlib.sha256(source).hexdigest(),
    }
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("--stages", required=True)
    args = p.parse_args(argv)
    try:
        raw = Path(args.src).read_bytes()
        out = trim(json.loads(raw), args.stages.split(","), raw)
    except (OSError, ValueError, KeyError) as e:
        print(f"trim_record: {args.src}: {e}", file=sys.stderr)
        return 2
    tmp = Path(args.dst + ".tmp")
    tmp.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    tmp.replace(args.dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
