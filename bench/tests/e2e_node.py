"""End-to-end tests of bench_conv --gpus, run by CTest: e2e_node.py TEST BENCH_CONV.

Without GPUs the node is simulated: CONVBENCH_TEST_NODE_GPUS=N makes the launcher see N GPUs, and
each child runs a host-only plan (cpu-f32, up3), so the launcher, its barrier, the per-GPU
records, the node summary and the neighbours field of each sample are all exercised for real.
Exit 0 = pass, 1 = fail (with the reasons), 77 = could not run here (the reason is printed).
Planted faults that were seen to fail each test are noted beside the checks.
"""

import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "harness"))
import harness  # noqa: E402
from harness import check, load_json, nvml_present, skip, validate  # noqa: E402

PLAN = [
    "--arms",
    "cpu-f32",
    "--stage",
    "up3",
    "--reps",
    "3",
    "--target-ci",
    "0",
    "--min-time",
    "0.01",
    "--threads",
    "1",
    "--no-counters",
]


def run(bench, args, cwd, gpus=None):
    """bench_conv on a simulated node of `gpus` GPUs (none: the machine's own)."""
    extra = {} if gpus is None else {"CONVBENCH_TEST_NODE_GPUS": gpus}
    return harness.run(
        [bench] + args, cwd, timeout=240, drop=["CONVBENCH_TEST_NODE_GPUS"], extra=extra
    )


def test_node_no_gpu(tmp, bench):
    if nvml_present():
        skip("NVML is here, so --gpus all finds GPUs")
    p = run(bench, ["--gpus", "all"] + PLAN + ["--out", "n.json"], tmp)
    check(p.returncode == 2, f"--gpus all without a GPU: exit {p.returncode}, want 2")
    lines = p.stderr.strip().splitlines()
    check(len(lines) == 1 and "no GPU" in lines[0], f"want one clear line, got {p.stderr!r}")
    check(not os.listdir(tmp), f"no file may be written: {os.listdir(tmp)}")


def load_node(tmp, out):
    summary = load_json(os.path.join(tmp, out))
    records = {}
    for g in summary["gpus"]:
        path = os.path.join(tmp, g["record"])
        if g["record_written"] and check(os.path.exists(path), f"{path} listed but absent"):
            records[g["index"]] = load_json(path)
    return summary, records


def check_records(summary, records, indices, node_size):
    # Planted: the schema taking uuid as a string only (no null) failed this check.
    for i, r in records.items():
        validate(r, f"GPU {i}: record")
    check([g["index"] for g in summary["gpus"]] == indices, f"gpus {summary['gpus']}")
    check(summary["exit_status"] == 0, f"node exit_status {summary['exit_status']}")
    for g in summary["gpus"]:
        check(g["exit_status"] == 0, f"GPU {g['index']} exit {g['exit_status']}")
        # Planted: closing the go pipe before reading the ready pipe put released_utc before
        # the ready times; this check failed.
        check(
            g["ready_utc"] is not None and g["ready_utc"] <= summary["released_utc"],
            f"GPU {g['index']} ready {g['ready_utc']} after release {summary['released_utc']}",
        )
        check(g["uuid"] is None and g["unavailable"].get("uuid"), "a simulated GPU has no uuid")
    for i in indices:
        check(i in records, f"no record for GPU {i}")
        for case in records.get(i, {}).get("cases", []):
            check(len(case["samples"]) == 3, f"GPU {i}: {len(case['samples'])} samples")
            for s in case["samples"]:
                nb = s.get("neighbours")
                # Planted: leaving the own index in the probe's list failed this check.
                if check(isinstance(nb, list), f"GPU {i}: sample without neighbours"):
                    check(
                        [n["index"] for n in nb] == [j for j in range(node_size) if j != i],
                        f"GPU {i}: neighbours {[n['index'] for n in nb]}",
                    )
                    for n in nb:
                        for f in (
                            "util_pct",
                            "power_w",
                            "sm_clock_mhz",
                            "violation_us",
                            "processes",
                        ):
                            check(
                                n[f] is not None or n["unavailable"].get(f),
                                f"GPU {i}: neighbour {n['index']} {f} null without a reason",
                            )


def test_node_run(tmp, bench):
    p = run(bench, ["--gpus", "all", "--no-lease"] + PLAN + ["--out", "r/node.json"], tmp, 2)
    if not check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}"):
        return
    summary, records = load_node(tmp, "r/node.json")
    check(summary["kind"] == "convbench-node", "summary kind")
    check_records(summary, records, [0, 1], 2)
    check(
        sorted(os.listdir(os.path.join(tmp, "r")))
        == ["node.gpu0.json", "node.gpu1.json", "node.json"],
        f"files {os.listdir(tmp)}",
    )


def test_node_one(tmp, bench):
    p = run(bench, ["--gpus", "0", "--no-lease"] + PLAN + ["--out", "one.json"], tmp, 1)
    if not check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}"):
        return
    summary, records = load_node(tmp, "one.json")
    check_records(summary, records, [0], 1)


def test_node_one_of_two(tmp, bench):
    # GPU 1 timed alone on a node of two: GPU 0, not timed, is still its neighbour. Planted:
    # the neighbour list taken from --gpus instead of the node failed this test.
    p = run(bench, ["--gpus", "1", "--no-lease"] + PLAN + ["--out", "g1.json"], tmp, 2)
    if not check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}"):
        return
    summary, records = load_node(tmp, "g1.json")
    check_records(summary, records, [1], 2)


def test_node_interrupted(tmp, bench):
    # SIGTERM to the launcher alone (as a batch system sends it) stops every child, each of which
    # writes its record as interrupted; the summary is still written. Planted: without the
    # forwarding handler the launcher died at once and no summary was written (this failed).
    env = harness.environ(CONVBENCH_TEST_NODE_GPUS="2")
    args = PLAN[:]
    args[args.index("--reps") + 1] = "5000"
    args += ["--max-rounds", "5000", "--no-lease", "--out", "i.json"]
    p = harness.start([bench, "--gpus", "all"] + args, env=env, cwd=tmp)
    harness.wait_for(lambda: len(_journals(tmp)) >= 2, 60, step=0.2)
    time.sleep(1.0)
    p.send_signal(signal.SIGTERM)
    rc, err = harness.finish(p, 60)
    if not check(rc is not None, "the launcher ends within 60 s of SIGTERM"):
        return
    summary, records = load_node(tmp, "i.json")
    check(rc == 143, f"node exit {rc}, want 143: {err[-800:]}")
    check([g["exit_status"] for g in summary["gpus"]] == [143, 143], f"{summary['gpus']}")
    check(sorted(records) == [0, 1], "both records written")
    for i, r in records.items():
        check(r["status"] == "interrupted", f"GPU {i}: status {r['status']}")


def _journals(tmp):
    # each child writes its round journal once its rounds start: past the barrier
    return [n for n in os.listdir(tmp) if n.endswith(".journal")]


def test_node_lease_refused(tmp, bench):
    # Both host-only children ask for the one CPU lease of this host: one is refused (exit 3)
    # before the barrier, and the other must still be released, run and write its record.
    # A record left by an earlier run at the refused child's path must not count as written.
    # Planted: record_written as "the file exists" failed this test.
    for i in (0, 1):
        with open(os.path.join(tmp, f"l.gpu{i}.json"), "w") as f:
            f.write("{}")
    os.utime(os.path.join(tmp, "l.gpu0.json"), (0, 0))
    os.utime(os.path.join(tmp, "l.gpu1.json"), (0, 0))
    p = run(bench, ["--gpus", "0,1"] + PLAN + ["--out", "l.json"], tmp, 2)
    summary, records = load_node(tmp, "l.json")
    status = sorted(g["exit_status"] for g in summary["gpus"])
    check(status == [0, 3], f"child exits {status}, want one 0 and one 3 (refused)")
    check(p.returncode == 3 and summary["exit_status"] == 3, f"node exit {p.returncode}")
    check(len(records) == 1, f"{len(records)} records, want the one that held the lease")
    refused = [g for g in summary["gpus"] if g["exit_status"] == 3]
    check(refused and refused[0]["ready_utc"] is None, "the refused run never reached the barrier")


TESTS = {
    "node_no_gpu": test_node_no_gpu,
    "node_run": test_node_run,
    "node_one": test_node_one,
    "node_one_of_two": test_node_one_of_two,
    "node_interrupted": test_node_interrupted,
    "node_lease_refused": test_node_lease_refused,
}

if __name__ == "__main__":
    harness.main(TESTS, "bench_e2e_node")
