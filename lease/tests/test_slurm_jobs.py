#!/usr/bin/env python3
"""The slurm lease against a REAL single-node Slurm (slurmctld + slurmd, started by
scripts/slurm_up.sh when it is not up; that needs root). Real jobs through sbatch and srun:

1. bench_conv inside a job is leased by the job: backend slurm, token JOB.STEP, valid, the job's
   fields in the record.
2. outside any job under a policy naming slurm: refused (exit 3, one line), no record.
3. outside any job with a forged SLURM_JOB_ID (a running job's): refused.
4. a forged inherited lease inside a job: refused.
5. jobs that do not hold the node alone are refused; two exclusive jobs both run, never at once.
6. GPUs by GRES (device files stand in for GPUs, so no GPU code runs): two jobs of one GPU each
   hold different GPUs at once; a process claiming a GPU its job was not given is refused.
7. a benchmark that outlives its job fails the end check: the lease is void.
8. a job with less time left than the plan's estimate: the record carries the warning.
9. a job array of three tasks (convbench-fleet submit) gives three records that
   `convbench-analyze fleet` reads; `convbench-fleet status` lists them. Job names and arrays
   holding control characters are refused; a job named "x OverSubscribe=NO" is judged by its
   real fields.
10. a fleet task killed mid-run and requeued turns its own journal into its record.
--only scancel (a separate CTest test): `scancel` of a running bench_conv leaves an
   `interrupted` record and frees the node. It needs bench_conv's SIGTERM handling.
Each check names the planted fault it was seen to catch.
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
from harness import check  # noqa: E402

REPO = str(harness.REPO)
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
    "cpu-f64,cpu-f32",
    "--no-counters",
    "--threads",
    "1",
]
LONG = [
    "--stage",
    "up3",
    "--model",
    "bigvgan_base_22khz_80band",
    "--frames",
    "4",
    "--reps",
    "8",
    "--min-time",
    "0.3",
    "--arms",
    "cpu-f32",
    "--no-counters",
    "--threads",
    "1",
]
GPU = "GPU-00000000-0000-4000-8000-00000000000a"  # a name for the leased GPU; none is touched

jobs = []  # every job this test submitted, cancelled at the end


def sh(cmd, env=None, timeout=240):
    """(exit status, stdout, stderr); past timeout, a failed check and status None."""
    p = harness.run(cmd, env=env, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def clean_env(**extra):
    return harness.environ(
        drop=["SLURM_*", "CONVBENCH_LEASE*"], **{"CONVBENCH_LEASE_POLICY": "none", **extra}
    )


def slurm_up():
    try:
        rc, out, _ = sh(["sinfo", "-h", "-o", "%T"], timeout=8) if _has("sinfo") else (1, "", "")
    except subprocess.TimeoutExpired:  # a configured but absent controller
        rc, out = 1, ""
    if rc == 0 and any(s in out for s in ("idle", "mixed", "allocated")):
        return True
    if os.geteuid() != 0:
        check(
            False,
            "a Slurm to test against",
            "no idle node and not root: run sudo bash scripts/slurm_up.sh first",
        )
        return False
    rc, out, err = sh(["bash", os.path.join(REPO, "scripts", "slurm_up.sh")], timeout=120)
    return check(rc == 0, "scripts/slurm_up.sh started Slurm", err[-1500:])


def _has(exe):
    return any(
        os.access(os.path.join(d, exe), os.X_OK)
        for d in os.environ.get("PATH", "").split(os.pathsep)
    )


def sbatch(args, wrap, env, wait=True):
    """Submits; with wait, returns (job id, exit status) once the job ended."""
    cmd = ["sbatch", "--parsable", "-o", os.devnull, *args] + (["--wait"] if wait else [])
    p = subprocess.run(cmd + ["--wrap", wrap], env=env, capture_output=True, text=True, timeout=300)
    job = p.stdout.strip().split(";")[0]
    if job:
        jobs.append(job)
    return job, p.returncode


def job_state(job):
    rc, out, _ = sh(["scontrol", "show", "job", "-o", job], timeout=20)
    for kv in out.split():
        if kv.startswith("JobState="):
            return kv.split("=", 1)[1]
    return "GONE"


def wait_for(pred, timeout):
    return harness.wait_for(pred, timeout, step=0.2)


def load(path):
    return harness.load_record(path)


def node_name():
    return subprocess.run(["hostname", "-s"], capture_output=True, text=True).stdout.strip()


def q(args):
    return " ".join("'" + a.replace("'", "'\\''") + "'" for a in args)


def inside_job(a, tmp, env):
    out = os.path.join(tmp, "inside.json")
    job, rc = sbatch(
        ["--exclusive", "-J", "cb-inside"], f"srun {q([a.bench, *TINY])} --out {out}", env
    )
    # Planted: Policy::load not choosing slurm inside a job -> backend file: failed here.
    if not check(
        rc == 0 and os.path.exists(out),
        "bench_conv inside a job exits 0 with a record",
        f"job {job} rc {rc}",
    ):
        return
    L = load(out)["lease"]
    check(
        L["backend"] == "slurm" and L["token"] == f"{job}.0",
        "inside a job: the slurm backend, token = the job's id and step",
        L.get("token"),
    )
    check(
        L["verdict"] == "valid" and L["start_check"]["ok"] and L["end_check"]["ok"],
        "inside a job: verified at start and end, verdict valid",
        L.get("reasons"),
    )
    s = L.get("slurm") or {}
    check(
        s.get("job_id") == job
        and s.get("step") == "0"
        and s.get("partition") == "debug"
        and s.get("nodelist")
        and s.get("time_limit")
        and s.get("oversubscribe") == "NO"
        and s.get("nodes", {}).get(s.get("nodelist"), {}).get("cpu_ids"),
        "the record holds the job id, step, partition, nodelist, CPUs and time limit",
        s,
    )


def outside_job(a, tmp):
    policy = os.path.join(tmp, "policy.json")
    with open(policy, "w") as f:
        json.dump({"backend": "slurm"}, f)
    out = os.path.join(tmp, "outside.json")
    rc, so, se = sh([a.bench, *TINY, "--out", out], clean_env(CONVBENCH_LEASE_POLICY=policy))
    # Planted: grant() without its no-job refusal -> scontrol's own error, not this line: failed.
    check(
        rc == 3 and "outside any Slurm job" in se and len(se.strip().splitlines()) == 1,
        "outside a job under a slurm policy: refused, exit 3, one line naming why",
        f"rc {rc}\n{se}",
    )
    check(not os.path.exists(out), "a refused run writes no record")


def forged(a, tmp, env):
    holder, _ = sbatch(["--exclusive", "-J", "cb-holder", "-t", "2"], "sleep 100", env, wait=False)
    if not check(wait_for(lambda: job_state(holder) == "RUNNING", 60), "holder job is RUNNING"):
        return
    out = os.path.join(tmp, "forged.json")
    rc, so, se = sh(
        [a.bench, *TINY, "--out", out], clean_env(SLURM_JOB_ID=holder, SLURM_STEP_ID="0")
    )
    # Planted: judge() not comparing the pid's job (scontrol pidinfo) with the token -> ran under
    # the holder's exclusive job, exit 0: failed here.
    check(
        rc == 3 and "does not count this process" in se,
        "outside a job with a forged SLURM_JOB_ID (a running job's): refused",
        f"rc {rc}\n{se}",
    )
    check(not os.path.exists(out), "the forged run writes no record")
    sh(["scancel", holder])
    wait_for(lambda: job_state(holder) not in ("RUNNING", "COMPLETING"), 60)
    lease = json.dumps(
        {
            "backend": "slurm",
            "token": f"{holder}.0",
            "resource": {"host": "x", "machine_id": "m", "gpu_uuid": None},
        }
    )
    out = os.path.join(tmp, "forged-inherited.json")
    job, rc = sbatch(
        ["--exclusive", "-J", "cb-forged"],
        f"CONVBENCH_LEASE={q([lease])} srun {q([a.bench, *TINY])} --out {out}",
        env,
    )
    # Planted: adopt() not comparing the inherited token with its own job AND judge() without the
    # pid check -> the run adopted job {holder}'s lease, exit 0: failed here.
    check(
        rc != 0 and not os.path.exists(out),
        "inside a job, an inherited lease naming another job: refused, no record",
        f"rc {rc}",
    )


def overlap(r1, r2):
    a0, a1 = r1["lease"]["start_check"]["at_utc"], r1["lease"]["end_check"]["at_utc"]
    b0, b1 = r2["lease"]["start_check"]["at_utc"], r2["lease"]["end_check"]["at_utc"]
    return a0 < b1 and b0 < a1  # ISO-8601 UTC with milliseconds: string order is time order


def exclusivity(a, tmp, env):
    out = os.path.join(tmp, "alone.json")
    job, rc = sbatch(
        ["-n1", "-c1", "-J", "cb-alone"], f"srun {q([a.bench, *TINY])} --out {out}", env
    )
    # Planted: the host check accepting a node that is not exclusive (OverSubscribe not read)
    # -> the job alone on the node ran, exit 0: failed here.
    check(
        rc != 0 and not os.path.exists(out),
        "a job alone on the node but not exclusive is refused for host arms (others may join)",
        f"rc {rc}",
    )
    # The same job named so that splitting scontrol's line at spaces reads "OverSubscribe=NO"
    # (and once with a newline that poses as scontrol's next line). Planted (the code before):
    # the name's field was taken for the job's, the shared job ran, exit 0: failed here.
    for name in ("cb OverSubscribe=NO", "cb\n   OverSubscribe=NO"):
        out = os.path.join(tmp, "named.json")
        job, rc = sbatch(
            ["-n1", "-c1", "--oversubscribe", "-J", name],
            f"srun {q([a.bench, *TINY])} --out {out}",
            env,
        )
        check(
            rc != 0 and not os.path.exists(out),
            f"a shared job named {name!r} is refused like any shared job",
            f"rc {rc}",
        )
    valid = []
    for mode, opts in (("shared", ["-n1", "-c1"]), ("exclusive", ["--exclusive"])):
        procs = []
        for k in range(2):
            out = os.path.join(tmp, f"{mode}{k}.json")
            cmd = [
                "sbatch",
                "--parsable",
                "--wait",
                "-o",
                os.devnull,
                "-J",
                f"cb-{mode}",
                *opts,
                "--wrap",
                f"srun {q([a.bench, *LONG])} --out {out}",
            ]
            procs.append((subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True), out))
        for p, out in procs:
            jobs.append(p.communicate(timeout=300)[0].strip())
            if os.path.exists(out):
                r = load(out)
                if r["lease"]["verdict"] == "valid":
                    valid.append((mode, r))
        n = sum(1 for m, _ in valid if m == mode)
        if mode == "shared":
            # Planted: the host check accepting a shared node (OverSubscribe not read) AND not
            # looking for other jobs on the node -> both ran at once, valid: failed here.
            check(
                n == 0,
                "jobs sharing the node (1 CPU each) are refused for host arms",
                f"{n} valid record(s)",
            )
        else:
            check(n == 2, "two exclusive jobs both time under their jobs' leases", f"{n} valid")
    pairs = [(x, y) for i, x in enumerate(valid) for y in valid[i + 1 :]]
    bad = [
        (x[1]["lease"]["token"], y[1]["lease"]["token"]) for x, y in pairs if overlap(x[1], y[1])
    ]
    check(not bad, "no two valid runs timed at the same time on the node", bad)


def gpus(a, tmp, env):
    procs, outs = [], []
    for k in range(2):
        out = os.path.join(tmp, f"gpu{k}.json")
        cmd = [
            "sbatch",
            "--parsable",
            "--wait",
            "-o",
            os.devnull,
            "-J",
            "cb-gpu",
            "-n1",
            "-c1",
            "--gres=gpu:1",
            "--wrap",
            f"srun {q([a.probe, '--gpu-uuid', GPU, '--seconds', '3'])} --json {out}",
        ]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True))
        outs.append(out)
    for p in procs:
        jobs.append(p.communicate(timeout=300)[0].strip())
    leases = [json.load(open(o)) for o in outs if os.path.exists(o)]
    idx = sorted((L.get("slurm") or {}).get("gpu_index", -1) for L in leases)
    check(
        len(leases) == 2 and all(L["verdict"] == "valid" for L in leases) and idx == [0, 1],
        "two one-GPU jobs hold GPUs 0 and 1 (GRES), both valid",
        [L.get("reasons") for L in leases],
    )
    if len(leases) == 2:
        check(
            overlap({"lease": leases[0]}, {"lease": leases[1]}),
            "... at the same time: different GPUs are different resources",
        )
    out = os.path.join(tmp, "gpu-forged.json")
    job, rc = sbatch(
        ["-n1", "-c1", "--gres=gpu:1", "-J", "cb-gpu-forged"],
        "srun bash -c "
        + q([f"SLURM_STEP_GPUS=$((1 - SLURM_STEP_GPUS)) {a.probe} --gpu-uuid {GPU} --json {out}"]),
        env,
    )
    # Planted: the GRES binding not checked (any GPU index accepted) -> valid: failed here.
    check(
        rc != 0 and not os.path.exists(out),
        "a process claiming the GPU its job was not given is refused",
        f"rc {rc}",
    )


def outlived(a, tmp, env):
    out = os.path.join(tmp, "outlived.json")
    job, rc = sbatch(
        ["--exclusive", "-J", "cb-outlived"],
        f"{q([a.probe, '--seconds', '5'])} --json {out} & sleep 1.5; exit 0",
        env,
    )
    check(wait_for(lambda: os.path.exists(out), 60), "the probe that outlived its job reported")
    if os.path.exists(out):
        L = json.load(open(out))
        # Planted: verify() answering ok without asking Slurm (the token not compared at the end
        # check) -> verdict valid: failed here.
        check(
            L["start_check"]["ok"] and not L["end_check"]["ok"] and L["verdict"] == "void",
            "a benchmark that outlived its job: start ok, end check failed, void",
            json.dumps({k: L.get(k) for k in ("start_check", "end_check", "reasons")}, indent=1),
        )


def time_left(a, tmp, env):
    out = os.path.join(tmp, "short.json")
    job, rc = sbatch(
        ["--exclusive", "-t", "1", "-J", "cb-short"],
        f"srun {q([a.probe, '--estimate', '600', '--seconds', '0.2'])} --json {out}",
        env,
    )
    if check(os.path.exists(out), "the short job's probe reported", f"rc {rc}"):
        L = json.load(open(out))
        codes = [w.get("code") for w in L.get("warnings") or []]
        # Planted: the comparison reversed (warn when more time is left) -> no warning: failed.
        check(
            "slurm-time-left" in codes and L["ttl_s"] is not None and L["ttl_s"] <= 60,
            "a job with 1 min left and a 600 s plan: the record warns slurm-time-left",
            L,
        )
        check(L["verdict"] == "valid", "the warning does not void the lease", L.get("reasons"))


def array(a, tmp, env):
    results = os.path.join(tmp, "fleet")
    plan = [*TINY[: TINY.index("--reps") + 1], "3", *TINY[TINY.index("--reps") + 2 :]]
    rc, so, se = sh(
        [
            sys.executable,
            a.fleet,
            "submit",
            "--results",
            results,
            "--bench",
            a.bench,
            "--array",
            "0-2",
            "-J",
            "cb-array",
            "--",
            *plan,
        ],
        env,
    )
    if not check(rc == 0, "convbench-fleet submit --array 0-2 exits 0", se):
        return
    for bad, why in (
        (["--array", "0-2", *plan], "after --"),
        (["--", *plan], "--nodes N"),
        (["--array", "0", "--", *plan, "--out", "x.json"], "leave --out"),
    ):
        # Planted: the --out refusal dropped -> the plan was submitted, exit 0: failed here.
        r = sh([sys.executable, a.fleet, "submit", "--results", results, *bad], env)
        check(
            r[0] == 2 and why in r[2] and len(r[2].strip().splitlines()) == 1,
            f"convbench-fleet submit {' '.join(bad[:2])}...: one line, exit 2",
            r[2],
        )
    # Values that would end a line of the job script: refused, nothing submitted. Planted (the
    # code before): the newline in --job-name ran "touch" in the job and dropped the directives
    # after it; exit 0.
    marker = os.path.join(tmp, "injected")
    for bad in (
        ["--job-name", f"x\ntouch {marker}", "--array", "0"],
        ["--array", "0\n#SBATCH --oversubscribe"],
        ["--array", "0", "--comment", "a\rb"],
    ):
        r = sh(
            [sys.executable, a.fleet, "submit", "--results", results, "--bench", a.bench, *bad]
            + ["--", *plan],
            env,
        )
        check(
            r[0] == 2 and "control character" in r[2] and len(r[2].strip().splitlines()) == 1,
            f"convbench-fleet submit {bad!r}: refused, one line, exit 2",
            r[1] + r[2],
        )
        if r[0] == 0:
            jobs.append(r[1].strip().splitlines()[-1])
    job = so.strip().splitlines()[-1]
    jobs.append(job)
    done = wait_for(lambda: sh(["squeue", "-h", "-r", "-j", job], env)[1].strip() == "", 240)
    check(not os.path.exists(marker), "no line of a job name ran as a command")
    recs = sorted(f for f in os.listdir(results) if f.endswith(".json"))
    # Planted: the task left out of the record's name -> one record, overwritten: failed here.
    check(done and len(recs) == 3, "three array tasks wrote three records", recs)
    tokens = set()
    for f in recs:
        L = load(os.path.join(results, f))["lease"]
        tokens.add(L["token"])
        check(
            L["backend"] == "slurm"
            and L["verdict"] == "valid"
            and (L.get("slurm") or {}).get("array_job_id") == job,
            f"{f}: valid under its own array task",
            L.get("reasons"),
        )
    check(len(tokens) == len(recs), "each task has its own token", tokens)
    rc, so, se = sh([sys.executable, a.fleet, "status", "--results", results], env)
    check(
        rc == 0 and f"job {job}" in so and so.count("record ") == 3,
        "convbench-fleet status lists the submission and its three records",
        so + se,
    )
    # This tree's analysis package, whatever copy pip installed.
    src = os.path.join(REPO, "analysis", "src")
    aenv = dict(env, PYTHONPATH=os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")])))
    rc, so, se = sh([sys.executable, "-m", "convbench_analysis", "fleet", results], aenv)
    check(
        rc in (0, 3) and "1 host(s), 3 run(s)" in so and not se.strip().startswith("Trace"),
        "convbench-analyze fleet reads the three records",
        so[-3000:] + se[-2000:],
    )
    for f in recs:
        task = f.split("_")[1].split("-")[0]
        check(f"(array {job}_{task})" in so, f"the fleet report names array task {task}")
    print(so)
    # --nodes N: one job over N exclusive nodes (one here), a record per node.
    nodes_dir = os.path.join(tmp, "fleet-nodes")
    rc, so, se = sh(
        [sys.executable, a.fleet, "submit", "--results", nodes_dir, "--bench", a.bench]
        + ["--nodes", "1", "-J", "cb-nodes", "--wait", "--", *plan],
        env,
    )
    job = so.strip().splitlines()[-1] if rc == 0 else "?"
    jobs.append(job)
    rec = os.path.join(nodes_dir, f"{job}_0-{node_name()}.json")
    check(rc == 0 and os.path.exists(rec), "convbench-fleet submit --nodes 1: one record", se)
    if os.path.exists(rec):
        L = load(rec)["lease"]
        check(L["verdict"] == "valid" and L["token"] == f"{job}.0", "... valid under its job", L)


def requeue(a, tmp, env):
    """A fleet task whose node failed mid-run (bench_conv killed outright, its journal left) and
    that Slurm requeues: the second start turns the task's own journal into its record. Planted
    (the code before): the requeue path ran `bench_conv ... --resume` with no journal (exit 2)
    and the journal stayed."""
    results = os.path.join(tmp, "fleet-requeue")
    long = [*LONG[: LONG.index("--reps") + 1], "200", *LONG[LONG.index("--reps") + 2 :]]
    rc, so, se = sh(
        [sys.executable, a.fleet, "submit", "--results", results, "--bench", a.bench]
        + ["--array", "0", "-J", "cb-requeue", "--requeue", "--", *long],
        env,
    )
    if not check(rc == 0, "convbench-fleet submit --requeue exits 0", se):
        return
    job = so.strip().splitlines()[-1]
    jobs.append(job)
    journal = []

    def journaled():
        found = [f for f in os.listdir(results) if f.endswith(".json.journal")]
        journal[:] = [os.path.join(results, f) for f in found]
        return found and sum(1 for _ in open(journal[0])) >= 3  # header + 2 rounds

    if not check(wait_for(journaled, 120), "the task journals its rounds"):
        return
    rec = journal[0][: -len(".journal")]
    # The node "fails": bench_conv dies without a word (SIGKILL), the journal stays.
    bench = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmd_has(pid, rec)]
    for pid in bench:
        os.kill(int(pid), 9)
    ended = wait_for(lambda: job_state(job) not in ("RUNNING", "COMPLETING", "PENDING"), 60)
    check(ended and not os.path.exists(rec), "the killed task ended with no record", job_state(job))
    rc, _, se = sh(["scontrol", "requeue", job], env)
    check(rc == 0, "scontrol requeue", se)

    # Slurm holds a requeued job back until its old credential expires (slurm_up.sh sets
    # cred_expire to 10 s): forced to start sooner, slurmd refuses it ("credential revoked").
    def completed():
        return os.path.exists(rec) and job_state(job) == "COMPLETED"

    done = wait_for(completed, 180)
    check(done, "the requeued task completes and writes the record", job_state(job))
    check(not os.path.exists(rec + ".journal"), "... from its journal, which is gone")
    if os.path.exists(rec):
        r = load(rec)
        check(
            r.get("status") == "recovered" and r["recovered"]["rounds"] >= 2,
            "... a recovered record of the journaled rounds",
            r.get("recovered"),
        )


def _cmd_has(pid, needle):
    """pid is a bench_conv whose command line holds needle."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return False
    return argv[0].endswith(b"bench_conv") and any(needle.encode() in x for x in argv)


def scancel(a, tmp, env):
    out = os.path.join(tmp, "cancelled.json")
    long = [*LONG[: LONG.index("--reps") + 1], "200", *LONG[LONG.index("--reps") + 2 :]]
    job, _ = sbatch(
        ["--exclusive", "-J", "cb-scancel"],
        f"srun {q([a.bench, *long])} --out {out}",
        env,
        wait=False,
    )
    check(wait_for(lambda: job_state(job) == "RUNNING", 60), "the benchmark's job is RUNNING")
    time.sleep(4)  # a few rounds in
    sh(["scancel", job])
    gone = wait_for(lambda: job_state(job) not in ("RUNNING", "COMPLETING", "PENDING"), 90)
    check(gone, "the cancelled job ended", job_state(job))
    check(os.path.exists(out), "scancel of a running bench_conv leaves a record (SIGTERM handled)")
    if os.path.exists(out):
        r = load(out)
        check(r.get("status") == "interrupted", "... whose status is interrupted", r.get("status"))
        s = r["lease"].get("slurm") or {}
        check(
            s.get("state_at_record") in ("CANCELLED", "RUNNING", "COMPLETING"),
            "... with the job's state when it was written",
            s,
        )
    # The node is free: an exclusive job starts at once.
    rc, so, se = sh(
        ["srun", "--exclusive", "-J", "cb-after", "-t", "1", "--immediate=30", "true"],
        env,
        timeout=60,
    )
    check(rc == 0, "after scancel an exclusive job gets the node at once", f"rc {rc} {se}")


def parts(tmp, a, only):
    env = clean_env()
    table = {
        "inside": lambda: inside_job(a, tmp, env),
        "outside": lambda: outside_job(a, tmp),
        "forged": lambda: forged(a, tmp, env),
        "exclusivity": lambda: exclusivity(a, tmp, env),
        "gpus": lambda: gpus(a, tmp, env),
        "outlived": lambda: outlived(a, tmp, env),
        "time_left": lambda: time_left(a, tmp, env),
        "array": lambda: array(a, tmp, env),
        "requeue": lambda: requeue(a, tmp, env),
        "scancel": lambda: scancel(a, tmp, env),
    }
    os.chmod(tmp, 0o755)
    chosen = [only] if only else [p for p in table if p != "scancel"]
    try:
        for name in chosen:
            print(f"-- {name}", flush=True)
            table[name]()
    finally:
        for job in jobs:
            if job:
                sh(["scancel", job])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--fleet", default=os.path.join(REPO, "lease", "tools", "convbench-fleet"))
    ap.add_argument("--only", default=None, help="run one part (e.g. scancel)")
    a = ap.parse_args()
    harness.check.echo = True
    if not slurm_up():
        return 1
    return harness.run_test("slurm_jobs", parts, [a, a.only], "convbench-slurm")


if __name__ == "__main__":
    sys.exit(main())
