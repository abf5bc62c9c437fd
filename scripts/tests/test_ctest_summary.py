"""scripts/ctest_summary.py: ran/passed/failed/skipped counts and the skips grouped by the reason
each test printed, lines within 100 columns. Planted faults seen failing: skips counted as passes
(status ignored), the reason taken from the "Skipped" line itself, no truncation."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "ctest_summary.py"

GTEST_SKIP = """[ RUN      ] TcGpu.A
/src/kernels/tc/tests/tc_gpu_test.cpp:193: Skipped
no usable GPU, tensor-core kernels not run: cudaGetDeviceCount failed: insufficient driver
[  SKIPPED ] TcGpu.A (0 ms)"""
E2E_SKIP = "SKIPPED: no GPU here (nvidia-smi -L failed): the CUDA arms run only on the GPU machine"
LONG = "x" * 300

JUNIT = f"""<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="(empty)" tests="6" failures="1" skipped="4">
 <testcase name="bench.units" status="run"><system-out>ok</system-out></testcase>
 <testcase name="tc.gpu.A" status="notrun"><skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
  <system-out>{GTEST_SKIP}</system-out></testcase>
 <testcase name="tc.gpu.B" status="notrun"><skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
  <system-out>{GTEST_SKIP.replace("TcGpu.A", "TcGpu.B")}</system-out></testcase>
 <testcase name="bench.gpu_run" status="notrun"><skipped message="SKIP_RETURN_CODE=77"/>
  <system-out>{E2E_SKIP}</system-out></testcase>
 <testcase name="odd" status="notrun"><skipped message="SKIP_RETURN_CODE=77"/>
  <system-out>SKIPPED: {LONG}</system-out></testcase>
 <testcase name="bench.rooms" status="fail"><failure message="Failed"/></testcase>
</testsuite>
"""


def summarize(tmp_path, text=JUNIT):
    f = tmp_path / "junit.xml"
    f.write_text(text)
    return subprocess.run([sys.executable, str(SCRIPT), str(f)], capture_output=True, text=True)


def test_counts_and_grouped_reasons(tmp_path):
    r = summarize(tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "tests: 6 ran, 1 passed, 1 failed, 4 skipped"
    assert "  2 skipped: no usable GPU, tensor-core kernels not run" in lines
    assert "  1 skipped: no GPU here (nvidia-smi -L failed)" in lines
    assert "  FAILED bench.rooms" in lines
    assert all(len(ln) <= 100 for ln in lines)


def test_unreadable_file_is_one_line_and_exit_2(tmp_path):
    r = summarize(tmp_path, "<testsuite")
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1
