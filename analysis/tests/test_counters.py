"""The counters column: where each arm's arithmetic ran (record.achieved over the counters
block's paths) and how the report states it. A tensor-core arm shows its tensor path; a pipe
nobody counted is named as not counted, never read as idle."""

import json

import pytest
from helpers import cli

from convbench_analysis import record, report

BEST = 1e-4  # seconds per call


def _path(name, pipe, prec, flop, peak, **extra):
    return {
        "name": name,
        "pipe": pipe,
        "precision": prec,
        "flop": flop,
        "peak_tflops": peak,
    } | extra


def _dmma_block():
    """What the fp-throughput profile records for a DMMA arm: most FLOP on the fp64 tensor path,
    the bias adds and split sums on SIMT fp64, no tf32 peak measured, bf16's metric refused."""
    return {
        "status": "collected",
        "profile": "fp-throughput",
        "passes": 3,
        "metrics": {},
        "derived": {},
        "paths": [
            _path("fp64 SIMT", "simt", "fp64", 5e7, 33.3),
            _path("fp32 SIMT", "simt", "fp32", 0.0, 66.7),
            _path("fp64 DMMA", "tensor", "fp64", 3.66e9, 66.6),
            _path("tf32 tensor", "tensor", "tf32", 0.0, None, unavailable={"peak_tflops": "x"}),
            _path(
                "bf16 tensor",
                "tensor",
                "bf16",
                None,
                None,
                unavailable={"flop": "metric m refused by the profiler: CUPTI_ERROR_X (26)"},
            ),
        ],
        "rejected_metrics": {"m": "CUPTI_ERROR_X (26)"},
    }


def _case(block):
    return {"stats": {"best": BEST}, "counters": block}


# Planted fault (seen failing): _ctr_text printing only the SIMT fp64/fp32 entries (the column
# before tensor paths existed): "fp64 SIMT 0.5 TFLOP/s = 1.5% of 33.3" for the DMMA arm.
def test_dominant_path_with_its_peak():
    a = record.achieved(_case(_dmma_block()))
    assert a["dominant"]["name"] == "fp64 DMMA"
    assert a["dominant"]["tflops"] == pytest.approx(36.6)
    assert a["dominant"]["pct_peak"] == pytest.approx(100 * 36.6 / 66.6)
    assert a["dominant"]["share_pct"] == pytest.approx(100 * 3.66e9 / 3.71e9)
    assert a["fp64"]["name"] == "fp64 SIMT"  # the SIMT entries stay where readers find them
    text = report._ctr_text(a)
    assert text.startswith("fp64 DMMA 36.6 TFLOP/s = 55% of 66.6; fp64 SIMT 0.5 (1.3% of FLOP)")
    assert "not counted: bf16 tensor (metric m refused by the profiler" in text
    assert "tf32" not in text  # counted, and zero: nothing to say


# Planted fault (seen failing): achieved() without its not_counted list; the column then read
# "fp64 SIMT 0.237 TFLOP/s = 0.7% of 33.3" for a DMMA arm whose tensor work nobody counted.
def test_a_record_without_tensor_paths_never_calls_the_arm_idle():
    m = {
        f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum": 0.0
        for op in ("dadd", "dmul", "dfma", "fadd", "fmul", "ffma")
    }
    m["smsp__sass_thread_inst_executed_op_dadd_pred_on.sum"] = 2.37e7
    m["sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained"] = 8448
    m["sm__cycles_elapsed.avg.per_second"] = 1.88e9
    block = {"status": "collected", "profile": "fp-throughput", "metrics": m, "derived": {}}
    a = record.achieved(_case(block))
    assert a["dominant"]["name"] == "fp64 SIMT"
    assert a["fp64"]["pct_peak"] == pytest.approx(100 * 0.237 / (2 * 8448 * 1.88e9 / 1e12))
    text = report._ctr_text(a)
    assert "not counted: tensor pipes (profile 'fp-throughput' counts no tensor path)" in text


def test_nothing_counted_and_unavailable():
    block = _dmma_block()
    for p in block["paths"]:
        p["flop"] = 0.0 if p["flop"] is not None else None
    a = record.achieved(_case(block))
    assert a["dominant"] is None
    assert report._ctr_text(a).startswith("collected, no FLOP counted; not counted: bf16 tensor")
    a = record.achieved(_case({"status": "unavailable", "call": "cuptiX", "message": "no"}))
    assert report._ctr_text(a) == "unavailable (cuptiX: no)"
    assert report._ctr_text(None) == "-"


def test_a_peak_devices_json_lacks_is_said():
    block = _dmma_block()
    block["paths"][3]["flop"] = 1e10  # tf32 work, no measured tf32 peak
    text = report._ctr_text(record.achieved(_case(block)))
    assert text.startswith("tf32 tensor 100 TFLOP/s (no peak known)")


# The whole way: a record whose cuda-f64 case carries the new block validates against the schema
# and the report's column names the tensor path.
def test_report_shows_the_tensor_path(clean, write):
    case = next(c for c in clean["cases"] if c["arm"] == "cuda-f64")
    case["counters"] = _dmma_block()
    rc, out, err = cli("report", write(clean))
    assert rc == 0, err
    assert "fp64 DMMA" in out and "% of 66.6" in out
    rc, out, err = cli("report", write(clean), "--json")
    row = next(r for g in json.loads(out)["groups"] for r in g["cases"] if r["case"] == case["id"])
    assert row["counters"]["dominant"]["name"] == "fp64 DMMA"


# The TFLOP/s figure plots each arm's paths: the DMMA arm's tensor path, with its peak line.
# Planted fault (seen failing): the figure plotting only the fp64 / fp32 SIMT entries.
def test_tflops_figure_by_pipe(clean, write):
    import matplotlib

    matplotlib.use("Agg")
    from convbench_analysis import assess, load, plot

    case = next(c for c in clean["cases"] if c["arm"] == "cuda-f64")
    case["counters"] = _dmma_block()
    a = assess.assess([load.load_run(write(clean))])
    fig = dict(plot.figures(a))[next(s for s, _ in plot.figures(a) if s.endswith("-tflops"))]
    labels = {line.get_label() for ax in fig.axes for line in ax.get_lines()}
    assert "cuda-f64/resident (fp64 DMMA)" in labels
    texts = {t.get_text() for ax in fig.axes for t in ax.texts}
    assert "fp64 DMMA peak 66.6" in texts
