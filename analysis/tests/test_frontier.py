"""frontier.py on synthetic records whose answer is known: arms timed by synth's model (at up0/96:
cuda-f32 129 us < cudnn-f32 170 us < cuda-f64 249 us < cudnn-f64 327 us) with gate errors set
so that each tolerance has one right pick.

Planted faults seen failing (each then reverted):
- the pick ignoring the tolerance (the fastest timed candidate): test_the_fastest_arm_that_meets
- the pick the slowest that meets: test_the_fastest_arm_that_meets
- faster arms not listed beside the pick: test_a_faster_arm_beyond_the_tolerance_is_said
- an undetermined arm taken as meeting (`!= "no"` for `== "yes"`): 11 of the examples' tests
- a refused time allowed as a pick (`accepted` not asked): test_a_refused_time_is_never_picked
- twins as candidates (not_candidate ignoring is_twin): test_twins_ceilings_and_the_reference
- roles ignored (the ceiling picked): test_twins_ceilings_and_the_reference
- arms of every staging in one group: test_only_one_staging_compares
- allclose read as rel L2 <= rel; unstated read by max abs alone: test_meets_by_metric
- dominance with `any` for `all` (every arm off the frontier but one): test_the_frontier_points
- a built-in value not in its users' words (5e-6 written 5e-5): test_the_users_tolerances
- a file's entry appended beside the built-in of its id: test_a_file_adds_and_replaces
- allclose ignoring the recorded floors (max abs alone): test_allclose_by_the_recorded_floors,
  test_an_arm_over_abs_meets_allclose_by_its_floors
- met by the smallest floor >= abs instead of the largest <= abs; a null floor read as 0 (met)
  instead of no rel sufficing; `>` for `>=`: test_allclose_by_the_recorded_floors
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys

import pytest
import synth
from conftest import EXAMPLES
from test_perf_table import relabel

from convbench_analysis import assess, frontier, load

TIGHT = {"id": "tight", "metric": "rel-l2", "value": 1e-6}
LOOSE = {"id": "loose", "metric": "rel-l2", "value": 1e-3}
ABS = {"id": "abs", "metric": "max-abs", "value": 1e-6}
CLOSE = {"id": "close", "metric": "allclose", "rel": 1e-5, "abs": 1e-6}
UNSTATED = {"id": "unstated", "metric": "unstated", "value": 5e-6}
TOLS = [TIGHT, LOOSE, ABS, CLOSE, UNSTATED]
# arm -> (max abs, rel L2): cuda-f32 meets only `loose`; cudnn-f32 meets tight and unstated,
# is beyond abs and undetermined for close; the f64 arms meet everything
ERRORS = {
    "cuda-f32": (6e-4, 5e-4),
    "cudnn-f32": (2e-6, 5e-7),
    "cuda-f64": (0.0, 0.0),
    "cudnn-f64": (1e-14, 1e-15),
}
ARMS = ("cpu-f64", "cpu-f32", "cuda-f32", "cudnn-f32", "cuda-f64", "cudnn-f64")
RES = "up0/96/{}/resident"


def known_run(arms=ARMS, reps=8) -> dict:
    run = synth.make_run(stages=("up0",), frames=(96,), arms=arms, reps=reps)
    for c in run["cases"]:
        mx, l2 = ERRORS.get(c["arm"].split("#")[0], (1e-7, 1e-8))
        c["gate"].update(max_abs_err=mx, rel_l2_err=l2, mismatches=int(l2 > 0))
    return run


def build(tmp_path, run, tols=TOLS) -> dict:
    p = tmp_path / "run.json"
    p.write_text(json.dumps(run))
    return frontier.build(assess.assess([load.load_run(p)]), tols)


def group(rep, staging="resident") -> dict:
    (g,) = [g for g in rep["groups"] if g["staging"] == staging]
    return g


def pick(g, tid) -> dict:
    return next(p for p in g["picks"] if p["tolerance"] == tid)


def test_the_fastest_arm_that_meets(tmp_path):
    g = group(build(tmp_path, known_run()))
    medians = {p["arm"]: p["time"]["median_s"] for p in g["points"]}
    assert (
        medians["cuda-f32/resident"] < medians["cudnn-f32/resident"] < medians["cuda-f64/resident"]
    )
    assert pick(g, "loose")["arm"] == "cuda-f32/resident"
    assert pick(g, "tight")["arm"] == "cudnn-f32/resident"
    assert pick(g, "unstated")["arm"] == "cudnn-f32/resident"
    assert pick(g, "abs")["arm"] == "cuda-f64/resident"
    assert pick(g, "close")["arm"] == "cuda-f64/resident"
    # every pick meets its tolerance, and no faster timed candidate does
    for pk in g["picks"]:
        mine = medians[pk["arm"]]
        for p in g["points"]:
            if p["time"]["median_s"] < mine:
                assert p["meets"][pk["tolerance"]] != "yes", (pk, p)


def test_a_faster_arm_beyond_the_tolerance_is_said(tmp_path):
    g = group(build(tmp_path, known_run()))
    tight = pick(g, "tight")
    (beyond,) = tight["faster_beyond"]
    assert beyond["arm"] == "cuda-f32/resident"
    assert beyond["meets"] == ["loose"]  # the looser tolerance that buys its speed
    assert beyond["ratio"]["ratio"] < 1 and beyond["ratio"]["verdict"] == "FASTER"
    # close: both faster arms err beyond abs 1e-6 in their worst cell, whose |ref| (which would
    # decide) the record does not hold: undetermined, not beyond
    close = pick(g, "close")
    undetermined = [e["arm"] for e in close["faster_undetermined"]]
    assert undetermined == ["cuda-f32/resident", "cudnn-f32/resident"]
    assert close["faster_beyond"] == []
    text = frontier.render(build(tmp_path, known_run()), "text")
    assert "faster, beyond it: cuda-f32/resident" in text and "it meets loose" in text


def test_a_refused_time_is_never_picked(tmp_path):
    run = known_run()
    synth.case(run, RES.format("cudnn-f32"))["samples"][3]["measured_sm_clock_mhz"] = 900.0
    g = group(build(tmp_path, run))
    point = next(p for p in g["points"] if p["arm"] == "cudnn-f32/resident")
    assert point["time"]["verdict"] == "REFUSED" and point["time"]["reasons"] == ["clock"]
    assert not point["frontier"]
    tight = pick(g, "tight")
    assert tight["arm"] == "cuda-f64/resident"  # the next that meets it
    assert tight["refused_time"] == ["cudnn-f32/resident"]
    assert "time refused (convbench-analyze report says why): cudnn-f32/resident (clock)" in (
        frontier.render(build(tmp_path, run), "md")
    )


def test_an_imprecise_time_is_picked_and_marked(tmp_path):
    run = known_run()
    c = synth.case(run, RES.format("cudnn-f32"))
    c["target_ci"] = 1e-6  # no run reaches it
    c["stop_reason"] = "time-budget"
    g = group(build(tmp_path, run))
    assert pick(g, "tight")["arm"] == "cudnn-f32/resident"
    point = next(p for p in g["points"] if p["arm"] == "cudnn-f32/resident")
    assert point["time"]["verdict"] == "imprecise"


def test_twins_ceilings_and_the_reference(tmp_path):
    # The twin and the ceiling err by nothing and run as fast as cuda-f32 or faster: were they
    # candidates, one of them would be every tolerance's pick.
    run = relabel(known_run(arms=ARMS + ("cuda-f32#2",)), {"cuda-f32": ["cublas-sgemm"]})
    for c in run["cases"]:
        if c["arm"] in ("cuda-f32#2", "cublas-sgemm"):
            c["gate"].update(max_abs_err=0.0, rel_l2_err=0.0, mismatches=0)
        if c["arm"] == "cublas-sgemm":
            c["gate"]["kind"], c["role"] = "gemm", "ceiling"
            synth.set_seconds(c, [s["seconds"] * 0.5 for s in c["samples"]])
    rep = build(tmp_path, run)
    every = {p["arm"] for g in rep["groups"] for p in g["points"]}
    assert not every & {"cuda-f32#2/resident", "cublas-sgemm/resident", "cpu-f64/host"}
    assert pick(group(rep), "tight")["arm"] == "cudnn-f32/resident"
    why = {n["arm"]: n["why"] for g in rep["groups"] for n in g["not_candidates"]}
    assert why == {
        "cuda-f32#2/resident": "an A/A twin",
        "cublas-sgemm/resident": "a ceiling (no convolution)",
        "cpu-f64/host": "the reference",
    }


def test_only_one_staging_compares(tmp_path):
    run = known_run(arms=ARMS + ("cuda-f32-percall",))
    for c in run["cases"]:
        if c["staging"] == "per-call":
            c["gate"].update(max_abs_err=0.0, rel_l2_err=0.0)
    rep = build(tmp_path, run)
    assert {(g["stage"], g["frames"], g["staging"]) for g in rep["groups"]} == {
        ("up0", 96, "host"),
        ("up0", 96, "resident"),
        ("up0", 96, "per-call"),
    }
    assert [p["arm"] for p in group(rep, "per-call")["points"]] == ["cuda-f32/per-call"]
    assert [p["arm"] for p in group(rep, "host")["points"]] == ["cpu-f32/host"]
    assert pick(group(rep), "tight")["arm"] == "cudnn-f32/resident"


def _err(mx, l2, result="pass"):
    return {"result": result, "max_abs_err": mx, "rel_l2_err": l2}


@pytest.mark.parametrize(
    "t,err,want",
    [
        (TIGHT, _err(1.0, 1e-6), "yes"),  # the gate's comparison: <=
        (TIGHT, _err(0.0, 1.1e-6), "no"),
        (ABS, _err(1e-6, 1.0), "yes"),
        (ABS, _err(1.1e-6, 0.0), "no"),
        (CLOSE, _err(1e-6, 1.0), "yes"),  # max abs within abs: every cell within abs + rel |ref|
        (CLOSE, _err(2e-6, 1e-9), "?"),  # the worst cell's |ref| would decide
        (CLOSE, _err(math.inf, math.inf), "no"),  # a non-finite output
        (UNSTATED, _err(5e-6, 5e-6), "yes"),
        (UNSTATED, _err(6e-6, 6e-6), "no"),
        (UNSTATED, _err(6e-6, 1e-7), "?"),  # the readings disagree
        (UNSTATED, _err(1e-7, 6e-6), "?"),
        (TIGHT, _err(None, None), "?"),  # not recorded
        (LOOSE, _err(0.0, 0.0, "fail"), "gate"),  # a failed gate meets nothing
        (LOOSE, _err(None, None, "not-run"), "gate"),
    ],
)
def test_meets_by_metric(t, err, want):
    assert frontier.meets(err, t) == want


FLOORS = ["0", *(f"{m}e-{e:02d}" for e in range(9, 2, -1) for m in (1, 3) if m == 1 or e > 3)]


def _needs(*cells) -> dict:
    """The gate's allclose_rel_needed for cells (|y - ref|, |ref|): per floor A, the max over cells
    of max(0, |y - ref| - A) / |ref|; None where a cell of ref 0 differs by more than A."""
    out = {}
    for key in FLOORS:
        a = float(key)
        r = max(0.0 if d <= a else (math.inf if ref == 0 else (d - a) / ref) for d, ref in cells)
        out[key] = None if r == math.inf else r
    return out


def _close(mx, needs):
    return _err(mx, 1e-7) | {"allclose_rel_needed": needs}


def _at(rel, floor):
    return {"id": "c", "metric": "allclose", "rel": rel, "abs": floor}


EDGE = _needs((2e-6, 0.05))  # R_min(1e-6) about 2e-5


@pytest.mark.parametrize(
    "t,err,want",
    [
        # worst cell off by 2e-6 at |ref| 0.5: R_min(1e-6) = 2e-6 <= 1e-5, though max abs > abs
        (CLOSE, _close(2e-6, _needs((2e-6, 0.5))), "yes"),
        (CLOSE, _close(2e-6, _needs((2e-6, 0.05))), "no"),  # R_min(1e-6) = 2e-5 > 1e-5
        (_at(EDGE["1e-06"], 1e-6), _close(2e-6, EDGE), "yes"),  # R == R_min(A): met
        # a floor between grid floors (2e-6: 1e-6 below, 3e-6 above)
        (_at(1e-5, 2e-6), _close(4e-6, _needs((4e-6, 0.4))), "yes"),  # R_min(1e-6) = 7.5e-6
        (_at(1e-5, 2e-6), _close(4e-6, _needs((4e-6, 0.05))), "no"),  # R_min(3e-6) = 2e-5
        (_at(1e-5, 2e-6), _close(4e-6, _needs((4e-6, 0.2))), "?"),  # 1.5e-5 and 5e-6 straddle
        # a cell whose reference is 0, off by 2e-6: no rel suffices below 3e-6, any above
        (CLOSE, _close(2e-6, _needs((2e-6, 0.0))), "no"),
        (_at(0.0, 3e-6), _close(2e-6, _needs((2e-6, 0.0))), "yes"),
        (CLOSE, _close(2e-6, None), "?"),  # a record without the floors: max abs alone
    ],
)
def test_allclose_by_the_recorded_floors(t, err, want):
    assert frontier.meets(err, t) == want


def test_an_arm_over_abs_meets_allclose_by_its_floors(tmp_path):
    """A record carrying the floors: cudnn-f32 (max abs 2e-6 > abs 1e-6) meets 1e-5/1e-6 (its
    worst cell's |ref| is large) and is picked before the slower f64 arms; cuda-f32 is beyond it
    (its worst cell's |ref| is small): no longer undetermined."""
    run = known_run()
    for c in run["cases"]:
        arm = c["arm"].split("#")[0]
        if arm == "cudnn-f32":
            c["gate"]["allclose_rel_needed"] = _needs((2e-6, 0.5), (1e-7, 1e-3))
        elif arm == "cuda-f32":
            c["gate"]["allclose_rel_needed"] = _needs((6e-4, 2.0))  # R_min(1e-6) ~ 3e-4
    g = group(build(tmp_path, run))
    meets = {p["arm"]: p["meets"]["close"] for p in g["points"]}
    assert meets["cudnn-f32/resident"] == "yes" and meets["cuda-f32/resident"] == "no"
    close = pick(g, "close")
    assert close["arm"] == "cudnn-f32/resident"
    assert [e["arm"] for e in close["faster_beyond"]] == ["cuda-f32/resident"]
    assert close["faster_undetermined"] == []


def test_the_frontier_points(tmp_path):
    g = group(build(tmp_path, known_run()))
    on = {p["arm"] for p in g["points"] if p["frontier"]}
    # cudnn-f64 is slower than cuda-f64 and errs more: dominated; each other arm is the fastest
    # at its accuracy
    assert on == {"cuda-f32/resident", "cudnn-f32/resident", "cuda-f64/resident"}


def test_the_users_tolerances():
    tols = {t["id"]: t for t in frontier.builtin_tolerances()}
    assert set(tols) == {"5e-6", "1e-5/1e-6", "2e-4"}
    for t in tols.values():
        assert t["owner"] and t["stated"] and t["metric"] in frontier.METRICS
    # each number is in the words it was stated in
    assert "5e-6" in tols["5e-6"]["stated"] and tols["5e-6"]["value"] == 5e-6
    assert "2e-4" in tols["2e-4"]["stated"] and tols["2e-4"]["value"] == 2e-4
    close = tols["1e-5/1e-6"]
    assert "rel 1e-5 / abs 1e-6" in close["stated"]
    assert (close["metric"], close["rel"], close["abs"]) == ("allclose", 1e-5, 1e-6)
    # no metric was written for 5e-6 and 2e-4: none is assumed
    assert tols["5e-6"]["metric"] == tols["2e-4"]["metric"] == "unstated"


def test_a_file_adds_and_replaces(tmp_path):
    f = tmp_path / "mine.json"
    mine = {"id": "mine", "metric": "max-abs", "value": 3e-6, "owner": "us"}
    f.write_text(json.dumps({"tolerances": [dict(UNSTATED, id="2e-4", value=2e-4), mine]}))
    tols = frontier.load_tolerances(str(f))
    assert [t["id"] for t in tols] == ["5e-6", "1e-5/1e-6", "2e-4", "mine"]
    assert tols[2]["metric"] == "unstated" and "stated" not in tols[2]


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "convbench_analysis", "frontier", "--no-history", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "entry,field",
    [
        ({"id": "x", "metric": "max-rel", "value": 1e-6}, "metric"),
        ({"id": "x", "metric": "allclose", "rel": 1e-5}, "abs"),
        ({"id": "x", "metric": "rel-l2", "value": -1}, "value"),
        ({"metric": "rel-l2", "value": 1e-6}, "id"),
    ],
)
def test_a_bad_tolerances_file_is_one_line(tmp_path, entry, field):
    run = tmp_path / "run.json"
    run.write_text(json.dumps(known_run(reps=6)))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"tolerances": [entry]}))
    r = cli(str(run), "--tolerances", str(bad))
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and field in r.stderr, r.stderr


def test_the_formats(tmp_path):
    run = tmp_path / "run.json"
    run.write_text(json.dumps(known_run(reps=6)))
    rep = json.loads(cli(str(run), "--format", "json").stdout)
    assert pick(group(rep), "5e-6")["arm"] == "cudnn-f32/resident"
    csv = cli(str(run), "--format", "csv").stdout.splitlines()
    assert csv[0].startswith("file,stage,frames,staging,arm,role,precision,rel L2,max abs")
    assert len(csv) == 1 + 5  # cpu-f32 and the four resident arms
    md = cli(str(run), "--format", "md").stdout
    assert "| arm " in md and "- 5e-6 (5e-06, metric unstated): cudnn-f32/resident" in md


def test_the_section_from_a_run_an_assessment_or_the_data(tmp_path):
    p = tmp_path / "run.json"
    p.write_text(json.dumps(known_run(reps=6)))
    r = load.load_run(p)
    a = assess.assess([r])
    by_run = frontier.frontier_section(load.load_run(p))
    assert by_run == frontier.frontier_section(a) == frontier.frontier_section(frontier.build(a))
    assert "5e-6 (5e-06, metric unstated): cudnn-f32/resident" in by_run


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_pick_is_the_fastest_that_meets(path):
    """On the committed records: a pick meets its tolerance with a time not refused, is of its
    group's staging, and no candidate with a lower median and a time not refused meets it."""
    rep = frontier.build(assess.assess([load.load_run(path)]))
    for g in rep["groups"]:
        by = {p["arm"]: p for p in g["points"]}
        for pk in g["picks"]:
            if pk["arm"] is None:
                assert not any(
                    frontier.accepted(p) and p["meets"][pk["tolerance"]] == "yes"
                    for p in g["points"]
                )
                continue
            me = by[pk["arm"]]
            assert me["meets"][pk["tolerance"]] == "yes" and frontier.accepted(me)
            assert pk["arm"].endswith("/" + g["staging"])
            for p in g["points"]:
                if frontier.accepted(p) and p["time"]["median_s"] < me["time"]["median_s"]:
                    assert p["meets"][pk["tolerance"]] != "yes"
    frontier.render(copy.deepcopy(rep), "text")  # renders without a crash


def test_the_summary_is_the_picks_in_one_table(tmp_path):
    """--summary: a row per case and staging, per tolerance the same pick as the full frontier,
    the fastest timed arm of all and what it meets, refused times counted, never picked.
    Planted, seen failing: the fastest of all taken from every point (refused ones too)."""
    run = known_run()
    synth.case(run, RES.format("cuda-f32"))["samples"][3]["measured_sm_clock_mhz"] = 900.0
    rep = build(tmp_path, run)
    (row,) = [r for r in frontier.summary_rows(rep) if r["staging"] == "resident"]
    g = group(rep)
    for pk in g["picks"]:
        assert row["picks"][pk["tolerance"]]["arm"] == pk["arm"]
    # cuda-f32 is the fastest but its time is refused: the fastest of all is cudnn-f32
    assert row["fastest"]["arm"] == "cudnn-f32/resident"
    assert row["fastest"]["meets"] == ["tight", "loose", "unstated"]
    assert row["refused"] == ["cuda-f32/resident"]
    p = tmp_path / "r.json"
    p.write_text(json.dumps(run))
    md = cli(str(p), "--summary", "--format", "md").stdout
    assert "| stage " in md and "fastest within 5e-6" in md
    assert "| up0 " in md and "cudnn-f32 " in md and "cudnn-f32/resident" not in md
    csv = cli(str(p), "--summary", "--format", "csv").stdout.splitlines()
    assert csv[0].startswith("stage,frames,staging,fastest within 5e-6")
    assert len(csv) == 1 + 2  # per-call and resident
    js = json.loads(cli(str(p), "--summary", "--format", "json").stdout)
    assert [r["stage"] for r in js["rows"]] == ["up0", "up0"]
