#!/usr/bin/env python3
"""PyTorch's own ConvTranspose1d and Conv1d on this machine, the peers convbench's arms face, as a
record.

    python3 scripts/torch_peer.py --out results/torch-cpu.json                 # CPU f32, up0..up3
    python3 scripts/torch_peer.py --gpu --frames 96,384 --out peer.json        # + cuDNN via torch
    python3 scripts/torch_peer.py --gemm --no-cpu --stages all --out gemm.json # cuBLAS ceilings
    python3 scripts/torch_peer.py --gemm --no-cpu --beside RUN.json --out gemm.json


Arms: torch-cpu-f32 (and torch-cpu-f64 with --cpu-f64) at --threads threads; with --gpu
torch-cudnn-f32 (TF32 off), torch-cudnn-tf32 (TF32 on) and torch-cudnn-f64, timed with CUDA
events around each call; with --gemm cuBLAS on each stage's polyphase GEMM
[s*cout, cin*K/s] x [cin*K/s, l_in] (the stage's multiply-adds as one matrix product, no scatter
and no bias), what the vendor's GEMM reaches on these sizes: torch-cublas-gemm-f32 (TF32 off:
SIMT SGEMM), torch-cublas-gemm-tf32 (TF32 on: tensor cores, f32 operands), torch-cublas-gemm-bf16
(the operands cast to bfloat16 once, before timing; f32 output where torch.mm takes out_dtype,
else bfloat16 output: the record's kernel block says which) and torch-cublas-gemm-f64 (DGEMM).
--beside RUN.json measures them beside a bench_conv record of the same call: its single-
convolution cases at batch 1, with the shapes it recorded (a chain, the generator and the causal
op have no single GEMM), and its run_id in this record's context.beside, the one link
scripts/perf_table.py forms a ceiling ratio through. A Conv1d case (pre, an AMP conv, post) runs
as torch's conv1d and, with --gemm, as the implicit GEMM [cout, cin*K] x im2col(x) [cin*K, l_out]
(the gather staged once, before timing).

The output is a result record of results/result.schema.json, as bench_conv writes: the same case
ids (stage/frames/arm/staging), shapes from bench/data/models.json, floors from
bench/data/devices.json, every sample, stats with the one median. Before it is timed, every arm is
gated against an f64 reference computed here with numpy (relative L2, the bound of its bench_conv
counterpart); a failed arm is recorded, not timed, and the exit status is 4. The cases are timed in
interleaved rounds (a seeded shuffle per round) after untimed warm-up calls (the first runs cuDNN's
algorithm choice); a sample is as many back-to-back calls as last --min-time (2 ms; one call of
the case timed first says how many), its seconds their total over the count (iterations and
total_seconds in the sample, as bench_conv's). No probes.

The lease: under `convlease run [--gpu N] -- python3 scripts/torch_peer.py ...` the inherited
lease (CONVBENCH_LEASE) is checked with `convlease verify` (--convlease; default the one beside
bench_conv, build/bin/convlease) before the first call on the device and after the last timed
sample, and the record's lease block is written from those two checks, as bench_conv writes it
for an adopted lease: verdict valid when both passed on the same token, void (exit 3) with the
reason otherwise. A lease that does not pass the first check, or covers another resource than
the one timed (the GPU torch times, or "cpu" for CPU arms alone), is refused at once: exit 3, no
record. Without an inherited lease the block says "not-collected", and the analysis refuses
every ratio formed against the record.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import socket
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data"

# arm -> (device, dtype, gate tolerance: relative L2 against the f64 reference)
ARMS = {
    "torch-cpu-f32": (False, "f32", 1e-4),  # as cpu-f32
    "torch-cpu-f64": (False, "f64", 1e-9),
    "torch-cudnn-f32": (True, "f32", 5e-5),  # as cudnn-f32
    "torch-cudnn-tf32": (True, "tf32", 5e-3),  # as cudnn-tf32
    "torch-cudnn-f64": (True, "f64", 1e-9),  # as cudnn-f64
    "torch-cublas-gemm-f32": (True, "f32", 1e-4),
    "torch-cublas-gemm-tf32": (True, "tf32", 5e-3),  # as cuda-tf32: 2^-11 per operand
    # bf16 keeps 8 significant bits (unit roundoff 2^-9 ~ 2e-3): rounding both operands, with f32
    # accumulation, gives ~2.1e-3 relative L2 (bit-exact rounding on bigvgan_base up2/up3), a
    # bf16 output ~2.7e-3; 1e-2 leaves a factor ~4 and still fails a wrong product.
    "torch-cublas-gemm-bf16": (True, "bf16", 1e-2),
    "torch-cublas-gemm-f64": (True, "f64", 1e-9),
}
GEMM_ARMS = [
    "torch-cublas-gemm-f32",
    "torch-cublas-gemm-tf32",
    "torch-cublas-gemm-bf16",
    "torch-cublas-gemm-f64",
]
FLOOR_KIND = {"f32": "fp32_fma", "tf32": "fp32_fma", "f64": "fp64_fma"}
# The cuBLAS tensor-core arms have no floor: devices.json holds FMA-chain rates of the SIMT pipes
# and the copy rate, no tensor-core rate, so their floor_s.arm is null and arm_unavailable says
# why (the other floors are still recorded).
NO_FLOOR = {
    "torch-cublas-gemm-tf32": "devices.json has no tensor-core (TF32) rate",
    "torch-cublas-gemm-bf16": "devices.json has no tensor-core (BF16) rate",
}


class UsageError(Exception):
    pass


class LeaseRefused(Exception):
    pass


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def load_models() -> tuple[str, dict]:
    table = json.loads((DATA / "models.json").read_text())
    models = {}
    for m in table["models"]:
        # An alias is a name, or {"name", "num_mels"} (a model that differs only in conv_pre).
        aliases = [a if isinstance(a, str) else a["name"] for a in m.get("aliases", [])]
        for name in [m["name"], *aliases]:
            models[name] = m
    return table["default"], models


def stage_shapes(model: dict, frames: int) -> list[dict]:
    """bench_conv's stages: ConvTranspose1d(C/2^i -> C/2^(i+1), K, s, (K - s) / 2), bias."""
    shapes, l_in, c = [], frames, model["channels"]
    for i, (s, k) in enumerate(zip(model["strides"], model["kernels"], strict=True)):
        pad = (k - s) // 2
        shapes.append(
            {
                "stage": f"up{i}",
                "op": "transposed",
                "batch": 1,
                "bias": True,
                "cin": c >> i,
                "cout": c >> (i + 1),
                "k": k,
                "stride": s,
                "dilation": 1,
                "padding": pad,
                "output_padding": 0,
                "l_in": l_in,
                "l_out": (l_in - 1) * s - 2 * pad + k,
            }
        )
        l_in *= s
    return shapes


def parse_args(argv: list[str]) -> argparse.Namespace:
    default_model, models = load_models()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="the record to write")
    p.add_argument("--model", help=f"default {default_model}")
    p.add_argument("--frames", help="comma-separated, e.g. 96,384,1536 (default 96)")
    p.add_argument("--stages", help="comma-separated or 'all' (default up0,up1,up2,up3)")
    p.add_argument(
        "--beside",
        metavar="RUN.json",
        help="the bench_conv record of this call: its model, stages and frames (no --model, "
        "--stages or --frames with it); its run_id goes into context.beside",
    )
    p.add_argument("--threads", type=int, default=16, help="CPU threads (torch.set_num_threads)")
    p.add_argument("--reps", type=int, default=20, help="interleaved rounds: samples per case")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls per case first")
    p.add_argument(
        "--min-time",
        type=float,
        default=0.002,
        metavar="S",
        help="seconds a sample lasts at least: back-to-back calls, as many as one call's time "
        "(measured once per case) says, timed together (default 0.002; 0: one call per sample)",
    )
    p.add_argument("--cpu-f64", action="store_true", help="also torch-cpu-f64")
    p.add_argument("--no-cpu", action="store_true", help="no torch-cpu-* arms")
    p.add_argument("--gpu", action="store_true", help="also torch-cudnn-f32, -tf32, -f64")
    p.add_argument(
        "--gemm", action="store_true", help="also torch-cublas-gemm-f32, -tf32, -bf16, -f64"
    )
    p.add_argument("--cudnn-benchmark", action="store_true", help="torch.backends.cudnn.benchmark")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--convlease",
        default=str(DEFAULT_CONVLEASE),
        metavar="PATH",
        help="the convlease binary that checks the lease inherited from `convlease run` "
        f"(default {DEFAULT_CONVLEASE.relative_to(ROOT)}, beside bench_conv)",
    )
    args = p.parse_args(argv)
    args.inherited = bool(os.environ.get(LEASE_ENV))
    if args.inherited and not os.access(args.convlease, os.X_OK):
        raise UsageError(
            f"--convlease {args.convlease} is not an executable: it checks the lease inherited "
            f"from convlease run ({LEASE_ENV} is set); build it or name it"
        )
    args.beside_run = None
    if args.beside:
        if args.model or args.frames or args.stages:
            raise UsageError("--beside takes the model, stages and frames from its record")
        args.beside_run = read_beside(args.beside)
        plan = args.beside_run["plan"]
        args.model = plan["model"]
        args.frames = ",".join(str(f) for f in plan["frames"])
    args.model = args.model or default_model
    args.frames = args.frames or "96"
    args.stages = args.stages or "up0,up1,up2,up3"
    if args.model not in models:
        raise UsageError(f"--model: unknown model '{args.model}' (known: {', '.join(models)})")
    args.model_name = models[args.model]["name"]
    try:
        args.frames = [int(f) for f in args.frames.split(",") if f]
    except ValueError:
        raise UsageError(
            f"--frames must be comma-separated integers, got '{args.frames}'"
        ) from None
    if not args.frames or min(args.frames) < 1:
        raise UsageError("--frames needs at least one value >= 1")
    known = [f"up{i}" for i in range(len(models[args.model]["strides"]))]
    if args.beside:
        # The run's own single-convolution cases, shapes as it recorded them (its upsample and
        # Conv1d stages at batch 1; a chain, the generator and causal shapes have no GEMM here).
        args.shapes = beside_shapes(args.beside_run)
        if not args.shapes:
            raise UsageError(
                f"--beside {args.beside}: no single Conv1d or ConvTranspose1d case at batch 1"
            )
        args.stages = list(dict.fromkeys(shape["stage"] for _, shape in args.shapes))
    else:
        args.stages = known if args.stages == "all" else [s for s in args.stages.split(",") if s]
        for s in args.stages:
            if s not in known:
                raise UsageError(
                    f"--stages: '{s}' is not a stage of {args.model} ({', '.join(known)})"
                )
        args.shapes = [
            (f, shape)
            for f in args.frames
            for shape in stage_shapes(models[args.model], f)
            if shape["stage"] in args.stages
        ]
    if args.threads < 1 or args.reps < 1 or args.warmup < 0:
        raise UsageError("--threads and --reps must be >= 1, --warmup >= 0")
    if not (0.0 <= args.min_time <= 10.0):
        raise UsageError(f"--min-time must be within [0, 10] seconds, got {args.min_time}")
    args.arms = (
        [] if args.no_cpu else ["torch-cpu-f32"] + (["torch-cpu-f64"] if args.cpu_f64 else [])
    )
    if args.gpu:
        args.arms += ["torch-cudnn-f32", "torch-cudnn-tf32", "torch-cudnn-f64"]
    if args.gemm:
        args.arms += GEMM_ARMS
    if not args.arms:
        raise UsageError("--no-cpu without --gpu or --gemm leaves nothing to time")
    args.models = models
    return args


def boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def read_beside(path: str) -> dict:
    """The bench_conv record named by --beside: its run_id, plan and host, checked."""
    try:
        run = json.loads(Path(path).read_text())
        plan, run_id = run["plan"], run["run_id"]
        ok = (
            isinstance(run_id, str)
            and isinstance(plan["model"], str)
            and all(isinstance(s, str) for s in plan["stages"])
            and all(isinstance(f, int) for f in plan["frames"])
        )
    except OSError as e:
        raise UsageError(f"--beside {path}: {e.strerror or e}") from None
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        raise UsageError(
            f"--beside {path}: not a bench_conv record (run_id, plan.model, plan.stages, "
            "plan.frames)"
        )
    theirs, ours = (run.get("host") or {}).get("boot_id"), boot_id()
    if theirs and ours and theirs != ours:
        raise UsageError(
            f"--beside {path}: measured on another boot ({theirs}, this one {ours}): "
            "not the same call"
        )
    return run


SHAPE_INTS = ("batch", "cin", "cout", "k", "stride", "dilation", "padding", "l_in", "l_out")


def beside_shapes(run: dict) -> list[tuple[int, dict]]:
    """(frames, shape) of each distinct single-convolution case of a bench_conv record, in its
    order: the shapes as the run recorded them, so no stage table is rebuilt here."""
    out, seen = [], set()
    for c in run.get("cases") or []:
        shape = c.get("shape") if isinstance(c, dict) else None
        if not isinstance(shape, dict) or shape.get("op") not in ("forward", "transposed"):
            continue
        if not all(isinstance(shape.get(k), int) for k in SHAPE_INTS) or shape["batch"] != 1:
            continue
        key = (c.get("stage"), c.get("frames"))
        if not isinstance(key[0], str) or not isinstance(key[1], int) or key in seen:
            continue
        seen.add(key)
        kept = {"op": shape["op"], **{k: shape[k] for k in SHAPE_INTS}}
        kept["output_padding"] = shape.get("output_padding", 0)
        kept["bias"] = bool(shape.get("bias", True))
        out.append((key[1], {"stage": key[0], **kept}))
    return out


def im2col(shape: dict, x) -> np.ndarray:
    """Conv1d's gathered input: B[(ic, kk), o] = x[ic, o*stride + kk*dilation - padding], 0
    outside, so that y = w.reshape(cout, cin*k) @ B (the implicit GEMM's multiply-adds)."""
    cin, k, s, d, pad = (shape[n] for n in ("cin", "k", "stride", "dilation", "padding"))
    l_in, l_out = shape["l_in"], shape["l_out"]
    bm = np.zeros((cin, k, l_out), dtype=x.dtype)
    o = np.arange(l_out)
    for kk in range(k):
        pos = o * s + kk * d - pad
        ok = (pos >= 0) & (pos < l_in)
        bm[:, kk, ok] = x[:, pos[ok]]
    return bm.reshape(cin * k, l_out)


def reference(arm: str, shape: dict, x, w, b) -> np.ndarray:
    """The f64 result the arm must match: the convolution (or, for the GEMM arms, the product)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    if "gemm" in arm:
        a, bm = gemm_operands(shape, w, x)
        return a @ bm
    if shape["op"] == "forward":
        return w.reshape(shape["cout"], -1) @ im2col(shape, x) + b.astype(np.float64)[:, None]
    cin, cout, k, s, pad = (
        shape["cin"],
        shape["cout"],
        shape["k"],
        shape["stride"],
        shape["padding"],
    )
    l_in, l_out = shape["l_in"], shape["l_out"]
    cols = w.reshape(cin, cout * k).T @ x  # [cout*K, l_in]: every tap's contribution
    full = np.zeros((cout, (l_in - 1) * s + k))
    for kk in range(k):
        full[:, kk : kk + (l_in - 1) * s + 1 : s] += cols.reshape(cout, k, l_in)[:, kk, :]
    return full[:, pad : pad + l_out] + b.astype(np.float64)[:, None]


def gemm_operands(shape: dict, w, x):
    """The stage's GEMM operands. ConvTranspose1d, the polyphase view: A[(r, oc), (ic, j)] =
    w[ic, oc, j*s + r], B = x taps. Conv1d, the implicit GEMM: A = w [cout, cin*k],
    B = im2col(x)."""
    if shape["op"] == "forward":
        return w.reshape(shape["cout"], -1), im2col(shape, x)
    cin, cout, k, s = shape["cin"], shape["cout"], shape["k"], shape["stride"]
    taps = k // s
    a = w.reshape(cin, cout, taps, s).transpose(3, 1, 0, 2).reshape(s * cout, cin * taps)
    bm = np.zeros((cin, taps, shape["l_in"]), dtype=x.dtype)
    for j in range(taps):
        bm[:, j, j:] = x[:, : shape["l_in"] - j]
    return a, bm.reshape(cin * taps, shape["l_in"])


def math_mode(torch, arm: str) -> None:
    """TF32 decides whether cuDNN and cuBLAS may use tensor-op math for f32. The flags are global
    and read at each call, so this is set before every call of the arm (gate, warm-up, samples),
    never once for all."""
    if ARMS[arm][0]:
        tf32 = ARMS[arm][1] == "tf32"
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32


def make_call(torch, arm: str, shape: dict, x, w, b):
    """(call, sync, output, kernel) of one arm on one stage: call() runs it once; kernel: what
    the record's kernel block adds (the GEMM's output dtype)."""
    device, dtype, _ = ARMS[arm]
    tdtype = {"f64": torch.float64, "bf16": torch.bfloat16}.get(dtype, torch.float32)
    dev = "cuda" if device else "cpu"
    kernel = {}
    math_mode(torch, arm)
    if "gemm" in arm:
        a, bm = gemm_operands(shape, w, x)
        # Cast once, here: the timed call is the product alone.
        ta = torch.from_numpy(np.ascontiguousarray(a)).to(dev, tdtype)
        tb = torch.from_numpy(np.ascontiguousarray(bm)).to(dev, tdtype)
        out = torch.empty(ta.shape[0], tb.shape[1], dtype=tdtype, device=dev)
        if dtype == "bf16":
            # bf16 operands, f32 output where torch.mm takes out_dtype (recent torch, CUDA);
            # else cuBLAS writes bf16 and the gate's tolerance covers that rounding too.
            out32 = torch.empty(ta.shape[0], tb.shape[1], dtype=torch.float32, device=dev)
            try:
                torch.mm(ta, tb, out_dtype=torch.float32, out=out32)
                out = out32
            except (TypeError, RuntimeError, NotImplementedError):
                pass
        if out.dtype == tdtype:

            def call():
                torch.mm(ta, tb, out=out)
        else:

            def call():
                torch.mm(ta, tb, out_dtype=torch.float32, out=out)

        names = {torch.float64: "f64", torch.float32: "f32"}
        kernel = {
            "operands": names.get(tdtype, "bf16"),
            "output": names.get(out.dtype, "bf16"),
        }
    else:
        tx = torch.from_numpy(x[None]).to(dev, tdtype)
        tw = torch.from_numpy(w).to(dev, tdtype)
        tbias = torch.from_numpy(b).to(dev, tdtype)
        box = {}

        if shape["op"] == "forward":

            def call():
                box["y"] = torch.nn.functional.conv1d(
                    tx,
                    tw,
                    tbias,
                    stride=shape["stride"],
                    padding=shape["padding"],
                    dilation=shape["dilation"],
                )
        else:

            def call():
                box["y"] = torch.nn.functional.conv_transpose1d(
                    tx, tw, tbias, stride=shape["stride"], padding=shape["padding"]
                )

        out = None
    sync = torch.cuda.synchronize if device else (lambda: None)

    def output() -> np.ndarray:
        sync()
        y = out if out is not None else box["y"][0]
        return y.detach().to("cpu", torch.float64).numpy()

    return call, sync, output, kernel


def gate(arm: str, y: np.ndarray, ref: np.ndarray) -> dict:
    tol = ARMS[arm][2]
    err = float(np.linalg.norm(y - ref) / max(np.linalg.norm(ref), 1e-300))
    ok = bool(np.all(np.isfinite(y))) and y.shape == ref.shape and err <= tol
    return {
        "kind": "tolerance",
        "result": "pass" if ok else "fail",
        "mismatches": None,
        "max_abs_err": float(np.max(np.abs(y - ref))) if y.shape == ref.shape else None,
        "rel_l2_err": err,
        "tolerance": tol,
    }


def stats(seconds: list[float]) -> dict:
    x = np.asarray(seconds, dtype=np.float64)
    mean = float(x.mean())
    sd = float(x.std(ddof=1)) if len(x) > 1 else 0.0
    return {
        "best": float(x.min()),
        "median": float(np.median(x)),
        "min": float(x.min()),
        "max": float(x.max()),
        "mean": mean,
        "cv": sd / mean if mean > 0 else 0.0,
        "spread": float(x.max() / x.min()) if x.min() > 0 else 1.0,
        "n": int(len(x)),
    }


def timed(torch, call, device: bool, n: int = 1) -> float:
    """Seconds of n calls back to back: CUDA events around them on the GPU, the steady clock on
    the host."""
    if device:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(n):
            call()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e-3
    t0 = time.perf_counter_ns()
    for _ in range(n):
        call()
    return (time.perf_counter_ns() - t0) * 1e-9


def calls_per_sample(one: float, min_time: float) -> int:
    """Back-to-back calls that last at least min_time, one call taking `one` seconds (at most
    10000; 1 where one call is already that long)."""
    if min_time <= 0.0 or one >= min_time:
        return 1
    return min(10000, max(1, math.ceil(min_time / max(one, 1e-9) * (1.0 - 1e-9))))


def floors(gpu_name: str | None, flops: float, min_bytes: float, arm: str) -> dict | None:
    """The device's floors for these FLOPs and bytes; "arm" the one the arm faces (null, with
    arm_unavailable, where devices.json has no rate of the arm's pipe)."""
    if not gpu_name:
        return None
    for d in json.loads((DATA / "devices.json").read_text())["devices"]:
        if d["match"] in gpu_name:
            f = {
                "fp32_fma": flops / d["fp32_fma_flops"],
                "fp64_fma": flops / d["fp64_fma_flops"],
                "fp64_nofma": flops / d["fp64_nofma_flops"],
                "memory": min_bytes / d["memory_bytes_per_s"],
            }
            if arm in NO_FLOOR:
                f.update(arm=None, arm_kind=None, arm_unavailable=NO_FLOOR[arm])
            else:
                f["arm_kind"] = FLOOR_KIND[ARMS[arm][1]]
                f["arm"] = f[f["arm_kind"]]
            return f
    return None


def host_block() -> dict:
    def read(path: str) -> str | None:
        try:
            return Path(path).read_text().strip()
        except OSError:
            return None

    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "name": socket.gethostname(),
        "machine_id": read("/etc/machine-id"),
        "boot_id": read("/proc/sys/kernel/random/boot_id"),
        "cpu_model": model,
        "cores": os.cpu_count(),
        "governor": None,
        "unavailable": {"governor": "torch_peer.py does not read the governor"},
    }


def git_sha() -> str | None:
    try:
        return (
            subprocess.run(
                ["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.CalledProcessError):
        return None


# ---- the lease ---------------------------------------------------------------------------

LEASE_ENV = "CONVBENCH_LEASE"  # what `convlease run` exports to the command it runs
# The default build's, beside bench_conv: the lease's checks come from the same build as the
# engine's; h200.sh names its build's with --convlease.
DEFAULT_CONVLEASE = ROOT / "build" / "bin" / "convlease"
NO_LEASE = {
    "status": "not-collected",
    "reason": f"torch_peer.py inherited no lease ({LEASE_ENV} unset): run it under "
    "convlease run --",
}


def torch_gpu_uuid(torch) -> str | None:
    """The timed GPU's UUID as NVML spells it (GPU-...), as torch reports it; None without one."""
    u = getattr(torch.cuda.get_device_properties(0), "uuid", None)
    if not u:
        return None
    u = str(u)
    return u if u.startswith(("GPU-", "MIG-")) else f"GPU-{u}"


def lease_check(convlease: str, gpu_uuid: str | None) -> dict:
    """One check of the inherited lease with its authority (`convlease verify --json`, adopted
    as bench_conv adopts it): the lease as convlease describes it and `check` {ok, at_utc,
    detail}. A check that cannot be made, or whose answer cannot be read, is a failed one."""
    cmd = [convlease, "verify", "--json", *(["--gpu-uuid", gpu_uuid] if gpu_uuid else [])]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"check": {"ok": False, "at_utc": utc_now(), "detail": f"{cmd[0]} verify: {e}"}}
    try:
        out = json.loads(p.stdout)
        check = out["check"]
        readable = isinstance(check["ok"], bool) and isinstance(check["at_utc"], str)
    except (ValueError, KeyError, TypeError):
        readable = False
    if not readable:
        said = (p.stderr.strip().splitlines() or ["no output"])[-1]
        why = f"{cmd[0]} verify exited {p.returncode} without a readable check: {said}"
        return {"check": {"ok": False, "at_utc": utc_now(), "detail": why}}
    if check["ok"] != (p.returncode == 0):  # the answer and the exit status must agree
        check = dict(
            check,
            ok=False,
            detail=f"convlease verify exited {p.returncode} with check ok={check['ok']}: "
            + str(check.get("detail")),
        )
    return {**out, "check": check}


def lease_block(start: dict, end: dict, run_id: str) -> dict:
    """The record's lease block from the start and end checks, in bench_conv's shape for an
    adopted lease (no keeper and no probes here: no renewals, no observation). Valid only when
    both checks passed on one lease: the same backend, resource, holder and token."""
    reasons = [
        f"{which} check failed: {c['check'].get('detail')}"
        for which, c in (("start", start), ("end", end))
        if not c["check"]["ok"]
    ]
    if not reasons:
        for what, get in (
            ("backend", lambda c: c.get("backend")),
            ("resource", lambda c: (c.get("resource") or {}).get("name")),
            ("holder pid", lambda c: (c.get("holder") or {}).get("pid")),
            ("token", lambda c: c.get("token")),
        ):
            if get(start) != get(end):
                reasons.append(
                    f"the lease changed between the start and end checks: {what} "
                    f"{get(start)} then {get(end)}"
                )
    res, holder = start.get("resource") or {}, start.get("holder") or {}
    return {
        "status": "collected",
        "backend": start.get("backend"),
        "resource": {k: res.get(k) for k in ("host", "machine_id", "gpu_uuid", "name")},
        "holder": {k: holder.get(k) for k in ("user", "host", "pid", "run_id")},
        "adopted": start.get("adopted"),
        "token": start.get("token"),
        "fencing": start.get("fencing"),
        "ttl_s": start.get("ttl_s"),
        "acquired_utc": holder.get("acquired_utc") or None,
        "verify_utc": [start["check"]["at_utc"], end["check"]["at_utc"]],
        "start_check": start["check"],
        "end_check": end["check"],
        "observation": None,
        "policy": start.get("policy"),
        "adopter": {"pid": os.getpid(), "run_id": run_id},
        "verdict": "void" if reasons else "valid",
        "reasons": reasons,
    }


def new_case(
    torch, args, arm: str, shape: dict, frames: int, gpu_name, gate_result, kernel: dict
) -> dict:
    device, dtype, _ = ARMS[arm]
    elem = {"f64": 8, "bf16": 2}.get(dtype, 4)
    cells = shape["cout"] * shape["l_out"]
    min_bytes = float(
        elem
        * (
            shape["cin"] * shape["l_in"]
            + shape["cin"] * shape["cout"] * shape["k"]
            + shape["cout"]
            + cells
        )
    )
    forward = shape["op"] == "forward"
    flops = 2.0 * shape["cin"] * shape["cout"] * shape["k"] * shape["l_out" if forward else "l_in"]
    staging = "resident" if device else "host"
    gemm = "gemm" in arm
    return {
        "id": f"{shape['stage']}/{frames}/{arm}/{staging}",
        "stage": shape["stage"],
        "frames": frames,
        "arm": arm,
        "staging": staging,
        "device": device,
        "shape": shape,
        "flops": flops,
        "min_bytes": min_bytes,
        "floor_s": floors(gpu_name, flops, min_bytes, arm) if device else None,
        "gate": gate_result,
        "samples": [],
        "stats": None,
        "kernel": {
            "name": (
                (
                    "cuBLAS implicit GEMM (im2col staged, no bias)"
                    if forward
                    else "cuBLAS polyphase GEMM (no scatter, no bias)"
                )
                if gemm
                else ("torch conv1d" if forward else "torch conv_transpose1d")
            ),
            "torch": torch.__version__,
            "cudnn_benchmark": args.cudnn_benchmark if device else None,
            **kernel,
        },
        "counters": {"status": "not-collected", "reason": "torch_peer.py runs no counter pass"},
    }


def gate_cases(torch, args, gpu_name) -> tuple[list[dict], dict]:
    """Every case, gated against the f64 reference; the passing ones warmed up, ready to time."""
    rng = np.random.default_rng(args.seed)
    cases, prepared = [], {}
    for frames, shape in args.shapes:
        x = rng.uniform(-1, 1, (shape["cin"], shape["l_in"])).astype(np.float32)
        # torch's weight layouts: Conv1d [cout, cin, k], ConvTranspose1d [cin, cout, k]
        pair = (shape["cout"], shape["cin"])
        rows = pair if shape["op"] == "forward" else pair[::-1]
        w = rng.uniform(-1, 1, (*rows, shape["k"])).astype(np.float32)
        b = rng.uniform(-1, 1, shape["cout"]).astype(np.float32)
        if not shape.get("bias", True):
            b[:] = 0.0  # a stage without bias (BigVGAN v2's post): the same arithmetic
        refs = {}
        for arm in args.arms:
            kind = "gemm" if "gemm" in arm else "conv"
            if kind not in refs:
                refs[kind] = reference(arm, shape, x, w, b)
            call, sync, output, kernel = make_call(torch, arm, shape, x, w, b)
            call()
            g = gate(arm, output(), refs[kind])
            case = new_case(torch, args, arm, shape, frames, gpu_name, g, kernel)
            cases.append(case)
            g = case["gate"]
            if g["result"] != "pass":
                print(
                    f"torch_peer: {case['id']} failed its gate: relative L2 "
                    f"{g['rel_l2_err']:.3g} > {g['tolerance']:g}; not timed",
                    file=sys.stderr,
                )
                continue
            for _ in range(args.warmup):
                call()
            sync()
            prepared[case["id"]] = (arm, call, case)
    return cases, prepared


def time_rounds(torch, args, prepared: dict) -> list[dict]:
    """--reps interleaved rounds, each a seeded shuffle of the cases: one sample per case, of
    as many back-to-back calls as last --min-time (one call timed once per case to say how many:
    a single launch of a 30 us GEMM timed with events spread by up to 2x between rounds)."""
    calls = {}
    for cid in sorted(prepared):
        arm, call, case = prepared[cid]
        math_mode(torch, arm)
        calls[cid] = calls_per_sample(timed(torch, call, case["device"]), args.min_time)
    order = []
    for r in range(args.reps):
        seed = args.seed * 1000003 + r
        ids = sorted(prepared)
        random.Random(seed).shuffle(ids)
        order.append({"round": r, "seed": seed, "cases": ids})
        for pos, cid in enumerate(ids):
            arm, call, case = prepared[cid]
            math_mode(torch, arm)  # outside the timed span
            n = calls[cid]
            total = timed(torch, call, case["device"], n)
            case["samples"].append(
                {
                    "round": r,
                    "position": pos,
                    "seconds": total / n,
                    "iterations": n,
                    "total_seconds": total,
                }
            )
    return order


def gpus_block(torch, gpu_name, gpu_uuid) -> list[dict]:
    if not gpu_name:
        return []
    props = torch.cuda.get_device_properties(0)
    return [
        {
            "index": 0,
            "name": gpu_name,
            "uuid": gpu_uuid,
            "pci_bus_id": None,
            "driver": None,
            "cuda_runtime": torch.version.cuda,
            "sm_count": getattr(props, "multi_processor_count", None),
            "sm_clock_max_mhz": None,
            "mem_clock_max_mhz": None,
            "l2_bytes": None,
            "unavailable": {} if gpu_uuid else {"uuid": "torch reports no UUID for it"},
        }
    ]


def run(torch, args, argv: list[str]) -> tuple[dict, int]:
    started, run_id = utc_now(), uuid.uuid4().hex
    device = any(ARMS[a][0] for a in args.arms)
    gpu_name = torch.cuda.get_device_name(0) if device else None
    gpu_uuid = torch_gpu_uuid(torch) if device else None
    start = None
    if args.inherited:  # checked before the first call on the device, gates and warm-up included
        if device and not gpu_uuid:
            raise LeaseRefused(
                "torch reports no UUID for its GPU 0 (get_device_properties(0).uuid): the "
                "inherited lease cannot be matched to the GPU timed"
            )
        start = lease_check(args.convlease, gpu_uuid)
        if not start["check"]["ok"]:
            raise LeaseRefused(start["check"]["detail"])
    cases, prepared = gate_cases(torch, args, gpu_name)
    order = time_rounds(torch, args, prepared)
    lease = lease_block(start, lease_check(args.convlease, gpu_uuid), run_id) if start else NO_LEASE
    for case in cases:
        if case["samples"]:
            case["stats"] = stats([s["seconds"] for s in case["samples"]])
    failed = any(c["gate"]["result"] == "fail" for c in cases)
    status = 4 if failed else 3 if lease.get("verdict") == "void" else 0
    record = {
        "schema_version": 1,
        "run_id": run_id,
        "tool": {
            "name": "convbench",
            "version": None,
            "git_sha": git_sha(),
            "program": "scripts/torch_peer.py",
            "torch_version": torch.__version__,
            "python": platform.python_version(),
            "cuda_version": torch.version.cuda,
            "cudnn_version": torch.backends.cudnn.version() if gpu_name else None,
        },
        "argv": ["scripts/torch_peer.py", *argv],
        "started_utc": started,
        "ended_utc": utc_now(),
        "exit_status": status,
        "host": host_block(),
        "gpus": gpus_block(torch, gpu_name, gpu_uuid),
        "plan": {
            "model": args.model_name,
            "stages": args.stages,
            "frames": args.frames,
            "arms": args.arms,
            "staging": sorted({c["staging"] for c in cases}),
            "reps": args.reps,
            "min_time_s": args.min_time,
            "seed": args.seed,
            "threads": args.threads,
            "order": order,
            "device_timing": "launched",
        },
        "lease": lease,
        "cases": cases,
        "benchmarks": [],
        "context": {},
    }
    if args.beside_run:
        record["context"]["beside"] = {
            "run_id": args.beside_run["run_id"],
            "file": Path(args.beside).name,
            "started_utc": args.beside_run.get("started_utc"),
        }
    return record, status


def write_atomic(path: str, record: dict) -> None:
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(record, f, indent=1, allow_nan=False)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    try:
        args = parse_args(argv)
    except UsageError as e:
        print(f"torch_peer: {e}", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError as e:
        print(
            f"torch_peer: PyTorch is not importable here ({e}); run this where torch is",
            file=sys.stderr,
        )
        return 2
    if any(ARMS[a][0] for a in args.arms) and not torch.cuda.is_available():
        print(
            "torch_peer: --gpu or --gemm given but torch.cuda.is_available() is False",
            file=sys.stderr,
        )
        return 2
    torch.set_num_threads(args.threads)
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    try:
        with torch.inference_mode():
            record, status = run(torch, args, argv)
    except LeaseRefused as e:
        print(f"torch_peer: lease refused: {e}", file=sys.stderr)
        return 3
    write_atomic(args.out, record)
    for c in record["cases"]:
        st = c["stats"]
        print(
            f"{c['id']:<40} "
            + (
                f"median {st['median'] * 1e6:10.1f} us  best {st['best'] * 1e6:10.1f} us"
                if st
                else "gate failed"
            )
        )
    print(f"wrote {args.out}")
    if record["lease"].get("verdict") == "void":
        print(
            "torch_peer: the lease is void (exit 3): " + "; ".join(record["lease"]["reasons"]),
            file=sys.stderr,
        )
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
