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


def test_schema_version_2_requires_status(clean, write):
    del clean["status"]
    assert "'status' is a required property" in _err(write(clean))


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
        (("status",), "partial", "$.status"),
        (("cases", 0, "stop_reason"), "rounds", "$.cases[0].stop_reason"),
        (("cases", 0, "target_ci"), -0.01, "$.cases[0].target_ci"),
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


@pytest.mark.parametrize(
    "mark,into",
    [(", ", 0), ('"seconds": ', 2), ('"comm": "', 2)],
    ids=["between", "number", "string"],
)
def test_truncated_file(clean, tmp_path, mark, into):
    # a write cut short ends anywhere: between tokens, inside a number (0.|0123) or inside a
    # string (a comm, a reason); each is truncated, not malformed
    text = json.dumps(clean)
    cut = text.index(mark, len(text) // 2) + len(mark) + into
    p = tmp_path / "cut.json"
    p.write_text(text[:cut])
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


# ---- records that contradict themselves (consistency.py) -----------------------------------
# Planted fault seen failing (then reverted): check() without _lease(): the lying lease
# (foreign_gpu_processes_max = 3 with verdict valid) loaded and test_lying_record_is_refused
# [lease_liar] failed.


def _lie(run, kind):
    c = run["cases"][4]
    if kind == "lease_liar":
        run["lease"]["observation"]["foreign_gpu_processes_max"] = 3
        return "$.lease.verdict", "foreign_gpu_processes_max = 3"
    if kind == "failed_check_valid":
        run["lease"]["end_check"]["ok"] = False
        return "$.lease.verdict", "end_check.ok is false"
    if kind == "observation_below_samples":
        dev = next(c for c in run["cases"] if c["device"])
        dev["samples"][0]["gpu_after"]["foreign_processes"] = 2
        run["lease"]["verdict"] = "void"
        run["lease"]["observation"]["foreign_gpu_processes_max"] = 0
        return "$.lease.observation.foreign_gpu_processes_max", "a sample saw 2"
    if kind == "id_names_another_stage":
        c["id"] = c["id"].replace(c["stage"], "up5", 1)
        return "$.cases[4].id", "disagrees with its fields"
    if kind == "end_before_start":
        run["ended_utc"] = "2020-01-01T00:00:00.000Z"
        return "$.ended_utc", "before $.started_utc"
    if kind == "best_not_the_min":
        c["stats"]["best"] *= 0.5
        return "$.cases[4].stats.best", "the samples' min"
    if kind == "n_not_the_count":
        c["stats"]["n"] = 99
        return "$.cases[4].stats.n", "99, but 5 samples"
    if kind == "more_samples_than_rounds":
        c["samples"].append(dict(c["samples"][0], round=7))
        return "$.cases[4].samples", "more than the run's 5 rounds"
    if kind == "round_twice":
        c["samples"][1]["round"] = c["samples"][0]["round"]
        return "$.cases[4].samples[1].round", "sampled twice"
    if kind == "total_not_per_call_x_iterations":
        c["samples"][2]["total_seconds"] *= 3
        return "$.cases[4].samples[2].total_seconds", "seconds x iterations"
    if kind == "host_staging_on_device":
        c["device"] = not c["device"]
        return "$.cases[4].device", "with staging"
    if kind == "bitwise_pass_with_mismatches":
        c["gate"].update({"kind": "bitwise", "result": "pass", "mismatches": 4})
        return "$.cases[4].gate.result", "4 mismatching"
    raise AssertionError(kind)


LIES = [
    "lease_liar",
    "failed_check_valid",
    "observation_below_samples",
    "id_names_another_stage",
    "end_before_start",
    "best_not_the_min",
    "n_not_the_count",
    "more_samples_than_rounds",
    "round_twice",
    "total_not_per_call_x_iterations",
    "host_staging_on_device",
    "bitwise_pass_with_mismatches",
]


@pytest.mark.parametrize("kind", LIES)
def test_lying_record_is_refused(clean, write, kind):
    field, words = _lie(clean, kind)
    msg = _err(write(clean))
    assert f": {field}: " in msg and words in msg, msg


def test_lying_record_exits_2_with_one_line(clean, write):
    import subprocess
    import sys

    _lie(clean, "lease_liar")
    p = subprocess.run(
        [sys.executable, "-m", "convbench_analysis", "report", str(write(clean))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "$.lease.verdict" in p.stderr


@pytest.mark.parametrize(
    "where,value,field",
    [
        (("workers", 0, "speed_after"), "fast", "workers[0].speed_after"),
        (("workers", 0, "involuntary_cs"), -1, "workers[0].involuntary_cs"),
        (("top_foreign",), {"pid": 1}, "top_foreign"),
        (("top_foreign", 0, "pid"), "1187", "top_foreign[0].pid"),
    ],
)
def test_probe_fields_are_typed(clean, write, where, value, field):
    host = next(i for i, c in enumerate(clean["cases"]) if not c["device"])
    node = clean["cases"][host]["samples"][0]
    for k in where[:-1]:
        node = node[k]
    node[where[-1]] = value
    assert f"$.cases[{host}].samples[0].{field}" in _err(write(clean))


def test_older_record_without_probe_fields_loads(write):
    run = synth.make_run(probes=False)
    assert run["schema_version"] == 1 and "status" not in run
    assert "workers" not in run["cases"][0]["samples"][0]
    load.load_run(write(run))
