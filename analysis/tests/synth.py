"""Builds realistic, valid result records per docs/record.md, for tests that need a run with
known properties (and mutations of one), in the layout bench_conv writes (schema_version 2),
including the per-sample probes, the stopping rule and the run status.

Times follow time = a + flops / rate per arm, with multiplicative noise per round, so the fit
and the signature call have a known answer. Counters follow the H200's published figures; the
model table is bench/data/models.json.
"""

from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_MODELS = json.loads((REPO / "bench/data/models.json").read_text())
MODEL = _MODELS["default"]
_M = next(m for m in _MODELS["models"] if m["name"] == MODEL)
CHANNELS = _M["channels"]
STRIDES = tuple(_M["strides"])
KERNELS = tuple(_M["kernels"])

# arm -> (device, staging, fixed seconds a, rate FLOP/s, relative noise (cv) per round)
ARMS = {
    "cpu-f64": (False, "host", 20e-6, 0.33e12, 0.01),
    "cpu-f32": (False, "host", 20e-6, 0.30e12, 0.01),
    "cuda-f64": (True, "resident", 8e-6, 15.0e12, 0.002),
    "cuda-f32": (True, "resident", 8e-6, 30.0e12, 0.002),
    # a naive provider: per-call upload/alloc dominates small shapes (fixed overhead signature)
    "cuda-f32-percall": (True, "per-call", 400e-6, 30.0e12, 0.002),
    # the peer a user would pick instead (cuDNN): per-call overhead near 25 us
    "cudnn-f32": (True, "resident", 25e-6, 25.0e12, 0.003),
    "cudnn-f64": (True, "resident", 25e-6, 12.0e12, 0.003),
}
DEFAULT_ARMS = ("cpu-f64", "cpu-f32", "cuda-f64", "cuda-f32")
GPU_UUID = "GPU-5c1e7b0a-6f2d-4c39-9b8e-1d2f3a4b5c6d"
SM_CLOCK_MAX = 1980.0
CLOCK_HZ = 1.97e9
DFMA_PEAK = 8448.0  # inst/cycle over the whole H200
FFMA_PEAK = 16896.0
LN2 = math.log(2.0)


def stage_shape(stage: str, frames: int) -> dict:
    i = int(stage[2:])
    l_in = frames
    for s in STRIDES[:i]:
        l_in *= s
    cin, cout = CHANNELS >> i, CHANNELS >> (i + 1)
    k, s = KERNELS[i], STRIDES[i]
    return {
        "op": "transposed",
        "batch": 1,
        "cin": cin,
        "cout": cout,
        "k": k,
        "stride": s,
        "dilation": 1,
        "padding": (k - s) // 2,
        "output_padding": 0,
        "l_in": l_in,
        "l_out": l_in * s,
    }


def flops_of(shape: dict) -> float:
    return 2.0 * shape["cin"] * shape["cout"] * shape["k"] * shape["l_in"]


def _iso(t: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _stats(secs: list[float]) -> dict | None:
    if not secs:
        return None
    n = len(secs)
    mean = sum(secs) / n
    sd = (sum((x - mean) ** 2 for x in secs) / (n - 1)) ** 0.5 if n > 1 else 0.0
    srt = sorted(secs)
    med = srt[n // 2] if n % 2 else 0.5 * (srt[n // 2 - 1] + srt[n // 2])
    return {
        "best": srt[0],
        "median": med,
        "min": srt[0],
        "max": srt[-1],
        "mean": mean,
        "cv": sd / mean,
        "spread": srt[-1] / srt[0],
        "n": n,
    }


def _counters(arm: str, flops: float, best: float) -> dict:
    f64 = "f64" in arm
    fma = flops / 2.0
    m = {
        f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum": 0.0
        for op in ("dadd", "dmul", "dfma", "fadd", "fmul", "ffma")
    }
    m[
        "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum"
        if f64
        else "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
    ] = fma
    m["sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained"] = DFMA_PEAK
    m["sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained"] = FFMA_PEAK
    m["sm__cycles_elapsed.avg.per_second"] = CLOCK_HZ
    m["gpu__time_duration.sum"] = best * 1e9
    m["dram__bytes_read.sum"] = 1e8
    m["dram__bytes_write.sum"] = 1e7
    return {
        "status": "collected",
        "profile": "fp-mix",
        "passes": 2,
        "metrics": m,
        "derived": {"fp64_flop" if f64 else "fp32_flop": flops},
    }


THREADS = 16
CPU_ADDS_PER_S = 2.9e9  # a full-speed vCPU of the GPU machine: dependent adds per second
# NVML's performance policies, the keys of violation_ns / violation_us / violation_share
POLICIES = ("power", "thermal", "sync_boost", "board_limit", "low_utilization", "reliability")
FOREIGN_WINDOW_S = 1.0  # the bench's foreign-CPU window: 10 ms ticks at 1% resolution
TICK_S = 0.010
# NVML's cumulative violation counters (ns) when the run starts: a GPU that ran capped before
VIOLATION_NS_AT_START = {k: 10_000_000_000 * (i + 1) for i, k in enumerate(POLICIES)}


def speed(worker: int, cpu: int, relative: float) -> dict:
    """One delivered-speed reading of a worker, as the bench's speed probe writes it."""
    return {
        "worker": worker,
        "cpu": cpu,
        "adds_per_s": relative * CPU_ADDS_PER_S,
        "relative": relative,
    }


def _thread(rng, worker: int, cpu: int, cpu_s: float) -> dict:
    return {
        "worker": worker,
        "tid": 31000 + worker,
        "cpu_before": cpu,
        "cpu_after": cpu,
        "voluntary_cs": rng.randint(0, 2),
        "involuntary_cs": int(rng.random() < 0.1),  # pinned, idle machine: almost never
        "cpu_s": cpu_s,
        "run_delay_s": rng.uniform(0.0, 2e-5),
        "migrations": 0,
    }


def _contention(rng, wall_s: float, threads: list[dict]) -> dict:
    psi = rng.uniform(0.0, 0.01) * wall_s * 1e6
    return {
        "wall_s": wall_s,
        "psi_some_us": psi,
        "psi_full_us": 0.0,
        "psi_some_share": psi / (wall_s * 1e6),
        "steal_share": 0.0,
        "procs_running": len(threads) + 1,
        "minor_faults": rng.randint(0, 4),
        "major_faults": 0,
        "threads": threads,
        "unavailable": {},
    }


def foreign_window(share: float | None, window_s: float) -> dict:
    """The foreign share over the window ending with a sample; share None while the run is
    younger than the window the resolution needs (as the bench writes it then)."""
    short = window_s < FOREIGN_WINDOW_S
    return {
        "share": None if short else share,
        "cpu_s": None if short else share * window_s * THREADS,
        "window_s": window_s,
        "resolution": TICK_S / window_s,
        "unavailable": (
            f"window {window_s:.2f} s is under the {FOREIGN_WINDOW_S:.2f} s its 10 ms ticks "
            "need for 1% resolution"
            if short
            else None
        ),
    }


def set_foreign(s: dict, share: float, resolution: float | None = None, top=None) -> None:
    """A foreign CPU share over a sample, everywhere the bench records it: the sample's own
    share, the window ending with it (its resolution: one tick over the window) and the top
    foreign processes."""
    window_s = max(FOREIGN_WINDOW_S, (s.get("foreign_cpu_window") or {}).get("window_s") or 0)
    s["foreign_cpu_share"] = share
    s["foreign_cpu_s"] = share * s["total_seconds"]
    s["foreign_cpu_window"] = foreign_window(share, window_s)
    if resolution is not None:
        s["foreign_cpu_window"]["resolution"] = resolution
    if top is not None:
        s["top_foreign"] = [
            {"pid": pid, "comm": comm, "cpu_s": sh * window_s * THREADS, "share": sh}
            for pid, comm, sh in top
        ] + list(s.get("top_foreign") or [])


def set_violation(s: dict, policy: str, us: float) -> None:
    """The GPU held its clocks down under `policy` for `us` µs of a device sample: the NVML
    counter after it grew by that much, and the differenced fields follow."""
    s["gpu_after"]["violation_ns"][policy] = s["gpu_before"]["violation_ns"][policy] + int(us * 1e3)
    s["violation_us"][policy] = us
    s["violation_share"][policy] = min(1.0, us / (s["total_seconds"] * 1e6))


def _probes(rng, device: bool, window_s: float, share: float, age_s: float) -> dict:
    """A clean sample's probes: every worker CPU near full speed, no stall, no foreign process
    beyond tick noise. age_s: how long the run had been sampling (the foreign window)."""
    fw = foreign_window(rng.uniform(0.0, 0.004), min(age_s, FOREIGN_WINDOW_S + window_s))
    top = [{"pid": 611, "comm": "systemd-journal", "cpu_s": 0.002, "share": 0.0001}]
    common = {"foreign_cpu_window": fw, "top_foreign": top, "probe_seconds": 0.0009}
    if device:
        return {
            "workers": None,
            "imbalance": None,
            "slowest_speed_before": None,
            "slowest_speed_after": None,
            # the launching thread's own counters: the workers are not woken around a GPU sample
            "contention": _contention(rng, window_s, [_thread(rng, 0, 0, 0.3 * window_s)]),
            "violation_us": {k: 0.0 for k in POLICIES},
            "violation_share": {k: 0.0 for k in POLICIES},
            **common,
        }
    workers, threads = [], []
    for w in range(THREADS):
        task_s = window_s * rng.uniform(0.9, 1.0)
        t = _thread(rng, w, w, task_s)
        threads.append(t)
        workers.append(
            {
                "worker": w,
                "cpu": w,
                "cpu_last": w,
                "cpu_changes": 0,
                "tasks": 4,
                "task_s": task_s,
                "cpu_s": task_s,
                "involuntary_cs": t["involuntary_cs"],
                "speed_before": speed(w, w, rng.uniform(0.92, 1.0)),
                "speed_after": speed(w, w, rng.uniform(0.92, 1.0)),
            }
        )
    tasks = [w["task_s"] for w in workers]
    return {
        "workers": workers,
        "imbalance": max(tasks) / (sum(tasks) / len(tasks)),
        "slowest_speed_before": min(w["speed_before"]["relative"] for w in workers),
        "slowest_speed_after": min(w["speed_after"]["relative"] for w in workers),
        "contention": _contention(rng, window_s, threads),
        "violation_us": None,
        "violation_share": None,
        **common,
    }


def interval(secs: list[float], target: float) -> dict:
    """The order-statistic 95% interval of the median, as the bench's stopping rule writes it
    (lo/hi null below 6 samples)."""
    n, srt = len(secs), sorted(secs)
    med = srt[n // 2] if n % 2 else 0.5 * (srt[n // 2 - 1] + srt[n // 2])

    def below(k):  # P(Binomial(n, 1/2) <= k)
        return sum(
            math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * LN2)
            for i in range(k + 1)
        )

    best_k, cov = 0, None
    for k in range(1, n // 2 + 1):
        c = 1 - 2 * below(k - 1)
        if c < 0.95:
            break
        best_k, cov = k, c
    lo, hi = (srt[best_k - 1], srt[n - best_k]) if best_k else (None, None)
    hw = max(med - lo, hi - med) / med if best_k and med > 0 else None
    return {
        "n": n,
        "median": med,
        "lo": lo,
        "hi": hi,
        "coverage": cov,
        "half_width": hw,
        "target": target,
    }


def set_stopping(c: dict, target: float) -> None:
    """The case's target, its interval and why it stopped (the rule's order: the fixed count,
    the target, else the rounds ran out)."""
    secs = [s["seconds"] for s in c["samples"]]
    c["target_ci"] = target
    c["interval"] = interval(secs, target) if secs else None
    hw = (c["interval"] or {}).get("half_width")
    if target <= 0:
        c["stop_reason"] = "fixed-count"
    else:
        c["stop_reason"] = "target-met" if hw is not None and hw <= target else "max-rounds"


def make_run(
    stages=("up0", "up1"),
    frames=(96, 384, 1536),
    arms=DEFAULT_ARMS,
    reps=5,
    seed=1,
    start=1_795_000_000.0,
    host="gpu-node-17",
    token="1041",
    git_sha="3f1c2d4e5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d",
    probes=True,
    cvs=None,
    target_ci=0.0,
) -> dict:
    """One clean run: lease collected and valid, counters collected for device arms.
    probes: schema_version 2, with the run's status, the stopping rule and the per-sample probes
    (workers' delivered speed, contention, the foreign CPU window, GPU violation time); False: a
    schema_version 1 record without them. cvs: {arm: relative noise per round}, overriding ARMS.
    target_ci: each case's interval target (a fraction; 0: the fixed count of reps rounds)."""
    rng = random.Random(seed)
    cvs = cvs or {}
    run_id = f"{rng.getrandbits(128):032x}"
    cases, order_ids = [], []
    for stage in stages:
        for fr in frames:
            shape = stage_shape(stage, fr)
            fl = flops_of(shape)
            for arm in arms:
                device, staging, a, rate, cv = ARMS[arm.split("#")[0]]  # cuda-f32#2: a twin
                cv = cvs.get(arm, cv)
                name = arm.replace("-percall", "")
                cid = f"{stage}/{fr}/{name}/{staging}"
                order_ids.append(cid)
                cases.append(
                    {
                        "id": cid,
                        "stage": stage,
                        "frames": fr,
                        "arm": name,
                        "staging": staging,
                        "device": device,
                        "shape": shape,
                        "flops": fl,
                        "min_bytes": 4.0
                        * (
                            shape["cin"] * shape["cout"] * shape["k"]
                            + shape["cin"] * shape["l_in"]
                            + shape["cout"] * shape["l_out"]
                        ),
                        "floor_s": (
                            {
                                "fp32_fma": fl / 66.7e12,
                                "fp64_fma": fl / 33.3e12,
                                "fp64_nofma": 2 * fl / 33.3e12,
                                "memory": 1e-6,
                                "arm": fl / (33.3e12 if "f64" in arm else 66.7e12),
                            }
                            if device
                            else None
                        ),
                        "gate": {
                            "kind": "reference" if arm == "cpu-f64" else "tolerance",
                            "result": "pass",
                            "mismatches": 0,
                            "max_abs_err": 1e-7,
                            "rel_l2_err": 1e-8,
                            "tolerance": None if arm == "cpu-f64" else 1e-5,
                        },
                        "samples": [],
                        "stats": None,
                        "counters": {"status": "not-collected"},
                        "_model": (a, rate, cv),
                    }
                )
    by_id = {c["id"]: c for c in cases}
    order, bench, t = [], [], start + 2.0
    for r in range(reps):
        ids = list(order_ids)
        random.Random(seed * 1000 + r).shuffle(ids)
        order.append({"round": r, "seed": seed * 1000 + r, "cases": ids})
        for pos, cid in enumerate(ids):
            c = by_id[cid]
            a, rate, cv = c["_model"]
            secs = (a + c["flops"] / rate) * (1.0 + abs(rng.gauss(0.0, cv)))
            iters = max(1, int(0.05 / secs))
            gpu = (
                {
                    "sm_clock_mhz": 1965.0,
                    "mem_clock_mhz": 3201.0,
                    "temperature_c": 41.0,
                    "power_w": 310.0,
                    "throttle_reasons": [],
                    "foreign_processes": 0,
                    "unavailable": {},
                    **(
                        {"processes": 1, "violation_ns": dict(VIOLATION_NS_AT_START)}
                        if probes
                        else {}
                    ),
                }
                if c["device"]
                else None
            )
            hs = {
                "loadavg_1m": 1.02,
                "runnable": 1,
                "governor": "performance",
                "cpu_mhz": 3400.0,
                "unavailable": {},
            }
            share = abs(rng.gauss(0.0, 0.004))
            c["samples"].append(
                {
                    "round": r,
                    "position": pos,
                    "seconds": secs,
                    "iterations": iters,
                    "total_seconds": secs * iters,
                    "host_before": dict(hs),
                    "host_after": dict(hs),
                    "foreign_cpu_s": share * secs * iters,
                    "foreign_cpu_share": share,
                    "gpu_before": copy.deepcopy(gpu),
                    "gpu_after": copy.deepcopy(gpu),
                    "measured_sm_clock_mhz": 1962.0 if c["device"] else None,
                }
            )
            if probes:
                age = t + secs * iters - (start + 2.0)
                c["samples"][-1]["unavailable"] = {}
                c["samples"][-1].update(_probes(rng, c["device"], secs * iters, share, age))
            bench.append(
                {
                    "name": cid,
                    "run_name": cid,
                    "run_type": "iteration",
                    "repetitions": reps,
                    "repetition_index": r,
                    "threads": 1,
                    "iterations": iters,
                    "real_time": secs * 1e6,
                    "cpu_time": secs * 1e6,
                    "time_unit": "us",
                }
            )
            t += secs * iters
    for c in cases:
        del c["_model"]
        c["stats"] = _stats([s["seconds"] for s in c["samples"]])
        if probes:
            set_stopping(c, target_ci)
        if c["device"]:
            c["counters"] = _counters(c["arm"], c["flops"], c["stats"]["best"])
    end = t + 1.0
    return {
        "schema_version": 2 if probes else 1,
        "run_id": run_id,
        "tool": {
            "name": "convbench",
            "version": "0.1.0",
            "git_sha": git_sha,
            "build_type": "Release",
            "compiler": "GNU 13.3.0",
            "cxx_flags": "-O3",
            "cuda_flags": "-O3 -arch=sm_90",
            "cuda_version": "13.0.88",
            "benchmark_version": "1.8.3",
        },
        "argv": ["bench_conv", "--stage", ",".join(stages), "--reps", str(reps)],
        "started_utc": _iso(start),
        "ended_utc": _iso(end),
        "exit_status": 0,
        "host": {
            "name": host,
            "machine_id": "0f3c" * 8,
            "boot_id": "b007" * 8,
            "cpu_model": "Intel(R) Xeon(R) Platinum 8480+",
            "cores": 16,
            "governor": "performance",
            "unavailable": {},
        },
        "gpus": [
            {
                "index": 0,
                "name": "NVIDIA H200",
                "uuid": GPU_UUID,
                "pci_bus_id": "00000000:19:00.0",
                "driver": "580.159.04",
                "cuda_runtime": "13.0",
                "sm_count": 132,
                "sm_clock_max_mhz": SM_CLOCK_MAX,
                "mem_clock_max_mhz": 3201.0,
                "l2_bytes": 62914560,
                "unavailable": {},
            }
        ],
        "plan": {
            "model": MODEL,
            "stages": list(stages),
            "frames": list(frames),
            "arms": sorted({a.replace("-percall", "") for a in arms}),
            "staging": sorted({ARMS[a.split("#")[0]][1] for a in arms}),
            "reps": reps,
            "seed": seed,
            "threads": 16,
            "order": order,
            **(_plan_v2(reps, target_ci) if probes else {}),
        },
        "lease": {
            "status": "collected",
            "backend": "file",
            "resource": {"host": host, "gpu_uuid": GPU_UUID},
            "holder": {"user": "bench", "host": host, "pid": 4242, "run_id": run_id},
            "token": token,
            "fencing": token,
            "ttl_s": 30.0,
            "acquired_utc": _iso(start),
            "last_renew_utc": _iso(end - 0.5),
            "verify_utc": [_iso(start + 1), _iso(end)],
            "max_renew_gap_s": 10.2,
            "start_check": {"ok": True, "at_utc": _iso(start + 1), "detail": "token ok"},
            "end_check": {"ok": True, "at_utc": _iso(end), "detail": "token ok"},
            "observation": {
                "foreign_gpu_processes_max": 0,
                "foreign_gpu_samples": [],
                "foreign_cpu_share_max": 0.02,
            },
            "verdict": "valid",
            "reasons": [],
        },
        **({"status": "complete", "journal": "results/run.json.journal"} if probes else {}),
        "cases": cases,
        "benchmarks": bench,
        "context": {
            "date": _iso(start),
            "host_name": host,
            "num_cpus": 16,
            "library_build_type": "release",
        },
    }


def _plan_v2(reps: int, target_ci: float) -> dict:
    return {
        "stopping": {
            "target_ci_percent": 100.0 * target_ci,
            "min_rounds": reps,
            "max_rounds": reps,
            "max_time_s": 600.0,
            "estimator": "median",
            "interval": "order-statistic 95% interval of the median",
        },
        "placement": {"pinned": True, "cpus": list(range(THREADS))},
        "speed_calibration": {
            "adds": 131072,
            "runs": 9,
            "best_adds_per_s": CPU_ADDS_PER_S,
            "best_per_cpu": {str(c): CPU_ADDS_PER_S for c in range(THREADS)},
        },
    }


def write(run: dict, path: Path) -> Path:
    path.write_text(json.dumps(run, indent=1))
    return path


def case(run: dict, cid: str) -> dict:
    return next(c for c in run["cases"] if c["id"] == cid)


def set_seconds(c: dict, secs: list[float]) -> None:
    """Replaces a case's round samples' seconds and recomputes its stats (keeps it valid)."""
    for s, x in zip(c["samples"], secs, strict=False):  # shortens to len(secs)
        s["seconds"] = x
        s["total_seconds"] = x * s["iterations"]
    c["samples"] = c["samples"][: len(secs)]
    c["stats"] = _stats(secs)
    if "target_ci" in c:
        set_stopping(c, c["target_ci"])


def set_hold(
    run: dict,
    acquired: float | str | None = None,
    released: float | str | None = None,
    lock_path: str | None = None,
    backend: str | None = None,
    token: str | None = None,
    adopted: bool | None = None,
) -> None:
    """The run's lease hold as bench_conv records it: when the lease was acquired and released
    (epoch seconds or ISO strings), the lock it went through (file backend: its path) and its
    token."""
    L = run["lease"]
    for key, t in (("acquired_utc", acquired), ("released_utc", released)):
        if t is not None:
            L[key] = t if isinstance(t, str) else _iso(t)
    if backend is not None:
        L["backend"] = backend
    if lock_path is not None:
        L["fencing"] = {"kind": "generation", "generation": int(L["token"]), "lock_path": lock_path}
    if token is not None:
        L["token"] = token
        if isinstance(L.get("fencing"), dict):
            L["fencing"]["generation"] = int(token)
    if adopted is not None:
        L["adopted"] = adopted


def times(run: dict) -> tuple[float, float]:
    """The run's (started, ended) as epoch seconds."""
    import datetime as dt

    def t(s: str) -> float:
        return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()

    return t(run["started_utc"]), t(run["ended_utc"])
