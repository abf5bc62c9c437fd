#!/usr/bin/env python3
"""The issue-7 targets table from comparison results (scripts/compare_h200.sh output).

Per (model, stage, frames): best-of-N of cuda-f32 against cudnn-f32 and against the fp32 FMA floor,
cuda-f64 (and cuda-f64-fma) against cudnn-f64 and the fp64 floors, as markdown. Reads result files
only. Usage: perf_table.py results/examples/compare-*.json
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


def main(paths):
    print("| model | stage | frames | cuda-f32 us | cudnn-f32 us | f32 vs cuDNN | f32 x floor "
          "| cuda-f64 us | x no-FMA floor | cuda-f64-fma us | x FMA floor | cudnn-f64 us "
          "| f64-fma vs cuDNN |")
    print("| --- " * 13 + "|")
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
