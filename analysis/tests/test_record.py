"""The record's typed views: a loaded run's cases, samples, gates, lease and plan read as
attributes and are still the dicts they were (json writes them unchanged, callers may index
them). Planted: Case not converting its samples made
test_a_loaded_run_reads_as_views_and_stays_its_json fail (a sample without .round)."""

from __future__ import annotations

import copy
import json

import synth

from convbench_analysis import record


def test_a_loaded_run_reads_as_views_and_stays_its_json():
    data = synth.make_run(seed=3)
    before = json.dumps(data, sort_keys=True)
    run = record.Run("run.json", data)
    assert json.dumps(run.data, sort_keys=True) == before
    c = run.cases[0]
    assert isinstance(c, record.Case) and isinstance(c, dict)
    assert (c.id, c.arm, c.staging, c.device) == (c["id"], c["arm"], c["staging"], c["device"])
    s = c.samples[0]
    assert isinstance(s, record.Sample) and s.round == s["round"] and s.seconds == s["seconds"]
    assert s.window_s == (s.get("total_seconds") or s["seconds"])
    assert isinstance(c.gate, record.CorrectnessGate) and c.gate.result == c["gate"]["result"]
    assert isinstance(run.lease, record.Lease) and run.lease.token == data["lease"]["token"]
    assert run.plan.device_timing == data["plan"].get("device_timing", "launched")
    assert run.run_id == data["run_id"] and run.cores >= 1
    # a copy keeps its views
    assert isinstance(copy.deepcopy(run.data)["cases"][0], record.Case)


def test_a_view_of_a_partial_dict_adds_no_fields():
    raw = {"arm": "cuda-f32", "staging": "resident"}
    c = record.Case.of(raw)
    assert dict(c) == raw and c.samples == [] and c.device is False
    assert record.Case.of(c) is c and record.Lease.of(None) is None


def test_lease_and_plan_views_say_what_the_record_leaves_out():
    lease = record.Lease({"status": "collected", "observation": {"foreign_gpu_samples": ["x"]}})
    assert lease.collected and lease.foreign_gpu_samples == ["x"]
    assert lease.foreign_gpu_processes_max == 0 and lease.fencing is None and not lease.adopted
    assert record.Plan({}).device_timing == "launched" and record.Plan({}).rounds is None
    assert record.Plan({"order": [[0], [1]]}).rounds == 2


def test_blocks_set_after_the_run_was_made_are_read_as_views():
    run = record.Run("run.json", synth.make_run(seed=4))
    run.data["lease"] = dict(run.data["lease"], token=None)
    run.data["cases"].append(dict(run.cases[0], id="extra"))
    run.cases[0]["samples"].append(dict(run.cases[0].samples[0], round=99))
    assert run.lease.token is None and run.cases[-1].id == "extra"
    assert run.cases[0].samples[-1].round == 99 and isinstance(run.lease, record.Lease)
