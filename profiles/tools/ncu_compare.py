#!/usr/bin/env python3
"""Sets Nsight Compute's counts beside the CUPTI capture's for one call of one kernel.

    ncu_compare.py NCU_CSV CUPTI_JSON

NCU_CSV: `ncu --csv --page raw --metrics a,b,... tensor_probe launch KERNEL` (one row per kernel
of the call: the counts are summed over them, as the CUPTI range holds the whole call).
CUPTI_JSON: `tensor_probe capture-one KERNEL --metrics a,b,...` (the same call in one user range).
Prints one line per metric, ncu's sum and CUPTI's value; exit 0 when every metric both name is
equal, 1 when one differs or either lacks it, 2 on unreadable input.
"""

import csv
import io
import json
import sys


def ncu_sums(text: str) -> tuple[dict[str, float], int]:
    """{metric: sum over the kernels}, and the number of kernels, from ncu's raw CSV page."""
    rows = list(csv.reader(io.StringIO("\n".join(ln for ln in text.splitlines() if ln[:1] == '"'))))
    if len(rows) < 3:
        raise ValueError("no kernel rows in the ncu CSV")
    header, data = rows[0], rows[2:]  # rows[1]: units
    sums: dict[str, float] = {}
    for i, name in enumerate(header):
        if "__" not in name:
            continue
        vals = [r[i].replace(",", "") for r in data if i < len(r)]
        try:
            sums[name] = sum(float(v) for v in vals if v not in ("", "n/a"))
        except ValueError:
            continue
    return sums, len(data)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: ncu_compare.py NCU_CSV CUPTI_JSON", file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            ncu, kernels = ncu_sums(f.read())
        with open(argv[2]) as f:
            cap = json.loads(f.read().strip().splitlines()[-1])
        block = cap["block"]
    except (OSError, ValueError, KeyError, IndexError) as e:
        print(f"ncu_compare: {e}", file=sys.stderr)
        return 2
    if block.get("status") != "collected":
        print(f"ncu_compare: CUPTI capture {block.get('status')}: {block.get('message')}")
        return 1
    metrics = block["metrics"]
    ok = True
    print(f"{cap['kernel']}: ncu over {kernels} kernel(s) | CUPTI one range")
    for name in sorted(set(ncu) | set(metrics)):
        a, b = ncu.get(name), metrics.get(name)
        same = a is not None and b is not None and a == b
        ok = ok and same
        fa = "-" if a is None else f"{a:.0f}"
        fb = "-" if b is None else f"{b:.0f}"
        print(f"  {name:<60} ncu {fa:>16}  CUPTI {fb:>16}  {'equal' if same else 'DIFFER'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
