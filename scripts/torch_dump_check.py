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
Checks: every output is stored as f32. The reference (cpu-f64) and every other f64 arm (the
bitwise ones, and tolerance arms named -f64: cudnn-f64, cuda-f64-dmma) against torch's f64 result
rounded to f32: every cell within one f32 ulp for a single stage (an f64 sum in another order
moves a rounding at most that far, and rarely), relative L2 within 1e-6 for a sequence (a one-ulp
difference handed on moves later cells further); a bitwise arm's output identical to the
reference; an f32 or tf32 arm within its own gate's bound of torch's f64 result; every final state
bit-identical to torch's. A layer without a bias ("bias": false, or no bias file, or an empty one)
is recomputed without one.

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


def load_bias(np, d, name, declared=True):
    """A stage's bias, or None where it has none: the shape says "bias": false, no file is named,
    the named file is absent, or it holds no values (a 0-byte file or a 0-length array)."""
    if not declared or not name:
        return None
    p = d / name
    if not p.is_file() or p.stat().st_size == 0:
        return None
    b = np.load(p)
    return b if b.size else None


def recompute_conv(np, ops, d, meta):
    shape = meta["shape"]
    stages = shape.get("stages", [shape])
    files = meta.get("stage_files") or [{"weight": "weight.npy", "bias": "bias.npy"}]
    y = np.load(d / "input.npy")
    y64 = None
    for s, f in zip(stages, files, strict=True):
        w = np.load(d / f["weight"])
        b = load_bias(np, d, f.get("bias"), s.get("bias", True))
        y64 = ops.conv(y, w, b, s)
        y = y64.astype(np.float32)  # handed on as f32
    return y64, None


def recompute_causal(np, meta, ops, d):
    s = meta["shape"]
    x = np.load(d / "input.npy")
    w = np.load(d / "weight.npy")
    b = load_bias(np, d, meta.get("files", {}).get("bias", "bias.npy"), s.get("bias", True))
    k, batch, c = s["k"], s["batch"], s["channels"]
    state = np.zeros((batch, c, k - 1), dtype=np.float32)
    if s["initial_state"]:
        given = np.load(d / "initial_state.npy")
        for i, has in enumerate(meta["has_initial_state"]):
            if has:
                state[i] = given[i]
    xpad = np.concatenate([state, x], axis=2)
    return ops.causal(xpad, w, b, s["activation"] == "silu"), xpad[:, :, xpad.shape[2] - (k - 1) :]


def computes_in_f64(case, gate):
    """The reference and the arms bitwise to it compute in f64, and so does a tolerance arm whose
    name (before the staging) has an "f64" part: cudnn-f64, cuda-f64-dmma; not cpu-f32,
    cudnn-tf32."""
    return gate in ("reference", "bitwise") or "f64" in case.split("/")[0].split("-")


def compare_case(np, ck, tag, y64, ref, outputs, *, sequence, backend, final=None, ref_final=None):
    """Hold the dumped reference and outputs (f32 arrays) to the f64 recomputation y64 (and, for
    the causal op, the reference's and each output's final state to `final`, bit for bit); record
    every check in ck, return the report lines.

    outputs: dicts with the problem.json entry's "case", "gate" and "tolerance", the dumped
    output as "y" and, for the causal op, the dumped final state as "final_state".

    Every output is stored as f32, an f64 arm's too, so an f64 arm is held to y64 rounded to f32,
    not to y64: against y64 itself even an exact f64 result shows the f32 storage rounding, a
    relative L2 of 2^-23/sqrt(12) to 2^-24/sqrt(12) (about 1.7e-8 to 3.4e-8, as the cells'
    mantissas fall), above an f64 gate's own bound (1e-9). Rounded, an f64 result that differs
    from the recomputation only by the order of its f64 sums (some 1e-16 of the cell) lands on the
    same f32 value, or on the neighbouring one where a rounding boundary falls between the two:
    one f32 ulp at most, per cell. (A cell that cancels down to 1e-8 of its terms could move
    further; the dump's random data does not cancel that far.) In a sequence each stage's output
    is handed on rounded to f32, so a one-ulp difference early moves later cells by more than an
    ulp: there the bound is SEQUENCE_REL_L2 on the relative L2 to the rounded result (every cell
    one ulp off would be 2^-23, 1.2e-7, at most; the bound leaves room for such ulps grown through
    the later stages). f32 and tf32 arms are held to y64 itself within their own gate's tolerance:
    their error, 1e-7 and up, is their arithmetic's, far above the storage's.
    """
    if not ck.check(ref.shape == y64.shape, f"{tag}: reference shape {ref.shape} != {y64.shape}"):
        return [f"{tag}: reference shape {ref.shape}, {backend} {y64.shape}"]
    rounded = y64.astype(np.float32)
    rounded64 = rounded.astype(np.float64)

    def near_rounded(y, what):
        ulps = ulps_apart(np, y, rounded)
        err = rel_l2(np, y, rounded64)
        if sequence:
            ok = ck.check(err <= SEQUENCE_REL_L2, f"{tag}: {what} vs {backend}: rel L2 {err:.3g}")
        else:
            worst = int(ulps.max()) if ulps.size else 0
            ok = ck.check(worst <= 1, f"{tag}: {what} vs {backend}: a cell {worst} ulp apart")
        return ok, ulps, err

    _, ulps, err = near_rounded(ref, "reference")
    lines = [
        f"{tag}: reference vs {backend} f64 rounded to f32: {int((ulps > 0).sum())} of "
        f"{ulps.size} cells one ulp apart or more (max {int(ulps.max()) if ulps.size else 0}), "
        f"rel L2 {err:.3g}"
    ]
    if final is not None:
        ck.check(
            ref_final is not None
            and ref_final.shape == final.shape
            and np.array_equal(ref_final.view(np.uint32), final.view(np.uint32)),
            f"{tag}: reference final state differs from the padded input's last columns",
        )
    for o in outputs:
        args = (y64, ref, rounded64, near_rounded, final, backend)
        lines.append(check_output(np, ck, tag, o, *args))
    return lines


def check_output(np, ck, tag, o, y64, ref, rounded64, near_rounded, final, backend):
    """One dumped output against the recomputation (compare_case's rules); its report line."""
    name, gate, out = o["case"], o["gate"], o["y"]
    if not ck.check(out.shape == y64.shape, f"{tag}: {name}: shape {out.shape} != {y64.shape}"):
        return f"  {name:<32} {gate:<9} shape {out.shape}  FAIL"
    ok = True
    if gate in ("reference", "bitwise"):
        ok = ck.check(
            np.array_equal(out.view(np.uint32), ref.view(np.uint32)),
            f"{tag}: {name} ({gate}) is not bit-identical to the reference",
        )
    if computes_in_f64(name, gate):
        ok = near_rounded(out, name)[0] and ok
        e, against = rel_l2(np, out, rounded64), "f64 rounded to f32"
    else:
        e, against = rel_l2(np, out, y64), "f64"
        ok = ck.check(
            e <= o["tolerance"],
            f"{tag}: {name}: rel L2 {e:.3g} vs {backend} > {o['tolerance']:.3g}",
        )
    if final is not None:
        fs = o["final_state"]
        ok = (
            ck.check(
                fs.shape == final.shape
                and np.array_equal(fs.view(np.uint32), final.view(np.uint32)),
                f"{tag}: {name}: final state differs",
            )
            and ok
        )
    return f"  {name:<32} {gate:<9} rel L2 vs {backend} {against} {e:.3g}{'' if ok else '  FAIL'}"


def check_case(np, ops, d, ck):
    meta = json.loads((d / "problem.json").read_text())
    causal = meta["shape"].get("op") == "causal_depthwise"
    y64, final = recompute_causal(np, meta, ops, d) if causal else recompute_conv(np, ops, d, meta)
    ref = np.load(d / "reference.npy")
    outputs = []
    for o in meta.get("outputs", []):
        got = dict(o, y=np.load(d / o["output"]))
        if causal:
            got["final_state"] = np.load(d / o["final_state"])
        outputs.append(got)
    lines = compare_case(
        np,
        ck,
        d.name,
        y64,
        ref,
        outputs,
        sequence="stages" in meta["shape"],
        backend=ops.name,
        final=final,
        ref_final=np.load(d / "reference_final_state.npy") if causal else None,
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
