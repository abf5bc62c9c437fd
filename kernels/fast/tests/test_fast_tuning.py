"""kernels/fast/tools/fast_tuning.py: a block-shape sweep's records -> the tuning table, on records
built here.

Planted (each seen failing these tests): choosing the largest median instead of the smallest;
taking a case whose gate failed; counting per-call cases.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
ROW = re.compile(
    r"    // (.*)\n    \{(\d+), (\d+), (\d+), (\d+), (\d+), (\d+), Arm::(\w+), \{([^}]*)\}\},"
)


def load_tuning():
    tool = ROOT / "kernels/fast/tools/fast_tuning.py"
    spec = importlib.util.spec_from_file_location("fast_tuning", tool)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


UP0 = {
    "op": "transposed",
    "batch": 1,
    "cin": 1536,
    "cout": 768,
    "k": 16,
    "stride": 8,
    "padding": 4,
    "l_in": 96,
    "l_out": 768,
    "dilation": 1,
    "output_padding": 0,
}
UP1 = dict(UP0, cin=768, cout=384, k=8, stride=4, padding=2, l_in=768, l_out=3072)


def case(stage, shape, arm, median, gate="pass", staging="resident"):
    return {
        "id": f"{stage}/96/{arm}/{staging}",
        "stage": stage,
        "frames": 96,
        "arm": arm,
        "staging": staging,
        "shape": shape,
        "gate": {"kind": "bitwise", "result": gate},
        "stats": {"median": median} if gate == "pass" else None,
    }


def record(cases):
    return {
        "schema_version": 1,
        "plan": {"model": "bigvgan_v2_44khz_128band_512x"},
        "gpus": [{"name": "NVIDIA H200"}],
        "tool": {"git_sha": "abc"},
        "cases": cases,
    }


def write(tmp_path, name, cases):
    p = tmp_path / name
    p.write_text(json.dumps(record(cases)))
    return str(p)


def rows(text):
    """(cin, cout, k, stride, padding, l_in, arm, block fields, the case it was chosen on)."""
    return [(*m.groups()[1:], m.group(1)) for m in ROW.finditer(text)]


def test_fastest_gated_block_per_shape_and_arm(tmp_path, capsys):
    cases = [
        case("up0", UP0, "cuda-f64@t64-c16-k16-u8", 3e-4),
        case("up0", UP0, "cuda-f64@t128-c8-k16-u16-b5", 2e-4),  # fastest on up0
        case("up0", UP0, "cuda-f64@t128-c32-k16-u16-r8-rm", 2.5e-4),
        case("up0", UP0, "cuda-f64@t128-c32-k16-u16-r8-rm", 1e-6, staging="per-call"),  # not timed
        # resident: a per-call case would make this block the fastest
        case("up0", UP0, "cuda-f64", 1e-5),  # the tuned arm itself, not a block
        case("up1", UP1, "cuda-f64@t64-c16-k16-u8", 1e-4),  # fastest on up1
        case("up1", UP1, "cuda-f64@t128-c8-k16-u16-b5", 3e-4),
        case("up1", UP1, "cuda-f64@t128-c32-k16-u16-r8-rm", 1.1e-4),
        case("up0", UP0, "cuda-f32@t256-c64-k16-u16-r8-b2-a3-s2", 1e-4),
    ]
    assert load_tuning().main([write(tmp_path, "sweep.json", cases)]) == 0
    out = capsys.readouterr().out
    got = {(r[0], r[6]): (r[7], r[8]) for r in rows(out)}
    assert got[("1536", "kF64")] == (
        "128, 8, 16, 16, 4, 5, 1",
        "bigvgan_v2_44khz_128band_512x up0 96: t128-c8-k16-u16-b5",
    )
    assert got[("768", "kF64")][0] == "64, 16, 16, 8, 4, 1, 1"
    assert got[("1536", "kF32")][0] == "256, 64, 16, 16, 8, 2, 2, false, 3"
    assert len(got) == 3
    # The fallback: the block nearest the best over both shapes (geomean of time / best):
    # t128-c32-k16-u16-r8-rm at 1.25 and 1.1 beats 1.0 and 3.0, and 1.5 and 1.0.
    fallback = re.search(r"    // (\S+)\n    \{Arm::kF64, \{([^}]*)\}\},", out)
    assert fallback.group(1) == "t128-c32-k16-u16-r8-rm"
    assert fallback.group(2) == "128, 32, 16, 16, 8, 1, 1, true"
    assert " us" not in out and "e-0" not in out  # choices, not times


def test_a_block_that_failed_its_gate_refuses_the_table(tmp_path, capsys):
    cases = [
        case("up0", UP0, "cuda-f64@t64-c16-k16-u8", 3e-4),
        case("up0", UP0, "cuda-f64@t128-c8-k16-u16-b5", None, gate="fail"),
    ]
    assert load_tuning().main([write(tmp_path, "sweep.json", cases)]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "failed their gate" in captured.err and "t128-c8-k16-u16-b5" in captured.err


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        json.dumps({"rows": []}),
        json.dumps(record([case("up0", UP0, "cuda-f64", 1e-4)])),
    ],
)
def test_input_that_is_no_sweep_is_refused_in_one_line(tmp_path, capsys, content):
    p = tmp_path / "bad.json"
    p.write_text(content)
    assert load_tuning().main([str(p)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fast_tuning: ")


def test_the_committed_table_is_in_the_generated_format():
    text = (ROOT / "kernels/fast/src/tuned_configs.inc").read_text()
    table = rows(text)
    assert len(table) == text.count("Arm::k") - text.count("{Arm::k"), "a row the parser missed"
    mod = load_tuning()
    for r in table:
        block = r[8].rsplit(": ", 1)[1]
        assert ", ".join(mod.block_fields(block)) == r[7], block
        assert " us" not in r[8]


def test_a_partial_sweep_updates_only_the_rows_it_covers(tmp_path, capsys):
    # A table chosen on up0 and up1 (f64), then a sweep of up0 alone that picks another block:
    # up0's row changes and says by how much the old block was slower, up1's row and the
    # fallback stay as they were. (Planted: --update writing the sweep's rows alone dropped
    # up1's row and the fallback here; the ratio inverted read 0.667x.)
    tuning = load_tuning()
    first = [
        case("up0", UP0, "cuda-f64@t64-c16-k16-u8", 2e-4),  # fastest on up0 at first
        case("up0", UP0, "cuda-f64@t128-c8-k16-u16-b5", 3e-4),
        case("up1", UP1, "cuda-f64@t64-c16-k16-u8", 1e-4),
        case("up1", UP1, "cuda-f64@t128-c8-k16-u16-b5", 3e-4),
    ]
    assert tuning.main([write(tmp_path, "first.json", first)]) == 0
    table = tmp_path / "tuned.inc"
    table.write_text(capsys.readouterr().out)
    before = {(r[0], r[6]): r[7] for r in rows(table.read_text())}
    again = [
        case("up0", UP0, "cuda-f64@t64-c16-k16-u8", 3e-4),
        case("up0", UP0, "cuda-f64@t128-c8-k16-u16-b5", 2e-4),  # now the fastest on up0
    ]
    assert tuning.main(["--update", str(table), write(tmp_path, "up0.json", again)]) == 0
    captured = capsys.readouterr()
    after = {(r[0], r[6]): r[7] for r in rows(captured.out)}
    assert after[("1536", "kF64")] == "128, 8, 16, 16, 4, 5, 1"  # re-chosen
    assert after[("768", "kF64")] == before[("768", "kF64")]  # kept
    assert len(after) == 2
    old_fallback = re.search(r"kFallback\[\] = \{\n    // (\S+)", table.read_text()).group(1)
    assert re.search(r"kFallback\[\] = \{\n    // (\S+)", captured.out).group(1) == old_fallback
    changed = [ln for ln in captured.err.splitlines() if ln.startswith("fast_tuning: changed")]
    assert len(changed) == 1
    assert "up0 96 cuda-f64: t64-c16-k16-u8 -> t128-c8-k16-u16-b5 (1.500x)" in changed[0]


def test_update_refuses_a_file_that_is_no_table(tmp_path, capsys):
    bad = tmp_path / "bad.inc"
    bad.write_text("int x;\n")
    sweep = write(tmp_path, "s.json", [case("up0", UP0, "cuda-f64@t64-c16-k16-u8", 2e-4)])
    assert load_tuning().main(["--update", str(bad), sweep]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no kTuned row" in err[0]
