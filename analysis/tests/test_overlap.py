"""Lease overlap judged by the lease's own times (acquired_utc to released_utc), across the files
named and the history index; two lock directories or backends are two mutexes whatever the
tokens.

Each test says the fault it was seen failing on: the analysis as it was (the processes' lifetimes
compared, equal tokens skipped, the named files only) or a planted mutation of overlap.py."""

import sqlite3

import synth
from helpers import assess_files, tripped

from convbench_analysis import assess, findings, history, load, overlap

LOCK = "/var/lock/convbench/0f3c-GPU-5c1e7b0a.lock"
OTHER_LOCK = "/tmp/my-locks/0f3c-GPU-5c1e7b0a.lock"


def _pair(start_b: float, token_b: str = "1042"):
    a = synth.make_run(seed=1)
    b = synth.make_run(seed=7, start=start_b, token=token_b)
    return a, b


def _queued():
    """B started while A ran, waited with --lease-wait, acquired once A released."""
    a, b = _pair(1_795_000_000.0 + 5.0)
    a0, a1 = synth.times(a)
    synth.set_hold(a, acquired=a0 + 0.1, released=a1 - 0.05, lock_path=LOCK)
    synth.set_hold(b, acquired=a1 - 0.04, released=synth.times(b)[1] - 0.05, lock_path=LOCK)
    return a, b


def test_queued_runs_on_one_lock_are_accepted(write):
    # Seen failing on the analysis as it was: started..ended overlap, both lease-overlap.
    a, b = _queued()
    assert synth.times(b)[0] < synth.times(a)[1]  # the processes did overlap
    assert tripped(assess_files([write(a), write(b)])) == set()


def test_queued_runs_touching_at_one_instant_are_accepted(write):
    # Planted: `<=` for `<` in overlap._overlap (touching holds overlap): failed.
    a, b = _queued()
    synth.set_hold(b, acquired=a["lease"]["released_utc"])
    assert tripped(assess_files([write(a), write(b)])) == set()


def test_two_lock_dirs_equal_tokens_overlapping_are_two_mutexes(write):
    # The two-mutex incident: two CONVBENCH_LEASE_DIR values, fresh locks, both token 1.
    # Seen failing on the analysis as it was (equal tokens skipped: both accepted).
    a, b = _pair(1_795_000_000.0 + 5.0, token_b="1")
    synth.set_hold(a, lock_path=LOCK, token="1")
    synth.set_hold(b, lock_path=OTHER_LOCK, token="1")
    res = assess_files([write(a), write(b)])
    assert tripped(res) == {(0, None, "lease-two-mutexes"), (1, None, "lease-two-mutexes")}
    f = res.run_findings[0][0]
    assert LOCK in f.detail and OTHER_LOCK in f.detail
    assert "CONVBENCH_LEASE_DIR" in f.remedy
    # every case of both runs is refused for it
    assert all("lease-two-mutexes" in res.codes(0, c["id"]) for c in a["cases"])


def test_two_backends_are_two_mutexes(write):
    # Planted: judge() comparing lock paths only (not backends): an etcd lease beside a file
    # lease with no comparable path was called lease-overlap: failed.
    a, b = _pair(1_795_000_000.0 + 5.0, token_b="1041")
    synth.set_hold(b, backend="etcd")
    assert tripped(assess_files([write(a), write(b)])) == {
        (0, None, "lease-two-mutexes"),
        (1, None, "lease-two-mutexes"),
    }


def test_two_lock_dirs_not_overlapping_are_accepted(write):
    a, b = _pair(1_795_000_000.0 + 1_000.0, token_b="1")
    synth.set_hold(a, lock_path=LOCK, token="1")
    synth.set_hold(b, lock_path=OTHER_LOCK, token="1")
    assert tripped(assess_files([write(a), write(b)])) == set()


def test_one_lock_two_tokens_overlapping_names_the_lock(write):
    # Planted: the remedy_detail dropped (the gate's generic remedy): failed on the lock's name.
    a, b = _pair(1_795_000_000.0 + 5.0)
    synth.set_hold(a, lock_path=LOCK)
    synth.set_hold(b, lock_path=LOCK)
    res = assess_files([write(a), write(b)])
    assert tripped(res) == {(0, None, "lease-overlap"), (1, None, "lease-overlap")}
    assert LOCK in res.run_findings[0][0].remedy
    assert "replaced or bypassed" in res.run_findings[0][0].remedy


def test_one_lease_shared_by_two_runs_at_once(write):
    # Two runs under one `convlease run` at the same time: same lock, same token, two run ids.
    # Seen failing on the analysis as it was (equal tokens skipped).
    a, b = _pair(1_795_000_000.0 + 5.0, token_b="1041")
    synth.set_hold(a, lock_path=LOCK, adopted=True)
    synth.set_hold(b, lock_path=LOCK, adopted=True, acquired=a["lease"]["acquired_utc"])
    res = assess_files([write(a), write(b)])
    assert tripped(res) == {(0, None, "lease-overlap"), (1, None, "lease-overlap")}
    assert "one lease" in res.run_findings[0][0].remedy


def test_one_convlease_lease_for_two_runs_in_turn_is_accepted(write):
    # Both adopt convlease's lease (its acquired_utc, before both); they ran one after the other.
    # Planted: hold_of ignoring `adopted` (the hold from convlease's acquired_utc): failed.
    a, b = _pair(1_795_000_000.0 + 100.0, token_b="1041")
    synth.set_hold(a, lock_path=LOCK, adopted=True, acquired=1_794_999_990.0)
    synth.set_hold(b, lock_path=LOCK, adopted=True, acquired=1_794_999_990.0)
    assert tripped(assess_files([write(a), write(b)])) == set()


def test_remedies_name_bench_convs_flag_and_no_second_authority_for_one_lock():
    # The remedy of lease-overlap said "two lease authorities are in play" for runs on one lock.
    g = findings.CHECKS["lease-overlap"]
    assert "authorities" not in g.remedy and "--lease-wait S" in g.remedy
    for code in ("lease-overlap", "lease-two-mutexes", "lease-none", "lease-void"):
        text = findings.CHECKS[code].remedy.replace("--lease-wait", "")
        assert "--wait" not in text, code


# ---- against the history index --------------------------------------------------------------


def test_overlap_found_against_the_history_index_only(tmp_path):
    # Seen failing on the analysis as it was: only the named files were compared.
    a, b = _pair(1_795_000_000.0 + 5.0, token_b="1")
    synth.set_hold(a, lock_path=LOCK, token="1")
    synth.set_hold(b, lock_path=OTHER_LOCK, token="1")
    hist = tmp_path / "hist"
    hist.mkdir()
    synth.write(a, hist / "a.json")
    pb = synth.write(b, tmp_path / "b.json")
    run_b = load.load_run(pb)
    db = history.open_index(hist)
    held = overlap.history_holds(db, [run_b])
    db.close()
    assert [h.path for h in held] == [str((hist / "a.json").resolve())]
    res = assess.assess([run_b], held=held)
    assert tripped(res) == {(0, None, "lease-two-mutexes")}
    assert "history index" in res.run_findings[0][0].detail


def test_history_runs_that_queued_are_not_overlaps(tmp_path):
    a, b = _queued()
    hist = tmp_path / "hist"
    hist.mkdir()
    synth.write(a, hist / "a.json")
    run_b = load.load_run(synth.write(b, tmp_path / "b.json"))
    db = history.open_index(hist)
    assert overlap.history_holds(db, [run_b]) == []
    db.close()


_OLD_SCHEMA = """
CREATE TABLE files (path TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER, error TEXT);
CREATE TABLE runs (path TEXT PRIMARY KEY, run_id TEXT, host TEXT, boot_id TEXT,
    binary TEXT, git_sha TEXT, model TEXT, threads INTEGER, device_timing TEXT,
    started_utc TEXT, ended_utc TEXT, lease_token TEXT, lease_verdict TEXT, status TEXT);
CREATE TABLE cases (path TEXT, case_id TEXT, estimator TEXT, value REAL,
    lo REAL, hi REAL, n INTEGER, cv REAL, accepted INTEGER, PRIMARY KEY (path, case_id));
"""


def test_an_index_made_before_the_lease_columns_is_brought_up_to_date(tmp_path):
    # An index written by the earlier version: its row for a.json lacks the lease columns and its
    # file entry says a.json is up to date. Planted: _migrate without the DELETE FROM files (old
    # rows kept, never re-read): the overlap was not found; without the ALTER TABLE: a sqlite
    # error, then an in-memory index each time.
    a, b = _pair(1_795_000_000.0 + 5.0, token_b="1")
    synth.set_hold(a, lock_path=LOCK, token="1")
    synth.set_hold(b, lock_path=OTHER_LOCK, token="1")
    hist = tmp_path / "hist"
    hist.mkdir()
    pa = synth.write(a, hist / "a.json").resolve()
    st = pa.stat()
    old = sqlite3.connect(hist / history.INDEX_NAME)
    old.executescript(_OLD_SCHEMA)
    old.execute("INSERT INTO files VALUES (?,?,?,NULL)", (str(pa), st.st_mtime_ns, st.st_size))
    old.execute(
        "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (str(pa), a["run_id"], "h", None, None, None, None, 16, "launched")
        + (a["started_utc"], a["ended_utc"], "1", "valid", "complete"),
    )
    old.commit()
    old.close()
    run_b = load.load_run(synth.write(b, tmp_path / "b.json"))
    db = history.open_index(hist)
    cols = {r[1] for r in db.execute("PRAGMA table_info(runs)")}
    assert {"lease_mutex", "lease_held_from_utc", "lease_held_to_utc"} <= cols
    assert db.execute("SELECT lease_mutex FROM runs").fetchall() == [(f"file:{LOCK}",)]
    held = overlap.history_holds(db, [run_b])
    db.close()
    assert [h.run_id for h in held] == [a["run_id"]]
    # the file itself was migrated (not an in-memory index standing in for it)
    on_disk = sqlite3.connect(hist / history.INDEX_NAME)
    assert {"lease_mutex", "lease_held_from_utc"} <= {
        r[1] for r in on_disk.execute("PRAGMA table_info(runs)")
    }
    assert on_disk.execute("SELECT lease_mutex FROM runs").fetchall() == [(f"file:{LOCK}",)]
    on_disk.close()


def test_index_rows_with_missing_or_bad_lease_columns_are_skipped(tmp_path):
    # Planted: Hold.span without its except (a row's bad time parsed as it comes): a traceback.
    a, b = _pair(1_795_000_000.0 + 5.0, token_b="1")
    synth.set_hold(b, lock_path=OTHER_LOCK, token="1")
    hist = tmp_path / "hist"
    hist.mkdir()
    synth.write(a, hist / "a.json")
    run_b = load.load_run(synth.write(b, tmp_path / "b.json"))
    db = history.open_index(hist)
    for held_from in (None, "garbage", 17):
        db.execute("UPDATE runs SET lease_held_from_utc = ?", (held_from,))
        assert overlap.history_holds(db, [run_b]) == []
    db.close()


def test_report_refuses_against_the_history_folder(tmp_path):
    # The CLI end to end: `report B --history DIR` with the overlapping run only in DIR.
    import subprocess
    import sys

    a, b = _pair(1_795_000_000.0 + 5.0, token_b="1")
    synth.set_hold(a, lock_path=LOCK, token="1")
    synth.set_hold(b, lock_path=OTHER_LOCK, token="1")
    hist = tmp_path / "hist"
    hist.mkdir()
    synth.write(a, hist / "a.json")
    pb = synth.write(b, tmp_path / "b.json")
    p = subprocess.run(
        [sys.executable, "-m", "convbench_analysis", "report", "--history", str(hist), str(pb)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 3, p.stdout + p.stderr
    said = " ".join(p.stdout.split())  # the report wraps its sentences to the terminal
    assert "lease-two-mutexes" in said and "history index" in said
