"""Schema and loader: every bad file is one InputError naming the file and the field; readers
ignore unknown fields.

Planted faults seen failing (then reverted):
- json.loads without parse_constant/parse_float: test_non_finite_rejected[NaN|Infinity|1e999]
  failed (the file loaded, since JSON Schema sees a float);
- every size guard removed (no stat check, no read cap, no length check): the 100 MB file was
  read and parsed (1.6 s) and test_100_mb_file_fails_fast failed on time;
- "seconds" minimum removed from the schema: test_negative_times_rejected failed.
"""

import json
import time

import pytest
import synth
from conftest import REPO

from convbench_analysis import load

REQUIRED_TOP = [
    "schema_version",
    "run_id",
    "tool",
    "argv",
    "started_utc",
    "ended_utc",
    "exit_status",
    "host",
    "gpus",
    "plan",
    "lease",
    "cases",
    "benchmarks",
    "context",
]
REQUIRED_CASE = [
    "id",
    "stage",
    "frames",
    "arm",
    "staging",
    "device",
    "shape",
    "flops",
    "min_bytes",
    "floor_s",
    "gate",
    "samples",
    "stats",
    "counters",
]


def _err(path) -> str:
    with pytest.raises(load.InputError) as e:
        load.load_run(path)
    msg = str(e.value)
    assert msg.startswith(str(path)), msg
    assert "\n" not in msg
    return msg


def test_packaged_schema_is_the_results_schema():
    assert load.load_schema() == json.loads((REPO / "results/result.schema.json").read_text())


def test_clean_run_loads(clean, write):
    assert load.load_run(write(clean)).data["run_id"] == clean["run_id"]


def test_every_synthetic_shape_is_valid(write):
    run = synth.make_run(stages=("up0", "up1", "up2"), frames=(96,), reps=3, arms=tuple(synth.ARMS))
    load.load_run(write(run))


@pytest.mark.parametrize("key", REQUIRED_TOP)
def test_missing_top_level_key(clean, write, key):
    del clean[key]
    assert f"'{key}' is a required property" in _err(write(clean))


@pytest.mark.parametrize("key", REQUIRED_CASE)
def test_missing_case_key(clean, write, key):
    del clean["cases"][4][key]
    msg = _err(write(clean))
    assert "$.cases[4]" in msg and f"'{key}'" in msg


@pytest.mark.parametrize(
    "path,value,field",
    [
        (("schema_version",), "1", "$.schema_version"),
        (("cases",), {}, "$.cases"),
        (("cases", 0, "device"), "yes", "$.cases[0].device"),
        (("cases", 0, "frames"), 96.5, "$.cases[0].frames"),
        (("cases", 0, "samples", 1, "seconds"), "fast", "$.cases[0].samples[1].seconds"),
        (("lease", "status"), "maybe", "$.lease.status"),
        (("run_id",), "not-hex", "$.run_id"),
        (("started_utc",), "2026-11-29 12:00", "$.started_utc"),
    ],
)
def test_wrong_types(clean, write, path, value, field):
    node = clean
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    assert f": {field}: " in _err(write(clean))


def test_collected_lease_requires_token_key(clean, write):
    del clean["lease"]["token"]
    assert "$.lease" in _err(write(clean))


@pytest.mark.parametrize("field", ["seconds", "total_seconds"])
def test_negative_times_rejected(clean, write, field):
    clean["cases"][2]["samples"][0][field] = -1e-6
    assert f"$.cases[2].samples[0].{field}" in _err(write(clean))


def test_negative_stats_rejected(clean, write):
    clean["cases"][1]["stats"]["best"] = -0.5
    assert "$.cases[1].stats.best" in _err(write(clean))


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_rejected(clean, write, tmp_path, token):
    clean["cases"][3]["samples"][2]["seconds"] = 12345.678
    p = tmp_path / "nan.json"
    p.write_text(json.dumps(clean).replace("12345.678", token))
    msg = _err(p)
    assert "$.cases[3].samples[2].seconds" in msg and "not a finite number" in msg


def test_truncated_file(clean, tmp_path):
    text = json.dumps(clean)
    p = tmp_path / "cut.json"
    p.write_text(text[: len(text) // 2])
    assert "truncated JSON" in _err(p)


@pytest.mark.parametrize("text", ['{"a": 1,, }', "not json", "{]"])
def test_malformed(tmp_path, text):
    p = tmp_path / "bad.json"
    p.write_text(text)
    assert "JSON" in _err(p)


def test_top_level_not_object(tmp_path):
    p = tmp_path / "list.json"
    p.write_text("[1, 2]")
    assert "is not of type 'object'" in _err(p)


def test_empty_and_binary_and_directory(tmp_path):
    (tmp_path / "empty.json").write_text("")
    assert "empty file" in _err(tmp_path / "empty.json")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00garbage")
    assert "not UTF-8" in _err(tmp_path / "bin.json")
    assert "directory" in _err(tmp_path)
    assert "No such file" in _err(tmp_path / "absent.json")


def test_deeply_nested(tmp_path):
    p = tmp_path / "deep.json"
    p.write_text("[" * 200_000 + "]" * 200_000)
    assert "nested too deeply" in _err(p)


def test_huge_integer(tmp_path, clean):
    p = tmp_path / "bigint.json"
    p.write_text(json.dumps(clean).replace('"exit_status": 0', '"exit_status": ' + "9" * 5000))
    assert "unreadable JSON value" in _err(p)


def test_100_mb_file_fails_fast(tmp_path):
    p = tmp_path / "huge.json"
    with open(p, "wb") as f:
        f.write(b'{"pad": "')
        f.write(b"x" * (100 * 1024 * 1024))
        f.write(b'"}')
    t0 = time.perf_counter()
    msg = _err(p)
    assert time.perf_counter() - t0 < 1.0
    assert "larger than 64 MiB" in msg


def test_unknown_fields_accepted(clean, write):
    clean["future_block"] = {"anything": [1, 2, 3]}
    clean["cases"][0]["new_metric"] = 1.5
    clean["cases"][0]["samples"][0]["extra"] = {"x": None}
    clean["lease"]["future"] = "x"
    clean["cases"][0]["counters"]["derived_v2"] = {}
    load.load_run(write(clean))


def test_null_probe_values_with_unavailable_map_accepted(clean, write):
    s = clean["cases"][2]["samples"][0]
    s["gpu_after"]["sm_clock_mhz"] = None
    s["gpu_after"]["unavailable"] = {"sm_clock_mhz": "NVML: libnvidia-ml.so.1 not found"}
    clean["host"]["governor"] = None
    load.load_run(write(clean))


def test_failed_gate_case_with_null_stats_accepted(clean, write):
    c = clean["cases"][0]
    c["gate"]["result"], c["samples"], c["stats"] = "fail", [], None
    load.load_run(write(clean))


def test_duplicate_case_id(clean, write):
    clean["cases"][1]["id"] = clean["cases"][0]["id"]
    assert "duplicate case id" in _err(write(clean))
