"""`convbench-analyze fleet`: per-host ratios, the spread across hosts, outlier hosts by the
fleet's own distribution (MAD of log times), slow vs noisy by the host's A/A twins.

Planted faults seen failing (then reverted):
- classify() calling every outlier SLOW without reading the twins: test_noisy_host failed;
- the outlier scale fixed (1% instead of 1.4826 MAD): test_threshold_comes_from_the_fleet failed;
- the min_deviation floor dropped: test_tight_fleet_needs_a_real_difference failed;
- refused cases counted as estimates: test_refused_cases_are_no_estimate failed;
- z = inf for a MAD of 0: test_identical_hosts_and_one_off failed (not JSON).
"""

import copy
import json

import synth
from helpers import cli

from convbench_analysis import fleet, load
from convbench_analysis.assess import assess as assess_runs

ARMS = ("cpu-f64", "cuda-f32")
DEV = "up0/96/cuda-f32/resident"
TWIN = "up0/96/cuda-f32#2/resident"


def host_run(k, host, scale=1.0, twin_scale=None, start=None):
    """One clean run on `host` (its own GPU, token, start time); the device arm's times x scale,
    and an A/A twin of it at x twin_scale of the arm's own times (None: no twin)."""
    run = synth.make_run(
        stages=("up0",),
        frames=(96,),
        arms=ARMS,
        reps=7,
        seed=k,
        host=host,
        token=str(1000 + k),
        start=start or 1_795_000_000.0 + 5000 * k,
    )
    uuid = f"GPU-{k:08x}-0000-4000-8000-000000000000"
    run["host"]["machine_id"] = f"{k:032x}"  # hosts of a fleet are distinct machines
    run["lease"]["resource"]["gpu_uuid"] = uuid
    for g in run["gpus"]:
        g["uuid"] = uuid
    dev = synth.case(run, DEV)
    synth.set_seconds(dev, [s["seconds"] * scale for s in dev["samples"]])
    if twin_scale is not None:
        t = copy.deepcopy(dev)
        t["id"], t["arm"] = TWIN, "cuda-f32#2"
        synth.set_seconds(t, [s["seconds"] * twin_scale for s in dev["samples"]])
        run["cases"].append(t)
    return run


def assess(tmp_path, runs):
    paths = []
    for i, r in enumerate(runs):
        p = tmp_path / f"run{i}.json"
        p.write_text(json.dumps(r))
        paths.append(p)
    return assess_runs([load.load_run(p) for p in paths]), paths


def fleet_of(tmp_path, **odd):
    """Four ordinary hosts with agreeing twins, plus the odd ones: name -> (scale, twin)."""
    runs = [host_run(k, f"n0{k}", 1.0, 1.0) for k in range(1, 5)]
    runs += [host_run(10 + i, name, s, t) for i, (name, (s, t)) in enumerate(odd.items())]
    a, paths = assess(tmp_path, runs)
    return fleet.build(a), paths


def device_row(rep):
    return next(x for x in rep["arms"] if x["arm"] == "cuda-f32/resident")


def outlier(rep, host):
    return next((o for o in device_row(rep)["outliers"] if o["host"] == host), None)


def test_slow_host_is_slow_not_noisy(tmp_path):
    rep, _ = fleet_of(tmp_path, slow=(1.3, 1.0))
    o = outlier(rep, "slow")
    assert o and o["kind"] == "slow", device_row(rep)
    assert "SLOW host, not a noisy one" in o["text"] and "A/A twins agree" in o["text"]
    assert 0.25 < o["vs_median"] < 0.35
    assert {x["host"] for x in device_row(rep)["outliers"]} == {"slow"}
    assert "SLOW host" in fleet.render(rep)


def test_noisy_host(tmp_path):
    # Its device arm is 30% off while its twin (the same arm again) is not: the instrument on
    # that host disagrees with itself. Far beyond the band, its run refuses its device cases
    # (aa-unstable) and the host is no estimate of the arm; a twin outside the A/A tolerance
    # but not surely beyond the band makes the host NOISY.
    rep, _ = fleet_of(tmp_path, noisy=(1.3, 1 / 1.3))
    assert outlier(rep, "noisy") is None and "noisy" not in device_row(rep)["hosts"]
    bad = [r for r in rep["hosts"]["noisy"]["ratios"] if r["arm"] == "cuda-f32/resident"]
    assert bad and all("aa-unstable" in r["reasons"] for r in bad)
    runs = [host_run(k, f"n0{k}", 1.0, 1.0) for k in range(1, 5)]
    noisy = host_run(20, "noisy", 1.3, 1.0)
    for cid in (DEV, TWIN):  # rounds scattered 4%: the twin 1.5% off is within its interval
        c = synth.case(noisy, cid)
        f = (1.0, 1.04, 0.97, 1.03, 0.98, 1.02, 1.0) if cid == DEV else (1.015,) * 7
        synth.set_seconds(c, [s["seconds"] * x for s, x in zip(c["samples"], f, strict=True)])
    a, _ = assess(tmp_path, [*runs, noisy])
    o = outlier(fleet.build(a), "noisy")
    assert o and o["kind"] == "noisy", o
    assert "NOISY host" in o["text"]


def test_outlier_without_twins_is_undecided(tmp_path):
    rep, _ = fleet_of(tmp_path, lone=(0.7, None))
    o = outlier(rep, "lone")
    assert o and o["kind"] == "undecided" and "list an arm twice" in o["text"], o
    assert o["vs_median"] < 0  # faster than the fleet


def test_ordinary_hosts_are_not_outliers(tmp_path):
    rep, _ = fleet_of(tmp_path, slow=(1.3, 1.0))
    # the host arm is the same on every host; the slow host's twin is as slow as its arm
    assert not next(x for x in rep["arms"] if x["arm"] == "cpu-f64/host")["outliers"]
    twin = next(x for x in rep["arms"] if x["arm"] == "cuda-f32#2/resident")
    assert [o["host"] for o in twin["outliers"]] == ["slow"]
    row = device_row(rep)
    assert row["n_hosts"] == 5 and row["max_over_min"] > 1.25
    # per host, the accepted ratio against the reference with its interval
    for h in ("n01", "slow"):
        r = next(r for r in rep["hosts"][h]["ratios"] if r["arm"] == "cuda-f32/resident")
        assert r["status"] == "ok" and r["ci"][0] <= r["ratio"] <= r["ci"][1]


def test_threshold_comes_from_the_fleet(tmp_path):
    # A broad fleet (hosts spread over +-12%) does not make its 12% host an outlier; a tight
    # fleet does, for the same 12%.
    broad = [host_run(k, f"b{k}", s, s) for k, s in enumerate((0.88, 0.94, 1.0, 1.06, 1.12), 1)]
    a, _ = assess(tmp_path, broad)
    assert not device_row(fleet.build(a))["outliers"]
    rep, _ = fleet_of(tmp_path, far=(1.12, 1.0))
    assert outlier(rep, "far") is not None


def test_tight_fleet_needs_a_real_difference(tmp_path):
    # Four hosts agree to ~0.1%; one 1% off has a large z but is within the 2% floor.
    rep, _ = fleet_of(tmp_path, near=(1.01, 1.01))
    assert outlier(rep, "near") is None, device_row(rep)


def test_refused_cases_are_no_estimate(tmp_path):
    runs = [host_run(k, f"n0{k}", 1.0, 1.0) for k in range(1, 5)]
    bad = host_run(9, "voided", 2.0, 2.0)
    bad["lease"]["verdict"], bad["lease"]["reasons"] = "void", ["foreign GPU process"]
    a, _ = assess(tmp_path, runs + [bad])
    rep = fleet.build(a)
    assert "voided" not in device_row(rep)["hosts"]
    assert all(
        r["status"] == "REFUSED"
        for r in rep["hosts"]["voided"]["ratios"]
        if r["arm"] != r["baseline"]
    )


def test_fewer_than_three_hosts(tmp_path):
    a, _ = assess(tmp_path, [host_run(1, "a"), host_run(2, "b", 1.5)])
    row = device_row(fleet.build(a))
    assert not row["outliers"] and "at least 3" in row["note"]


def test_history_per_host_in_time_order(tmp_path):
    later = host_run(2, "a", start=1_795_100_000.0)
    earlier = host_run(1, "a", start=1_795_000_000.0)
    a, paths = assess(tmp_path, [later, earlier, host_run(3, "b")])
    runs = fleet.build(a)["hosts"]["a"]["runs"]
    assert [r["path"] for r in runs] == [str(paths[1]), str(paths[0])]


def test_cli_reads_a_folder_and_plots(tmp_path):
    _, paths = fleet_of(tmp_path, slow=(1.3, 1.0))
    rc, out, err = cli("fleet", tmp_path, "--out", tmp_path / "fig")
    assert rc == 0, err
    assert "fleet: 5 host(s), 5 run(s)" in out and "slow (slow)" in out
    assert (tmp_path / "fig" / f"fleet-{synth.MODEL}-up0-96.png").stat().st_size > 1000
    rc, out, err = cli("fleet", tmp_path, "--json")
    assert rc == 0 and json.loads(out)["hosts"]["slow"]["runs"]


def test_cli_bad_input_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    rc, out, err = cli("fleet", tmp_path / "empty")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "no *.json" in err, err


def test_identical_hosts_and_one_off(tmp_path):
    # Hosts that agree exactly (MAD 0): the one 5% off is an outlier, and the JSON stays JSON.
    base = host_run(1, "h1", 1.0, 1.0)
    runs = []
    for k in range(1, 6):
        r = copy.deepcopy(base)
        r["host"]["name"] = r["lease"]["resource"]["host"] = f"h{k}"
        r["host"]["machine_id"], r["run_id"] = f"{k:032x}", f"{k:032x}"
        r["lease"]["token"] = str(k)
        r["lease"]["resource"]["gpu_uuid"] = r["gpus"][0]["uuid"] = f"GPU-{k}"
        if k == 5:  # the host is 5% off, its twin with it (a twin apart would be aa-unstable)
            for cid in (DEV, TWIN):
                dev = synth.case(r, cid)
                synth.set_seconds(dev, [s["seconds"] * 1.05 for s in dev["samples"]])
        runs.append(r)
    a, _ = assess(tmp_path, runs)
    rep = fleet.build(a)
    o = outlier(rep, "h5")
    assert o and o["z"] is None and "z = inf" in o["text"], device_row(rep)
    json.dumps(rep, allow_nan=False)
