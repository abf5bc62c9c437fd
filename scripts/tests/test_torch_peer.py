"""torch_peer.py writes a result record of the one schema, without PyTorch here.

PyTorch is not installed on CI, so these tests inject a small fake `torch` module (numpy
underneath) that provides exactly the calls torch_peer.py makes. They check the plumbing: the
record validates against results/result.schema.json, uses bench_conv's case ids and shapes from
bench/data/models.json, keeps every sample, and gates every arm before timing it. They say nothing
about PyTorch's own numbers (the GPU machine's runs do). The fake's torch.mm rounds as the GPU
does: f32 operands to TF32 (10 mantissa bits) while torch.backends.cuda.matmul.allow_tf32 is set,
bfloat16 to 7, so the GEMM arms' gates see the arithmetic their names promise. Planted: a fake
conv_transpose1d that drops the bias must fail its gate, go untimed and make the exit status 4.

The lease tests run torch_peer.py (the fake torch installed by child_main) as the command of a
real `convlease run` over the file backend, locks in a temporary directory; they need the
convlease of the default build (build/bin/convlease) and fail, saying so, without it.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import jsonschema
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "analysis" / "src"))
from convbench_analysis import assess  # noqa: E402
from convbench_analysis.load import load_run, parse_utc  # noqa: E402  (the one reader of records)

BF16 = "bfloat16 (fake)"  # the fake's torch.bfloat16: values held in f32, rounded to 7 bits
FAKE_UUID = "58ee2ea9-1f0c-4d4e-8a3b-00000000c0de"  # the fake GPU's, as torch prints it


def round_bits(a, keep: int) -> np.ndarray:
    """f32 values rounded (to nearest, ties to even) to `keep` explicit mantissa bits."""
    b = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    drop = 23 - keep
    b = ((b + ((b >> drop) & 1) + (1 << (drop - 1)) - 1) >> drop) << drop
    return b.astype(np.uint32).view(np.float32)


class Tensor:
    def __init__(self, a, dtype=None):
        self.a = np.asarray(a)
        self.dtype = dtype or self.a.dtype.type

    @property
    def shape(self):
        return self.a.shape

    def to(self, device, dtype=None):
        if dtype is BF16:
            return Tensor(round_bits(self.a, 7), BF16)
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


def conv1d_loops(x, w, b, stride, padding, dilation):
    """Conv1d tap by tap (an order of its own, independent of torch_peer's im2col reference)."""
    x, w = x.a[0], w.a
    cout, cin, k = w.shape
    l_in = x.shape[1]
    l_out = (l_in + 2 * padding - dilation * (k - 1) - 1) // stride + 1
    y = np.zeros((cout, l_out), dtype=x.dtype)
    for o in range(l_out):
        for kk in range(k):
            p = o * stride + kk * dilation - padding
            if 0 <= p < l_in:
                y[:, o] += w[:, :, kk] @ x[:, p]
    if b is not None:
        y += b.a[:, None]
    return Tensor(y[None])


def fake_torch(drop_bias=False, cuda=True, mm_out_dtype=True, uuid=FAKE_UUID) -> types.ModuleType:
    """mm_out_dtype=False: a torch whose mm has no out_dtype (before 2.8)."""
    t = types.ModuleType("torch")
    t.__version__ = "0.0-fake"
    t.float32, t.float64, t.bfloat16 = np.float32, np.float64, BF16
    t.from_numpy = Tensor
    t.set_num_threads = lambda n: None
    t.inference_mode = contextlib.nullcontext

    def empty(*shape, dtype=None, device=None):
        if dtype is BF16:
            return Tensor(np.empty(shape, dtype=np.float32), BF16)
        return Tensor(np.empty(shape, dtype=dtype))

    t.empty = empty
    t.mm_calls = []  # (operand dtype, output dtype, allow_tf32 at the call)
    t.work_s, t.mm_work = 0.0, 0.0  # seconds a fake mm takes on the fake device clock

    def mm(a, b, out_dtype=None, *, out):
        if out_dtype is not None and not mm_out_dtype:
            raise TypeError("mm() received an invalid combination of arguments")
        if (out_dtype or a.dtype) != out.dtype or a.dtype != b.dtype:
            raise RuntimeError(f"expected out dtype {out_dtype or a.dtype}, got {out.dtype}")
        if out_dtype is not None and (a.dtype is not BF16 or out_dtype != np.float32):
            raise RuntimeError("out_dtype: only float32 from bfloat16 operands")
        tf32 = t.backends.cuda.matmul.allow_tf32
        t.mm_calls.append((a.dtype, out.dtype, tf32))
        t.mm_work += t.work_s
        x, y = a.a, b.a
        if a.dtype == np.float32 and tf32:
            x, y = round_bits(x, 10), round_bits(y, 10)
        r = x @ y
        out.a[...] = round_bits(r, 7) if out.dtype is BF16 else r

    t.mm = mm
    t.nn = types.SimpleNamespace(
        functional=types.SimpleNamespace(
            conv_transpose1d=lambda x, w, b, stride, padding: conv_transpose1d_loops(
                x, w, b, stride, padding, drop_bias
            ),
            conv1d=lambda x, w, b, stride, padding, dilation: conv1d_loops(
                x, w, b, stride, padding, dilation
            ),
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
            # With work_s set (seconds per mm), the device clock is the work done: n calls between
            # two events take n times one call's time; else each span takes 1 ms.
            Event.clock = t.mm_work if t.work_s else Event.clock + 1e-3
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
        get_device_properties=lambda i: types.SimpleNamespace(multi_processor_count=132, uuid=uuid),
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
    monkeypatch.delenv("CONVBENCH_LEASE", raising=False)  # as if not under convlease run
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
        "torch-cublas-gemm-tf32",
        "torch-cublas-gemm-bf16",
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
        if c["device"]:
            f = c["floor_s"]
            kind = FLOOR_KIND.get(c["arm"])
            assert f["arm_kind"] == kind and f["arm"] == (f[kind] if kind else None), c["id"]
            # A floor of no measured rate is null with its reason, never a number.
            assert ("arm_unavailable" in f) == (kind is None)
    # Every timed case appears once per round, in the record's order.
    timed = {c["id"] for c in record["cases"] if c["samples"]}
    assert all(set(o["cases"]) == timed for o in record["plan"]["order"])


# The floor each device arm faces; None: devices.json has no rate of the arm's (tensor-core) pipe.
FLOOR_KIND = {
    "torch-cudnn-f32": "fp32_fma",
    "torch-cudnn-tf32": "fp32_fma",
    "torch-cudnn-f64": "fp64_fma",
    "torch-cublas-gemm-f32": "fp32_fma",
    "torch-cublas-gemm-tf32": None,
    "torch-cublas-gemm-bf16": None,
    "torch-cublas-gemm-f64": "fp64_fma",
}
GEMM = ["--model", "bigvgan_base_22khz_80band", "--frames", "2", "--stages", "up2,up3"]


@pytest.mark.parametrize("out_dtype", [True, False])
def test_gemm_arms_do_the_arithmetic_they_name(monkeypatch, tmp_path, out_dtype):
    # Planted (seen failing): the bf16 tolerance at 1e-4 (its gate fails, rc 4); the bf16
    # operands left f32 (error ~1e-7, under the bf16 band); TF32 left on for every arm.
    rc, out = run_peer(
        monkeypatch, tmp_path, [*GEMM, "--gemm", "--no-cpu", "--reps", "2"], mm_out_dtype=out_dtype
    )
    assert rc == 0
    by = {}
    for c in json.loads(out.read_text())["cases"]:
        by.setdefault(c["arm"], []).append(c)
    for arm, lo, hi, tol in (
        ("torch-cublas-gemm-f64", 0, 1e-12, 1e-9),
        ("torch-cublas-gemm-f32", 0, 1e-6, 1e-4),  # TF32 off: f32 rounding only
        ("torch-cublas-gemm-tf32", 5e-5, 2e-3, 5e-3),  # 2^-11 per operand
        ("torch-cublas-gemm-bf16", 5e-4, 5e-3, 1e-2),  # 2^-9 per operand (and the output)
    ):
        for c in by[arm]:
            g = c["gate"]
            assert g["result"] == "pass" and g["tolerance"] == tol, (c["id"], g)
            assert lo <= g["rel_l2_err"] <= hi, (c["id"], g["rel_l2_err"])
    for c in by["torch-cublas-gemm-bf16"]:
        assert c["kernel"]["operands"] == "bf16"
        assert c["kernel"]["output"] == ("f32" if out_dtype else "bf16")
    assert {c["kernel"]["output"] for c in by["torch-cublas-gemm-tf32"]} == {"f32"}


def test_each_gemm_call_runs_in_its_own_math_mode(monkeypatch, tmp_path):
    # TF32 is a global flag read at every call: the timed rounds must set it per arm, not leave
    # whatever the last arm prepared. Planted (seen failing): no math_mode() in time_rounds.
    fake = fake_torch()
    monkeypatch.setitem(sys.modules, "torch", fake)
    out = tmp_path / "peer.json"
    rc = load_peer().main(
        [*GEMM, "--gemm", "--no-cpu", "--reps", "4", "--warmup", "1", "--min-time", "0"]
        + ["--out", str(out)]
    )
    assert rc == 0
    f32 = [tf32 for a, _, tf32 in fake.mm_calls if a == np.float32]
    per_arm = 2 * (1 + 1 + 1 + 4)  # 2 stages x (gate + warm-up + one call timed + 4 samples)
    assert f32.count(True) == per_arm and f32.count(False) == per_arm, f32
    assert not any(tf32 for a, _, tf32 in fake.mm_calls if a != np.float32)


def test_a_sample_is_as_many_calls_as_last_min_time(monkeypatch, tmp_path):
    # A fake GEMM of 40 us on the device clock: --min-time 400 us makes every sample 10 calls
    # timed together, seconds = their total / 10; --min-time 0, one call. Planted (seen failing):
    # seconds written as the total (10x), and the count taken from --reps instead.
    for min_time, n in (("0.0004", 10), ("0", 1)):
        fake = fake_torch()
        fake.work_s = 40e-6
        monkeypatch.setitem(sys.modules, "torch", fake)
        out = tmp_path / f"peer-{n}.json"
        argv = [*GEMM, "--gemm", "--no-cpu", "--reps", "3", "--min-time", min_time]
        assert load_peer().main([*argv, "--out", str(out)]) == 0
        rec = json.loads(out.read_text())
        assert rec["plan"]["min_time_s"] == float(min_time)
        samples = [s for c in rec["cases"] for s in c["samples"]]
        assert samples and all(s["iterations"] == n for s in samples)
        for s in samples:
            assert s["seconds"] == pytest.approx(40e-6)
            assert s["total_seconds"] == pytest.approx(n * 40e-6)
            assert s["total_seconds"] >= float(min_time) * (1 - 1e-9)


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
    capsys.readouterr()
    rc, out = run_peer(monkeypatch, tmp_path, ["--min-time", "-1"])
    assert rc == 2 and not out.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--min-time" in err[0]


def _bench_record(tmp_path, peer, boot):
    """A bench_conv record as the call's comparison writes it (synthetic, analysis/tests/synth)."""
    sys.path.insert(0, str(ROOT / "analysis" / "tests"))
    import synth

    run = synth.make_run(stages=("up4", "up5"), frames=(1, 2), arms=("cuda-f32", "cudnn-f32"))
    run["plan"]["stages"] = ["up4", "up5", "chain"]  # the chain has no GEMM of its own
    run["host"]["boot_id"] = boot
    return synth.write(run, tmp_path / "compare.json"), run


def test_beside_measures_the_runs_cases_and_names_its_run(monkeypatch, tmp_path, schema):
    # Planted (seen failing): context.beside left out of the record.
    peer = load_peer()
    path, run = _bench_record(tmp_path, peer, peer.boot_id())
    rc, out = run_peer(
        monkeypatch, tmp_path, ["--gemm", "--no-cpu", "--reps", "2", "--beside", str(path)]
    )
    assert rc == 0
    record = json.loads(out.read_text())
    jsonschema.validate(record, schema)
    assert record["context"]["beside"]["run_id"] == run["run_id"]
    assert record["plan"]["model"] == run["plan"]["model"]
    got = {(c["stage"], c["frames"]) for c in record["cases"]}
    assert got == {(s, f) for s in ("up4", "up5") for f in (1, 2)}


def test_beside_refuses_another_boot_and_a_foreign_file(monkeypatch, tmp_path, capsys):
    # Planted (seen failing): the boot_id comparison dropped.
    peer = load_peer()
    if peer.boot_id() is None:
        pytest.skip("no /proc boot_id here")
    path, _ = _bench_record(tmp_path, peer, "0" * 32)
    for argv in (
        ["--beside", str(path)],
        ["--beside", str(tmp_path / "missing.json")],
        ["--beside", str(ROOT / "bench/data/models.json")],
        ["--beside", str(path), "--frames", "96"],
    ):
        rc, out = run_peer(monkeypatch, tmp_path, ["--gemm", "--no-cpu", *argv])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and not out.exists() and len(err) == 1, (argv, err)
        assert err[0].startswith("torch_peer: --beside"), err


def _forward_case(case: dict, stage: str, batch: int = 1) -> dict:
    """A copy of a synthetic bench_conv case as one of its Conv1d stages (an AMP conv)."""
    c = copy.deepcopy(case)
    cin = case["shape"]["cout"]
    l_in = case["shape"]["l_out"]
    c["stage"], c["id"] = stage, f"{stage}/{case['frames']}/{case['arm']}/{case['staging']}"
    c["shape"] = {
        "op": "forward",
        "batch": batch,
        "bias": True,
        "cin": cin,
        "cout": cin,
        "k": 7,
        "stride": 1,
        "dilation": 3,
        "padding": 9,
        "output_padding": 0,
        "l_in": l_in,
        "l_out": l_in,
    }
    return c


def test_beside_times_the_runs_forward_convs_on_their_implicit_gemm(monkeypatch, tmp_path, schema):
    # A run's AMP Conv1d cases (shapes as it recorded them) get torch's conv1d and cuBLAS on
    # the implicit GEMM [cout, cin*k] x im2col(x), each gated against the f64 reference; a batch-8
    # case has no single GEMM here and is left out. Planted (seen failing): the forward reference
    # without the bias (every torch-cudnn case of amp4 failed its gate, exit 4).
    peer = load_peer()
    path, run = _bench_record(tmp_path, peer, peer.boot_id())
    up4 = [c for c in run["cases"] if c["stage"] == "up4"]
    run["cases"] += [_forward_case(c, "amp4.k7.d3") for c in up4]
    run["cases"] += [_forward_case(c, "amp4.k7.d1", batch=8) for c in up4]
    run["plan"]["stages"] += ["amp4.k7.d3", "amp4.k7.d1"]
    path.write_text(json.dumps(run))
    argv = ["--gemm", "--gpu", "--no-cpu", "--reps", "2", "--warmup", "0", "--beside", str(path)]
    rc, out = run_peer(monkeypatch, tmp_path, argv)
    assert rc == 0
    record = json.loads(out.read_text())
    jsonschema.validate(record, schema)
    load_run(out)
    amp = [c for c in record["cases"] if c["stage"] == "amp4.k7.d3"]
    assert {c["frames"] for c in amp} == {1, 2}
    assert not [c for c in record["cases"] if c["stage"] == "amp4.k7.d1"]
    for c in amp:
        assert c["gate"]["result"] == "pass", c["id"]
        assert c["samples"], c["id"]
        s = c["shape"]
        assert c["flops"] == 2.0 * s["cin"] * s["cout"] * s["k"] * s["l_out"]
        gemm = "gemm" in c["arm"]
        assert c["kernel"]["name"].startswith("cuBLAS implicit GEMM" if gemm else "torch conv1d")
    assert {c["arm"] for c in amp} == {
        *peer.GEMM_ARMS,
        "torch-cudnn-f32",
        "torch-cudnn-tf32",
        "torch-cudnn-f64",
    }


# ---- the lease: torch_peer.py under a real `convlease run` (file backend) --------------------

CONVLEASE = ROOT / "build" / "bin" / "convlease"
TINY = ["--model", "bigvgan_base_22khz_80band", "--frames", "2", "--stages", "up3"]
TINY += ["--reps", "3", "--warmup", "1"]


def child_main(argv: list[str]) -> int:
    """torch_peer.main with the fake torch, in a process of its own (the command convlease runs).
    PLANT_LOCK_DIR set: once the timed rounds are done, the holder's generation in that
    directory (its holder file) is rewritten in place (another grant's token, as if the lease had
    been lost and re-granted), before the end check."""
    sys.modules["torch"] = fake_torch()
    peer = load_peer()
    plant = os.environ.get("PLANT_LOCK_DIR")
    if plant:
        rounds = peer.time_rounds

        def time_rounds(*a):
            order = rounds(*a)
            (lock,) = Path(plant).glob("*.holder")
            rec = json.loads(lock.read_text())
            rec["generation"] += 1
            with open(lock, "r+") as f:  # in place: the same inode, a new token
                f.write(json.dumps(rec))
                f.truncate()
            return order

        peer.time_rounds = time_rounds
    return peer.main(argv)


HERE = str(Path(__file__).resolve().parent)
CHILD = (
    f"import sys; sys.path.insert(0, {HERE!r}); import test_torch_peer as t; "
    "sys.exit(t.child_main(sys.argv[1:]))"
)


@pytest.fixture
def lease_env(tmp_path):
    """The environment of a run under the file backend, locks in tmp_path/locks."""
    assert os.access(CONVLEASE, os.X_OK), f"{CONVLEASE} is not built (cmake --build build)"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CONVBENCH_LEASE", "SLURM_")) and k != "PLANT_LOCK_DIR"
    }
    env.update(CONVBENCH_LEASE_DIR=str(tmp_path / "locks"), CONVBENCH_LEASE_POLICY="none")
    return env


def peer_under_lease(env, tmp_path, argv, lease_args=(), peer_env=None):
    """convlease run [lease_args] -- python3 torch_peer.py argv: (convlease's pid, its exit
    status, torch_peer's stderr, the record or None)."""
    out = tmp_path / "peer.json"
    cmd = [str(CONVLEASE), "run", *lease_args, "--", sys.executable, "-c", CHILD, *argv]
    cmd += ["--out", str(out), "--convlease", str(CONVLEASE)]
    p = subprocess.Popen(
        cmd, env={**env, **(peer_env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    _, err = p.communicate(timeout=120)
    err = err.decode()
    return p.pid, p.returncode, err, json.loads(out.read_text()) if out.exists() else None


def lease_codes(path: Path) -> dict[str, str]:
    """The analysis's lease findings on a record: code -> detail."""
    found = assess.assess([load_run(path)]).all_findings()
    return {f.code: f.detail for f in found if f.code.startswith("lease")}


@pytest.mark.parametrize("resource", ["cpu", "gpu"])
def test_a_record_made_under_a_lease_carries_its_checks_and_is_accepted(
    lease_env, tmp_path, schema, resource
):
    """Planted (each seen failing here): the not-collected block written although a lease was
    inherited; the end check taken from the start check's answer (no second convlease verify:
    end_check.at_utc equal to start_check.at_utc); torch_peer's GPU UUID not passed to convlease
    verify (the GPU case refused: the lease covers the GPU, the check asked about cpu)."""
    argv, lease_args = [*TINY], []
    if resource == "gpu":
        argv += ["--gemm", "--no-cpu"]
        lease_args = ["--gpu-uuid", f"GPU-{FAKE_UUID}"]
    pid, rc, err, record = peer_under_lease(lease_env, tmp_path, argv, lease_args)
    assert rc == 0 and record is not None, err
    jsonschema.validate(record, schema)
    lease = record["lease"]
    assert lease["status"] == "collected" and lease["verdict"] == "valid", lease
    assert lease["reasons"] == [] and lease["backend"] == "file" and lease["adopted"] is True
    assert lease["holder"]["pid"] == pid, "the holder is convlease run; torch_peer adopts"
    assert lease["adopter"]["pid"] != pid and lease["adopter"]["run_id"] == record["run_id"]
    assert lease["token"] == str(lease["fencing"]["generation"])
    start, end = lease["start_check"], lease["end_check"]
    assert start["ok"] is True and end["ok"] is True, lease
    # The two checks bracket every timed sample: the record's own times lie outside them.
    times = [record["started_utc"], start["at_utc"], end["at_utc"], record["ended_utc"]]
    t = [parse_utc(x) for x in times]
    assert t[0] <= t[1] < t[2] <= t[3], times
    assert lease["verify_utc"] == [start["at_utc"], end["at_utc"]]
    if resource == "gpu":
        assert lease["resource"]["gpu_uuid"] == record["gpus"][0]["uuid"] == f"GPU-{FAKE_UUID}"
    else:
        assert lease["resource"]["name"] == "cpu" and record["gpus"] == []
    assert lease_codes(tmp_path / "peer.json") == {}


def test_a_record_made_without_a_lease_is_refused(monkeypatch, tmp_path):
    """Planted (seen failing): a collected block with verdict valid and a made-up token written
    when nothing was inherited."""
    rc, out = run_peer(monkeypatch, tmp_path, TINY)
    assert rc == 0
    lease = json.loads(out.read_text())["lease"]
    assert lease["status"] == "not-collected" and "CONVBENCH_LEASE" in lease["reason"], lease
    assert set(lease_codes(out)) == {"lease-none"}


def test_a_lease_changed_before_the_end_check_voids_the_record(lease_env, tmp_path, schema):
    """Planted in the run (PLANT_LOCK_DIR): the lock's generation bumped in place after the timed
    rounds. Planted in torch_peer.py (each seen failing here): the verdict "valid" whatever the
    checks said; the end check taken from the start check's answer."""
    env = {**lease_env, "PLANT_LOCK_DIR": lease_env["CONVBENCH_LEASE_DIR"]}
    _, rc, err, record = peer_under_lease(env, tmp_path, TINY)
    assert rc == 3, err  # convlease run's own final verify sees the lease lost too
    assert record is not None, err
    jsonschema.validate(record, schema)
    lease = record["lease"]
    assert record["exit_status"] == 3, "torch_peer's own status: the lease is void"
    assert lease["start_check"]["ok"] is True and lease["end_check"]["ok"] is False, lease
    assert lease["verdict"] == "void", lease
    (reason,) = lease["reasons"]
    assert reason.startswith("end check failed:") and "token changed" in reason, reason
    assert "the lease is void (exit 3)" in err, err
    codes = lease_codes(tmp_path / "peer.json")
    assert set(codes) == {"lease-void"} and "token changed" in codes["lease-void"], codes


def test_a_lease_that_fails_its_first_check_is_refused_before_timing(
    lease_env, tmp_path, monkeypatch, capsys
):
    """No record and exit 3 when the inherited lease does not pass the start check: one that
    covers cpu while the GPU is timed, a forged one, and (in process) a GPU torch names no UUID
    for; exit 2 when the convlease named cannot be run. Planted (each seen failing here): the
    start check's failure recorded and the run timed anyway (a void record written, exit 3 from
    the end); the GPU UUID left out of the check (the cpu lease accepted for the GPU timed)."""
    _, rc, err, record = peer_under_lease(lease_env, tmp_path, [*TINY, "--gemm", "--no-cpu"])
    lines = err.strip().splitlines()
    assert rc == 3 and record is None, err
    assert lines[-1].startswith("torch_peer: lease refused: inherited lease covers cpu"), lines

    forged = {"CONVBENCH_LEASE": json.dumps({"backend": "file", "token": "7"})}
    out = tmp_path / "peer.json"
    p = subprocess.run(
        [sys.executable, "-c", CHILD, *TINY, "--out", str(out), "--convlease", str(CONVLEASE)],
        env={**lease_env, **forged},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 3 and not out.exists(), p.stderr
    assert p.stderr.strip().splitlines()[-1].startswith("torch_peer: lease refused:"), p.stderr

    monkeypatch.setenv("CONVBENCH_LEASE", forged["CONVBENCH_LEASE"])
    monkeypatch.setitem(sys.modules, "torch", fake_torch(uuid=None))
    argv = [*TINY, "--gemm", "--no-cpu", "--out", str(out), "--convlease", str(CONVLEASE)]
    assert load_peer().main(argv) == 3 and not out.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "reports no UUID" in err[0], err

    argv[-1] = str(tmp_path / "no-convlease")
    assert load_peer().main(argv) == 2 and not out.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("torch_peer: --convlease"), err
