"""Lease overlap: two runs that held one resource (a GPU, or a host's CPUs) at the same time.

A run's hold is judged by the lease's own times, not the process's: from `acquired_utc` (a run
queued with --lease-wait acquires long after it started) to `released_utc`. Records without
them fall back to the process's times (started_utc, ended_utc); an adopted lease (from
`convlease run`) holds for this run from the run's start, whatever convlease acquired before.

The lock is identified by its authority: the file backend's lock path, etcd's endpoint and key,
the Slurm controller. Two runs whose holds overlap are refused:
- through different locks (another CONVBENCH_LEASE_DIR, another backend): `lease-two-mutexes`,
  whatever their tokens (fresh lock files all start at token 1: equal tokens prove nothing);
- through one lock, or locks the records do not name: `lease-overlap`, with why the one
  authority let two runs in (a lock replaced while held, or two runs under one lease at once).

The runs named are checked against each other and against the history index's holds of earlier
runs on the same resource (history.py), so a run that overlapped one judged yesterday is found."""

from __future__ import annotations

from dataclasses import dataclass

from .findings import Assessment, Finding
from .record import Lease, Run, parse_utc

# A run whose lease finding is one of these is already refused: it makes no other run overlap.
NOT_HELD = ("lease-none", "lease-void", "lease-expired")


@dataclass(frozen=True)
class Hold:
    """One run's hold of one resource, from a record or a history index row."""

    path: str
    run_id: str
    resource: str
    backend: str | None
    mutex: str | None  # the lock's identity; None: the record does not name it
    token: str | None
    start: str  # ISO-8601 UTC
    end: str

    def span(self) -> tuple[float, float] | None:
        try:
            return parse_utc(self.start).timestamp(), parse_utc(self.end).timestamp()
        except (TypeError, ValueError, AttributeError):
            return None


def resource_of(data: dict) -> str:
    res = Lease.of(data["lease"]).resource
    return res.get("gpu_uuid") or f"{res.get('host') or data['host'].get('name')}:cpu"


def mutex_of(lease: dict) -> str | None:
    """The lock's identity, from what the backend recorded of it."""
    lease = Lease.of(lease)
    backend, fencing = lease.backend, lease.fencing
    if backend == "slurm":
        return "slurm"  # the controller: one authority for the cluster
    if fencing is None:
        return None
    if backend == "file" and fencing.get("lock_path"):
        return f"file:{fencing['lock_path']}"
    if backend == "etcd" and fencing.get("endpoint") and fencing.get("key"):
        return f"etcd:{fencing['endpoint']}{fencing['key']}"
    return None


def hold_of(data: dict, path: str) -> Hold | None:
    """The run's hold, or None when it held no lease (not collected, no token, --no-lease)."""
    lease = Lease.of(data.get("lease") or {})
    if not lease.collected or lease.token in (None, ""):
        return None
    if lease.verdict == "outside-lease":
        return None
    start = lease.acquired_utc or data["started_utc"]
    if lease.adopted:
        # convlease acquired it, perhaps for several commands in turn: this run's hold starts
        # with the run
        start = data["started_utc"]
    end = lease.released_utc or data["ended_utc"]
    return Hold(
        path=str(path),
        run_id=data["run_id"],
        resource=resource_of(data),
        backend=lease.backend,
        mutex=mutex_of(lease),
        token=None if lease.token is None else str(lease.token),
        start=start,
        end=end,
    )


def _overlap(a: Hold, b: Hold) -> bool:
    sa, sb = a.span(), b.span()
    return bool(sa and sb and sa[0] < sb[1] and sb[0] < sa[1])


def _where(h: Hold) -> str:
    if h.mutex is None:
        return f"{h.backend or 'an unnamed'} lease"
    return h.mutex.replace("file:", "lock ", 1).replace("etcd:", "etcd key ", 1)


def judge(me: Hold, other: Hold, other_from_index: bool = False) -> Finding | None:
    """The finding on `me` when `other` held the same resource during its hold; None if not."""
    if me.run_id == other.run_id or me.resource != other.resource or not _overlap(me, other):
        return None
    origin = " (from the history index)" if other_from_index else ""
    when = f"from {other.start} to {other.end}"
    two = (me.backend and other.backend and me.backend != other.backend) or (
        me.mutex and other.mutex and me.mutex != other.mutex
    )
    if two:
        return Finding(
            "lease-two-mutexes",
            f"{other.path}{origin} held {me.resource} {when} through {_where(other)} (token "
            f"{other.token}), during this run's hold through {_where(me)} (token {me.token})",
            me.path,
        )
    if me.token != other.token:
        why = (
            f"{_where(me)} granted two holds at once: it was replaced or bypassed while held "
            "(a lock file deleted, a lock directory recreated); keep it in place and re-run both, "
            "one at a time"
            if me.mutex and me.mutex == other.mutex
            else None
        )
        detail = (
            f"{other.path}{origin} held {me.resource} with token {other.token} {when}, during "
            f"this run's hold (token {me.token})"
        )
        return Finding("lease-overlap", detail, me.path, remedy_detail=why)
    return Finding(
        "lease-overlap",
        f"{other.path}{origin} ran on {me.resource} under the same lease (token {me.token}) "
        f"{when}, during this run",
        me.path,
        remedy_detail="two runs timed at once under one lease (e.g. two commands of one "
        "`convlease run` started together): run them one after another and re-run both",
    )


def overlap_findings(a: Assessment, history: list[Hold] | None = None) -> None:
    """Every overlap of the runs named with each other and with the history's holds."""
    holds = {
        i: h
        for i, r in enumerate(a.runs)
        if (h := hold_of(r.data, r.path)) is not None and not set(NOT_HELD) & set(a.codes(i))
    }
    for i, me in holds.items():
        for j, other in holds.items():
            if i != j and (f := judge(me, other)):
                a.add(f, i)
        named = {h.run_id for h in holds.values()}
        for other in history or []:
            if other.run_id not in named and (f := judge(me, other, other_from_index=True)):
                a.add(f, i)


def history_holds(db, runs: list[Run]) -> list[Hold]:
    """Holds in the history index on the runs' resources that overlap one of the runs' holds
    (rows whose lease was not valid, or whose times are missing or unreadable, are skipped)."""
    mine = [h for r in runs if (h := hold_of(r.data, r.path)) is not None]
    out: dict[str, Hold] = {}
    for h in mine:
        rows = db.execute(
            "SELECT path, run_id, lease_resource, lease_backend, lease_mutex, lease_token, "
            "lease_held_from_utc, lease_held_to_utc FROM runs WHERE lease_resource IS ? AND "
            "lease_verdict IS 'valid' AND run_id IS NOT ?",
            (h.resource, h.run_id),
        ).fetchall()
        for row in rows:
            if not all(isinstance(row[k], str) and row[k] for k in (0, 1, 2, 6, 7)):
                continue
            other = Hold(*row[:5], None if row[5] is None else str(row[5]), row[6], row[7])
            if other.span() is not None and _overlap(h, other):
                out[other.path] = other
    return list(out.values())
