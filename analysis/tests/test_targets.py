"""targets.py on synthetic records whose answers are known: every case's round times are set, so
each ratio is known (cuda-f32 over cudnn-f32: 0.8 at up0/96, 1.2 at up0/384, exactly 0.5 at
up1/96 in one round, where the ratio is best over best).

Planted faults seen failing (each then reverted):
- the comparison flipped (`not holds(...)` for the status): test_a_met_and_a_missed_row,
  test_the_bound_on_the_boundary, test_the_higher_is_better_direction
- `<=` read as `<` (OPS["<="] = operator.lt): test_the_bound_on_the_boundary
- a refused arm timed anyway (the refusals not asked): test_a_refused_arm_is_no_data_with_its_cause
  (the cut-short case's ratio stated; the gate-failed one's a TypeError)
- the least candidate time ignored (_under_least always False):
  test_the_least_candidate_time_leaves_cases_out
- reference / candidate read as candidate / reference: test_the_higher_is_better_direction
- twins compared (record.is_twin_arm not asked in _row): test_twins_and_other_stagings_are_not_rows
- per-call preferred to resident (_staging picking min(both) first):
  test_twins_and_other_stagings_are_not_rows
- a MISSED row without its kernel (row["kernel"] left None): test_a_met_and_a_missed_row
- a bad entry accepted (the op not checked): test_a_bad_targets_file_is_one_line[op]
- a file's entry appended beside the built-in of its id: test_a_file_adds_and_replaces
- md without its header (the records table not printed): test_the_formats
- md rows padded (compact not passed to tables.render): test_the_formats
- a folder's pattern for files that are not all of it (the comparison left out):
  test_the_command_names_a_whole_folder_by_its_pattern
- the records judged together (targets.build(assess(runs))): test_records_are_judged_one_by_one
  (the second record's rows no data, config-changed)
"""

from __future__ import annotations

import copy
import csv
import io
import json

import pytest
import synth
from helpers import cli

from convbench_analysis import assess, load, targets

ROUNDS = 8
# per-round multiplicative wiggle shared by both arms of a case: the paired ratio is exact
WIGGLE = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99]


def target(**kw) -> dict:
    t = {
        "id": "f32-vs-cudnn",
        "candidate": "cuda-f32",
        "reference": "cudnn-f32",
        "op": "<=",
        "bound": 1.0,
        "stages": "up0",
        "says": "our f32 no slower than cuDNN's",
    }
    return targets._checked(t | kw, "test")


def known_run(arms=("cuda-f32", "cudnn-f32")) -> dict:
    run = synth.make_run(stages=("up0", "up1"), frames=(96, 384), arms=arms, reps=ROUNDS)
    ratio = {("up0", 96): 0.8, ("up0", 384): 1.2, ("up1", 96): 0.5, ("up1", 384): 0.9}
    for c in run["cases"]:
        ref = 100e-6 * (1 + 3 * (c["frames"] == 384))
        mine = c["arm"].split("#")[0] == "cuda-f32"
        t = ref * (ratio[(c["stage"], c["frames"])] if mine else 1.0)
        if c["stage"] == "up1" and c["frames"] == 96:
            synth.set_seconds(c, [t])  # one round: best over best, exactly 0.5
        else:
            synth.set_seconds(c, [t * w for w in WIGGLE])
        c["kernel"] = {"name": f"{c['arm']} tile 64x32"}
    return run


def build(tmp_path, run, ts) -> dict:
    p = tmp_path / "run.json"
    p.write_text(json.dumps(run))
    return targets.build(assess.assess([load.load_run(p)]), ts)


def rows(rep, tid=None) -> dict:
    x = (
        rep["targets"][0]
        if tid is None
        else next(x for x in rep["targets"] if x["target"]["id"] == tid)
    )
    return {(r["stage"], r["frames"], r["candidate"]): r for r in x["rows"]}


def test_a_met_and_a_missed_row(tmp_path):
    rep = build(tmp_path, known_run(), [target()])
    got = rows(rep)
    assert set(got) == {("up0", 96, "cuda-f32"), ("up0", 384, "cuda-f32")}
    met, missed = got[("up0", 96, "cuda-f32")], got[("up0", 384, "cuda-f32")]
    assert met["status"] == "met" and met["kernel"] is None
    assert met["ratio"] == pytest.approx(0.8, rel=1e-9) and met["method"] == "paired"
    assert met["ci"][0] <= 0.8 <= met["ci"][1]
    assert met["candidate_s"] == pytest.approx(80e-6 * 0.98)
    assert met["reference_s"] == pytest.approx(100e-6 * 0.98)
    assert missed["status"] == "MISSED" and missed["ratio"] == pytest.approx(1.2, rel=1e-9)
    # the candidate's kernel, and what its counters say (explain's words)
    assert missed["kernel"].startswith("cuda-f32 tile 64x32; fp32 SIMT")
    assert "DRAM" in missed["kernel"]
    assert rep["targets"][0]["summary"] == {
        "cases": 2,
        "met": 1,
        "missed": 1,
        "no_data": 0,
        "under_min_time": 0,
    }


def test_the_bound_on_the_boundary(tmp_path):
    run = known_run()
    le = target(id="le", bound=0.5, stages="up1")
    lt = target(id="lt", op="<", bound=0.5, stages="up1")
    rep = build(tmp_path, run, [le, lt])
    at_le, at_lt = (
        rows(rep, "le")[("up1", 96, "cuda-f32")],
        rows(rep, "lt")[("up1", 96, "cuda-f32")],
    )
    assert at_le["ratio"] == 0.5 and at_le["method"] == "best of rounds"
    assert at_le["status"] == "met" and at_lt["status"] == "MISSED"
    # 0.9 is beyond 0.5 either way
    assert rows(rep, "le")[("up1", 384, "cuda-f32")]["status"] == "MISSED"


def test_a_refused_arm_is_no_data_with_its_cause(tmp_path):
    run = known_run()
    c = synth.case(run, "up0/384/cudnn-f32/resident")
    c["gate"].update(result="fail", mismatches=100, max_abs_err=0.5, rel_l2_err=0.3)
    c["samples"], c["stats"] = [], None  # a case whose gate failed is never timed
    rep = build(tmp_path, run, [target()])
    r = rows(rep)[("up0", 384, "cuda-f32")]
    assert r["status"] == "no data" and r["ratio"] is None
    assert r["why"] == "cudnn-f32: gate-failed"
    assert rep["targets"][0]["summary"]["no_data"] == 1
    # a case cut short (timed, but stopped before its stopping rule decided): refused, its
    # rounds not read
    c = synth.case(run, "up0/96/cuda-f32/resident")
    c["stop_reason"] = "interrupted"
    rep = build(tmp_path, run, [target()])
    r = rows(rep)[("up0", 96, "cuda-f32")]
    assert r["status"] == "no data" and r["ratio"] is None and r["why"] == "cuda-f32: cut-short"
    # an arm this record never ran: no data, said so
    rep = build(tmp_path, run, [target(reference="cublas-sgemm")])
    r = rows(rep)[("up0", 96, "cuda-f32")]
    assert r["status"] == "no data" and r["why"] == "cublas-sgemm not measured in this record"
    assert r["candidate_s"] == pytest.approx(80e-6 * 0.98)


def test_the_least_candidate_time_leaves_cases_out(tmp_path):
    # cuda-f32's best: 78.4 us at up0/96, 470 us at up0/384
    rep = build(tmp_path, known_run(), [target(min_candidate_s=100e-6)])
    assert set(rows(rep)) == {("up0", 384, "cuda-f32")}
    assert rep["targets"][0]["summary"]["under_min_time"] == 1
    line = targets.summary_line(rep["targets"][0]["target"], rep["targets"][0]["summary"])
    assert line == (
        "f32-vs-cudnn: met on 0 of 1 cases (0 without data); 1 more left out, the candidate "
        "under 100 us"
    )


def test_the_higher_is_better_direction(tmp_path):
    # cudnn-f32 / cuda-f32 >= 1.2: 1.25 at up0/96 (met), 0.833 at up0/384 (missed)
    t = target(ratio="reference/candidate", op=">=", bound=1.2, candidate=["cuda-f32"])
    rep = build(tmp_path, known_run(), [t])
    got = rows(rep)
    assert got[("up0", 96, "cuda-f32")]["ratio"] == pytest.approx(1.25, rel=1e-9)
    assert got[("up0", 96, "cuda-f32")]["status"] == "met"
    assert got[("up0", 384, "cuda-f32")]["status"] == "MISSED"
    assert targets.describe(t) == "cudnn-f32 / cuda-f32 >= 1.2"


def test_twins_and_other_stagings_are_not_rows(tmp_path):
    run = known_run(arms=("cuda-f32", "cudnn-f32", "cuda-f32#2", "cuda-f32-percall"))
    # a per-call cuda-f32 far slower than the resident one, beside a per-call cudnn-f32 as fast
    # as its resident case: only resident is compared where both arms have it
    for c in list(run["cases"]):
        if c["staging"] == "per-call":
            synth.set_seconds(c, [10 * s["seconds"] for s in c["samples"]])
        if c["arm"] == "cudnn-f32":
            twin = copy.deepcopy(c) | {"staging": "per-call"}
            twin["id"] = c["id"].replace("resident", "per-call")
            run["cases"].append(twin)
    rep = build(tmp_path, run, [target(candidate=["cuda-f32", "cuda-f32#2"])])
    got = rows(rep)
    assert set(got) == {("up0", 96, "cuda-f32"), ("up0", 384, "cuda-f32")}
    assert all(r["staging"] == "resident" for r in got.values())
    assert got[("up0", 96, "cuda-f32")]["status"] == "met"


def test_the_built_in_targets():
    ts = {t["id"]: t for t in targets.builtin_targets()}
    assert set(ts) == {
        "f32x3-vs-cudnn",
        "forward-f32",
        "forward-tf32",
        "tf32-vs-cublas",
        "dmma-vs-dgemm",
        "causal-copy",
        "decode-launch",
    }
    assert targets.describe(ts["f32x3-vs-cudnn"]) == "cuda-f32x3 / cudnn-f32 <= 0.5"
    assert ts["tf32-vs-cublas"]["min_candidate_s"] == 50e-6
    copy = ts["causal-copy"]
    assert copy["shape"] == {"l_in": [">=", 1024]} and copy["op"] == ">="
    assert targets.describe(copy) == "cuda-copy / (cuda-causal-register | cuda-causal-tiled) >= 0.9"
    assert ts["decode-launch"]["shape"] == {"l_in": ["==", 1]}
    assert all(t["says"] for t in ts.values())


def test_a_file_adds_and_replaces(tmp_path):
    f = tmp_path / "mine.json"
    mine = {"id": "mine", "candidate": "a", "reference": "b", "op": "<", "bound": 2, "stages": "x"}
    f.write_text(json.dumps({"targets": [mine, dict(mine, id="forward-f32", bound=0.9)]}))
    ts = targets.load_targets(str(f))
    ids = [t["id"] for t in ts]
    assert ids.count("forward-f32") == 1 and ids[-1] == "mine"
    assert next(t for t in ts if t["id"] == "forward-f32")["bound"] == 0.9


@pytest.mark.parametrize(
    "entry,field",
    [
        ({"op": "=<"}, "op"),
        ({"bound": -1}, "bound"),
        ({"stages": "up("}, "stages"),
        ({"candidate": []}, "candidate"),
        ({"ratio": "a/b"}, "ratio"),
        ({"shape": {"l_in": ["~", 3]}}, "shape"),
        ({"min_candidate_s": "50us"}, "min_candidate_s"),
        ({"id": None}, "id"),
    ],
)
def test_a_bad_targets_file_is_one_line(tmp_path, entry, field):
    run = tmp_path / "run.json"
    run.write_text(json.dumps(known_run()))
    good = {"id": "x", "candidate": "cuda-f32", "reference": "cudnn-f32", "op": "<", "bound": 1}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"targets": [good | {"stages": "up0"} | entry]}))
    rc, out, err = cli("targets", run, "--targets", bad)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and field in err and "bad.json" in err, err
    bad.write_text("{not json")
    rc, out, err = cli("targets", run, "--targets", bad)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "not JSON" in err, err


def test_the_formats(tmp_path):
    run = tmp_path / "run.json"
    run.write_text(json.dumps(known_run()))
    mine = tmp_path / "mine.json"
    t = {k: v for k, v in target().items()}
    mine.write_text(json.dumps({"targets": [t]}))
    args = ("targets", run, "--targets", mine)
    rc, out, err = cli(*args, "--format", "json")
    assert rc == 0, err
    rep = json.loads(out)
    (x,) = [x for x in rep["targets"] if x["target"]["id"] == "f32-vs-cudnn"]
    assert [r["status"] for r in x["rows"]] == ["met", "MISSED"]
    assert rep["records"][0]["file"] == "run.json" and rep["records"][0]["device"]

    rc, out, _ = cli(*args, "--format", "csv")
    table = list(csv.reader(io.StringIO(out)))
    assert table[0][:3] == ["target", "record", "stage"]
    assert all(len(r) == len(table[0]) for r in table)
    mine_rows = [r for r in table if r[0] == "f32-vs-cudnn"]
    assert [(r[2], r[3], r[10]) for r in mine_rows] == [
        ("up0", "96", "met"),
        ("up0", "384", "MISSED"),
    ]

    rc, out, _ = cli(*args, "--format", "md", "--doc-file", "docs/perf.md")
    lines = out.splitlines()
    assert lines[0].startswith("# Performance targets on ")
    assert f"`convbench-analyze targets {run} --format md --targets {mine}" in out
    assert "--doc-file docs/perf.md > docs/perf.md`" in out
    assert any(ln.startswith("| run.json ") for ln in lines)  # the records table
    assert "## f32-vs-cudnn: cuda-f32 / cudnn-f32 <= 1" in lines
    assert "| --- " * len(targets.HEADERS) + "|" in lines  # rows unpadded: a long table stays small
    assert "- f32-vs-cudnn: met on 1 of 2 cases (0 without data)" in lines

    rc, out, _ = cli(*args)
    assert rc == 0 and "f32-vs-cudnn: cuda-f32 / cudnn-f32 <= 1" in out
    assert "  f32-vs-cudnn: met on 1 of 2 cases (0 without data)" in out.splitlines()


def test_the_command_names_a_whole_folder_by_its_pattern(tmp_path):
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text("{}")
    both = [str(tmp_path / "b.json"), str(tmp_path / "a.json")]
    assert targets._files(both) == f"{tmp_path}/*.json"
    assert targets._files(both[:1]) == both[0]
    (tmp_path / "c.json").write_text("{}")  # a record not given: the files are listed
    assert targets._files(both) == " ".join(both)


def test_records_are_judged_one_by_one(tmp_path):
    """Two records of the same cases, the candidate's kernel changed between them (a plan changed):
    each record's rows are judged on their own, none refused as config-changed."""
    files = []
    for i, name in enumerate(("before", "after")):
        run = known_run()
        run["run_id"] = f"{i + 1:032x}"
        for c in run["cases"]:
            if c["arm"] == "cuda-f32":
                c["kernel"] = {"name": f"cuda-f32 tile {64 * (i + 1)}x32"}
                if i:  # the new plan 15% faster: up0/96 0.68 met, up0/384 1.02 still missed
                    synth.set_seconds(c, [smp["seconds"] * 0.85 for smp in c["samples"]])
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(run))
        files.append(p)
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps({"targets": [target()]}))
    rc, out, err = cli("targets", *files, "--targets", mine, "--format", "json")
    assert rc == 0, err
    (x,) = [x for x in json.loads(out)["targets"] if x["target"]["id"] == "f32-vs-cudnn"]
    assert [r["status"] for r in x["rows"]] == ["met", "MISSED"] * 2
    assert x["summary"]["cases"] == 4 and x["summary"]["no_data"] == 0
