"""History and drift with its cause: `report LATER.json` alone finds the earlier run of the same
host, binary and request in the folder's index and refuses a disagreement, naming the earlier run
and what differs between the two records before it calls the instrument unstable.

Planted faults seen failing (then reverted): both "ended before this one started" filters
removed (earlier_runs and drift_findings: the earlier run was refused against the later one,
test_the_earlier_run_is_not_refused_by_the_later failed); cause() with the kernel comparison
removed (test_different_cudnn_algorithms_are_config_changed saw `drift`); the changepoint
penalty without the 3-sigma factor (test_history_marks_the_step saw a changepoint in noise)."""

import json
import subprocess
import sys

import synth
from helpers import cli

from convbench_analysis import assess, history, load

HOST = "up0/96/cpu-f64/host"
PEER = "up0/96/cudnn-f32/resident"


def _seed_pair(folder):
    """The seed case: best 0.0765 s, then 0.2280 s minutes later, same host and binary."""
    a = synth.make_run(seed=1, start=1_795_000_000.0, token="11")
    b = synth.make_run(seed=2, start=1_795_000_600.0, token="12")
    synth.set_seconds(synth.case(a, HOST), [0.0765, 0.0768, 0.0766, 0.0767, 0.0765])
    synth.set_seconds(synth.case(b, HOST), [0.2280, 0.2290, 0.2284, 0.2281, 0.2287])
    (folder / "earlier.json").write_text(json.dumps(a))
    (folder / "later.json").write_text(json.dumps(b))
    return folder / "earlier.json", folder / "later.json"


def test_report_later_alone_refuses_the_seed_case_naming_the_earlier_run(tmp_path):
    earlier, later = _seed_pair(tmp_path)
    rc, out, err = cli("report", later, "--json")
    assert rc == 3, err
    row = next(r for g in json.loads(out)["groups"] for r in g["cases"] if r["case"] == HOST)
    (f,) = row["reasons"]
    assert f["code"] == "drift" and "x2.98" in f["detail"]
    assert f"the earlier run {earlier.resolve()}" in f["detail"]
    assert (tmp_path / history.INDEX_NAME).exists()


def test_no_history_and_history_elsewhere(tmp_path):
    _, later = _seed_pair(tmp_path)
    assert cli("report", later, "--no-history")[0] == 0
    other = tmp_path / "empty"
    other.mkdir()
    assert cli("report", later, "--history", other)[0] == 0
    assert cli("report", later, "--history", tmp_path / "absent")[0] == 2


def test_the_earlier_run_is_not_refused_by_the_later(tmp_path):
    earlier, _ = _seed_pair(tmp_path)
    assert cli("report", earlier)[0] == 0


def test_a_file_that_is_not_a_record_is_skipped_not_fatal(tmp_path):
    _, later = _seed_pair(tmp_path)
    (tmp_path / "notes.json").write_text('{"not": "a record"}')
    rc, out, _ = cli("index", tmp_path)
    assert rc == 0 and "2 run(s) indexed, 1 file(s) skipped" in out
    assert cli("report", later)[0] == 3


def _algo_pair(tmp_path, algo_b, us_b):
    a = synth.make_run(seed=1, arms=("cpu-f64", "cudnn-f32"), token="21")
    b = synth.make_run(seed=2, arms=("cpu-f64", "cudnn-f32"), start=1_795_000_900.0, token="22")
    for run, algo, us in ((a, "bwd_data_algo_0 (default math)", 61.9), (b, algo_b, us_b)):
        c = synth.case(run, PEER)
        c["kernel"] = {"name": "cuDNN f32", "algorithm": algo, "workspace_bytes": 0}
        synth.set_seconds(c, [us * 1e-6 * f for f in (1.0, 1.002, 1.001, 1.003, 1.002)])
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a))
    pb.write_text(json.dumps(b))
    return pa, pb


def test_different_cudnn_algorithms_are_config_changed(tmp_path):
    pa, pb = _algo_pair(tmp_path, "bwd_data_algo_1 (tensor-op math)", 33.0)
    a = assess.assess([load.load_run(pa), load.load_run(pb)])
    (f,) = a.case_findings[(1, PEER)]
    assert f.code == "config-changed"
    assert (
        "cuDNN algorithm bwd_data_algo_1 (tensor-op math) vs bwd_data_algo_0 (default math)"
        in f.detail
    )
    assert "--cudnn-algo" in f.remedy


def test_same_algorithm_disagreeing_is_drift(tmp_path):
    pa, pb = _algo_pair(tmp_path, "bwd_data_algo_0 (default math)", 33.0)
    a = assess.assess([load.load_run(pa), load.load_run(pb)])
    assert [f.code for f in a.case_findings[(1, PEER)]] == ["drift"]


def test_host_speed_changed_is_named(tmp_path):
    a = synth.make_run(seed=1, token="31")
    b = synth.make_run(seed=2, start=1_795_000_900.0, token="32")
    synth.set_seconds(
        synth.case(b, HOST), [s["seconds"] * 1.7 for s in synth.case(b, HOST)["samples"]]
    )
    for s in synth.case(b, HOST)["samples"]:
        for w in s["workers"]:
            w["speed_before"] = w["speed_after"] = synth.speed(w["worker"], w["cpu"], 0.55)
    paths = []
    for name, run in (("a.json", a), ("b.json", b)):
        (tmp_path / name).write_text(json.dumps(run))
        paths.append(tmp_path / name)
    got = assess.assess([load.load_run(p) for p in paths])
    (f,) = got.case_findings[(1, HOST)]
    assert f.code == "host-speed-changed" and "delivered 1.6 vs 2.7 G/s" in f.detail


def test_host_placement_changed_is_named(tmp_path):
    # the same delivered speed, but the later run's workers were pinned elsewhere. Planted fault
    # seen failing: record.pinned_cpus reading plan.cpus (absent: both None, plain drift).
    a = synth.make_run(seed=1, token="31")
    b = synth.make_run(seed=2, start=1_795_000_900.0, token="32")
    synth.set_seconds(
        synth.case(b, HOST), [s["seconds"] * 1.7 for s in synth.case(b, HOST)["samples"]]
    )
    b["plan"]["placement"]["cpus"] = list(range(16, 32))
    paths = []
    for name, run in (("a.json", a), ("b.json", b)):
        (tmp_path / name).write_text(json.dumps(run))
        paths.append(tmp_path / name)
    got = assess.assess([load.load_run(p) for p in paths])
    (f,) = got.case_findings[(1, HOST)]
    assert f.code == "host-speed-changed" and "ran on cpus [16, 17," in f.detail
    assert "vs [0, 1," in f.detail


def test_history_marks_the_step(tmp_path):
    bests = [0.0765, 0.0805, 0.0770, 0.2280, 0.2170, 0.2300]  # 5% of wobble, one step
    for i, best in enumerate(bests):
        run = synth.make_run(seed=10 + i, start=1_795_000_000.0 + 3600 * i, token=str(40 + i))
        synth.set_seconds(
            synth.case(run, HOST), [best * f for f in (1.0, 1.01, 1.004, 1.02, 1.006)]
        )
        (tmp_path / f"r{i}.json").write_text(json.dumps(run))
    rc, out, err = cli("history", HOST, "--history", tmp_path, "--json")
    assert rc == 0, err
    rep = json.loads(out)
    assert [p["changepoint"] for p in rep["points"]] == [False] * 3 + [True] + [False] * 2
    rc, out, err = cli("plot", "--case", HOST, "--history", tmp_path, "--out", tmp_path / "p")
    assert rc == 0, err
    assert (tmp_path / "p" / "up0-96-cpu-f64-host-history.png").stat().st_size > 1000
    rc, out, _ = cli("history", HOST, "--history", tmp_path)
    assert rc == 0 and out.count(">>") == 2  # the legend and the one step
    assert cli("history", "up9/96/none/host", "--history", tmp_path)[0] == 2


def test_an_index_that_cannot_be_written_falls_back_to_memory(tmp_path):
    # e.g. a read-only results folder: the earlier run is found all the same. Planted fault
    # seen failing: open_index without the fallback (exit 2, "unable to open database file").
    earlier, later = _seed_pair(tmp_path)
    (tmp_path / history.INDEX_NAME).mkdir()  # sqlite cannot open a directory as its file
    rc, out, err = cli("report", later)
    assert rc == 3 and "drift" in out and "earlier.json" in out, err


def test_a_fifo_named_json_is_skipped_not_waited_on(tmp_path):
    # A FIFO among the records (or given by name): the open would block until a writer came.
    # Planted (the code before): open() on it; the report hung until the test's timeout.
    import os

    _, later = _seed_pair(tmp_path)
    os.mkfifo(tmp_path / "pipe.json")
    p = subprocess.run(
        [sys.executable, "-m", "convbench_analysis", "report", str(later)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 3 and "drift" in p.stdout, p.stderr
    p = subprocess.run(
        [sys.executable, "-m", "convbench_analysis", "report", str(tmp_path / "pipe.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    err = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(err) == 1 and "FIFO" in err[0], p.stderr


def test_a_malformed_index_row_is_skipped_not_a_traceback(tmp_path):
    # Rows another tool (or a damaged file) left in the index: times that do not parse, NULLs,
    # text where numbers belong. Planted (the code before): parse_utc on them raised, and report
    # and history ended in a traceback.
    import sqlite3

    earlier, later = _seed_pair(tmp_path)
    assert cli("index", tmp_path)[0] == 0
    db = sqlite3.connect(tmp_path / history.INDEX_NAME)
    row = list(
        db.execute("SELECT * FROM runs WHERE path = ?", (str(earlier.resolve()),)).fetchone()
    )
    for n, (started, ended) in enumerate((("garbage", None), (None, "2020-01-01T00:00:00Z"))):
        bad = row[:]
        bad[0], bad[1], bad[9], bad[10] = f"/nowhere/{n}.json", f"bad{n}", started, ended
        db.execute(f"INSERT INTO runs VALUES ({','.join('?' * len(bad))})", bad)
        db.execute(
            "INSERT INTO cases VALUES (?, ?, 'median', 'x', NULL, 1, 5, 0.1, 1)", (bad[0], HOST)
        )
    db.commit()
    db.close()
    rc, out, err = cli("report", later)
    assert rc == 3 and "drift" in out and "Traceback" not in err, err
    rc, out, err = cli("history", HOST, "--history", tmp_path)
    assert rc == 0 and "Traceback" not in err, err
