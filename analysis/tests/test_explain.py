"""`explain`: each ratio's line states figures that hold against the record it came from. The
synthetic runs (synth.py) have known answers: time = a + FLOPs / rate per arm, so a per-call arm
with a large fixed cost falls with size, two arms of small fixed cost keep a flat ratio, the
staging share of a per-call case is its fixed cost over its time; the counters follow the
H200's published peaks.

Planted faults in explain.py, each seen failing (then reverted):
- the staging share over the resident median instead of the per-call one:
  test_staging_share_is_the_twins_difference_over_the_per_call_median failed;
- the sweep called on any move (no tolerance, no intervals): test_a_rate_difference_stays_flat_
  across_sizes failed (called "rising" on round noise);
- the smallest and the largest size swapped in the sweep: test_a_fixed_per_call_cost_falls_
  with_size failed;
- the last counted path taken for the dominant one: test_dominant_pipe_and_its_share_of_peak
  failed; the fp64 pipe's mix read from the fp32 opcodes: it and test_no_fma_mix_is_said_with_
  its_gate failed;
- the memory-bound test flipped (< instead of >=): test_memory_bound_against_the_copy_bandwidth
  failed;
- `--counters` (no such bench_conv flag) in the missing-counters remedy:
  test_every_suggested_flag_is_a_real_bench_conv_flag failed naming it;
- each case's missing counters said apart (no merge): test_missing_counters_name_the_run_that_
  takes_them failed (two gaps); the merge applied to every gap before deduplication:
  test_host_arms_gap_is_said_once failed ("time goes, goes");
- a suggested run without the record's --plugin libraries: test_a_suggested_run_keeps_the_runs_
  plugins_model_and_timing failed;
- the launching thread's CPU time over the sample's timed seconds instead of its wall time:
  test_host_share_of_a_per_call_sample failed;
- the tensor-blind profile's SIMT crumbs read as the dominant pipe: test_uncounted_tensor_pipes_
  are_said_not_read_as_idle failed;
- the two cases' own refusals left out of the checks part: test_a_foreign_gpu_process_is_said_
  with_the_refusal failed."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys

import numpy as np
import pytest
import synth
from conftest import EXAMPLES, REPO

from convbench_analysis import explain, load
from convbench_analysis.record import Run


def _run(**kw) -> Run:
    return Run("synthetic.json", synth.make_run(**kw))


def _one(expls, num: str, den: str | None = None) -> explain.Explanation:
    got = [e for e in expls if e.num == num and (den is None or e.den == den)]
    assert len(got) == 1, [(e.num, e.den) for e in expls]
    return got[0]


def _median(run: Run, cid: str) -> float:
    return float(np.median([s.seconds for s in synth.case(run.data, cid)["samples"]]))


# ---- staging, from the per-call case's resident twin ---------------------------------------


def test_staging_share_is_the_twins_difference_over_the_per_call_median():
    run = _run(stages=("up0",), arms=("cuda-f32", "cuda-f32-percall", "cudnn-f32"))
    e = _one(explain.explain_record(run), "up0/96/cuda-f32/per-call")
    st = e.figures["staging_num"]
    pc, res = _median(run, "up0/96/cuda-f32/per-call"), _median(run, "up0/96/cuda-f32/resident")
    assert st["twin"] == "up0/96/cuda-f32/resident"
    assert st["staging_s"] == pytest.approx(pc - res)
    assert st["staging_share"] == pytest.approx((pc - res) / pc)
    # the known answer: the per-call arm's extra fixed cost (400 - 8 us) of its modelled time
    flops = synth.case(run.data, "up0/96/cuda-f32/per-call")["flops"]
    truth = (400e-6 - 8e-6) / (400e-6 + flops / 30e12)
    assert st["staging_share"] == pytest.approx(truth, rel=0.03)
    assert f"({st['staging_share']:.0%}, from its resident twin" in e.line
    # the compute part is the twin against the same denominator
    cudnn = _median(run, "up0/96/cudnn-f32/resident")
    assert e.figures["compute_ratio"] == pytest.approx(res / cudnn)


def test_no_resident_twin_says_which_run_would_split_it():
    run = _run(stages=("up0",), frames=(96,), arms=("cuda-f32-percall", "cudnn-f32"))
    e = _one(explain.explain_record(run), "up0/96/cuda-f32/per-call")
    assert "staging_num" not in e.figures and "compute_ratio" not in e.figures
    gap = next(g for g in e.cannot_tell if "staging" in g)
    assert "bench_conv --stage up0 --frames 96 --arms cuda-f32 --staging both" in gap
    assert "cannot tell" in e.line and gap in e.line


# ---- the size sweep: flat vs falling, with the fits --------------------------------------


def test_a_fixed_per_call_cost_falls_with_size():
    run = _run(stages=("up0",), arms=("cuda-f32", "cuda-f32-percall", "cudnn-f32"))
    e = _one(explain.explain_record(run), "up0/96/cuda-f32/per-call")
    sw = e.figures["sweep"]
    assert sw["frames"] == [96, 384, 1536]
    assert sw["ratios"][0] > 2.0 * sw["ratios"][-1]  # what the model makes of 400 us a call
    assert sw["kind"] == "falling"
    assert "falling across frames" in e.line and "fixed per-call cost in cuda-f32" in e.line
    # the fit recovers the numerator's fixed cost
    assert sw["fits"]["num"]["a_s"] == pytest.approx(400e-6, rel=0.1)


def test_a_rate_difference_stays_flat_across_sizes(monkeypatch):
    """A per-call f64 CUDA arm of small fixed cost against the host reference over three sizes:
    the ratio holds, so the line says a compute-rate difference and cites the fit's rates."""
    monkeypatch.setitem(synth.ARMS, "cuda-f64-percall", (True, "per-call", 30e-6, 1.0e12, 0.002))
    run = _run(stages=("up0",), arms=("cpu-f64", "cuda-f64-percall"))
    e = _one(explain.explain_record(run), "up0/96/cuda-f64/per-call", "up0/96/cpu-f64/host")
    sw = e.figures["sweep"]
    assert sw["kind"] == "flat"
    assert "flat across frames" in e.line and "a compute-rate difference" in e.line
    assert sw["fits"]["num"]["rate_tflops"] == pytest.approx(1.0, rel=0.05)
    assert sw["fits"]["den"]["rate_tflops"] == pytest.approx(0.33, rel=0.05)
    assert sw["fits"]["rate_ratio"] == pytest.approx(0.33, rel=0.05)
    assert f"rate {sw['fits']['num']['rate_tflops']:.3g} TFLOP/s" in e.line
    # no resident twin here: the staging split is a gap with its run
    assert any("--staging both" in g for g in e.cannot_tell)


def test_one_size_names_the_sweep_that_would_tell():
    run = _run(stages=("up0",), frames=(96,), arms=("cuda-f32", "cudnn-f32"))
    e = _one(explain.explain_record(run), "up0/96/cuda-f32/resident")
    assert "sweep" not in e.figures
    assert any("--frames 96,384,1536" in g for g in e.cannot_tell)


# ---- counters: dominant pipe, instruction mix, DRAM --------------------------------------


def test_dominant_pipe_and_its_share_of_peak():
    run = _run(stages=("up0",), frames=(96,), arms=("cuda-f64", "cudnn-f64"))
    e = _one(explain.explain_record(run), "up0/96/cuda-f64/resident")
    c = synth.case(run.data, "up0/96/cuda-f64/resident")
    peak = 2.0 * synth.DFMA_PEAK * synth.CLOCK_HZ / 1e12
    pct = 100.0 * c["flops"] / c["stats"]["best"] / 1e12 / peak
    ctr = e.figures["counters_num"]
    assert ctr["pipe"] == "fp64 SIMT"
    assert ctr["pct_peak"] == pytest.approx(pct)
    assert ctr["mix"] == "DFMA"
    assert f"fp64 SIMT {ctr['tflops']:.3g} TFLOP/s = {pct:.1f}% of its peak (DFMA)" in e.line


def test_no_fma_mix_is_said_with_its_gate():
    run = _run(stages=("up0",), frames=(96,), arms=("cuda-f64", "cudnn-f64"))
    c = synth.case(run.data, "up0/96/cuda-f64/resident")
    m = c["counters"]["metrics"]
    op = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
    fma = m[op.format("dfma")]
    m[op.format("dfma")], m[op.format("dmul")], m[op.format("dadd")] = 0.0, fma, fma
    c["gate"] = {**c["gate"], "kind": "bitwise", "tolerance": None}
    e = _one(explain.explain_record(Run("x.json", run.data)), c["id"])
    assert e.figures["counters_num"]["mix"] == "DADD+DMUL, no FMA: the bitwise gate's contract"


def test_memory_bound_against_the_copy_bandwidth():
    run = _run(stages=("up0",), frames=(96,), arms=("cuda-f32", "cudnn-f32"))
    c = synth.case(run.data, "up0/96/cuda-f32/resident")
    copy_bps = c["min_bytes"] / c["floor_s"]["memory"]
    for share, bound in ((0.8, True), (0.1, False)):
        data = copy.deepcopy(run.data)
        cc = synth.case(data, c["id"])
        cc["counters"]["derived"]["dram_bytes"] = share * copy_bps * cc["stats"]["best"]
        e = _one(explain.explain_record(Run("x.json", data)), c["id"])
        f = e.figures["counters_num"]
        assert f["copy_tbps"] == pytest.approx(copy_bps / 1e12)
        assert f["dram_share_of_copy"] == pytest.approx(share)
        assert f["memory_bound"] is bound
        said = f"{share:.0%} of the {f['copy_tbps']:.3g} TB/s copy: "
        assert said + ("memory-bound" if bound else "not memory-bound") in e.line


def test_uncounted_tensor_pipes_are_said_not_read_as_idle():
    """up0.json was counted with a profile that had no tensor paths: the DMMA arm's SIMT crumbs
    are not its pipe."""
    run = load.load_run(REPO / "results/examples/up0.json")
    e = _one(explain.explain_record(run), "up0/96/cuda-f64-dmma/resident")
    f = e.figures["counters_num"]
    assert "pipe" not in f and f["counted_share"] < 0.01
    assert "not counted: tensor pipes" in e.line and "0.0% of its peak" not in e.line
    assert any("--profile fp-throughput" in g for g in e.cannot_tell)


def test_missing_counters_name_the_run_that_takes_them():
    run = _run(stages=("up0",), frames=(96,), arms=("cuda-f32", "cudnn-f32"))
    for c in run.data["cases"]:
        c["counters"] = {"status": "not-collected"}
    e = _one(explain.explain_record(run), "up0/96/cuda-f32/resident")
    assert "counters_num" not in e.figures and "counters_den" not in e.figures
    # one run counts both: one gap names both cases
    gaps = [g for g in e.cannot_tell if g.startswith("which pipe bounds")]
    assert len(gaps) == 1, gaps
    assert gaps[0].startswith("which pipe bounds cuda-f32/resident, cudnn-f32/resident (")
    assert "--staging resident" in gaps[0] and "--arms cuda-f32,cudnn-f32" in gaps[0]


def test_host_arms_gap_is_said_once():
    e = _one(explain.explain_record(_run(stages=("up0",), frames=(96,))), "up0/96/cpu-f32/host")
    host = "where a host arm's time goes (no counters exist for host arms)"
    assert e.cannot_tell.count(host) == 1 and e.line.count("where a host arm") == 1


def _bench_flags() -> set[str]:
    src = (REPO / "bench/src/plan/cli.cpp").read_text()
    return set(re.findall(r'add_(?:flag|option)\("(--[a-z-]+)', src)) | set(
        re.findall(r'\{"(--[a-z-]+)", &r\.', src)
    )


def test_every_suggested_flag_is_a_real_bench_conv_flag():
    real = _bench_flags()
    assert {"--staging", "--frames", "--arms", "--no-counters", "--profile"} <= real
    runs = [_run(stages=("up0",), frames=(96,), arms=("cuda-f32-percall", "cudnn-f32"))]
    runs += [load.load_run(p) for p in EXAMPLES]
    seen = 0
    for run in runs:
        for e in explain.explain_record(run):
            for gap in e.cannot_tell:
                for flag in re.findall(r"(?<![\w-])--[a-z][a-z-]*", gap):
                    assert flag in real, (flag, gap)
                    seen += 1
    assert seen > 10


def test_a_suggested_run_keeps_the_runs_plugins_model_and_timing():
    run = load.load_run(REPO / "results/examples/plugin.json")
    e = _one(explain.explain_record(run), "up2/96/abi-cuda-f32/resident")
    argv = run.data["argv"]
    plugins = [v for f, v in zip(argv, argv[1:], strict=False) if f == "--plugin"]
    assert len(plugins) == 2 and e.cannot_tell
    for gap in e.cannot_tell:
        assert all(f"--plugin {p}" in gap for p in plugins), gap
    sweep = load.load_run(REPO / "results/examples/sweep.json")
    synth.case(sweep.data, "up0/96/cudnn-f32/resident")["counters"] = {"status": "not-collected"}
    e = _one(explain.explain_record(sweep), "up0/96/cuda-f32/resident")
    gap = next(g for g in e.cannot_tell if "which pipe bounds cudnn-f32/resident" in g)
    assert "--model bigvgan_v2_44khz_128band_512x --device-timing queued --stage up0" in gap


# ---- the launching thread's share of a per-call sample; the checks -----------------------


def test_host_share_of_a_per_call_sample():
    run = _run(stages=("up0",), frames=(96,), arms=("cuda-f32-percall", "cudnn-f32"))
    c = synth.case(run.data, "up0/96/cuda-f32/per-call")
    for k, s in enumerate(c["samples"]):
        s["contention"]["wall_s"] = s["total_seconds"] * 1.25  # the probes' time around it
        s["contention"]["threads"][0]["cpu_s"] = (0.5 + 0.05 * k) * s["contention"]["wall_s"]
    want = float(np.median([0.5 + 0.05 * k for k in range(len(c["samples"]))]))
    e = _one(explain.explain_record(run), c["id"])
    assert e.figures["host_share_num"]["host_cpu_share"] == pytest.approx(want)
    assert f"on a CPU {want:.0%} of each call's wall time" in e.line


def test_a_foreign_gpu_process_is_said_with_the_refusal():
    run = _run(stages=("up0",), frames=(96,), arms=("cuda-f32", "cudnn-f32"))
    clean = _one(
        explain.explain_record(Run("x.json", copy.deepcopy(run.data))), "up0/96/cuda-f32/resident"
    )
    assert clean.figures["checks"]["refused"] == []
    assert "checks: nothing refused (foreign GPU processes 0" in clean.line
    s = synth.case(run.data, "up0/96/cudnn-f32/resident")["samples"][2]
    s["gpu_after"]["foreign_processes"] = 2
    e = _one(explain.explain_record(run), "up0/96/cuda-f32/resident")
    assert "foreign-gpu" in e.figures["checks"]["refused"]
    assert e.figures["checks"]["foreign_gpu_processes_max"] == 2
    assert "REFUSED: foreign-gpu" in e.line


# ---- the committed examples and the command ----------------------------------------------


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_explains_each_reported_ratio_in_one_line(path):
    run = load.load_run(path)
    for e in explain.explain_record(run):
        assert "\n" not in e.line
        assert e.line.startswith(f"{e.num.split('/', 2)[2]} / {e.den.split('/', 2)[2]} = ")
        for side in ("num", "den"):
            st = e.figures.get(f"staging_{side}")
            if st:
                assert 0.0 < st["staging_share"] < 1.0
                assert f"({st['staging_share']:.0%}, from its resident twin" in e.line


def test_explain_ratio_takes_case_ids_as_the_report_rows_name_them():
    run = load.load_run(REPO / "results/examples/sweep.json")
    e = explain.explain_ratio(run, ("up0/1536/cuda-f64/resident", "up0/1536/cudnn-f64/resident"))
    assert e.figures["ratio"] > 1.0 and e.figures["sweep"]["frames"] == [96, 384, 1536]
    with pytest.raises(KeyError):
        explain.explain_ratio(run, ("up0/96/nope/resident", "up0/96/cudnn-f64/resident"))


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "convbench_analysis", "explain", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_explain_lines_json_and_bad_input(tmp_path):
    path = REPO / "results/examples/counters.json"
    p = _cli(path, "--pair", "cuda-f64/per-call:cuda-f64-fma/resident")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 4 and all(ln.split()[0].endswith("/96") for ln in lines)
    p = _cli(path, "--pair", "cuda-f64/per-call:cuda-f64-fma/resident", "--json")
    got = json.loads(p.stdout)
    assert len(got) == 4 and all(0 < g["figures"]["staging_num"]["staging_share"] < 1 for g in got)
    for args in (
        (path, "--pair", "nope:cuda-f32"),
        (path, "--pair", "cuda-f32"),
        (tmp_path / "x",),
    ):
        p = _cli(*args)
        assert p.returncode == 2 and "Traceback" not in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1 and p.stdout == ""
