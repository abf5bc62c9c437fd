#!/usr/bin/env python3
"""bench_conv under leases, end to end (CTest lease.bench_e2e; file backend in a temp lock dir).

1. under `convlease run`: the run adopts the inherited lease; verdict "valid".
2. with --no-lease: verdict "outside-lease".
3. a second bench_conv on the same resource while the first runs: refused (exit 3, naming the
   first as holder), and with --lease-wait it waits: the two never time at once.
4. a forged CONVBENCH_LEASE: refused (exit 3), no result written.
5. the lease before the GPU: the order of lease steps and device calls each run traced
   (CONVBENCH_TEST_DEVICE_TRACE); a run refused at once, or waiting, makes no device call.
6. queued runs judged by the lease's own times: strictly one after the other, both accepted by
   convbench-analyze with no overlap; two runs through two lock directories at once: refused as
   two mutexes, from the two files and from the history index alone; the lock directory that is
   not the site's said at run time.
7. Ctrl-C on a terminal under `convlease run`: one interrupt, an "interrupted" record.
8. convlease killed (SIGKILL) while its bench_conv times: bench_conv stops at once with a void
   record instead of timing on without a lease.
Each check was seen to fail with a planted fault (named beside it).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "harness"))
import harness  # noqa: E402
from harness import check, children_of  # noqa: E402

TINY = [
    "--stage",
    "up3",
    "--model",
    "bigvgan_base_22khz_80band",
    "--frames",
    "4",
    "--reps",
    "2",
    "--arms",
    "cpu-f32",
    "--no-counters",
    "--threads",
    "1",
    "--target-ci",
    "0",
]
# Long enough (several seconds) that a second run can be started while the first still times.
LONG = [
    "--stage",
    "up3",
    "--model",
    "bigvgan_base_22khz_80band",
    "--frames",
    "4",
    "--reps",
    "10",
    "--min-time",
    "0.3",
    "--arms",
    "cpu-f32",
    "--no-counters",
    "--threads",
    "1",
    "--target-ci",
    "0",
]


def run(cmd, env, timeout=240):
    """(exit status, stdout, stderr) of cmd run in exactly env."""
    p = harness.run(cmd, env=env, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def analyze(env, *args):
    """convbench-analyze of this source tree: (exit status, stdout + stderr)."""
    p = harness.run(
        [sys.executable, "-m", "convbench_analysis", *args],
        env=env,
        extra={"PYTHONPATH": harness.REPO / "analysis" / "src"},
        timeout=300,
    )
    return p.returncode, p.stdout + p.stderr


def trace_of(path):
    """The lease steps and device entries one run traced, in order ([] when none)."""
    try:
        with open(path) as f:
            return [line.strip() for line in f if line.strip()]
    except OSError:
        return []


def cuda_linked(exe):
    """The CUDA libraries and entry points (cuInit, cudaGetDeviceCount, ...) `exe` links."""
    libs = subprocess.run(["ldd", exe], capture_output=True, text=True).stdout
    syms = subprocess.run(
        ["nm", "-D", "--undefined-only", exe], capture_output=True, text=True
    ).stdout
    found = [ln.split()[0] for ln in libs.splitlines() if "libcud" in ln or "libcuda" in ln]
    found += [
        ln.split()[-1]
        for ln in syms.splitlines()
        if ln.split() and (ln.split()[-1].startswith(("cuda", "cuInit", "cuCtx", "cudnn")))
    ]
    return found


def device_after_lease(trace):
    """True when the trace has a device entry and none before 'lease-verified'. A build without
    CUDA (no device arm compiled in) makes no device call at all: there, True when the trace has
    no device entry and the lease was verified."""
    devices = [i for i, t in enumerate(trace) if t.startswith("device ")]
    verified = trace.index("lease-verified") if "lease-verified" in trace else None
    if not CUDA_BUILT:
        return not devices and verified is not None
    return bool(devices) and verified is not None and devices[0] > verified


CUDA_BUILT = True  # set from the bench_conv under test (main): does it have device arms?


def cuda_built(bench):
    """Whether bench_conv was built with CUDA: its arm list holds device arms."""
    out = subprocess.run([bench, "--list", "arms", "--json"], capture_output=True, text=True)
    return out.returncode == 0 and any(a["device"] for a in json.loads(out.stdout))


def lease_of(path):
    # The whole record must satisfy the result spec's JSON Schema (the lease block included).
    return harness.load_record(path)["lease"]


def held_by(lock_dir, pid):
    """True once a lock record in lock_dir names pid as holder."""
    for name in os.listdir(lock_dir) if os.path.isdir(lock_dir) else []:
        try:
            with open(os.path.join(lock_dir, name)) as f:
                rec = json.load(f)
        except (OSError, ValueError):
            continue
        if (rec.get("holder") or {}).get("pid") == pid:
            return True
    return False


def start_and_wait_for_hold(cmd, env, lock_dir, out_path, trace=None):
    if trace:
        env = dict(env, CONVBENCH_TEST_DEVICE_TRACE=trace)
    p = subprocess.Popen(
        cmd + ["--out", out_path],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and p.poll() is None and not held_by(lock_dir, p.pid):
        time.sleep(0.02)
    return p


def on_terminal(cmd, env, wait_for=None, lock_dir=None):
    """Runs cmd as the foreground job of a new pseudo-terminal and types Ctrl-C into it, once
    `wait_for` is on its stdout (or, with lock_dir, once bench_conv has journaled a round)."""
    import fcntl
    import termios

    master, slave = os.openpty()

    def controlling_terminal():
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

    p = subprocess.Popen(
        cmd,
        env=env,
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=controlling_terminal,
        pass_fds=(slave,),
    )
    os.close(slave)
    if wait_for:
        while wait_for not in (p.stdout.readline() or wait_for):
            pass
    else:
        deadline = time.monotonic() + 60
        journal = [x for x in cmd if x.endswith(".json")][0] + ".journal"
        while time.monotonic() < deadline and not os.path.exists(journal):
            time.sleep(0.05)
        time.sleep(0.5)
    os.write(master, b"\x03")  # the terminal's Ctrl-C: SIGINT to the foreground process group
    return p, master


def under_convlease_and_without(a, tmp, env, locks, out, trace):
    # 1. under convlease run
    rc, so, se = run([a.convlease, "run", "--", a.bench, *TINY, "--out", out("under")], env)
    check(rc == 0, "bench_conv under convlease run exits 0", f"rc={rc}\n{se[-2000:]}")
    if os.path.exists(out("under")):
        L = lease_of(out("under"))
        check(
            L.get("verdict") == "valid", "under convlease: verdict valid", json.dumps(L, indent=1)
        )
        check(
            L.get("adopted") is True and L.get("backend") == "file",
            "under convlease: the lease was adopted from convlease (file backend)",
            L,
        )
        check(
            (L.get("start_check") or {}).get("ok") and (L.get("end_check") or {}).get("ok"),
            "under convlease: start and end checks passed",
            L,
        )
        check(L["resource"]["name"] == "cpu", "host-only run leases resource cpu", L["resource"])

    # 2. --no-lease
    rc, so, se = run([a.bench, *TINY, "--no-lease", "--out", out("nolease")], env)
    check(rc == 0, "bench_conv --no-lease exits 0", f"rc={rc}\n{se[-2000:]}")
    if os.path.exists(out("nolease")):
        L = lease_of(out("nolease"))
        check(L.get("verdict") == "outside-lease", "--no-lease: verdict outside-lease", L)


def refused_while_held(a, tmp, env, locks, out, trace):
    # 3a. a second run while the first times: refused, naming the first
    first = start_and_wait_for_hold([a.bench, *LONG], env, locks, out("first"), trace("first"))
    check(
        first.poll() is None,
        "first run holds the lease and is still running",
        "it finished before the second could start: increase LONG",
    )
    rc, so, se = run(
        [a.bench, *TINY, "--out", out("second")],
        dict(env, CONVBENCH_TEST_DEVICE_TRACE=trace("second")),
    )
    still_running = first.poll() is None
    # Planted: RunLease::open acquiring with wait_s = 60 regardless of the option -> exit 0: failed.
    check(rc == 3, "second run on the same resource is refused with exit 3", f"rc={rc}\n{se}")
    check(f"pid {first.pid}" in se, "the refusal names the first run as holder", se)
    # The backend's busy message once said "--wait S", convlease's flag, not bench_conv's.
    check(
        "--lease-wait S" in se and "--wait S" not in se.replace("--lease-wait S", ""),
        "the refusal names bench_conv's own flag, --lease-wait S",
        se,
    )
    check(not os.path.exists(out("second")), "a refused run writes no result")
    check(still_running, "the refusal happened while the first run was timing")
    # 5. The lease before the GPU. Before the fix the plan read CUDA device 0 (cudaGetDeviceCount,
    # cudaGetDeviceProperties, cudaMemGetInfo, a cuDNN handle for the arms' availability) before
    # the lease: with the trace seam in place and that order planted back, the refused run's trace
    # held "device device facts" and the holder's had it before "lease-acquired": both failed.
    check(
        not any(t.startswith("device ") for t in trace_of(trace("second"))),
        "a run refused at once makes no device call",
        trace_of(trace("second")),
    )
    fo, fe = first.communicate(timeout=240)
    check(
        device_after_lease(trace_of(trace("first"))),
        "the holder's first device call comes after its lease is acquired and verified",
        trace_of(trace("first")),
    )
    check(first.returncode == 0, "first run exits 0", fe[-2000:])
    if os.path.exists(out("first")):
        check(
            lease_of(out("first")).get("verdict") == "valid",
            "first run: verdict valid",
            lease_of(out("first")),
        )


def waits_for_the_lease(a, tmp, env, locks, out, trace):
    # 3b. a second run with --lease-wait: waits, then times after the first released
    first = start_and_wait_for_hold([a.bench, *LONG], env, locks, out("first2"))
    rc, so, se = run(
        [a.bench, *TINY, "--lease-wait", "200", "--out", out("waiter")],
        dict(env, CONVBENCH_TEST_DEVICE_TRACE=trace("waiter")),
    )
    fo, fe = first.communicate(timeout=240)
    # Planted as in 5 (the plan's device reads before the lease): the waiter's device call came
    # before its lease: failed.
    check(
        device_after_lease(trace_of(trace("waiter"))),
        "a waiting run makes its first device call only once it holds the verified lease",
        trace_of(trace("waiter")),
    )
    check(
        rc == 0 and first.returncode == 0,
        "with --lease-wait both runs complete",
        f"waiter rc={rc} {se[-1500:]}\nfirst rc={first.returncode} {fe[-1500:]}",
    )
    if os.path.exists(out("first2")) and os.path.exists(out("waiter")):
        L1, L2 = lease_of(out("first2")), lease_of(out("waiter"))
        # ISO-8601 UTC with milliseconds: string order is time order.
        # Planted: flock(fd, LOCK_UN) right after acquiring -> the waiter started timing before
        # the first's end check (and the first went void): failed here.
        check(
            L2["start_check"]["at_utc"] >= L1["end_check"]["at_utc"],
            "the waiter started timing only after the first's last sample was verified",
            f"first end {L1['end_check']['at_utc']}, waiter start {L2['start_check']['at_utc']}",
        )
        check(
            int(L2["token"]) == int(L1["token"]) + 1,
            "the waiter's token is the next generation",
            f"{L1['token']} then {L2['token']}",
        )
        check(L1["verdict"] == "valid" and L2["verdict"] == "valid", "both verdicts valid")
        # 6. Planted: the record written before the lease is released (as it was) -> no
        # released_utc: failed.
        times = [
            L1.get("acquired_utc"),
            L1.get("released_utc"),
            L2.get("acquired_utc"),
            L2.get("released_utc"),
        ]
        check(
            all(times) and times[0] < times[1] <= times[2] < times[3],
            "the two holds are strictly one after the other (acquired < released <= next "
            "acquired < released)",
            times,
        )
        # Before the fix the analysis judged the processes' lifetimes: the waiter started before
        # the first ended, and both were refused as lease-overlap ("two lease authorities are in
        # play"): failed.
        rc, text = analyze(env, "report", "--no-history", out("first2"), out("waiter"))
        check(
            "lease-overlap" not in text and "lease-two-mutexes" not in text,
            "convbench-analyze finds no overlap between two runs queued on one lock",
            text,
        )


def two_lock_directories(a, tmp, env, locks, out, trace):
    # 6. Two fresh lock directories, two mutexes: both runs valid, both tokens 1, overlapping
    # (the two-mutex incident).
    other_locks = os.path.join(tmp, "other-locks")
    locks_a = os.path.join(tmp, "locks-a")
    first = start_and_wait_for_hold(
        [a.bench, *LONG], dict(env, CONVBENCH_LEASE_DIR=locks_a), locks_a, out("mutex-a")
    )
    rc, so, se = run(
        [a.bench, *TINY, "--out", out("mutex-b")], dict(env, CONVBENCH_LEASE_DIR=other_locks)
    )
    fo, fe = first.communicate(timeout=240)
    check(
        rc == 0 and first.returncode == 0,
        "two runs through two lock directories both run (neither lock excludes the other)",
        f"rc={rc} {se[-800:]}\nfirst rc={first.returncode} {fe[-800:]}",
    )
    if os.path.exists(out("mutex-a")) and os.path.exists(out("mutex-b")):
        tokens = [lease_of(out(n)).get("token") for n in ("mutex-a", "mutex-b")]
        check(tokens == ["1", "1"], "both fresh locks gave token 1", tokens)
        # Before the fix: equal tokens were skipped and the pair accepted: failed.
        rc, text = analyze(env, "report", "--no-history", out("mutex-a"), out("mutex-b"))
        check(
            rc == 3 and "lease-two-mutexes" in text,
            "convbench-analyze refuses two overlapping runs through two lock directories "
            "(lease-two-mutexes, exit 3)",
            f"rc={rc}\n{text[-2500:]}",
        )
        # The earlier run only in the history index (the folder it lies in), not named.
        hist = os.path.join(tmp, "history")
        os.makedirs(hist, exist_ok=True)
        os.replace(out("mutex-a"), os.path.join(hist, "mutex-a.json"))
        rc, text = analyze(env, "report", "--history", hist, out("mutex-b"))
        check(
            rc == 3 and "lease-two-mutexes" in text and "history index" in text,
            "the overlap is found against the history index alone",
            f"rc={rc}\n{text[-2500:]}",
        )


def site_lock_directory(a, tmp, env, locks, out, trace):
    other_locks = os.path.join(tmp, "other-locks")
    # 6. The lock directory said at run time when it is not the site's. Planted: the site's
    # directory taken as the built-in default whatever the policy names -> the run in the
    # policy's own directory warned: failed.
    policy = os.path.join(tmp, "policy.json")
    with open(policy, "w") as f:
        json.dump({"backend": "file", "endpoint": locks + "/"}, f)
    site = {k: v for k, v in env.items() if k != "CONVBENCH_LEASE_DIR"}
    site["CONVBENCH_LEASE_POLICY"] = policy
    rc, so, se = run([a.bench, *TINY, "--out", out("site-dir")], site)
    check(
        rc == 0 and "lock-dir-not-site" not in se,
        "no warning when the lock directory is the site policy's",
        f"rc={rc}\n{se[-1500:]}",
    )
    rc, so, se = run(
        [a.bench, *TINY, "--out", out("not-site-dir")], dict(site, CONVBENCH_LEASE_DIR=other_locks)
    )
    said = [ln for ln in se.splitlines() if "lock-dir-not-site" in ln]
    check(
        rc == 0 and len(said) == 1 and other_locks in said[0] and locks in said[0],
        "a lock directory other than the site policy's is said on one stderr line",
        se[-1500:],
    )
    if os.path.exists(out("not-site-dir")):
        warned = [w.get("code") for w in lease_of(out("not-site-dir")).get("warnings") or []]
        check("lock-dir-not-site" in warned, "the record's lease block keeps the warning", warned)


def convlease_without_cuda(a, tmp, env, locks, out, trace):
    # 5. convlease (run, verify) holds and checks leases without CUDA: it links no CUDA library
    # and calls no CUDA entry point, so under it a command's wait leaves no trace on the GPU.
    # Seen failing when pointed at bench_conv (which links libcudart for its device arms).
    check(
        not cuda_linked(a.convlease),
        "convlease links no CUDA library and calls no CUDA entry point",
        cuda_linked(a.convlease),
    )


def forged_lease(a, tmp, env, locks, out, trace):
    # 4. a forged inherited lease
    forged = dict(env)
    forged["CONVBENCH_LEASE"] = json.dumps(
        {
            "backend": "file",
            "token": "999",
            "lock_path": os.path.join(locks, "x.lock"),
            "resource": {"host": "h", "machine_id": "m", "gpu_uuid": None},
            "holder": {"pid": os.getpid(), "user": "u", "host": "h", "run_id": "r"},
        }
    )
    rc, so, se = run([a.bench, *TINY, "--out", out("forged")], forged)
    check(
        rc == 3 and "refused" in se,
        "a forged CONVBENCH_LEASE is refused with exit 3",
        f"rc={rc}\n{se}",
    )
    check(not os.path.exists(out("forged")), "a refused run writes no result")


def ctrl_c_on_a_terminal(a, tmp, env, locks, out, trace):
    # 5. Ctrl-C typed on a terminal: the terminal signals the whole foreground process group
    # (convlease and bench_conv); convlease must not send a second SIGINT, which bench_conv
    # takes as "out now, no record". Planted (the code before): convlease forwarded it, the
    # counting command saw 2 and bench_conv died without a record.
    counter = (
        "import signal, sys, time\n"
        "n = []\n"
        "signal.signal(signal.SIGINT, lambda *a: n.append(1))\n"
        "print('ready', flush=True)\n"
        "time.sleep(3)\n"
        "print('sigints', len(n), flush=True)\n"
    )
    p, _ = on_terminal(
        [a.convlease, "run", "--", sys.executable, "-c", counter], env, wait_for="ready"
    )
    so = p.stdout.read() if p.stdout else ""
    p.wait(timeout=60)
    check("sigints 1" in so, "Ctrl-C under convlease reaches the command once", so)
    p, _ = on_terminal(
        [a.convlease, "run", "--", a.bench, *LONG, "--out", out("ctrl-c")],
        env,
        wait_for=None,
        lock_dir=locks,
    )
    p.wait(timeout=120)
    err = p.stderr.read() if p.stderr else ""
    check(p.returncode == 130, f"Ctrl-C under convlease: exit {p.returncode}, want 130", err[-800:])
    check(
        os.path.exists(out("ctrl-c")) and "interrupted by SIGINT" in err,
        "Ctrl-C under convlease: an interrupted record",
        err[-800:],
    )
    if os.path.exists(out("ctrl-c")):
        with open(out("ctrl-c")) as f:
            check(json.load(f)["status"] == "interrupted", "... whose status is interrupted")


def convlease_killed(a, tmp, env, locks, out, trace):
    # 6. convlease dies: the lease is gone with it (the kernel drops its flock), so its command
    # must stop. Planted (the code before): bench_conv timed on, and another run got the lease.
    p = subprocess.Popen(
        [a.convlease, "run", "--", a.bench, *LONG, "--out", out("orphan")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not os.path.exists(out("orphan") + ".journal"):
        time.sleep(0.05)
    child = children_of(p.pid)
    check(len(child) == 1, "convlease runs bench_conv", child)
    p.kill()
    p.wait()
    t0 = time.monotonic()
    while child and time.monotonic() - t0 < 15 and os.path.exists(f"/proc/{child[0]}"):
        with open(f"/proc/{child[0]}/stat") as f:
            if f.read().split(")")[-1].split()[0] == "Z":
                break
        time.sleep(0.05)
    took = time.monotonic() - t0
    check(took < 10, f"bench_conv stops within seconds of losing convlease (took {took:.1f} s)")
    wait_for_file = time.monotonic() + 10
    while time.monotonic() < wait_for_file and not os.path.exists(out("orphan")):
        time.sleep(0.05)
    if check(os.path.exists(out("orphan")), "... and writes its record"):
        L = lease_of(out("orphan"))
        check(
            L.get("verdict") == "void",
            "... whose lease is void (its holder is gone)",
            L.get("reasons"),
        )


SCENARIOS = [
    under_convlease_and_without,
    refused_while_held,
    waits_for_the_lease,
    two_lock_directories,
    site_lock_directory,
    convlease_without_cuda,
    forged_lease,
    ctrl_c_on_a_terminal,
    convlease_killed,
]


def scenarios(tmp, a):
    """Every scenario above in order, with one lock directory and no caller's lease settings."""
    locks = os.path.join(tmp, "locks")
    env = harness.environ(
        drop=["CONVBENCH_LEASE*"], CONVBENCH_LEASE_DIR=locks, CONVBENCH_LEASE_POLICY="none"
    )

    def out(name):
        return os.path.join(tmp, name + ".json")

    def trace(name):
        return os.path.join(tmp, name + ".trace")

    for scenario in SCENARIOS:
        print(f"-- {scenario.__name__}", flush=True)
        scenario(a, tmp, env, locks, out, trace)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--convlease", required=True)
    a = ap.parse_args()
    for exe in (a.bench, a.convlease):
        if not os.access(exe, os.X_OK):
            print(f"e2e_bench: {exe} is not built", file=sys.stderr)
            return 1
    global CUDA_BUILT
    CUDA_BUILT = cuda_built(a.bench)
    harness.check.echo = True
    return harness.run_test("bench_e2e", scenarios, [a], "convbench-lease-e2e")


if __name__ == "__main__":
    sys.exit(main())
