"""Which ratios a report shows, from what each arm states of itself (the record's `precision`,
`math`, `role`), its name read only for older records without them.

Planted faults seen failing (then reverted): record.arm_facts ignoring the record's fields (names
only): test_a_plugin_arm_is_paired_by_what_it_states failed (its name says nothing); cublas arms
read as candidates (role fallback without the ceiling): test_ceilings_are_never_candidates
failed; cuda-copy and cuda-launch left out of the name's ceilings: read as simt candidates."""

from __future__ import annotations

import pytest

from convbench_analysis import pairs, record


def case(arm, staging="resident", **facts):
    return {"arm": arm, "staging": staging, **facts}


def group(*cases):
    return {record.label(c): c for c in cases}


@pytest.mark.parametrize(
    "arm, precision, math, role",
    [
        ("cpu-f64", "f64", "host", "reference"),
        ("cpu-f32", "f32", "host", "candidate"),
        ("cuda-f64-fma", "f64", "simt-fma", "candidate"),
        ("cuda-f64-dmma", "f64", "dmma", "candidate"),
        ("cuda-f32x3", "f32x3", "mma-tf32", "candidate"),
        ("cuda-tf32", "tf32", "mma-tf32", "candidate"),
        ("cudnn-f32", "f32", "cudnn", "peer"),
        ("cudnn-f32#2", "f32", "cudnn", "peer"),
        ("torch-cudnn-tf32", "tf32", "cudnn", "peer"),
        ("cublas-tf32", "tf32", "cublas", "ceiling"),
        ("cuda-copy", None, "memcpy", "ceiling"),
        ("cuda-launch#2", None, "launch", "ceiling"),
        ("my-conv", None, None, "candidate"),
    ],
)
def test_an_older_record_s_arm_is_read_from_its_name(arm, precision, math, role):
    f = record.arm_facts(case(arm))
    assert (f.precision, f.math, f.role, f.stated) == (precision, math, role, False)


def test_the_record_s_fields_win_over_the_name():
    f = record.arm_facts(case("cuda-f32", precision="f32x3", math="wgmma-tf32", role="candidate"))
    assert (f.precision, f.math, f.role, f.stated, f.accuracy) == (
        "f32x3",
        "wgmma-tf32",
        "candidate",
        True,
        "f32",
    )


def test_a_plugin_arm_is_paired_by_what_it_states():
    stated = case("myconv", precision="f32", math="plugin", role="candidate")
    peer = case("cudnn-f32", precision="f32", math="cudnn", role="peer")
    ref = case("cpu-f64", "host", precision="f64", math="host", role="reference")
    got = pairs.default_pairs(group(stated, peer, ref))
    assert got == [("myconv/resident", "cudnn-f32/resident")]
    # the same arm in an older record says nothing of its precision: against the reference
    got = pairs.default_pairs(group(case("myconv"), case("cudnn-f32"), case("cpu-f64", "host")))
    assert got == [("myconv/resident", "cpu-f64/host")]


def test_ceilings_are_never_candidates():
    cases = [case("cpu-f64", "host"), case("cuda-f32"), case("cudnn-f32"), case("cublas-f32")]
    got = pairs.default_pairs(group(*cases))
    assert got == [("cuda-f32/resident", "cudnn-f32/resident")]
    stated = [case("cuda-f32"), case("cudnn-f32"), case("gemm", precision="f32", role="ceiling")]
    assert pairs.default_pairs(group(*stated)) == [("cuda-f32/resident", "cudnn-f32/resident")]
    got, _ = pairs.choose(group(*cases), "cpu-f64", None)
    assert "cublas-f32/resident" not in {n for n, _ in got} and len(got) == 2


def test_3xtf32_is_set_against_the_f32_peer_and_twins_sit_out():
    cases = [case("cuda-f32x3"), case("cudnn-f32#2"), case("cudnn-f32"), case("cuda-f32x3#2")]
    assert pairs.default_pairs(group(*cases)) == [("cuda-f32x3/resident", "cudnn-f32/resident")]
    twin = case("cuda-f32-again", twin_of="up0/96/cuda-f32/resident")
    assert pairs.default_pairs(group(case("cuda-f32"), case("cudnn-f32"), twin)) == [
        ("cuda-f32/resident", "cudnn-f32/resident")
    ]


def test_bare_labels_still_pair_by_name():
    labels = ["cpu-f64/host", "cpu-f32/host", "cuda-f64/per-call", "cudnn-f64/resident"]
    assert pairs.default_pairs(labels) == [
        ("cpu-f32/host", "cpu-f64/host"),
        ("cuda-f64/per-call", "cudnn-f64/resident"),
    ]
