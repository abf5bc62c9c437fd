#!/usr/bin/env python3
"""bench_conv cut short: SIGTERM and SIGINT mid-run give an "interrupted" record with the rounds
that finished and exit 143 / 130; SIGKILL then `bench_conv --resume JOURNAL` gives a "recovered"
record with every journaled round; in all three the lease is free afterwards (a second run
acquires it at once). A SIGTERM during the correctness gate, while a slow cpu-f64 reference is
computing, ends the run within seconds: exit 143, an "interrupted" record without samples, the
lease free. Usage: kill.py sigterm|sigint|sigkill|sigterm_gate BENCH_CONV SCHEMA

Planted faults seen failing here (then reverted):
- sigterm: no InterruptGuard in run_bench_conv -> the process dies of the signal (returncode
  -15), no record: "exit 143" and "record written" fail.
- sigint: finish() returning kExitError instead of interrupt_exit_code() -> exit 1: "exit 130"
  fails.
- sigkill: the journal's write without fflush/fsync -> the last finished round is still in the
  stdio buffer when the process is killed: "recovered every finished round" fails.
- sigterm_gate: no InterruptWatchdog in measure() -> the signal waits for the reference (about
  20 s here), then the rounds: "ends within 5 s" fails.
"""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "harness"))
import harness  # noqa: E402
from harness import check, load_json, run, skip, validate  # noqa: E402

# Small host-only cases, many fixed rounds: long enough to be cut mid-run on any machine.
RUN = [
    "--stage",
    "up3",
    "--model",
    "bigvgan_base_22khz_80band",
    "--frames",
    "4",
    "--arms",
    "cpu-f32,cpu-f64",
    "--threads",
    "1",
    "--no-counters",
    "--reps",
    "400",
    "--target-ci",
    "0",
    "--min-time",
    "0.02",
    "-v",  # every sample's line: the SIGKILL test reads the last round begun from them
]


def journal_rounds(path):
    """Complete round lines in the journal (line 1 is the header)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return 0
    return max(0, data.count(b"\n") - 1)


def start(bench, out, env, rounds=3, timeout=120):
    """Starts a run and waits until its journal holds `rounds` finished rounds."""
    p = harness.start([bench, *RUN, "--out", out], env=env)
    deadline = time.monotonic() + timeout
    while (
        time.monotonic() < deadline
        and p.poll() is None
        and journal_rounds(out + ".journal") < rounds
    ):
        time.sleep(0.02)
    check(p.poll() is None, f"the run is still under way after {rounds} journaled rounds")
    return p


def lease_is_free(bench, tmp, env, what):
    """A second run gets the lease without waiting: the first released it (or died with it)."""
    out = os.path.join(tmp, "second.json")
    p = run(
        [
            bench,
            "--stage",
            "up3",
            "--model",
            "bigvgan_base_22khz_80band",
            "--frames",
            "4",
            "--arms",
            "cpu-f32",
            "--threads",
            "1",
            "--no-counters",
            "--reps",
            "1",
            "--target-ci",
            "0",
            "--out",
            out,
        ],
        env=env,
        timeout=120,
    )
    check(
        p.returncode == 0,
        f"{what}: a second run acquires the lease at once (exit {p.returncode}: "
        f"{p.stderr.strip().splitlines()[-1:] if p.stderr else ''})",
    )
    if p.returncode == 0:
        check(
            load_json(out)["lease"]["verdict"] == "valid",
            f"{what}: the second run's lease is valid",
        )


def check_cut_short(r, what, status, at_least):
    check(r.get("status") == status, f"{what}: status {r.get('status')}, want {status}")
    for c in r["cases"]:
        n = len(c["samples"])
        check(n >= at_least, f"{what}: {c['id']} kept {n} samples, want >= {at_least}")
        check(
            [s["round"] for s in c["samples"]] == list(range(n)),
            f"{what}: {c['id']} rounds 0..{n - 1}",
        )
        check(
            c["stop_reason"] == "interrupted", f"{what}: {c['id']} stop_reason {c['stop_reason']}"
        )
        check(
            c["stats"] is not None and c["stats"]["n"] == n,
            f"{what}: {c['id']} stats over its samples",
        )


def t_signal(tmp, env, bench, schema, sig, code):
    name = signal.Signals(sig).name
    out = os.path.join(tmp, "r.json")
    p = start(bench, out, env)
    journaled = journal_rounds(out + ".journal")
    p.send_signal(sig)
    _, stderr = p.communicate(timeout=120)
    check(p.returncode == code, f"{name}: exit {p.returncode}, want {code}")
    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    check(
        f"interrupted by {name}" in last and out in last,
        f"{name}: the last stderr line says so: {last!r}",
    )
    check(os.path.exists(out), f"{name}: record written")
    check(
        not os.path.exists(out + ".journal"),
        f"{name}: the journal is gone once the record holds it",
    )
    if os.path.exists(out):
        r = load_json(out)
        validate(r, name, schema)
        check_cut_short(r, name, "interrupted", journaled)
        check(
            r["exit_status"] == code and r["interrupted"]["signal"] == name,
            f"{name}: exit_status {r['exit_status']}, interrupted {r.get('interrupted')}",
        )
        check(
            all(c["counters"]["status"] == "not-collected" for c in r["cases"]),
            f"{name}: no counter pass",
        )
    lease_is_free(bench, tmp, env, name)


# One case whose cpu-f64 reference takes about 20 s on one thread here (up1 at 1536 frames).
SLOW_GATE = [
    "--stage",
    "up1",
    "--frames",
    "1536",
    "--arms",
    "cpu-f64",
    "--threads",
    "1",
    "--no-counters",
    "--reps",
    "3",
    "--target-ci",
    "0",
]


def t_signal_in_gate(tmp, env, bench, schema):
    """SIGTERM while the gate computes a slow reference: the run ends within seconds, not when
    the reference returns. Planted: no InterruptWatchdog in measure() (see the top)."""
    out = os.path.join(tmp, "gate.json")
    p = harness.start([bench, *SLOW_GATE, "--out", out], env=env)
    lines = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = p.stderr.readline()
        if not line:
            break
        lines.append(line)
        if ": reference cpu-f64" in line:
            break
    check(any(": reference cpu-f64" in x for x in lines), f"the gate began: {lines[-3:]}")
    time.sleep(0.3)  # into the reference's one long call
    check(p.poll() is None, "the run is still in its gate when signalled")
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    try:
        _, rest = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        _, rest = p.communicate()
    took = time.monotonic() - t0
    check(took < 5, f"SIGTERM in the gate: ends within 5 s (took {took:.1f} s)")
    check(p.returncode == 143, f"SIGTERM in the gate: exit {p.returncode}, want 143")
    err = [x for x in (lines + rest.splitlines(keepends=True)) if x.strip()]
    last = err[-1].strip() if err else ""
    check(
        "interrupted by SIGTERM before the first timed round" in last and out in last,
        f"SIGTERM in the gate: the last stderr line says so: {last!r}",
    )
    check(not os.path.exists(out + ".journal"), "SIGTERM in the gate: no journal left")
    check(os.path.exists(out), "SIGTERM in the gate: record written")
    if os.path.exists(out):
        r = load_json(out)
        validate(r, "SIGTERM in the gate", schema)
        check(
            r["status"] == "interrupted"
            and r["exit_status"] == 143
            and r["interrupted"]["signal"] == "SIGTERM"
            and r["interrupted"]["rounds_started"] == 0
            and r["plan"]["order"] == [],
            f"SIGTERM in the gate: status {r['status']}, interrupted {r.get('interrupted')}",
        )
        for c in r["cases"]:
            check(
                c["samples"] == [] and c["stats"] is None,
                f"SIGTERM in the gate: {c['id']} has no samples",
            )
            check(
                c["gate"]["result"] == "not-run"
                and "interrupted" in c["gate"]["unavailable"]["result"],
                f"SIGTERM in the gate: {c['id']} not gated, and says why: {c['gate']}",
            )
    lease_is_free(bench, tmp, env, "SIGTERM in the gate")


def t_sigkill(tmp, env, bench, schema):
    out = os.path.join(tmp, "r.json")
    journal = out + ".journal"
    p = start(bench, out, env)
    p.send_signal(signal.SIGKILL)
    _, stderr = p.communicate(timeout=60)
    check(p.returncode == -signal.SIGKILL, f"SIGKILL: returncode {p.returncode}")
    check(not os.path.exists(out), "SIGKILL: no record (it is written only at the end, atomically)")
    # The last round that began (1-based, from the progress); every round before it finished, and
    # a finished round is on disk before the next begins.
    started = [int(m) for m in re.findall(r"round (\d+)/", stderr)]
    last = max(started) if started else 0
    finished = journal_rounds(journal)
    check(
        finished in (last - 1, last),
        f"SIGKILL: the journal holds {finished} rounds; round {last} "
        "had begun, so every finished round is there",
    )
    # A kill mid-write leaves a torn last line: ignored and counted, the rounds before it kept.
    with open(journal, "ab") as f:
        f.write(b'{"round": {"round": 99, "samp')
    q = run([bench, "--resume", journal], env=env, timeout=120)
    check(q.returncode == 0, f"--resume: exit {q.returncode}: {q.stderr.strip()[-300:]}")
    check(
        os.path.exists(out) and not os.path.exists(journal),
        "--resume: record at the journal's result path, journal gone",
    )
    if os.path.exists(out):
        r = load_json(out)
        validate(r, "recovered", schema)
        check_cut_short(r, "recovered", "recovered", finished)
        check(
            r["recovered"]["rounds"] == finished and len(r["plan"]["order"]) == finished,
            f"recovered: {r['recovered']['rounds']} rounds, "
            f"order {len(r['plan']['order'])}, want {finished}",
        )
        check(
            all(len(c["samples"]) == finished for c in r["cases"]),
            "recovered: every journaled sample",
        )
        check(
            r["lease"]["verdict"] == "void",
            "recovered: the lease, never verified at the end, is void",
        )
        # Planted (the code before the journal carried the lease): the header's lease, taken
        # before the start check, said "no start check" although one was made.
        reasons = " ".join(r["lease"].get("reasons", []))
        check(
            "no start check" not in reasons and (r["lease"].get("start_check") or {}).get("ok"),
            f"recovered: the start check that was made is kept: {reasons[:200]}",
        )
        check(
            r["recovered"]["torn_bytes"] >= 29,
            f"recovered: torn tail counted ({r['recovered']['torn_bytes']} bytes)",
        )
    # A second resume has nothing to read: one line, exit 2.
    q = run([bench, "--resume", journal], env=env, timeout=60)
    check(
        q.returncode == 2 and len(q.stderr.strip().splitlines()) == 1,
        f"--resume of nothing: exit {q.returncode}",
    )
    lease_is_free(bench, tmp, env, "SIGKILL")


def t_full_disk(tmp, env, bench, schema):
    """The disk fills mid-run (a small tmpfs): the run ends with one line naming the journal and
    the --resume that recovers it; once space is freed, --resume writes the record. Planted (the
    code before): the bare "error: cannot write ..." named no journal."""
    if os.geteuid() != 0:
        skip("mounting a small tmpfs needs root")
    mnt = os.path.join(tmp, "small")
    os.mkdir(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt]).returncode != 0:
        skip("cannot mount a tmpfs here")
    try:
        out = os.path.join(mnt, "r.json")
        p = start(bench, out, env, rounds=2)
        filler = os.path.join(mnt, "filler")
        with open(filler, "wb") as f:  # fill it to the last byte
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        try:
            with open(filler, "ab") as f:
                while True:
                    f.write(b"\0")
                    f.flush()
        except OSError:
            pass
        p.send_signal(signal.SIGTERM)  # the final write now meets the full disk (if no append did)
        _, stderr = p.communicate(timeout=120)
        last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        journal = out + ".journal"
        check(p.returncode == 1, f"full disk: exit {p.returncode}, want 1")
        check(
            journal in last and f"--resume {journal}" in last,
            f"full disk: the last line names the journal and --resume: {last!r}",
        )
        check(not os.path.exists(out), "full disk: no partial record")
        check(os.path.exists(journal), "full disk: the journal is kept")
        os.remove(filler)
        q = run([bench, "--resume", journal], env=env)
        check(q.returncode == 0, f"full disk: --resume after freeing space: {q.stderr[-300:]}")
        if os.path.exists(out):
            r = load_json(out)
            validate(r, "full disk", schema)
            check_cut_short(r, "full disk", "recovered", 2)
    finally:
        subprocess.run(["umount", "-l", mnt])


def t_resume_keeps_a_complete_record(tmp, env, bench, schema):
    """A journal left beside the complete record of its own run (the process died between the
    record's rename and the journal's removal): --resume refuses to replace the record. Planted
    (the code before): the complete record was overwritten with a recovered, void one."""
    out = os.path.join(tmp, "r.json")
    journal = out + ".journal"
    plan = [*RUN[: RUN.index("--reps") + 1], "12", *RUN[RUN.index("--reps") + 2 :]]
    p = harness.start([bench, *plan, "--out", out], env=env)
    deadline = time.monotonic() + 120
    copy = None
    while time.monotonic() < deadline and p.poll() is None:
        if journal_rounds(journal) >= 2:
            with open(journal, "rb") as f:
                copy = f.read()
            break
        time.sleep(0.01)
    p.communicate(timeout=120)
    check(p.returncode == 0 and copy is not None, f"a complete run (exit {p.returncode})")
    if copy is None:
        return
    with open(out, "rb") as f:
        before = f.read()
    with open(journal, "wb") as f:
        f.write(copy)
    q = run([bench, "--resume", journal], env=env)
    check(
        q.returncode == 2 and len(q.stderr.strip().splitlines()) == 1 and "complete" in q.stderr,
        f"--resume beside the run's complete record: exit {q.returncode}: {q.stderr.strip()!r}",
    )
    with open(out, "rb") as f:
        check(f.read() == before, "the complete record is untouched")
    # Recovered beside it, under another name, it is still available.
    other = os.path.join(tmp, "recovered.json")
    q = run([bench, "--resume", journal, "--out", other], env=env)
    check(q.returncode == 0 and os.path.exists(other), "--resume --out elsewhere still recovers")


def isolated(test, *args):
    """test with a lock directory of its own and no lease policy from the caller's environment."""

    def with_locks(tmp, bench, schema):
        env = harness.environ(
            drop=["CONVBENCH_LEASE*"],
            CONVBENCH_LEASE_DIR=os.path.join(tmp, "locks"),
            CONVBENCH_LEASE_POLICY="none",
        )
        test(tmp, env, bench, schema, *args)

    return with_locks


TESTS = {
    "sigterm": isolated(t_signal, signal.SIGTERM, 143),
    "sigint": isolated(t_signal, signal.SIGINT, 130),
    # An ssh session or terminal that closes: as SIGTERM. Planted (the code before): no handler,
    # the process died of the signal with no record.
    "sighup": isolated(t_signal, signal.SIGHUP, 129),
    "full_disk": isolated(t_full_disk),
    "resume_complete": isolated(t_resume_keeps_a_complete_record),
    "sigkill": isolated(t_sigkill),
    "sigterm_gate": isolated(t_signal_in_gate),
}

if __name__ == "__main__":
    harness.main(TESTS, "bench_kill", echo=True)
