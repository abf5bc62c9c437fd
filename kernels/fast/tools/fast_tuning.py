#!/usr/bin/env python3
"""Makes the fast kernel's tuning table from the records of a block-shape sweep.

    bench_conv --arms 'cuda-f32@*,cuda-f64@*,cuda-f64-fma@*' --staging resident ... --out R.json
    cd kernels/fast
    python3 tools/fast_tuning.py R1.json [R2.json ...] > src/tuned_configs.inc
    python3 tools/fast_tuning.py --update src/tuned_configs.inc R.json > NEW.inc

A sweep is an ordinary bench_conv run of the block arms (`<arm>@<block>`, one arm per compiled
block shape; scripts/h200.sh step sweep). For every shape and arm the block with the smallest
median (the record's stats.median) among the cases that passed their gate becomes one row of
kTuned {cin, cout, k, stride, padding, l_in, arm, block}; for each arm the block with the smallest
geometric mean of (its median / the best median) over every shape it ran on, among the blocks that
ran on all of them, becomes its kFallback row (choose_fast_config() uses it for shapes the table
lacks). The table holds choices, not times: the times stay in the records.

--update TABLE: a sweep of part of the shapes (one model, length or accumulator per device call)
re-chooses only the rows its records cover and keeps TABLE's other rows and its kFallback rows
as they are (a fallback is chosen over a whole sweep). On stderr, one line per row whose block
changed: the case, the old and the new block, and the old block's median over the new one's
where the sweep timed both ("old block not timed" where it did not).

Refuses (one line on stderr, exit 2) a file that is not a bench_conv record or holds no block
arm, and (exit 3) a sweep in which any block failed its gate: a block that computes a wrong
answer is a kernel bug to fix before tuning.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ARMS = {"cuda-f32": "kF32", "cuda-f64": "kF64", "cuda-f64-fma": "kF64Fma"}
BLOCK_ARM = re.compile(r"(cuda-f32|cuda-f64|cuda-f64-fma)@(\S+)")
BLOCK_NAME = re.compile(
    r"t(\d+)-c(\d+)-k(\d+)-u(\d+)(?:-r(\d+))?(?:-b(\d+))?(-rm)?(?:-a(\d+))?(?:-s(\d+))?"
)


class Refusal(Exception):
    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def block_fields(name: str) -> list[str]:
    """FastConfig's aggregate initialiser for a block name (FastConfig::name() inverted)."""
    m = BLOCK_NAME.fullmatch(name)
    if not m:
        raise Refusal(f"cannot parse block name '{name}'")
    t, c, k, u, r, b, rm, a, s = m.groups()
    fields = [str(int(x)) for x in (t, c, k, u, r or 4, b or 1, s or 1)]
    if a:  # FastConfig.row_major, then FastConfig.buffers
        return fields + ["true" if rm else "false", str(int(a))]
    return fields + ["true"] if rm else fields


def load(path: str) -> dict:
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise Refusal(f"{path}: not a readable JSON record ({e})") from e
    if not isinstance(record, dict) or "cases" not in record or "schema_version" not in record:
        raise Refusal(f"{path}: not a bench_conv record (no schema_version or cases)")
    return record


def shape_key(case: dict) -> tuple:
    s = case["shape"]
    return (s["cin"], s["cout"], s["k"], s["stride"], s["padding"], s["l_in"])


def collect(paths: list[str]):
    medians = defaultdict(lambda: defaultdict(list))  # (shape, arm) -> block -> [median s]
    where = {}  # (shape, arm) -> "model stage frames"
    failed, devices, shas = [], set(), set()
    for path in paths:
        record = load(path)
        model = record.get("plan", {}).get("model", "?")
        for gpu in record.get("gpus") or []:
            devices.add(gpu.get("name") or "unknown GPU")
        shas.add((record.get("tool") or {}).get("git_sha") or "unknown")
        for case in record["cases"]:
            m = BLOCK_ARM.fullmatch(case.get("arm", ""))
            if not m or case.get("staging") != "resident" or case.get("stage") == "chain":
                continue
            arm, block = m.groups()
            if (case.get("gate") or {}).get("result") != "pass":
                failed.append(f"{case['id']} ({model})")
                continue
            if not case.get("stats"):
                continue
            key = (shape_key(case), arm)
            medians[key][block].append(case["stats"]["median"])
            where.setdefault(key, f"{model} {case['stage']} {case['frames']}")
    if failed:
        raise Refusal(f"{len(failed)} block case(s) failed their gate: {', '.join(failed[:5])}", 3)
    if not medians:
        raise Refusal("no resident case of a block arm (<arm>@<block>) in " + ", ".join(paths))
    return medians, where, devices, shas


def choose(medians) -> tuple[dict, dict]:
    """The best block per (shape, arm), and per arm the geomean-best block over its shapes."""
    best, ratios = {}, defaultdict(lambda: defaultdict(list))
    for key, blocks in medians.items():
        time = {b: statistics.median(v) for b, v in blocks.items()}
        best[key] = min(time, key=lambda b: (time[b], b))
        for b, t in time.items():
            ratios[key[1]][b].append(t / time[best[key]])
    fallback = {}
    for arm, by_block in ratios.items():
        shapes = sum(1 for key in medians if key[1] == arm)
        everywhere = {b: r for b, r in by_block.items() if len(r) == shapes}
        if everywhere:
            geo = {b: math.exp(sum(map(math.log, r)) / len(r)) for b, r in everywhere.items()}
            fallback[arm] = min(geo, key=lambda b: (geo[b], b))
    return best, fallback


TABLE_ROW = re.compile(
    r"    // (?P<where>.*): (?P<block>\S+)\n"
    r"    \{(?P<shape>\d+(?:, \d+){5}), Arm::(?P<arm>\w+), \{(?P<fields>[^}]*)\}\},"
)
FALLBACK_ROW = re.compile(
    r"    // (?P<block>\S+)\n    \{Arm::(?P<arm>\w+), \{(?P<fields>[^}]*)\}\},"
)


def read_table(path: str) -> tuple[dict, dict, dict]:
    """A tuning table's rows: (shape, arm) -> block, (shape, arm) -> case, arm -> fallback."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise Refusal(f"{path}: cannot read the table ({e})") from e
    by_enum = {v: k for k, v in ARMS.items()}
    best, where, fallback = {}, {}, {}
    tuned, _, fallbacks = text.partition("constexpr Fallback kFallback[]")
    for m in TABLE_ROW.finditer(tuned):
        if m.group("arm") not in by_enum:
            raise Refusal(f"{path}: unknown arm Arm::{m.group('arm')}")
        key = (tuple(int(v) for v in m.group("shape").split(", ")), by_enum[m.group("arm")])
        best[key], where[key] = m.group("block"), m.group("where")
    for m in FALLBACK_ROW.finditer(fallbacks):
        fallback[by_enum[m.group("arm")]] = m.group("block")
    if not best:
        raise Refusal(f"{path}: no kTuned row (not a tuning table)")
    return best, where, fallback


def update(table: str, medians, best, where) -> tuple[dict, dict, dict, list[str]]:
    """TABLE's rows with those the records cover re-chosen; the changes, explained."""
    old_best, old_where, old_fallback = read_table(table)
    merged, merged_where, changes = dict(old_best), dict(old_where), []
    for key, block in best.items():
        merged[key], merged_where[key] = block, where[key]
        was = old_best.get(key)
        if was is None or was == block:
            continue
        time = {b: statistics.median(v) for b, v in medians[key].items()}
        why = f"{time[was] / time[block]:.3f}x" if was in time else "old block not timed"
        changes.append(f"{where[key]} {key[1]}: {was} -> {block} ({why})")
    return merged, merged_where, old_fallback, changes


def render(best, fallback, where, devices, shas, paths, over: str | None = None) -> str:
    names = ", ".join(Path(p).name for p in paths)
    out = [f"// Generated by kernels/fast/tools/fast_tuning.py from {names}"]
    if over:
        out.append(f"// over {Path(over).name}: the rows those records lack and kFallback kept")
    out += [
        f"// ({', '.join(sorted(devices))}; build {', '.join(sorted(shas))}); do not edit.",
        "// Included by kernels/fast/src/plan.cpp. kTuned: {cin, cout, k, stride, padding, l_in,",
        "// arm, {threads, cells, chunk, u_groups, rows, min_blocks, split[, row_major[, "
        "buffers]]}},",
        "// each after the case it was chosen on; kFallback: {arm, block} for the shapes "
        "kTuned lacks.",
        "constexpr Tuned kTuned[] = {",
    ]
    for (shape, arm), block in sorted(best.items(), key=lambda kv: (kv[0][0], ARMS[kv[0][1]])):
        fields = ", ".join(str(v) for v in shape)
        out.append(f"    // {where[(shape, arm)]}: {block}")
        out.append(f"    {{{fields}, Arm::{ARMS[arm]}, {{{', '.join(block_fields(block))}}}}},")
    out += ["};", "constexpr Fallback kFallback[] = {"]
    for arm in sorted(fallback, key=lambda a: ARMS[a]):
        out.append(f"    // {fallback[arm]}")
        out.append(f"    {{Arm::{ARMS[arm]}, {{{', '.join(block_fields(fallback[arm]))}}}}},")
    out.append("};")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    table = None
    if argv and argv[0] == "--update":
        if len(argv) < 2:
            argv = []
        else:
            table, argv = argv[1], argv[2:]
    if not argv:
        print(
            "fast_tuning: usage: fast_tuning.py [--update TABLE.inc] RECORD.json... > "
            "tuned_configs.inc",
            file=sys.stderr,
        )
        return 2
    try:
        medians, where, devices, shas = collect(argv)
        best, fallback = choose(medians)
        if table:
            best, where, fallback, changes = update(table, medians, best, where)
            for line in changes:
                print(f"fast_tuning: changed {line}", file=sys.stderr)
            print(f"fast_tuning: {len(changes)} row(s) changed", file=sys.stderr)
        sys.stdout.write(render(best, fallback, where, devices, shas, argv, table))
    except Refusal as e:
        print(f"fast_tuning: {e}", file=sys.stderr)
        return e.code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
