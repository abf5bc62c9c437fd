"""Builds realistic, valid result records per docs/record.md, for tests that need a run with
known properties (and mutations of one), including the per-sample probes (host speed,
contention, GPU violation time) and the run status.

Times follow time = a + flops / rate per arm, with multiplicative noise per round, so the fit
and the signature call have a known answer. Counters follow the H200's published figures; the
model table is bench/data/models.json.
"""

from __future__ import annotations

import copy
import json
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


def _probes(rng, device: bool, window_s: float, share: float) -> dict:
    """A clean sample's probes: every worker CPU near full speed, no stall, no foreign process."""
    if device:
        return {
            "host_speed": None,
            "contention": None,
            "gpu_violation_us": {
                k: 0.0
                for k in (
                    "power",
                    "thermal",
                    "sync_boost",
                    "board_limit",
                    "low_util",
                    "reliability",
                )
            },
        }
    workers = []
    for w in range(THREADS):
        rel = rng.uniform(0.92, 1.0)
        workers.append({"worker": w, "cpu": w, "adds_per_s": rel * CPU_ADDS_PER_S, "relative": rel})
    return {
        "host_speed": {
            "workers": workers,
            "slowest_relative": min(w["relative"] for w in workers),
        },
        "contention": {
            "psi_some_us": rng.uniform(0.0, 0.01) * window_s * 1e6,
            "psi_full_us": 0.0,
            "nivcsw": rng.randint(0, 3),
            "migrations": rng.randint(0, 2),
            "steal_s": 0.0,
            "foreign_share": share,
            "foreign_share_resolution": min(1.0, 0.010 / window_s),
            "top_foreign": [],
        },
        "gpu_violation_us": None,
    }


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
) -> dict:
    """One clean run: lease collected and valid, counters collected for device arms.
    probes: the per-sample host speed, contention and GPU violation fields (False: a record of
    the older schema without them). cvs: {arm: relative noise per round}, overriding ARMS."""
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
                c["samples"][-1].update(_probes(rng, c["device"], secs * iters, share))
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
        if probes:
            c.update({"stop_reason": "rounds", "ci_target": None, "ci_reached": None})
        c["stats"] = _stats([s["seconds"] for s in c["samples"]])
        if c["device"]:
            c["counters"] = _counters(c["arm"], c["flops"], c["stats"]["best"])
    end = t + 1.0
    return {
        "schema_version": 1,
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
            **({"binary_sha": "b" * 64} if probes else {}),
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
        **({"status": "complete"} if probes else {}),
        "cases": cases,
        "benchmarks": bench,
        "context": {
            "date": _iso(start),
            "host_name": host,
            "num_cpus": 16,
            "library_build_type": "release",
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
