"""History: every result record under a results folder, indexed in SQLite (Python's sqlite3),
so `report RUN` finds the earlier runs of the same host, binary and request by itself and sets
each case against them (drift.py), and `history CASE_ID` shows one case over time with its
changepoints.

Each run's lease hold (resource, lock, token, held from/to) is indexed too, so a run is checked
for overlap with every earlier run on its GPU, not only those named with it (overlap.py).

The index lives in the folder (.convbench-index.sqlite) and is brought up to date on each use:
new or changed files are read and validated; files that are not valid records are remembered
as skipped (with why) and not read again until they change.

Changepoints: ruptures' PELT (a maintained implementation of the optimal-partitioning search)
on log(best time), L2 cost, penalty 2 ln(n) x (3 sigma)^2 with sigma the cases' median CV
(floored at drift_floor / 3): a step of about the drift gate's size is a changepoint, round noise
is not. scipy has no changepoint search; ruptures does exactly this and nothing more."""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import record
from .load import MAX_BYTES, InputError, Run, load_run, parse_utc
from .overlap import hold_of
from .stats import median_interval
from .thresholds import Thresholds

INDEX_NAME = ".convbench-index.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER,
    error TEXT);
CREATE TABLE IF NOT EXISTS runs (path TEXT PRIMARY KEY, run_id TEXT, host TEXT, boot_id TEXT,
    binary TEXT, git_sha TEXT, model TEXT, threads INTEGER, device_timing TEXT,
    started_utc TEXT, ended_utc TEXT, lease_token TEXT, lease_verdict TEXT, status TEXT);
CREATE TABLE IF NOT EXISTS cases (path TEXT, case_id TEXT, estimator TEXT, value REAL,
    lo REAL, hi REAL, n INTEGER, cv REAL, accepted INTEGER, PRIMARY KEY (path, case_id));
"""
# Columns added since the first index (an index made before them gains them, and its records
# are read again to fill them): the lease's hold (overlap.Hold) for the overlap checks.
_ADDED_RUN_COLUMNS = (
    ("lease_resource", "TEXT"),
    ("lease_backend", "TEXT"),
    ("lease_mutex", "TEXT"),
    ("lease_held_from_utc", "TEXT"),
    ("lease_held_to_utc", "TEXT"),
    ("host_name", "TEXT"),  # the host's name as people say it (`host` is its machine id)
)
_INDEX_VERSION = 2  # PRAGMA user_version of an index with every column above
_RUN_COLUMNS = (
    "path, run_id, host, boot_id, binary, git_sha, model, threads, device_timing, started_utc, "
    "ended_utc, lease_token, lease_verdict, status, "
    + ", ".join(name for name, _ in _ADDED_RUN_COLUMNS)
)


def _migrate(db: sqlite3.Connection) -> None:
    """Brings an index made by an earlier version up to this one's columns."""
    (version,) = db.execute("PRAGMA user_version").fetchone()
    if version >= _INDEX_VERSION:
        return
    have = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
    for name, kind in _ADDED_RUN_COLUMNS:
        if name not in have:
            db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
    db.execute("DELETE FROM files")  # every record is read again, filling the new columns
    db.execute(f"PRAGMA user_version = {_INDEX_VERSION}")
    db.commit()


def _median_interval(x: np.ndarray) -> tuple[float, float]:
    """The median's interval as the bench's stopping rule computes it (stats.median_interval);
    below 6 samples, where there is none, the range of the samples."""
    iv = median_interval(x)
    return iv if iv is not None else (float(np.min(x)), float(np.max(x)))


def _index_one(db: sqlite3.Connection, path: Path, run: Run, th: Thresholds) -> None:
    from .checks import seconds, spread_of
    from .drift import accepted_cases, device_timing

    d = run.data
    lease = d["lease"]
    hold = hold_of(d, str(path))
    db.execute(
        f"INSERT OR REPLACE INTO runs ({_RUN_COLUMNS}) VALUES ({', '.join('?' * 20)})",
        (
            str(path),
            d["run_id"],
            record.host_id(run),
            d["host"].get("boot_id"),
            record.binary_id(run),
            d["tool"].get("git_sha"),
            d["plan"].get("model"),
            d["plan"].get("threads"),
            device_timing(run),
            d["started_utc"],
            d["ended_utc"],
            lease.get("token"),
            lease.get("verdict") if lease.get("status") == "collected" else lease.get("status"),
            record.run_status(run),
            hold.resource if hold else None,
            hold.backend if hold else None,
            hold.mutex if hold else None,
            hold.start if hold else None,
            hold.end if hold else None,
            d["host"].get("name"),
        ),
    )
    ok = accepted_cases(run, th)
    db.execute("DELETE FROM cases WHERE path = ?", (str(path),))
    for c in run.cases:
        x = seconds(c)
        if not len(x):
            continue
        lo, hi = _median_interval(x)
        db.execute(
            "INSERT INTO cases VALUES (?,?,?,?,?,?,?,?,?)",
            (
                str(path),
                c["id"],
                "best",
                float(x.min()),
                lo,
                hi,
                len(x),
                spread_of(x)[0],
                int(c["id"] in ok),
            ),
        )


def open_index(folder: str | Path, th: Thresholds | None = None) -> sqlite3.Connection:
    """The folder's index, brought up to date with the records under it."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(str(folder), "", "history folder does not exist")
    th = th or Thresholds()
    try:
        db = sqlite3.connect(folder / INDEX_NAME)
        db.executescript(_SCHEMA)
        _migrate(db)
        _update(db, folder, th)
    except sqlite3.Error:
        # a folder we may read but not write (or a broken index file): index it in memory for
        # this command; the earlier runs are found all the same
        db = sqlite3.connect(":memory:")
        db.executescript(_SCHEMA)
        _migrate(db)
        _update(db, folder, th)
    return db


def _update(db: sqlite3.Connection, folder: Path, th: Thresholds) -> None:
    known = {p: (m, s) for p, m, s in db.execute("SELECT path, mtime_ns, size FROM files")}
    present = set()
    for p in sorted(folder.rglob("*.json")):
        try:
            st = p.stat()
        except OSError:
            continue
        key = str(p.resolve())
        present.add(key)
        if known.get(key) == (st.st_mtime_ns, st.st_size):
            continue
        error = None
        if st.st_size > MAX_BYTES:
            error = "too large to be a record"
        else:
            try:
                _index_one(db, Path(key), load_run(p), th)
            except InputError as e:
                error = str(e)
        if error:
            db.execute("DELETE FROM runs WHERE path = ?", (key,))
            db.execute("DELETE FROM cases WHERE path = ?", (key,))
        db.execute(
            "INSERT OR REPLACE INTO files VALUES (?,?,?,?)",
            (key, st.st_mtime_ns, st.st_size, error),
        )
    for gone in set(known) - present:
        for table in ("files", "runs", "cases"):
            db.execute(f"DELETE FROM {table} WHERE path = ?", (gone,))
    db.commit()


def earlier_runs(db: sqlite3.Connection, run: Run, limit: int = 12) -> list[Run]:
    """Runs in the index from the same host, source and request that ended before this one
    started, newest first (their files re-read: drift needs the samples)."""
    from .drift import device_timing

    d = run.data
    rows = db.execute(
        "SELECT path, ended_utc, started_utc FROM runs WHERE host IS ? AND git_sha IS ? AND "
        "model IS ? AND threads IS ? AND device_timing IS ? AND run_id != ?",
        (
            record.host_id(run),
            d["tool"].get("git_sha"),
            d["plan"].get("model"),
            d["plan"].get("threads"),
            device_timing(run),
            d["run_id"],
        ),
    ).fetchall()
    start = parse_utc(d["started_utc"])
    # A row whose times do not parse (an index another tool or version wrote, a damaged file)
    # names no run that can be placed in time: skipped, as a file that is not a record is.
    timed = [(path, _utc(ended), _utc(started)) for path, ended, started in rows]
    rows = [r for r in timed if r[1] is not None and r[2] is not None and r[1] <= start]
    rows.sort(key=lambda r: r[2], reverse=True)
    out = []
    for path, _, _ in rows[:limit]:
        try:
            out.append(load_run(str(path)))
        except InputError:
            continue  # changed since it was indexed; the next open re-reads it
    return out


@dataclass(frozen=True)
class Point:
    started_utc: str
    run_id: str
    path: str
    host: str | None
    host_name: str | None
    binary: str | None
    best: float
    lo: float
    hi: float
    n: int
    cv: float
    accepted: bool


def case_history(db: sqlite3.Connection, case_id: str, host: str | None = None) -> list[Point]:
    q = (
        "SELECT r.started_utc, r.run_id, r.path, r.host, r.host_name, r.binary, c.value, c.lo, "
        "c.hi, c.n, c.cv, c.accepted FROM cases c JOIN runs r ON r.path = c.path "
        "WHERE c.case_id = ?"
    )
    args = [case_id]
    if host:
        q += " AND (r.host = ? OR r.host_name = ?)"
        args += [host, host]
    pts = [
        Point(*row[:11], bool(row[11]))
        for row in db.execute(q, args)
        if _utc(row[0]) is not None and all(_number(v) for v in row[6:11])
    ]
    return sorted(pts, key=lambda p: parse_utc(p.started_utc))


def _utc(text):
    """The time of an index cell, or None when the cell holds no ISO-8601 time."""
    try:
        return parse_utc(text)
    except (AttributeError, TypeError, ValueError):
        return None


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def changepoints(best: list[float], cvs: list[float], th: Thresholds | None = None) -> list[int]:
    """Indices i where a new level starts (best[i] differs from best[i-1]'s segment)."""
    import ruptures

    th = th or Thresholds()
    if len(best) < 2:
        return []
    y = np.log(np.asarray(best, float))
    sigma = max(float(np.median(cvs)) if cvs else 0.0, th.drift_floor / 3.0)
    pen = 2.0 * math.log(len(y)) * (3.0 * sigma) ** 2
    ends = ruptures.Pelt(model="l2", min_size=1, jump=1).fit(y.reshape(-1, 1)).predict(pen=pen)
    return [e for e in ends if e < len(y)]
