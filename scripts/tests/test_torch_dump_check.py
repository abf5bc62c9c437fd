"""torch_dump_check.py's tolerances, on synthetic dumps whose f64 results come from a numpy conv
written here (loops over output columns, not the script's einsum), without PyTorch.

Every dumped output is f32, an f64 arm's too: the f64 arms (the reference, the bitwise arms,
cudnn-f64 and cuda-f64-dmma) are held to the f64 result rounded to f32, one ulp per cell for a
single stage; the f32 and tf32 arms to the unrounded f64 result within their own tolerance. A
layer without a bias has no bias file, or an empty one. The last test runs the same dump through
PyTorch where it is installed and is skipped otherwise.
Planted: f64 arms held to the unrounded result (computes_in_f64 not called) failed
test_f64_arms_stored_as_f32_pass and the dump tests; a bias file loaded whatever it holds failed
the no-bias dumps; the per-cell bound widened to 20 ulps failed the one-cell and two-ulp tests.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "torch_dump_check", ROOT / "scripts" / "torch_dump_check.py"
)
tdc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tdc)

F32, F64 = np.float32, np.float64


def conv1d64(x, w, b, stride, pad, dil):
    """Conv1d in f64, one output column at a time."""
    x64, w64 = x.astype(F64), w.astype(F64)
    n, _, length = x.shape
    cout, _, k = w.shape
    l_out = (length + 2 * pad - dil * (k - 1) - 1) // stride + 1
    y = np.zeros((n, cout, l_out))
    for t in range(l_out):
        for kk in range(k):
            src = t * stride - pad + kk * dil
            if 0 <= src < length:
                y[:, :, t] += x64[:, :, src] @ w64[:, :, kk].T
    if b is not None:
        y += b.astype(F64)[None, :, None]
    return y


def conv1d32(x, w, b, stride, pad, dil):
    """The same in f32 (an f32 arm's result)."""
    n, _, length = x.shape
    cout, _, k = w.shape
    l_out = (length + 2 * pad - dil * (k - 1) - 1) // stride + 1
    y = np.zeros((n, cout, l_out), dtype=F32)
    for t in range(l_out):
        for kk in range(k):
            src = t * stride - pad + kk * dil
            if 0 <= src < length:
                y[:, :, t] += x[:, :, src] @ w[:, :, kk].T
    if b is not None:
        y += b[None, :, None]
    return y


def causal64(xpad, w, b, silu):
    k = w.shape[1]
    length = xpad.shape[2] - (k - 1)
    y = np.zeros(xpad.shape[:2] + (length,))
    for t in range(length):
        y[:, :, t] = (xpad[:, :, t : t + k].astype(F64) * w.astype(F64)[None]).sum(axis=2)
    if b is not None:
        y += b.astype(F64)[None, :, None]
    return y / (1.0 + np.exp(-y)) if silu else y


def shift_ulps(a, cell, n):
    """a copy of a with one cell moved n f32 values up."""
    a = a.copy()
    a.view(np.int32).flat[cell] += n
    return a


@pytest.fixture
def problem():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 6, 64)).astype(F32)
    w = (rng.standard_normal((5, 6, 5)) / 5).astype(F32)
    b = rng.standard_normal(5).astype(F32)
    y64 = conv1d64(x, w, b, 1, 4, 2)
    return {"x": x, "w": w, "b": b, "y64": y64, "ref": y64.astype(F32)}


def run_compare(y64, ref, outputs, sequence=False):
    ck = tdc.Checker()
    lines = tdc.compare_case(np, ck, "t", y64, ref, outputs, sequence=sequence, backend="numpy")
    return ck, lines


def arm(case, gate, y, tol=0.0):
    return {"case": case, "gate": gate, "tolerance": tol, "y": y}


def test_f64_arms_stored_as_f32_pass(problem):
    y64, ref = problem["y64"], problem["ref"]
    # The data shows the storage rounding that an f64 gate's bound cannot take unrounded.
    assert tdc.rel_l2(np, ref, y64) > 1e-8
    x, w, b = problem["x"], problem["w"], problem["b"]
    outputs = [
        arm("cpu-f64/host", "reference", ref.copy()),
        arm("cuda-f64/resident", "bitwise", ref.copy()),
        arm("cudnn-f64/resident", "tolerance", ref.copy(), 1e-9),
        arm("cuda-f64-dmma/resident", "tolerance", shift_ulps(ref, 17, 1), 1e-9),
        arm("cpu-f32/host", "tolerance", conv1d32(x, w, b, 1, 4, 2), 1e-4),
    ]
    ck, lines = run_compare(y64, ref, outputs)
    assert ck.failures == []
    # the reference's shape and ulps; per arm its shape, then bitwise and ulps (reference,
    # bitwise), ulps (f64 tolerance) or relative L2 (f32)
    assert ck.checks == 2 + 3 + 3 + 2 + 2 + 2
    assert len(lines) == 1 + len(outputs)
    assert "cudnn-f64/resident" in lines[3] and "f64 rounded to f32 0" in lines[3]


def test_one_cell_off_in_a_bitwise_arm_fails(problem):
    y64, ref = problem["y64"], problem["ref"]
    bad = ref.copy()
    bad.flat[40] *= F32(1 + 1e-6)
    ck, _ = run_compare(y64, ref, [arm("cuda-f64/resident", "bitwise", bad)])
    assert "t: cuda-f64/resident (bitwise) is not bit-identical to the reference" in ck.failures
    assert any("cuda-f64/resident vs numpy: a cell" in f for f in ck.failures)


def test_f64_tolerance_arm_is_held_to_one_ulp(problem):
    y64, ref = problem["y64"], problem["ref"]
    bad = ref.copy()
    bad.flat[40] *= F32(1 + 1e-6)  # 8 to 17 ulps, a relative L2 of some 1e-7 over the tensor
    ck, _ = run_compare(y64, ref, [arm("cudnn-f64/resident", "tolerance", bad, 1e-9)])
    assert len(ck.failures) == 1 and "cudnn-f64/resident vs numpy: a cell" in ck.failures[0]
    ck, _ = run_compare(
        y64, ref, [arm("cudnn-f64/resident", "tolerance", shift_ulps(ref, 3, 2), 1e-9)]
    )
    assert ck.failures == ["t: cudnn-f64/resident vs numpy: a cell 2 ulp apart"]


def test_f32_arms_keep_their_tolerance(problem):
    y64, ref = problem["y64"], problem["ref"]
    x, w, b = problem["x"], problem["w"], problem["b"]
    y32 = conv1d32(x, w, b, 1, 4, 2)
    e = tdc.rel_l2(np, y32, y64)
    assert 0 < e < 1e-5
    ck, _ = run_compare(y64, ref, [arm("cpu-f32/host", "tolerance", y32, e * 1.01)])
    assert ck.failures == []
    # against the unrounded result: even the rounded exact result is over a 1e-9 bound
    ck, _ = run_compare(y64, ref, [arm("cudnn-tf32/resident", "tolerance", ref.copy(), 1e-9)])
    assert len(ck.failures) == 1 and "cudnn-tf32/resident: rel L2" in ck.failures[0]
    ck, _ = run_compare(y64, ref, [arm("cpu-f32/host", "tolerance", y32, e * 0.99)])
    assert len(ck.failures) == 1


def test_which_arms_compute_in_f64():
    f64 = [("cpu-f64/host", "reference"), ("cuda-f64-fma/per-call", "bitwise")]
    f64 += [("cudnn-f64/resident", "tolerance"), ("cuda-f64-dmma/resident", "tolerance")]
    for case, gate in f64:
        assert tdc.computes_in_f64(case, gate), case
    for case in ("cpu-f32/host", "cudnn-tf32/resident", "cuda-f32/per-call", "cudnn-f32/x-f64"):
        assert not tdc.computes_in_f64(case, "tolerance"), case


def test_reference_off_by_two_ulps_and_sequence_bound(problem):
    y64, ref = problem["y64"], problem["ref"]
    ck, _ = run_compare(y64, shift_ulps(ref, 9, 2), [])
    assert ck.failures == ["t: reference vs numpy: a cell 2 ulp apart"]
    # a sequence: the same two ulps are within the relative L2 bound, 1e-4 on every cell is not
    ck, _ = run_compare(y64, shift_ulps(ref, 9, 2), [], sequence=True)
    assert ck.failures == []
    ck, _ = run_compare(y64, (y64 * (1 + 1e-4)).astype(F32), [], sequence=True)
    assert len(ck.failures) == 1 and "reference vs numpy: rel L2" in ck.failures[0]


# --- whole dumps through main() ------------------------------------------------------------


def save(d, name, a):
    np.save(d / name, np.ascontiguousarray(a, dtype=F32))


def conv_case(root, name, x, w, b, *, bias_file, shape_bias, planted_ref=None):
    """A single forward stage: stride 1, padding 4, dilation 2. bias_file: "absent", "empty" (a
    0-length array), "zero-bytes" or "values"; shape_bias: the shape's "bias" (None: no key)."""
    d = root / name
    d.mkdir()
    save(d, "input.npy", x)
    save(d, "weight.npy", w)
    if bias_file == "values":
        save(d, "bias.npy", b)
    elif bias_file == "empty":
        save(d, "bias.npy", np.zeros(0))
    elif bias_file == "zero-bytes":
        (d / "bias.npy").write_bytes(b"")
    y64 = conv1d64(x, w, b if bias_file == "values" else None, 1, 4, 2)
    ref = y64.astype(F32) if planted_ref is None else planted_ref
    save(d, "reference.npy", ref)
    save(d, "out_cpu-f64_host.npy", ref)
    save(d, "out_cudnn-f64_resident.npy", ref)
    save(d, "out_cpu-f32_host.npy", conv1d32(x, w, b if bias_file == "values" else None, 1, 4, 2))
    shape = {"op": "forward", "stride": 1, "padding": 4, "dilation": 2, "output_padding": 0}
    shape |= {"k": w.shape[2], "cin": w.shape[1], "cout": w.shape[0], "l_out": y64.shape[2]}
    if shape_bias is not None:
        shape["bias"] = shape_bias
    outs = [("cpu-f64/host", "reference", 0.0), ("cudnn-f64/resident", "tolerance", 1e-9)]
    outs.append(("cpu-f32/host", "tolerance", 1e-4))
    meta = {
        "stage": name,
        "shape": shape,
        "stage_files": [{"stage": name, "weight": "weight.npy", "bias": "bias.npy"}],
        "outputs": [
            {"case": c, "gate": g, "tolerance": t, "output": "out_" + c.replace("/", "_") + ".npy"}
            for c, g, t in outs
        ],
    }
    (d / "problem.json").write_text(json.dumps(meta))
    return y64


def causal_case(root, rng):
    """The causal op, no bias (none written, "bias": false), an initial state for sequence 0."""
    d = root / "causal.c4.l30.b2.state-30"
    d.mkdir()
    batch, c, length, k = 2, 4, 30, 4
    x = rng.standard_normal((batch, c, length)).astype(F32)
    w = rng.standard_normal((c, k)).astype(F32)
    st = rng.standard_normal((batch, c, k - 1)).astype(F32)
    state = st.copy()
    state[1] = 0
    xpad = np.concatenate([state, x], axis=2)
    ref = causal64(xpad, w, None, True).astype(F32)
    final = xpad[:, :, -(k - 1) :]
    for n, a in (("input", x), ("weight", w), ("initial_state", st), ("reference", ref)):
        save(d, n + ".npy", a)
    save(d, "reference_final_state.npy", final)
    save(d, "out_cpu-f64_host.npy", ref)
    save(d, "out_cpu-f64_host_final_state.npy", final)
    meta = {
        "shape": {"op": "causal_depthwise", "k": k, "batch": batch, "channels": c}
        | {"length": length, "initial_state": True, "activation": "silu", "bias": False},
        "has_initial_state": [True, False],
        "files": {"input": "input.npy", "weight": "weight.npy"},
        "outputs": [
            {
                "case": "cpu-f64/host",
                "gate": "reference",
                "tolerance": 0.0,
                "output": "out_cpu-f64_host.npy",
                "final_state": "out_cpu-f64_host_final_state.npy",
            }
        ],
    }
    (d / "problem.json").write_text(json.dumps(meta))


def write_dump(root, planted=False):
    """Four conv cases (with a bias; without: no file, an empty array, a 0-byte file) and a causal
    one without a bias. planted: the no-file case's reference computed with the bias."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 8, 48)).astype(F32)
    w = (rng.standard_normal((6, 8, 5)) / 6).astype(F32)
    b = rng.standard_normal(6).astype(F32)
    conv_case(root, "amp0-48", x, w, b, bias_file="values", shape_bias=True)
    with_bias = conv1d64(x, w, b, 1, 4, 2).astype(F32)
    conv_case(
        root,
        "post-48",
        x,
        w,
        b,
        bias_file="absent",
        shape_bias=None,
        planted_ref=with_bias if planted else None,
    )
    conv_case(root, "post-empty-48", x, w, b, bias_file="empty", shape_bias=False)
    conv_case(root, "post-zero-48", x, w, b, bias_file="zero-bytes", shape_bias=None)
    causal_case(root, rng)


def test_dump_with_no_bias_cases_passes(tmp_path, capsys):
    write_dump(tmp_path)
    assert tdc.main([str(tmp_path), "--backend", "numpy"]) == 0
    out = capsys.readouterr().out
    # 4 conv cases x (reference shape, ulps; cpu-f64 shape, bits, ulps; cudnn-f64 shape, ulps;
    # cpu-f32 shape, L2) and the causal (reference shape, ulps, final state; its arm's shape,
    # bits, ulps, final state)
    assert "torch_dump_check (numpy): 5 cases, 43 checks, 0 failed" in out


def test_dump_with_planted_bias_fails(tmp_path, capsys):
    write_dump(tmp_path, planted=True)
    assert tdc.main([str(tmp_path), "--backend", "numpy"]) == 1
    out = capsys.readouterr().out
    assert "FAIL: post-48: reference vs numpy: a cell" in out
    assert "5 cases, 43 checks, 3 failed" in out  # the reference, as cpu-f64, and cudnn-f64


def test_empty_dump_dir_is_bad_usage(tmp_path, capsys):
    assert tdc.main([str(tmp_path), "--backend", "numpy"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no */problem.json" in err


def test_dump_through_torch(tmp_path, capsys):
    pytest.importorskip("torch", reason="PyTorch is not installed (the GPU machine runs this)")
    write_dump(tmp_path)
    assert tdc.main([str(tmp_path)]) == 0
    assert "torch_dump_check (torch): 5 cases, 43 checks, 0 failed" in capsys.readouterr().out
