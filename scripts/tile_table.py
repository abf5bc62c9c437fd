#!/usr/bin/env python3
"""The tensor-core kernels' tile sweep, per case: the plan's choice against every forced tile and
split.

Reads records of `bench_conv --arms 'cuda-tf32,cuda-tf32@*'` (scripts/h200.sh tiles): per
(stage, frames) and arm family (cuda-tf32, cuda-f32x3, cuda-f64-dmma), the arm's own case (the
plan's choice, named by its kernel block) and each hidden variant (the wgmma kernels'
`<arm>@rows-n<N>-s<split>`, rows on M, `<arm>@pos-n<N>-g<groups>`, positions on M; the DMMA
kernels' `cuda-f64-dmma@t<rows>x<cols>-s<split>`), by best round time
(recomputed from the samples; a case that failed its gate has none). Prints one line per case:
the plan's time, the best variant and its time, their ratio, and the plan's rank among the
variants; then how many cases the plan got within 5% of the best. Exit 2 on a bad record.

    tile_table.py RUN.json [RUN.json ...]
"""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis" / "src"))
from convbench_analysis import load  # noqa: E402

FAMILIES = ("cuda-tf32", "cuda-f32x3", "cuda-f64-dmma")
VARIANT = re.compile(
    r"^(?:(cuda-tf32|cuda-f32x3)@((?:rows|pos)-n\d+-[sg]\d+)|(cuda-f64-dmma)@(t\d+x\d+-s\d+))$"
)


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
        family = (m.group(1) or m.group(3)) if m else c["arm"]
        if family not in FAMILIES:
            continue
        r = out.setdefault((c["stage"], c["frames"], family), {"plan": None, "variants": {}})
        t = best(c)
        if m:
            if t is not None:
                r["variants"][m.group(2) or m.group(4)] = t
        else:
            r["plan"] = (t, (c.get("kernel") or {}).get("name", "?"))
    return out


def main(argv):
    if not argv:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    near = total = 0
    for path in argv:
        try:
            run = load.load_run(path)
        except load.InputError as e:
            print(f"tile_table: {e}", file=sys.stderr)
            return 2
        print(f"{Path(path).name}:")
        print(f"{'case':<28} {'plan us':>9} {'best us':>9} {'best':<14} {'plan/best':>9} rank")
        for (stage, frames, family), r in sorted(rows(run).items()):
            name = f"{stage}/{frames} {family}"
            v = r["variants"]
            if r["plan"] is None or r["plan"][0] is None or not v:
                print(f"{name:<28} (no plan time or no variant)")
                continue
            t, kernel = r["plan"]
            bname, bt = min(v.items(), key=lambda kv: kv[1])
            rank = 1 + sum(1 for x in v.values() if x < t)
            total += 1
            near += t <= 1.05 * bt
            print(
                f"{name:<28} {t * 1e6:>9.1f} {bt * 1e6:>9.1f} {bname:<14} {t / bt:>9.3f} "
                f"{rank}/{len(v)}  [{kernel}]"
            )
    print(f"the plan within 5% of the best variant in {near} of {total} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
