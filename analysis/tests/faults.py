"""Faults planted into a clean synthetic run, each the way the bench would record it: the
samples' probes, the lease observation and the times all move together (the record stays
consistent, so only the checks can refuse it)."""

from __future__ import annotations

import synth


def _rescale(case: dict, factors: dict[int, float]) -> None:
    secs = [s["seconds"] * factors.get(s["round"], 1.0) for s in case["samples"]]
    synth.set_seconds(case, secs)


def foreign_gpu(run: dict, cid: str, rnd: int = 1, pid: int = 991) -> None:
    """A co-tenant held a context on the GPU during one round: the lease observation saw it."""
    s = next(s for s in synth.case(run, cid)["samples"] if s["round"] == rnd)
    s["gpu_after"]["foreign_processes"] = 1
    ob = run["lease"]["observation"]
    ob["foreign_gpu_processes_max"], ob["foreign_gpu_samples"] = 1, [cid]
    run["lease"]["verdict"] = "void"
    run["lease"]["reasons"] = [f"foreign GPU process pid {pid} (python3) during {cid}"]


def cpu_hog(run: dict, cid: str, rounds=(1, 3), pid: int = 4321, comm="stress-ng") -> None:
    """A busy loop on every core: the arm's threads wait (PSI) and are preempted, the foreign
    window and the process table see the hog, and the rounds it ran in are slower."""
    c = synth.case(run, cid)
    for s in c["samples"]:
        if s["round"] in rounds:
            ct = s["contention"]
            ct["psi_some_us"] = 0.45 * ct["wall_s"] * 1e6
            ct["psi_some_share"] = 0.45
            ct["procs_running"] = 2 * synth.THREADS + 1
            per_thread = int(120 * s["total_seconds"]) + 4  # 120 switches per thread-second
            for t, w in zip(ct["threads"], s["workers"], strict=True):
                t["involuntary_cs"] = w["involuntary_cs"] = per_thread
                t["run_delay_s"] = 0.45 * w["task_s"]
            synth.set_foreign(s, 0.85, top=[(pid, comm, 0.85)])
    _rescale(c, {r: 1.3 for r in rounds})


def pinned_hog(
    run: dict, cid: str, cpu: int = 3, pid: int = 10323, comm: str = "bash", named_in: int = 2
) -> None:
    """A busy loop pinned to one of a pinned arm's CPUs, every round (as planted on the H200):
    the worker pinned there waits for its CPU half of each sample (schedstat run delay), the
    machine-wide foreign share stays under its threshold (one CPU of 16), and the process table
    names the loop only in the round whose window was long enough (named_in)."""
    c = synth.case(run, cid)
    for s in c["samples"]:
        for t in s["contention"]["threads"]:
            if t["cpu_before"] == cpu:
                t["run_delay_s"] = 0.47 * s["total_seconds"]
        synth.set_foreign(
            s,
            0.5 / synth.THREADS,
            top=[(pid, comm, 0.5 / synth.THREADS)] if s["round"] == named_in else None,
        )
    _rescale(c, {s["round"]: 1.3 for s in c["samples"]})


def slow_cpu(
    run: dict, cid: str, rounds: tuple | None = None, cpu: int = 7, relative: float = 0.38
) -> None:
    """One of the arm's CPUs delivered a fraction of its speed in the given rounds (a slow vCPU,
    or a busy loop on it): the speed probe reads it slow before and after those samples, its
    partitions take longer, and the threaded arm ran at its slowest thread's speed. The default,
    every round but the first two, is enough to move the median; a single round moves neither it
    nor the best."""
    c = synth.case(run, cid)
    if rounds is None:
        rounds = tuple(s["round"] for s in c["samples"])[2:]
    for s in c["samples"]:
        if s["round"] in rounds:
            w = next(w for w in s["workers"] if w["cpu"] == cpu)
            w["speed_before"] = synth.speed(w["worker"], cpu, relative)
            w["speed_after"] = synth.speed(w["worker"], cpu, relative * 1.02)
            w["task_s"] /= relative
            tasks = [x["task_s"] for x in s["workers"]]
            s["imbalance"] = max(tasks) / (sum(tasks) / len(tasks))
            s["slowest_speed_before"] = relative
            s["slowest_speed_after"] = relative * 1.02
    _rescale(c, {r: 1.35 for r in rounds})


def bypassing_run(run: dict) -> None:
    """The record of a second bench_conv started with --no-lease."""
    run["lease"]["verdict"] = "outside-lease"
    run["lease"]["token"] = None


def lapsed_lease(run: dict) -> None:
    run["lease"]["ttl_s"], run["lease"]["max_renew_gap_s"] = 15.0, 21.5


def power_capped_arm(run: dict, arm: str = "cuda-f32") -> None:
    """Only one arm ran power-capped, in every round (the other arms not at all)."""
    for c in run["cases"]:
        if c["arm"] == arm and c["device"]:
            for s in c["samples"]:
                s["gpu_after"]["throttle_reasons"] = ["SwPowerCap"]
                synth.set_violation(s, "power", 0.8 * s["total_seconds"] * 1e6)
                s["measured_sm_clock_mhz"] = 1785.0


def stolen_host(
    run: dict, cid: str, rounds: tuple | None = None, share: float = 0.18, slower: float = 1.6
) -> None:
    """The hypervisor ran other guests on this VM's CPUs in the given rounds (as seen on the
    H200: 12-20% of every CPU's time stolen, those cpu-f32 samples 1.4-1.8x slower): /proc/stat's
    steal grows, the foreign share counts it with no process to name, the speed probes between
    samples see full speed. The default, every round but the first two, moves the median."""
    c = synth.case(run, cid)
    if rounds is None:
        rounds = tuple(s["round"] for s in c["samples"])[2:]
    for s in c["samples"]:
        if s["round"] in rounds:
            s["contention"]["steal_share"] = share
            # the sample's foreign share counts the steal (busy ticks include it); over the
            # 1 s foreign window, which the sample is a small part of, it is diluted
            window_s = (s.get("foreign_cpu_window") or {}).get("window_s") or 1.0
            synth.set_foreign(s, share * s["total_seconds"] / window_s)
            s["foreign_cpu_share"] = share
            s["foreign_cpu_s"] = share * s["total_seconds"]
    _rescale(c, {r: slower for r in rounds})
