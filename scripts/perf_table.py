#!/usr/bin/env python3
"""The issue-7 targets table from comparison results (scripts/compare_h200.sh output).

Per (model, stage, frames): best-of-N of cuda-f32 against cudnn-f32 and against the fp32 FMA floor,
cuda-f64 (and cuda-f64-fma) against cudnn-f64 and the fp64 floors, as markdown; then, per target
of the issue, in how many cases it is met and which cases miss it (the chain against the sum of
its stages' best times from the same run). Reads result files only. A ratio the analysis refuses
(a gate tripped on either of its cases: spread, lease, clock, ...) is marked with a dagger, and
each target's tally says how many of its cases are refused: `convbench-analyze report` names why.
Usage: perf_table.py results/examples/compare-*.json
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis" / "src"))
from convbench_analysis import gates, load  # noqa: E402


def best(cases, arm):
    c = cases.get(arm)
    if not c or not c.get("stats") or c["gate"]["result"] != "pass":
        return None
    return c["stats"]["best"]


def refused(cases, *arms):
    """True when the analysis refuses a ratio between these arms' cases (cases[arm]["refused"])."""
    return any(cases.get(a, {}).get("refused") for a in arms)


def mark(text, cases, *arms):
    return text + ("†" if text != "-" and refused(cases, *arms) else "")


def limit(cases, arm):
    """What the counters say about a floor miss: time / floor ~ (issued / valid multiply-adds) /
    (pipe busy), so the miss is tile waste, an idle pipe, or both. '' without counters."""
    d = ((cases.get(arm) or {}).get("counters") or {}).get("derived") or {}
    waste = d.get("counted_over_nominal_flop")
    if "f64" in arm:
        pct = d.get("fp64_pipe_util_pct")
        busy = None if pct is None else f"fp64 pipe {pct:.0f}%"
    else:
        pct = d.get("fp32_pct_of_peak")
        busy = None if pct is None else f"fp32 {pct:.0f}% of peak"
    if waste is None or busy is None:
        return ""
    return f" (issued/valid {waste:.2f}, {busy})"


def fmt_us(s):
    return "-" if s is None else f"{s * 1e6:.1f}"


def ratio(a, b):
    return "-" if a is None or b is None else f"{a / b:.2f}"


def targets(rows):
    """rows: (model, stage, frames, cases, floor). Returns [(target, met, total, misses)]."""
    out = {k: [0, 0, [], [], 0] for k in ("cuda-f32 faster than cudnn-f32",
                                   "cuda-f32 within 1.3x of the fp32 FMA floor (floor >= 20 us)",
                                   "cuda-f64 within 1.3x of the no-FMA fp64 floor (floor >= 20 us)",
                                   "cuda-f64 faster than cudnn-f64",
                                   "cuda-f64-fma (the same bits) faster than cudnn-f64",
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
        f64f, n64 = best(cases, "cuda-f64-fma"), best(cases, "cudnn-f64")
        checks = []
        if f32 is not None and n32 is not None:
            checks.append(("cuda-f32 faster than cudnn-f32", f32 < n32, f32 / n32,
                           refused(cases, "cuda-f32", "cudnn-f32"), ""))
        fl32, fl64 = floor.get("fp32_fma"), floor.get("fp64_nofma")
        if stage != "chain" and f32 is not None and fl32 and fl32 >= 20e-6:
            checks.append(("cuda-f32 within 1.3x of the fp32 FMA floor (floor >= 20 us)",
                           f32 <= 1.3 * fl32, f32 / fl32, refused(cases, "cuda-f32"),
                           limit(cases, "cuda-f32")))
        if stage != "chain" and f64 is not None and fl64 and fl64 >= 20e-6:
            checks.append(("cuda-f64 within 1.3x of the no-FMA fp64 floor (floor >= 20 us)",
                           f64 <= 1.3 * fl64, f64 / fl64, refused(cases, "cuda-f64"),
                           limit(cases, "cuda-f64")))
        for name, arm, t in (("cuda-f64 faster than cudnn-f64", "cuda-f64", f64),
                             ("cuda-f64-fma (the same bits) faster than cudnn-f64", "cuda-f64-fma", f64f)):
            if t is not None and n64 is not None:
                checks.append((name, t < n64, t / n64, refused(cases, arm, "cudnn-f64"), ""))
        if stage == "chain" and f32 is not None and stage_sum.get((model, frames)):
            r = f32 / stage_sum[(model, frames)]
            checks.append(("chain within 1.1x of the sum of its stages", r <= 1.1, r,
                           refused(cases, "cuda-f32"), ""))
        for name, ok, r, no, why in checks:
            out[name][1] += 1
            out[name][0] += ok
            out[name][3].append(r)
            out[name][4] += no
            if not ok:
                out[name][2].append(f"{where} {r:.2f}{why}")
    return [(k, v[0], v[1], v[2], (min(v[3]), max(v[3])) if v[3] else None, v[4])
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
            assessed = gates.assess([load.load_run(path)])
        except (OSError, ValueError, load.InputError) as e:
            print(f"perf_table: {path}: {str(e).splitlines()[0] if str(e) else e}", file=sys.stderr)
            return 2
        by = {}
        for c in run["cases"]:
            if c["staging"] in ("resident", "host"):
                c = dict(c, refused=bool(assessed.for_case(0, c["id"])))
                by.setdefault((c["stage"], c["frames"]), {})[c["arm"]] = c
        model = run["plan"]["model"]
        for (stage, frames), cases in sorted(by.items(), key=lambda k: (k[0][1], k[0][0])):
            any_case = next(iter(cases.values()))
            floor = any_case.get("floor_s") or {}
            f32, n32 = best(cases, "cuda-f32"), best(cases, "cudnn-f32")
            f64, f64f, n64 = best(cases, "cuda-f64"), best(cases, "cuda-f64-fma"), best(cases, "cudnn-f64")
            print(f"| {model} | {stage} | {frames} | {fmt_us(f32)} | {fmt_us(n32)} "
                  f"| {mark(ratio(f32, n32), cases, 'cuda-f32', 'cudnn-f32')} "
                  f"| {mark(ratio(f32, floor.get('fp32_fma')), cases, 'cuda-f32')} | {fmt_us(f64)} "
                  f"| {mark(ratio(f64, floor.get('fp64_nofma')), cases, 'cuda-f64')} | {fmt_us(f64f)} "
                  f"| {mark(ratio(f64f, floor.get('fp64_fma')), cases, 'cuda-f64-fma')} | {fmt_us(n64)} "
                  f"| {mark(ratio(f64f, n64), cases, 'cuda-f64-fma', 'cudnn-f64')} |")
            rows.append((model, stage, frames, cases, floor))
    print()
    print("† the analysis refuses this ratio: a gate tripped on one of its cases "
          "(`convbench-analyze report` names it)")
    print()
    for name, met, total, misses, span, no in targets(rows):
        print(f"- {name}: met in {met} of {total}" +
              (f" (ratios {span[0]:.2f}-{span[1]:.2f})" if span else "") +
              (f", {no} of the {total} refused by the analysis" if no else "") +
              (f"; misses (ratio): {', '.join(misses)}" if misses else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
