"""scripts/perf_table.py on the committed H200 comparison: the table and its per-target tally.

The counts are facts about results/examples/compare-bigvgan_v2_44khz_128band_512x.json (session
8's run: cp.async staging in f32, the 2-u 32-position tiles and the 5-blocks/SM cap added;
queued timing). Planted faults
seen failing: the cuDNN comparison written `f32 > n32` (0 of 18), the floor test without the 20 us cut (0 of 18), the chain set against the sum of the stages'
cudnn-f32 times instead of cuda-f32 (3 of 3 still met, but the ratio span moved: only the span
assertion caught it), the f64 comparisons written `t > n64` (8 and 3 of 18),
limit() reading the fp64 pipe for the f32 arm (its miss then said "fp64 pipe 0%"), the
refusal read from the wrong run index (for_case(1, ...): no dagger and no "refused" count,
caught by the last two assertions)."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "results/examples/compare-bigvgan_v2_44khz_128band_512x.json"


@pytest.mark.skipif(not RUN.exists(), reason="the 512x comparison is not committed")
def test_perf_table_tallies_the_targets_of_the_committed_run():
    out = subprocess.run(
        [sys.executable, str(REPO / "scripts/perf_table.py"), str(RUN)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [ln for ln in out.splitlines() if ln.startswith("| bigvgan_v2_44khz_128band_512x |")]
    assert len(rows) == 21  # 6 stages + the chain, at 96, 384 and 1536 frames
    assert (
        "- cuda-f32 faster than cudnn-f32: met in 18 of 18 (ratios 0.46-0.91), "
        "8 of the 18 refused by the analysis"
    ) in out
    assert "- cuda-f32 within 1.3x of the fp32 FMA floor (floor >= 20 us): met in 0 of 14 " in out
    assert (
        "- cuda-f64 within 1.3x of the no-FMA fp64 floor (floor >= 20 us): met in 6 of 17 " in out
    )
    assert "- chain within 1.1x of the sum of its stages: met in 3 of 3 (ratios 1.00-1.02)" in out
    assert "- cuda-f64 faster than cudnn-f64: met in 10 of 18 (ratios 0.34-1.32)" in out
    assert (
        "- cuda-f64-fma (the same bits) faster than cudnn-f64: met in 16 of 18 (ratios 0.31-1.05)"
        in out
    )
    # Each floor miss with what the counters say: tile waste (issued / valid) and pipe busy.
    # (Session 6: up0/96 in f64 at 1.85, issued/valid 1.34, on a 64-position tile over 96
    # positions; session 7's 32-position tile issues the valid work: 1.67, pipe 66%; session 8's
    # cap at 5 blocks per SM: 1.62, pipe 67%.)
    assert "bigvgan_v2_44khz_128band_512x up0/96 1.62 (issued/valid 1.02, fp64 pipe 67%)" in out
    assert "bigvgan_v2_44khz_128band_512x up0/96 2.04 (issued/valid 1.00, fp32 45% of peak)" in out
    # The analysis refuses up5/384's cuDNN ratio (sw_power_cap throttling in a round): marked.
    up5 = next(r for r in rows if "| up5 | 384 |" in r)
    assert "| 0.47† |" in up5


def test_perf_table_refuses_an_unreadable_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    r = subprocess.run(
        [sys.executable, str(REPO / "scripts/perf_table.py"), str(bad)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "bad.json" in r.stderr
