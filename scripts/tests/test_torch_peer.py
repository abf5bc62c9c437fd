"""torch_peer.py writes a result record of the one schema, without PyTorch here.

PyTorch is not installed on CI, so these tests inject a small fake `torch` module (numpy
underneath) that provides exactly the calls torch_peer.py makes. They check the plumbing: the
record validates against results/result.schema.json, uses bench_conv's case ids and shapes from
bench/data/models.json, keeps every sample, and gates every arm before timing it. They say nothing
about PyTorch's own numbers (the GPU machine's runs do). Planted: a fake conv_transpose1d that
drops the bias must fail its gate, go untimed and make the exit status 4.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
import types
from pathlib import Path

import jsonschema
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "analysis" / "src"))
from convbench_analysis.load import load_run  # noqa: E402  (the one reader of records)


class Tensor:
    def __init__(self, a):
        self.a = np.asarray(a)

    @property
    def shape(self):
        return self.a.shape

    def to(self, device, dtype=None):
        return Tensor(self.a.astype(dtype) if dtype is not None else self.a)

    def detach(self):
        return self

    def numpy(self):
        return self.a

    def __getitem__(self, i):
        return Tensor(self.a[i])


def conv_transpose1d_loops(x, w, b, stride, padding, drop_bias=False):
    """ConvTranspose1d tap by tap (an order of its own, independent of torch_peer's reference)."""
    x, w = x.a[0], w.a
    cin, cout, k = w.shape
    l_in = x.shape[1]
    l_out = (l_in - 1) * stride - 2 * padding + k
    y = np.zeros((cout, l_out), dtype=x.dtype)
    for kk in range(k):
        contrib = np.einsum("it,io->ot", x, w[:, :, kk])
        for t in range(l_in):
            p = t * stride + kk - padding
            if 0 <= p < l_out:
                y[:, p] += contrib[:, t]
    if not drop_bias:
        y += b.a[:, None]
    return Tensor(y[None])


def fake_torch(drop_bias=False, cuda=True) -> types.ModuleType:
    t = types.ModuleType("torch")
    t.__version__ = "0.0-fake"
    t.float32, t.float64 = np.float32, np.float64
    t.from_numpy = Tensor
    t.set_num_threads = lambda n: None
    t.inference_mode = contextlib.nullcontext
    t.empty = lambda *shape, dtype=None, device=None: Tensor(np.empty(shape, dtype=dtype))

    def mm(a, b, out):
        out.a[...] = a.a @ b.a

    t.mm = mm
    t.nn = types.SimpleNamespace(
        functional=types.SimpleNamespace(
            conv_transpose1d=lambda x, w, b, stride, padding: conv_transpose1d_loops(
                x, w, b, stride, padding, drop_bias
            )
        )
    )
    t.backends = types.SimpleNamespace(
        cudnn=types.SimpleNamespace(benchmark=False, allow_tf32=False, version=lambda: 91900),
        cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False)),
    )

    class Event:
        clock = 0.0

        def __init__(self, enable_timing):
            self.at = 0.0

        def record(self):
            Event.clock += 1e-3
            self.at = Event.clock

        def synchronize(self):
            pass

        def elapsed_time(self, other):  # ms, as torch
            return (other.at - self.at) * 1e3

    t.cuda = types.SimpleNamespace(
        is_available=lambda: cuda,
        get_device_name=lambda i: "NVIDIA H200 (fake)",
        synchronize=lambda: None,
        Event=Event,
        get_device_properties=lambda i: types.SimpleNamespace(multi_processor_count=132),
    )
    t.version = types.SimpleNamespace(cuda="13.0")
    return t


def load_peer():
    spec = importlib.util.spec_from_file_location("torch_peer", ROOT / "scripts/torch_peer.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def schema():
    return json.loads((ROOT / "results/result.schema.json").read_text())


def run_peer(monkeypatch, tmp_path, argv, **fake):
    monkeypatch.setitem(sys.modules, "torch", fake_torch(**fake))
    out = tmp_path / "peer.json"
    rc = load_peer().main([*argv, "--out", str(out)])
    return rc, out


def test_record_validates_and_speaks_bench_conv(monkeypatch, tmp_path, schema):
    argv = [
        "--model",
        "bigvgan_base_22khz_80band",
        "--frames",
        "2",
        "--stages",
        "up2,up3",
        "--reps",
        "3",
        "--warmup",
        "1",
        "--cpu-f64",
        "--gpu",
        "--gemm",
    ]
    rc, out = run_peer(monkeypatch, tmp_path, argv)
    assert rc == 0
    record = json.loads(out.read_text())
    jsonschema.validate(record, schema)
    load_run(out)  # the analysis reads it: schema, consistency, finite numbers
    arms = {c["arm"] for c in record["cases"]}
    assert arms == {
        "torch-cpu-f32",
        "torch-cpu-f64",
        "torch-cudnn-f32",
        "torch-cudnn-tf32",
        "torch-cudnn-f64",
        "torch-cublas-gemm-f32",
        "torch-cublas-gemm-f64",
    }
    models = {
        m["name"]: m for m in json.loads((ROOT / "bench/data/models.json").read_text())["models"]
    }
    base = models["bigvgan_base_22khz_80band"]
    for c in record["cases"]:
        assert c["id"] == f"{c['stage']}/{c['frames']}/{c['arm']}/{c['staging']}"
        assert c["gate"]["result"] == "pass", c["gate"]
        assert len(c["samples"]) == 3 and c["stats"]["n"] == 3
        assert c["stats"]["median"] == float(np.median([s["seconds"] for s in c["samples"]]))
        i = int(c["stage"][2:])
        assert c["shape"]["cin"] == base["channels"] >> i
        assert c["shape"]["k"] == base["kernels"][i] and c["shape"]["stride"] == base["strides"][i]
        assert (c["floor_s"] is not None) == c["device"]  # devices.json matches the H200
    # Every timed case appears once per round, in the record's order.
    timed = {c["id"] for c in record["cases"] if c["samples"]}
    assert all(set(o["cases"]) == timed for o in record["plan"]["order"])


def test_an_arm_that_fails_its_gate_is_not_timed(monkeypatch, tmp_path, schema):
    rc, out = run_peer(
        monkeypatch,
        tmp_path,
        ["--frames", "1", "--stages", "up3", "--reps", "2", "--model", "bigvgan_base_22khz_80band"],
        drop_bias=True,
        cuda=False,
    )
    assert rc == 4
    record = json.loads(out.read_text())
    jsonschema.validate(record, schema)
    (case,) = record["cases"]
    assert case["gate"]["result"] == "fail" and case["gate"]["rel_l2_err"] > 1e-2
    assert case["samples"] == [] and case["stats"] is None
    assert record["exit_status"] == 4


def test_bad_input_is_one_line_and_no_record(monkeypatch, tmp_path, capsys):
    rc, out = run_peer(monkeypatch, tmp_path, ["--model", "no-such-model"])
    assert rc == 2 and not out.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown model" in err[0]
    rc, out = run_peer(monkeypatch, tmp_path, ["--gpu"], cuda=False)
    assert rc == 2 and not out.exists()
