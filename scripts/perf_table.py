#!/usr/bin/env python3
"""The issue-7 targets table from comparison results (scripts/compare_h200.sh output).

Per (model, stage, frames): best-of-N of cuda-f32 against cudnn-f32 and against the fp32 FMA floor,
cuda-f64 (and cuda-f64-fma) against cudnn-f64 and the fp64 floors, as markdown; then, per target
of the issue, in how many cases it is met and which cases miss it (the chain against the sum of
its stages' best times from the same run). Reads result files only.
Usage: perf_table.py results/examples/compare-*.json
"""
import json
import sys


def best(cases, arm):
    c = cases.get(arm)
    if not c or not c.get("stats") or c["gate"]["result"] != "pass":
        return None
    return c["stats"]["best"]


def fmt_us(s):
    return "-" if s is None else f"{s * 1e6:.1f}"


def ratio(a, b):
    return "-" if a is None or b is None else f"{a / b:.2f}"


def targets(rows):
    """rows: (model, stage, frames, cases, floor). Returns [(target, met, total, misses)]."""
    out = {k: [0, 0, [], []] for k in ("cuda-f32 faster than cudnn-f32",
                                   "cuda-f32 within 1.3x of the fp32 FMA floor (floor >= 20 us)",
                                   "cuda-f64 within 1.3x of the no-FMA fp64 floor (floor >= 20 us)",
                                   "chain within 1.1x of the sum of its stages")}
    stage_sum = {}
    for model, stage, frames, cases, floor in rows:
        f32 = best(cases, "cuda-f32")
        if stage != "chain" and f32 is not None:
            stage_sum.setdefault((model, frames), 0.0)
            stage_sum[(model, frames)] += f32
    for model, stage, frames, cases, floor in rows:
        where = f"{model} {stage}/{frames}"
        f32, n32, f64 = best(cases, "cuda-f32"), best(cases, "cudnn-f32"), best(cases, "cuda-f64")
        checks = []
        if f32 is not None and n32 is not None:
            checks.append(("cuda-f32 faster than cudnn-f32", f32 < n32, f32 / n32))
        fl32, fl64 = floor.get("fp32_fma"), floor.get("fp64_nofma")
        if stage != "chain" and f32 is not None and fl32 and fl32 >= 20e-6:
            checks.append(("cuda-f32 within 1.3x of the fp32 FMA floor (floor >= 20 us)",
                           f32 <= 1.3 * fl32, f32 / fl32))
        if stage != "chain" and f64 is not None and fl64 and fl64 >= 20e-6:
            checks.append(("cuda-f64 within 1.3x of the no-FMA fp64 floor (floor >= 20 us)",
                           f64 <= 1.3 * fl64, f64 / fl64))
        if stage == "chain" and f32 is not None and stage_sum.get((model, frames)):
            r = f32 / stage_sum[(model, frames)]
            checks.append(("chain within 1.1x of the sum of its stages", r <= 1.1, r))
        for name, ok, r in checks:
            out[name][1] += 1
            out[name][0] += ok
            out[name][3].append(r)
            if not ok:
                out[name][2].append(f"{where} {r:.2f}")
    return [(k, v[0], v[1], v[2], (min(v[3]), max(v[3])) if v[3] else None)
            for k, v in out.items()]


def main(paths):
    print("| model | stage | frames | cuda-f32 us | cudnn-f32 us | f32 vs cuDNN | f32 x floor "
          "| cuda-f64 us | x no-FMA floor | cuda-f64-fma us | x FMA floor | cudnn-f64 us "
          "| f64-fma vs cuDNN |")
    print("| --- " * 13 + "|")
    rows = []
    for path in paths:
        try:
            run = json.load(open(path))
        except (OSError, ValueError) as e:
            print(f"perf_table: {path}: {e}", file=sys.stderr)
            return 2
        by = {}
        for c in run["cases"]:
            if c["staging"] in ("resident", "host"):
                by.setdefault((c["stage"], c["frames"]), {})[c["arm"]] = c
        model = run["plan"]["model"]
        for (stage, frames), cases in sorted(by.items(), key=lambda k: (k[0][1], k[0][0])):
            any_case = next(iter(cases.values()))
            floor = any_case.get("floor_s") or {}
            f32, n32 = best(cases, "cuda-f32"), best(cases, "cudnn-f32")
            f64, f64f, n64 = best(cases, "cuda-f64"), best(cases, "cuda-f64-fma"), best(cases, "cudnn-f64")
            print(f"| {model} | {stage} | {frames} | {fmt_us(f32)} | {fmt_us(n32)} | {ratio(f32, n32)} "
                  f"| {ratio(f32, floor.get('fp32_fma'))} | {fmt_us(f64)} "
                  f"| {ratio(f64, floor.get('fp64_nofma'))} | {fmt_us(f64f)} "
                  f"| {ratio(f64f, floor.get('fp64_fma'))} | {fmt_us(n64)} | {ratio(f64f, n64)} |")
            rows.append((model, stage, frames, cases, floor))
    print()
    for name, met, total, misses, span in targets(rows):
        print(f"- {name}: met in {met} of {total}" +
              (f" (ratios {span[0]:.2f}-{span[1]:.2f})" if span else "") +
              (f"; misses (ratio): {', '.join(misses)}" if misses else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
