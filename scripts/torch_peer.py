#!/usr/bin/env python3
"""Time PyTorch's own ConvTranspose1d on the GPU machine: the peer that convbench's arms face.

CPU: F.conv_transpose1d in f32 (and optionally f64) at --threads threads (torch.set_num_threads).
GPU (--gpu): the same op through cuDNN in f32 (TF32 off), tf32 (TF32 on) and f64, timed with CUDA
events around each call. Every time is the median (and min) over --reps calls after --warmup
untimed calls, in microseconds. Prints a table and writes JSON to --out.

    python3 scripts/torch_peer.py --out results/torch_peer.json            # CPU, up0..up3
    python3 scripts/torch_peer.py --gpu --frames 96,384 --out peer.json    # CPU + cuDNN
    python3 scripts/torch_peer.py --gemm --no-cpu --stages all --frames 96,384,1536 --out g.json

--gemm times cuBLAS on each stage's polyphase GEMM, [s*cout, cin*K/s] x [cin*K/s, l_in] (the
stage's multiply-adds, as one matrix product: FLOPs = 2 cin cout K l_in), in f32 with TF32 off
(SGEMM: FFMA, the arithmetic cuda-f32 must use) and in f64 (DGEMM): what the vendor's own SIMT
GEMM reaches on these sizes, a measured ceiling for the floor targets of issue 7.

This is a side measurement for issue 7 (cpu-f32 vs PyTorch CPU; cuDNN through PyTorch), not a
convbench result record: no lease, no probes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime

# (channels, strides, kernels) per model, from the NVIDIA BigVGAN configs (facts.md).
MODELS = {
    "bigvgan_v2_44khz_128band_512x": (1536, (8, 4, 2, 2, 2, 2), (16, 8, 4, 4, 4, 4)),
    "bigvgan_v2_44khz_128band_256x": (1536, (4, 4, 2, 2, 2, 2), (8, 8, 4, 4, 4, 4)),
    "bigvgan_base_22khz_80band": (512, (8, 8, 2, 2), (16, 16, 4, 4)),
}
DEFAULT_MODEL = "bigvgan_v2_44khz_128band_512x"


def stage_shapes(model: str, frames: int) -> list[dict]:
    """ConvTranspose1d(C/2^i -> C/2^(i+1), K, stride s, padding (K-s)/2) per upsample stage."""
    channels, strides, kernels = MODELS[model]
    shapes, l_in = [], frames
    for i, (s, k) in enumerate(zip(strides, kernels, strict=True)):
        shapes.append(
            {
                "stage": f"up{i}",
                "cin": channels >> i,
                "cout": channels >> (i + 1),
                "k": k,
                "stride": s,
                "padding": (k - s) // 2,
                "l_in": l_in,
                "l_out": (l_in - 1) * s - 2 * ((k - s) // 2) + k,
                "flops": 2.0 * (channels >> i) * (channels >> (i + 1)) * k * l_in,
            }
        )
        l_in *= s
    return shapes


def fail(msg: str) -> None:
    print(f"torch_peer: {msg}", file=sys.stderr)
    sys.exit(2)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument("--model", default=DEFAULT_MODEL, choices=sorted(MODELS))
    p.add_argument("--frames", default="96", help="comma-separated, e.g. 96,384,1536")
    p.add_argument("--stages", default="up0,up1,up2,up3", help="comma-separated or 'all'")
    p.add_argument("--threads", type=int, default=16, help="CPU threads (torch.set_num_threads)")
    p.add_argument("--reps", type=int, default=20, help="timed calls per case")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls per case")
    p.add_argument("--cpu-f64", action="store_true", help="also time the CPU op in f64")
    p.add_argument("--no-cpu", action="store_true", help="skip the CPU cases")
    p.add_argument("--gpu", action="store_true", help="also time cuDNN (f32, tf32, f64)")
    p.add_argument("--gemm", action="store_true", help="also time cuBLAS on the polyphase GEMM")
    p.add_argument("--cudnn-benchmark", action="store_true", help="torch.backends.cudnn.benchmark")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    try:
        args.frames = [int(f) for f in args.frames.split(",") if f]
    except ValueError:
        fail(f"--frames must be comma-separated integers, got '{args.frames}'")
    if not args.frames or min(args.frames) < 1:
        fail("--frames needs at least one value >= 1")
    n_stages = len(MODELS[args.model][1])
    known = [f"up{i}" for i in range(n_stages)]
    args.stages = known if args.stages == "all" else [s for s in args.stages.split(",") if s]
    for s in args.stages:
        if s not in known:
            fail(f"stage '{s}' not in {args.model} (has {', '.join(known)})")
    if args.threads < 1 or args.reps < 1 or args.warmup < 0:
        fail("--threads and --reps must be >= 1, --warmup >= 0")
    if args.no_cpu and not (args.gpu or args.gemm):
        fail("--no-cpu without --gpu or --gemm leaves nothing to time")
    return args


def summarise(samples_us: list[float]) -> dict:
    return {
        "median_us": statistics.median(samples_us),
        "min_us": min(samples_us),
        "max_us": max(samples_us),
        "samples_us": samples_us,
    }


def time_cpu(torch, F, shape: dict, dtype, args) -> list[float]:
    gen = torch.Generator().manual_seed(args.seed)
    x = torch.randn(1, shape["cin"], shape["l_in"], generator=gen, dtype=dtype)
    w = torch.randn(shape["cin"], shape["cout"], shape["k"], generator=gen, dtype=dtype)
    b = torch.randn(shape["cout"], generator=gen, dtype=dtype)

    def call():
        return F.conv_transpose1d(x, w, b, stride=shape["stride"], padding=shape["padding"])

    for _ in range(args.warmup):
        call()
    samples = []
    for _ in range(args.reps):
        t0 = time.perf_counter_ns()
        call()
        samples.append((time.perf_counter_ns() - t0) / 1e3)
    return samples


def time_gpu(torch, F, shape: dict, mode: str, args) -> list[float]:
    dtype = torch.float64 if mode == "f64" else torch.float32
    # TF32 decides whether cuDNN may use tensor-op math for f32 convolutions.
    torch.backends.cudnn.allow_tf32 = mode == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    gen = torch.Generator().manual_seed(args.seed)
    x = torch.randn(1, shape["cin"], shape["l_in"], generator=gen, dtype=dtype).cuda()
    w = torch.randn(shape["cin"], shape["cout"], shape["k"], generator=gen, dtype=dtype).cuda()
    b = torch.randn(shape["cout"], generator=gen, dtype=dtype).cuda()

    def call():
        return F.conv_transpose1d(x, w, b, stride=shape["stride"], padding=shape["padding"])

    return time_events(torch, call, args)  # its first warm-up call runs cuDNN's algorithm choice


def time_events(torch, call, args) -> list[float]:
    """`call` on the GPU timed with CUDA events, --reps times after max(--warmup, 1) untimed."""
    for _ in range(max(args.warmup, 1)):
        call()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(args.reps):
        start.record()
        call()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3)  # ms -> us
    return samples


def time_gemm(torch, shape: dict, mode: str, args) -> list[float]:
    """cuBLAS on the stage's polyphase GEMM (same multiply-adds; no scatter, no bias)."""
    dtype = torch.float64 if mode == "f64" else torch.float32
    torch.backends.cuda.matmul.allow_tf32 = False  # SGEMM: FFMA on IEEE f32, as cuda-f32
    taps = shape["k"] // shape["stride"]
    rows, inner = shape["stride"] * shape["cout"], shape["cin"] * taps
    gen = torch.Generator().manual_seed(args.seed)
    a = torch.randn(rows, inner, generator=gen, dtype=dtype).cuda()
    b = torch.randn(inner, shape["l_in"], generator=gen, dtype=dtype).cuda()
    c = torch.empty(rows, shape["l_in"], dtype=dtype, device="cuda")
    return time_events(torch, lambda: torch.mm(a, b, out=c), args)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        fail(f"PyTorch is not importable here ({e}); run this on the GPU machine")
    if (args.gpu or args.gemm) and not torch.cuda.is_available():
        fail("--gpu or --gemm given but torch.cuda.is_available() is False")
    torch.set_num_threads(args.threads)
    torch.backends.cudnn.benchmark = args.cudnn_benchmark

    record = {
        "tool": "scripts/torch_peer.py",
        "utc_start": datetime.now(UTC).isoformat(),
        "host": platform.node(),
        "python": platform.python_version(),
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "cudnn_version": torch.backends.cudnn.version() if args.gpu else None,
        "device_name": torch.cuda.get_device_name(0) if args.gpu or args.gemm else None,
        "cpu_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "cudnn_benchmark": args.cudnn_benchmark,
        "model": args.model,
        "reps": args.reps,
        "warmup": args.warmup,
        "seed": args.seed,
        "cases": [],
    }
    header = (
        f"{'frames':>6} {'stage':<5} {'provider':<12} {'dtype':<5} {'median_us':>11} "
        f"{'min_us':>11} {'TFLOP/s':>8}"
    )
    print(f"{args.model}, torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    print(header)
    with torch.inference_mode():
        for frames in args.frames:
            for shape in stage_shapes(args.model, frames):
                if shape["stage"] not in args.stages:
                    continue
                runs = []
                if not args.no_cpu:
                    runs.append(
                        (
                            "torch-cpu",
                            "f32",
                            lambda s=shape: time_cpu(torch, F, s, torch.float32, args),
                        )
                    )
                    if args.cpu_f64:
                        runs.append(
                            (
                                "torch-cpu",
                                "f64",
                                lambda s=shape: time_cpu(torch, F, s, torch.float64, args),
                            )
                        )
                if args.gpu:
                    for mode in ("f32", "tf32", "f64"):
                        runs.append(
                            (
                                "torch-cudnn",
                                mode,
                                lambda s=shape, m=mode: time_gpu(torch, F, s, m, args),
                            )
                        )
                if args.gemm:
                    for mode in ("f32", "f64"):
                        runs.append(
                            (
                                "cublas-gemm",
                                mode,
                                lambda s=shape, m=mode: time_gemm(torch, s, m, args),
                            )
                        )
                for provider, dtype, run in runs:
                    summary = summarise(run())
                    tflops = shape["flops"] / (summary["median_us"] * 1e-6) / 1e12
                    record["cases"].append(
                        {
                            "frames": frames,
                            "provider": provider,
                            "dtype": dtype,
                            "threads": args.threads if provider == "torch-cpu" else None,
                            "shape": shape,
                            "tflops": tflops,
                            **summary,
                        }
                    )
                    print(
                        f"{frames:>6} {shape['stage']:<5} {provider:<12} {dtype:<5} "
                        f"{summary['median_us']:>11.1f} {summary['min_us']:>11.1f} {tflops:>8.3f}",
                        flush=True,
                    )
    record["utc_end"] = datetime.now(UTC).isoformat()
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(record, f, indent=2)
    os.replace(tmp, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
