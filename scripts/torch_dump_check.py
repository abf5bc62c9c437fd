#!/usr/bin/env python3
"""Recompute every case of a `bench_conv --dump DIR` with PyTorch in float64 and hold the dumped
reference and each arm's output to it.

Per case directory (DIR/<stage>-<frames>/problem.json):
  Conv1d / ConvTranspose1d stages: torch.nn.functional.conv1d / conv_transpose1d in f64 on the
  dumped f32 tensors; a sequence (chain, generator) stage by stage with each stage's output
  rounded to f32 before the next, as the arms hand it on.
  The causal depthwise conv1d: the grouped, left-padded form, F.conv1d(cat(state or zeros, x),
  w[:, None, :], bias, groups=C), then SiLU as v / (1 + exp(-v)); the final state is the last
  k - 1 columns of the padded input.
Checks: the reference (cpu-f64) against torch's f64 result rounded to f32: every cell within one
f32 ulp for a single stage (an f64 sum in another order moves a rounding at most that far, and
rarely), relative L2 within 1e-6 for a sequence (a one-ulp difference handed on moves later
cells further); a bitwise arm's output identical to the reference; a tolerance arm within its own
gate's bound of torch's f64 result; every final state bit-identical to torch's.

--backend numpy computes the same thing with numpy (for a machine without torch; CI runs it that
way, the H200 with torch). Exit 0 when every check passes, 1 otherwise, 2 on bad usage.
"""

import argparse
import json
import sys
from pathlib import Path

SEQUENCE_REL_L2 = 1e-6


class TorchOps:
    name = "torch"

    def __init__(self):
        import torch  # imported here so that --help works without torch

        self.torch = torch
        self.F = torch.nn.functional

    def t(self, a):
        return self.torch.from_numpy(a).to(self.torch.float64)

    def conv(self, x, w, b, s):
        kw = {"stride": s["stride"], "padding": s["padding"], "dilation": s["dilation"]}
        bias = None if b is None else self.t(b)
        if s["op"] == "transposed":
            y = self.F.conv_transpose1d(
                self.t(x), self.t(w), bias, output_padding=s["output_padding"], **kw
            )
        else:
            y = self.F.conv1d(self.t(x), self.t(w), bias, **kw)
        return y.numpy()

    def causal(self, xpad, w, b, silu):
        c = w.shape[0]
        bias = None if b is None else self.t(b)
        y = self.F.conv1d(self.t(xpad), self.t(w)[:, None, :], bias, groups=c)
        if silu:
            y = y / (1.0 + self.torch.exp(-y))
        return y.numpy()


class NumpyOps:
    name = "numpy"

    def __init__(self):
        import numpy as np

        self.np = np

    def conv(self, x, w, b, s):
        np = self.np
        x, w = x.astype(np.float64), w.astype(np.float64)
        st, pad, dil = s["stride"], s["padding"], s["dilation"]
        n, _, l_in = x.shape
        k = w.shape[2]
        if s["op"] == "transposed":
            cout = w.shape[1]
            full = (l_in - 1) * st + dil * (k - 1) + 1 + s["output_padding"]
            y = np.zeros((n, cout, full + pad))
            for kk in range(k):
                contrib = np.einsum("nil,io->nol", x, w[:, :, kk])
                y[:, :, kk * dil : kk * dil + (l_in - 1) * st + 1 : st] += contrib
            y = y[:, :, pad : pad + s["l_out"]]
        else:
            xp = np.pad(x, ((0, 0), (0, 0), (pad, pad)))
            l_out = s["l_out"]
            y = np.zeros((n, w.shape[0], l_out))
            for kk in range(k):
                cols = xp[:, :, kk * dil : kk * dil + (l_out - 1) * st + 1 : st]
                y += np.einsum("nil,oi->nol", cols, w[:, :, kk])
        if b is not None:
            y += b.astype(np.float64)[None, :, None]
        return y

    def causal(self, xpad, w, b, silu):
        np = self.np
        xpad, w = xpad.astype(np.float64), w.astype(np.float64)
        k = w.shape[1]
        length = xpad.shape[2] - (k - 1)
        y = np.zeros((xpad.shape[0], xpad.shape[1], length))
        for kk in range(k):
            y += w[None, :, kk, None] * xpad[:, :, kk : kk + length]
        if b is not None:
            y += b.astype(np.float64)[None, :, None]
        if silu:
            y = y / (1.0 + np.exp(-y))
        return y


class Checker:
    def __init__(self):
        self.checks = 0
        self.failures = []

    def check(self, ok, what):
        self.checks += 1
        if not ok:
            self.failures.append(what)
        return ok


def rel_l2(np, y, ref64):
    num = np.linalg.norm(y.astype(np.float64) - ref64)
    den = np.linalg.norm(ref64)
    return float(num / den) if den > 0 else float(num)


def ulps_apart(np, a, b):
    """Per cell, how many f32 values lie between a and b (0 = the same bits)."""

    def ordered(v):
        i = v.astype(np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)

    return np.abs(ordered(a) - ordered(b))


def recompute_conv(np, ops, d, meta):
    shape = meta["shape"]
    stages = shape.get("stages", [shape])
    files = meta.get("stage_files") or [{"weight": "weight.npy", "bias": "bias.npy"}]
    y = np.load(d / "input.npy")
    y64 = None
    for s, f in zip(stages, files, strict=True):
        w = np.load(d / f["weight"])
        b = np.load(d / f["bias"]) if f.get("bias") and s.get("bias", True) else None
        y64 = ops.conv(y, w, b, s)
        y = y64.astype(np.float32)  # handed on as f32
    return y64, None


def recompute_causal(np, meta, ops, d):
    s = meta["shape"]
    x = np.load(d / "input.npy")
    w = np.load(d / "weight.npy")
    b = np.load(d / "bias.npy") if s["bias"] else None
    k, batch, c = s["k"], s["batch"], s["channels"]
    state = np.zeros((batch, c, k - 1), dtype=np.float32)
    if s["initial_state"]:
        given = np.load(d / "initial_state.npy")
        for i, has in enumerate(meta["has_initial_state"]):
            if has:
                state[i] = given[i]
    xpad = np.concatenate([state, x], axis=2)
    return ops.causal(xpad, w, b, s["activation"] == "silu"), xpad[:, :, xpad.shape[2] - (k - 1) :]


def check_case(np, ops, d, ck):
    meta = json.loads((d / "problem.json").read_text())
    causal = meta["shape"].get("op") == "causal_depthwise"
    y64, final = recompute_causal(np, meta, ops, d) if causal else recompute_conv(np, ops, d, meta)
    ref = np.load(d / "reference.npy")
    tag = f"{d.name}"
    if not ck.check(ref.shape == y64.shape, f"{tag}: reference shape {ref.shape} != {y64.shape}"):
        return
    rounded = y64.astype(np.float32)
    ulps = ulps_apart(np, ref, rounded)
    err = rel_l2(np, ref, rounded.astype(np.float64))
    if "stages" in meta["shape"]:
        ck.check(err <= SEQUENCE_REL_L2, f"{tag}: reference vs {ops.name}: rel L2 {err:.3g}")
    else:
        ck.check(
            int(ulps.max()) <= 1,
            f"{tag}: reference vs {ops.name}: a cell {int(ulps.max())} ulp apart",
        )
    head = (
        f"{tag}: reference vs {ops.name} f64 rounded to f32: {int((ulps > 0).sum())} of "
        f"{ulps.size} cells one ulp apart or more (max {int(ulps.max())}), rel L2 {err:.3g}"
    )
    lines = [head]
    if causal:
        ref_fs = np.load(d / "reference_final_state.npy")
        ck.check(
            np.array_equal(ref_fs.view(np.uint32), final.view(np.uint32)),
            f"{tag}: reference final state differs from the padded input's last columns",
        )
    for o in meta.get("outputs", []):
        out = np.load(d / o["output"])
        e = rel_l2(np, out, y64)
        if o["gate"] in ("reference", "bitwise"):
            ok = np.array_equal(out.view(np.uint32), ref.view(np.uint32))
            ck.check(ok, f"{tag}: {o['case']} ({o['gate']}) is not bit-identical to the reference")
        else:
            ok = e <= o["tolerance"]
            ck.check(ok, f"{tag}: {o['case']}: rel L2 {e:.3g} vs {ops.name} > {o['tolerance']:.3g}")
        if causal:
            fs = np.load(d / o["final_state"])
            ck.check(
                np.array_equal(fs.view(np.uint32), final.view(np.uint32)),
                f"{tag}: {o['case']}: final state differs",
            )
        lines.append(
            f"  {o['case']:<32} {o['gate']:<9} rel L2 vs {ops.name} {e:.3g}{'' if ok else '  FAIL'}"
        )
    print("\n".join(lines))


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    ap.add_argument("dump_dir", help="the directory given to bench_conv --dump")
    ap.add_argument(
        "--backend",
        choices=("torch", "numpy"),
        default="torch",
        help="what recomputes the cases in f64 (default: torch)",
    )
    a = ap.parse_args(argv)
    root = Path(a.dump_dir)
    cases = sorted(p.parent for p in root.glob("*/problem.json"))
    if not cases:
        print(f"torch_dump_check: no */problem.json under {root}", file=sys.stderr)
        return 2
    try:
        import numpy as np

        ops = TorchOps() if a.backend == "torch" else NumpyOps()
    except ImportError as e:
        print(f"torch_dump_check: {e} (install it, or use --backend numpy)", file=sys.stderr)
        return 2
    ck = Checker()
    for d in cases:
        try:
            check_case(np, ops, d, ck)
        except (OSError, KeyError, ValueError) as e:
            ck.check(False, f"{d.name}: cannot read the dump: {e}")
    for f in ck.failures:
        print("FAIL: " + f)
    print(
        f"torch_dump_check ({ops.name}): {len(cases)} cases, {ck.checks} checks, "
        f"{len(ck.failures)} failed"
    )
    return 1 if ck.failures or ck.checks == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
