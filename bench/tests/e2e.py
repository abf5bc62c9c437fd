"""End-to-end tests of bench_conv, run by CTest: e2e.py TEST BENCH_CONV SCHEMA.

Each test runs the real binary in a fresh temporary directory and checks what a user sees: the
exit status, stderr, the result file against results/result.schema.json, the .npy dump.
Exit 0 = pass, 1 = fail (with the reasons), 77 = could not run here (the reason is printed).
Planted faults that were seen to fail each test are noted beside the checks.
"""

import json
import math
import os
import subprocess
import sys
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "harness"))
import harness  # noqa: E402
from harness import check, gpu_present, load_json, run, skip, validate  # noqa: E402

# ---------------------------------------------------------------------------------------------


def t_cli_errors(tmp, bench, schema):
    """Every bad request: exit 2, exactly one line on stderr, nothing on stdout, no file written.
    Planted: making --reps accept 0 fails the '--reps 0' case; printing the usage text on errors
    fails the one-line check; not passing --cudnn-algo on to the plan fails its cases (they run);
    reading a record without checking it is a file fails '--cudnn-algo @DIR' (exit 1)."""
    for args in bad_requests(tmp):
        check_refused(bench, tmp, args)
    check_data_dir_and_help(bench, tmp)


def bad_requests(tmp):
    """The bad requests, each a list of bench_conv arguments (tmp holds their files)."""
    no_cudnn = os.path.join(tmp, "no-cudnn.json")
    with open(no_cudnn, "w") as f:
        json.dump({"cases": [{"id": "up0/8/cpu-f64/host", "arm": "cpu-f64", "kernel": {}}]}, f)
    cases = [
        ["--bogus"],
        ["--reps", "0"],
        ["--reps", "-3"],
        ["--reps", "three"],
        ["--reps"],
        ["--reps", "3", "--reps", "4"],
        ["--frames", "0"],
        ["--frames", "96,,384"],
        ["--frames", "x"],
        ["--stage", "up9"],
        ["--stage", "up4", "--model", "bigvgan_base_22khz_80band"],
        ["--stage", "sideways"],
        ["--stage", "up0,up0"],
        ["--model", "no_such_vocoder"],
        ["--arms", "no-such-arm"],
        ["--staging", "sometimes"],
        ["--seed", "-1"],
        ["--threads", "0"],
        ["--min-time", "0"],
        ["--device-timing", "eventually"],
        ["--device-timing"],
        ["--lease-wait", "-1"],
        ["--out", "/proc/convbench-e2e.json"],
        ["--out", tmp],
        ["--out", "/nonexistent-convbench-dir/r.json"],
        ["--dump", "/proc/convbench-dump"],
        ["--no-counters", "--profile", "fp-throughput"],
        ["--profile", "no-such-profile"],
        ["--stage", "chain", "--frames", "1000000000"],  # a shape torch would refuse
        # valid shapes, but ~0.5 TB of buffers: refused before anything is allocated
        ["--stage", "chain", "--frames", "10000000", "--model", "bigvgan_v2_44khz_128band_512x"],
        ["up0"],
        ["--help=yes"],
        ["--no-lease=1"],
        ["--plugin"],
        ["--plugin", "--reps", "2"],
        ["--cudnn-algo", "bwd_data_algo_9"],
        ["--cudnn-algo", "fwd_algo"],
        ["--cudnn-algo", "bwd_data_algo_1 (warp math)"],
        ["--cudnn-algo", "up0/8/cudnn-f32/resident"],
        ["--cudnn-algo", "=bwd_data_algo_0"],
        ["--cudnn-algo", "@/nonexistent-convbench-record.json"],
        ["--cudnn-algo", "@" + no_cudnn],
        ["--cudnn-algo", "@" + tmp],
        ["--cudnn-algo", "up9/8/cudnn-f32/resident=bwd_data_algo_0"],
        # up0 is a ConvTranspose1d: no cuDNN case of it runs a forward algorithm (and without a
        # GPU no cuDNN case is planned at all)
        ["--stage", "up0", "--cudnn-algo", "fwd_algo_1"],
    ]
    if not gpu_present():
        cases.append(["--arms", "cpu-f64,cuda-f64"])
    return cases


def check_refused(bench, tmp, args):
    """One bad request: exit 2, one prefixed stderr line, no stdout, no file left."""
    # the case's own flags, plus a small model and frame count where the case does not set them
    full = list(args)
    for flag, val in (("--model", "bigvgan_base_22khz_80band"), ("--frames", "8")):
        if flag not in args and not any(a.startswith(flag + "=") for a in args):
            full += [flag, val]
    if "--lease-wait" not in args:
        full.append("--no-lease")
    if "--out" not in args:
        full += ["--out", os.path.join(tmp, "r.json")]
    before = set(os.listdir(tmp))
    p = run([bench] + full, tmp)
    lines = p.stderr.strip().splitlines()
    name = " ".join(args)
    check(
        p.returncode == 2,
        f"[{name}] exit {p.returncode}, want 2; stderr: {p.stderr.strip()[:300]}",
    )
    check(len(lines) == 1, f"[{name}] {len(lines)} stderr lines, want 1: {p.stderr[:300]!r}")
    check(
        lines and lines[0].startswith("bench_conv: "),
        f"[{name}] stderr not prefixed: {p.stderr[:200]!r}",
    )
    check(p.stdout == "", f"[{name}] stdout not empty: {p.stdout[:200]!r}")
    check(set(os.listdir(tmp)) == before, f"[{name}] left files: {set(os.listdir(tmp)) - before}")
    print(f"ok exit 2: {name}: {lines[0] if lines else ''}")


def check_data_dir_and_help(bench, tmp):
    # A data dir override that is wrong is an error too.
    p = run(
        [bench, "--no-lease", "--out", os.path.join(tmp, "r.json")],
        tmp,
        extra={"CONVBENCH_DATA_DIR": "/nonexistent-convbench-data"},
    )
    check(
        p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1,
        f"[CONVBENCH_DATA_DIR wrong] exit {p.returncode}: {p.stderr[:200]!r}",
    )
    # --help documents every flag and exits 0.
    p = run([bench, "--help"], tmp)
    check(p.returncode == 0, "--help exit status")
    for flag in [
        "--stage",
        "--model",
        "--frames",
        "--arms",
        "--staging",
        "--reps",
        "--seed",
        "--threads",
        "--min-time",
        "--out",
        "--dump",
        "--no-lease",
        "--lease-wait",
        "--profile",
        "--no-counters",
        "--plugin",
        "--cudnn-algo",
        "--list",
        "--json",
    ]:
        check(flag in p.stdout, f"--help does not document {flag}")
    # Planted: the help text's default written as 20: this check failed.
    check("Default: 27 (the main job" in p.stdout, "--help states the --max-time default, 27 s")


def small_run(bench, tmp, extra, out="r.json", extra_flags=()):
    """The small run; `extra` flags (pairs) replace the defaults of the same name; `flags` are
    added as they are (-v)."""
    flags = {
        "--stage": "up3",
        "--model": "bigvgan_base_22khz_80band",
        "--frames": "8",
        "--reps": "3",
        "--arms": "cpu-f64,cpu-f32",
        "--out": out,
        "--target-ci": "0",
    }
    flags.update(dict(zip(extra[::2], extra[1::2], strict=False)))
    args = [x for kv in flags.items() for x in kv] + ["--no-counters", "--no-lease"]
    return run([bench] + args + list(extra_flags), tmp)


def check_result_invariants(r, reps, what):
    """What every result must hold beyond the schema. `reps` is --reps: the exact count when the
    run had no target (--target-ci 0), the fewest rounds of every timed case otherwise."""
    timed = [c for c in r["cases"] if c["gate"]["result"] == "pass"]
    fixed = r["plan"]["stopping"]["target_ci_percent"] == 0
    order = r["plan"]["order"]
    if fixed:
        check(len(order) == reps, f"{what}: {len(order)} rounds in order, want {reps}")
    else:
        check(len(order) >= reps, f"{what}: {len(order)} rounds in order, want >= {reps}")
    check(r["status"] == "complete", f"{what}: status {r.get('status')}")
    check_rounds(order, timed, reps, what)
    for c in r["cases"]:
        check_case(r, c, order, reps, fixed, what)
    iters = [b for b in r["benchmarks"] if b["run_type"] == "iteration"]
    check(
        len(iters) == sum(len(c["samples"]) for c in timed),
        f"{what}: {len(iters)} benchmark iteration entries",
    )
    check(
        r["lease"].get("status") in ("not-collected", "unavailable", "collected"),
        f"{what}: lease status",
    )


def check_rounds(order, timed, reps, what):
    """Each round's order against the cases sampled in it; seeds distinct."""
    seeds = set()
    # A round samples exactly the cases still converging; a case that stopped never comes back
    # (its stopping decision saw every sample it has: interval.n below). Planted: sampling every
    # gated case in every round (ignoring the stops) failed interval.n on a run where cpu-f64 met
    # a 5% target rounds before cpu-f32.
    sizes = []
    for o in order:
        seeds.add(o["seed"])
        in_round = sorted(
            c["id"] for c in timed if any(s["round"] == o["round"] for s in c["samples"])
        )
        check(
            sorted(o["cases"]) == in_round,
            f"{what}: round {o['round']} order is not a permutation of the cases sampled in it",
        )
        if o["round"] < reps:
            check(
                sorted(o["cases"]) == sorted(c["id"] for c in timed),
                f"{what}: round {o['round']} < --reps does not sample every timed case",
            )
        sizes.append(len(o["cases"]))
    check(sizes == sorted(sizes, reverse=True), f"{what}: cases per round grew: {sizes}")
    check(len(seeds) == len(order), f"{what}: per-round seeds repeat: {seeds}")


def check_allclose_needs(c, what):
    """A passed gate (not gemm or self) records the least allclose rel per absolute floor: it
    never rises as the floor grows (null, no rel suffices, above every number), is 0 from max abs
    on, and at floor 0 is max_rel_err. Planted: the floors written in reverse order, seen
    failing."""
    g, cid = c["gate"], c["id"]
    if g["kind"] in ("gemm", "self"):  # a ceiling checked by itself: no output to compare
        return
    need = g.get("allclose_rel_needed")
    check(isinstance(need, dict) and len(need) == 14, f"{what}: {cid} allclose_rel_needed {need}")
    floors = sorted((float(a), math.inf if r is None else r) for a, r in need.items())
    rels = [r for _, r in floors]
    check(rels == sorted(rels, reverse=True), f"{what}: {cid} allclose needs rise: {floors}")
    mx = g["max_abs_err"]
    check(all(r == 0 for a, r in floors if a >= mx), f"{what}: {cid} a need above max abs {mx}")
    check(g.get("max_rel_err") == need["0"], f"{what}: {cid} max_rel_err {g.get('max_rel_err')}")


def check_case(r, c, order, reps, fixed, what):
    """One case: its id, gate, stopping, rounds, samples and stats."""
    cid = c["id"]
    check(cid == f"{c['stage']}/{c['frames']}/{c['arm']}/{c['staging']}", f"{what}: id {cid}")
    # The arm's facts ride with every case; the reference is the one arm gated against none.
    # Planted: the record without "role" failed here (the schema keeps it optional).
    check(
        all(k in c for k in ("precision", "math", "role")), f"{what}: {cid} without its arm's facts"
    )
    check(
        (c.get("role") == "reference") == (c["gate"]["kind"] == "reference"),
        f"{what}: {cid} role {c.get('role')} with gate {c['gate']['kind']}",
    )
    if c["gate"]["result"] != "pass":
        check(
            c["samples"] == [] and c["stats"] is None,
            f"{what}: {cid} failed its gate but was timed",
        )
        return
    check_allclose_needs(c, what)
    n = len(c["samples"])
    if fixed:
        check(
            n == reps and c["stop_reason"] == "fixed-count",
            f"{what}: {cid} has {n} samples ({c['stop_reason']}), want {reps} (fixed-count)",
        )
    else:
        check(n >= reps, f"{what}: {cid} has {n} samples, want >= {reps}")
        check(
            c["stop_reason"] in ("target-met", "time-budget", "max-rounds"),
            f"{what}: {cid} stop_reason {c['stop_reason']}",
        )
        iv = c["interval"]
        if c["stop_reason"] == "target-met":
            check(
                iv["half_width"] is not None and iv["half_width"] <= iv["target"],
                f"{what}: {cid} target met with interval {iv}",
            )
    check(
        [s["round"] for s in c["samples"]] == list(range(n)),
        f"{what}: {cid} rounds not 0..{n - 1}",
    )
    check(
        c["interval"]["n"] == n,
        f"{what}: {cid} stopped at {c['interval']['n']} samples, has {n}",
    )
    for s in c["samples"]:
        check_sample(r, c, s, order, what)
    secs = [s["seconds"] for s in c["samples"]]
    check(c["stats"]["best"] == min(secs), f"{what}: {cid} best is not the minimum over rounds")
    check(c["stats"]["n"] == len(secs), f"{what}: {cid} stats.n")
    check(
        c["counters"]["status"] in ("not-collected", "unavailable", "collected"),
        f"{what}: {cid} counters",
    )


def check_sample(r, c, s, order, what):
    """One sample: its place in the order, its time, and the probes around it."""
    cid = c["id"]
    order_r = order[s["round"]]["cases"]
    check(order_r[s["position"]] == cid, f"{what}: {cid} round {s['round']} position mismatch")
    check(s["seconds"] > 0 and s["iterations"] >= 1, f"{what}: {cid} sample time/iterations")
    check(
        abs(s["seconds"] * s["iterations"] - s["total_seconds"])
        <= 1e-9 + 1e-6 * s["total_seconds"],
        f"{what}: {cid} seconds x iterations != total_seconds",
    )
    # The per-sample host probes. Planted: skipping probe_host() after the sample
    # (host_after = host_before) is caught by nothing here, but dropping either block
    # fails these.
    for k in ("host_before", "host_after"):
        h = s[k]
        check(isinstance(h, dict), f"{what}: {cid} {k} missing")
        check(isinstance(h.get("loadavg_1m"), (int, float)), f"{what}: {cid} {k}.loadavg_1m")
        check(isinstance(h.get("runnable"), int), f"{what}: {cid} {k}.runnable")
        check(
            "governor" in h and "cpu_mhz" in h and "unavailable" in h,
            f"{what}: {cid} {k} keys",
        )
        for key in ("governor", "cpu_mhz"):
            if h.get(key) is None:
                check(
                    key in h["unavailable"],
                    f"{what}: {cid} {k}.{key} null without a reason",
                )
    # Delivered speed and placement per worker (host samples), contention around every
    # sample. Planted: measuring speed_after on the calling thread only (one entry) fails
    # the per-worker count; pinning worker i to cpus[i + 1] fails the placement check.
    if not c["device"]:
        w = s["workers"]
        check(
            isinstance(w, list) and len(w) == r["plan"]["threads"],
            f"{what}: {cid} workers {w if not isinstance(w, list) else len(w)}, "
            f"want {r['plan']['threads']}",
        )
        pl = r["plan"]["placement"]
        for i, x in enumerate(w or []):
            for k in ("speed_before", "speed_after"):
                sp = x[k]
                check(
                    isinstance(sp, dict) and sp["adds_per_s"] > 0 and sp["cpu"] >= 0,
                    f"{what}: {cid} worker {i} {k} {sp}",
                )
            if pl["pinned"] and x["tasks"] > 0:
                check(
                    x["cpu"] == pl["cpus"][i] and x["cpu_changes"] == 0,
                    f"{what}: {cid} pinned worker {i} ran on {x['cpu']}, placed on {pl['cpus'][i]}",
                )
        check(
            s["imbalance"] is None or s["imbalance"] >= 1.0,
            f"{what}: {cid} imbalance {s['imbalance']}",
        )
    ct = s["contention"]
    check(isinstance(ct, dict) and len(ct["threads"]) >= 1, f"{what}: {cid} contention {ct}")
    check(
        isinstance(s["foreign_cpu_window"], dict) and isinstance(s["top_foreign"], list),
        f"{what}: {cid} foreign window / processes",
    )
    check(
        isinstance(s["foreign_cpu_share"], (int, float)) and s["foreign_cpu_share"] >= 0,
        f"{what}: {cid} foreign_cpu_share",
    )
    check(isinstance(s["foreign_cpu_s"], (int, float)), f"{what}: {cid} foreign_cpu_s")
    if not c["device"]:
        check(
            s["gpu_before"] is None
            and s["gpu_after"] is None
            and s["measured_sm_clock_mhz"] is None,
            f"{what}: {cid} host arm with GPU state",
        )


def t_small_run(tmp, bench, schema):
    """The issue's small run validates against the schema; same seed = same order, another seed
    = another order. Planted: seeding each round's PRNG from the clock fails the same-seed check."""
    p = small_run(bench, tmp, [])
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-500:]}")
    r = load_json(os.path.join(tmp, "r.json"))
    validate(r, "small run", schema)
    check_result_invariants(r, 3, "small run")
    # The arm's facts are enumerations: a value outside them does not validate, a record without
    # them (older) does. Planted: "role" typed as any string in the schema failed the first.
    import jsonschema

    with open(schema) as f:
        sch = json.load(f)
    val = jsonschema.validators.validator_for(sch)(sch)
    for key, wrong in (("role", "boss"), ("precision", "fp64")):
        bad = json.loads(json.dumps(r))
        bad["cases"][0][key] = wrong
        check(any(True for _ in val.iter_errors(bad)), f"the schema takes {key} {wrong!r}")
    older = json.loads(json.dumps(r))
    for c in older["cases"]:
        for key in ("precision", "math", "role"):
            c.pop(key)
    check(not any(True for _ in val.iter_errors(older)), "a record without the arms' facts fails")
    check(r["exit_status"] == 0, "exit_status in the result")
    check("up3" in p.stdout and "cpu-f64" in p.stdout and "cpu-f32" in p.stdout, "table on stdout")
    # In a log (stderr is a pipe here) the progress is a few lines: the plan's ETA, the rounds' end.
    check("ETA ~" in p.stderr and "rounds done: 3 rounds" in p.stderr, "progress on stderr")
    check(all(c["counters"]["status"] == "not-collected" for c in r["cases"]), "--no-counters")
    gates = {c["arm"]: c["gate"] for c in r["cases"]}
    check(
        gates["cpu-f64"]["kind"] == "reference" and gates["cpu-f32"]["kind"] == "tolerance",
        "gate kinds",
    )
    check(
        gates["cpu-f32"]["rel_l2_err"] <= gates["cpu-f32"]["tolerance"], "cpu-f32 within tolerance"
    )
    check_kernel_names(r)
    check_seeded_orders(bench, tmp, schema)
    check_twin_arms(bench, tmp, schema)
    check_cpus(bench, tmp, schema)


def check_kernel_names(r):
    """Every case's kernel named; cpu-f32's instruction set this CPU's best."""
    # Every case names its kernel; cpu-f32 the instruction set it ran, which must be this CPU's
    # best (/proc/cpuinfo). Planted: describe() naming "avx2" unconditionally fails here on an
    # AVX-512 machine (this one and the H200's host).
    kernels = {c["arm"]: c["kernel"] for c in r["cases"]}
    check(
        all(isinstance(k, dict) and k.get("name") for k in kernels.values()),
        f"kernel names {kernels}",
    )
    flags = set()
    if os.path.exists("/proc/cpuinfo"):
        for ln in open("/proc/cpuinfo"):
            if ln.startswith("flags"):
                flags = set(ln.split(":", 1)[1].split())
                break
    if flags:
        isa = (
            "avx512"
            if {"avx512f", "avx512vl", "fma"} <= flags
            else "avx2"
            if {"avx2", "fma"} <= flags
            else "generic"
        )
        check(
            kernels["cpu-f32"].get("isa") == isa,
            f"cpu-f32 ran {kernels['cpu-f32']}, this CPU's best is {isa}",
        )


def check_seeded_orders(bench, tmp, schema):
    """Same seed, same order; another seed, another."""
    # More cases so the order has room to differ: 2 stages x 2 frame counts x 2 arms = 8 cases.
    sweep = ["--stage", "up2,up3", "--frames", "4,8", "--reps", "3", "--min-time", "0.001"]
    orders = []
    for i, seed in enumerate(["5", "5", "6"]):
        out = f"s{i}.json"
        q = small_run(bench, tmp, sweep + ["--seed", seed], out=out)
        check(q.returncode == 0, f"seed run {i}: exit {q.returncode}: {q.stderr[-300:]}")
        rr = load_json(os.path.join(tmp, out))
        validate(rr, f"seed run {i}", schema)
        check_result_invariants(rr, 3, f"seed run {i}")
        orders.append([(o["seed"], o["cases"]) for o in rr["plan"]["order"]])
    check(orders[0] == orders[1], "same seed, different interleaving")
    check(orders[0] != orders[2], "different seeds, same interleaving")


def check_twin_arms(bench, tmp, schema):
    """An arm named twice runs as its A/A twin."""
    # An arm named twice runs as its A/A twin: both timed, interleaved, gated like the original.
    # Planted: rejecting repeats in --arms again (exit 2) fails here.
    q = small_run(bench, tmp, ["--arms", "cpu-f32,cpu-f32", "--reps", "2"], out="aa.json")
    check(q.returncode == 0, f"A/A run: exit {q.returncode}: {q.stderr[-300:]}")
    rr = load_json(os.path.join(tmp, "aa.json"))
    validate(rr, "A/A run", schema)
    arms = sorted(c["arm"] for c in rr["cases"])
    check(arms == ["cpu-f32", "cpu-f32#2"], f"A/A arms {arms}")
    check(
        all(len(c["samples"]) == 2 and c["gate"]["result"] == "pass" for c in rr["cases"]),
        "A/A twins timed and gated",
    )


def check_cpus(bench, tmp, schema):
    """--cpus places the workers; --no-pin is recorded unpinned."""
    # --cpus: the workers run where they were placed, and the record says so. Planted: building
    # the pool's placement from the allowed CPUs whatever --cpus says put worker 0 on CPU 0.
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2:
        last = cpus[-1]
        q = small_run(
            bench, tmp, ["--cpus", str(last), "--threads", "1", "--reps", "2"], out="cpus.json"
        )
        check(q.returncode == 0, f"--cpus run: exit {q.returncode}: {q.stderr[-300:]}")
        rc = load_json(os.path.join(tmp, "cpus.json"))
        validate(rc, "--cpus run", schema)
        check(
            rc["plan"]["placement"] == {"pinned": True, "cpus": [last]},
            f"placement {rc['plan']['placement']}",
        )
        ran = {w["cpu"] for c in rc["cases"] for s in c["samples"] for w in s["workers"]}
        check(ran == {last}, f"--cpus {last}: the worker ran on {ran}")
        q = run(
            [
                bench,
                "--stage",
                "up3",
                "--model",
                "bigvgan_base_22khz_80band",
                "--frames",
                "8",
                "--reps",
                "1",
                "--target-ci",
                "0",
                "--arms",
                "cpu-f32",
                "--threads",
                "1",
                "--no-pin",
                "--no-counters",
                "--no-lease",
                "--out",
                "nopin.json",
            ],
            tmp,
        )
        check(
            q.returncode == 0
            and load_json(os.path.join(tmp, "nopin.json"))["plan"]["placement"]["pinned"] is False,
            "--no-pin: recorded unpinned",
        )
    else:
        print(f"one CPU here ({cpus}): --cpus placement not checked")


def t_adaptive(tmp, bench, schema):
    """--target-ci: past --reps, rounds go on until each case's own rule stops it. A target no
    CPU arm can meet (0.001%) ends at --max-rounds, or at --max-time. Planted: stopping_rule()
    giving max_rounds + 1 failed the first half; ignoring --max-time (infinite budget) made the
    second end at max-rounds and fail it."""
    p = small_run(
        bench,
        tmp,
        ["--reps", "2", "--target-ci", "0.001", "--max-rounds", "7", "--max-time", "600"],
        out="max_rounds.json",
        extra_flags=["-v"],
    )
    check(p.returncode == 0, f"max-rounds: exit {p.returncode}: {p.stderr[-300:]}")
    r = load_json(os.path.join(tmp, "max_rounds.json"))
    validate(r, "max-rounds run", schema)
    check_result_invariants(r, 2, "max-rounds run")
    check(
        r["plan"]["stopping"]["target_ci_percent"] == 0.001
        and r["plan"]["stopping"]["max_rounds"] == 7,
        f"max-rounds: plan.stopping {r['plan']['stopping']}",
    )
    for c in r["cases"]:
        check(
            c["stop_reason"] == "max-rounds" and len(c["samples"]) == 7,
            f"max-rounds: {c['id']} {c['stop_reason']} after {len(c['samples'])} samples",
        )
        check(
            c["interval"]["lo"] is not None and c["interval"]["target"] == 0.001 / 100,
            f"max-rounds: {c['id']} interval {c['interval']}",
        )
    check("still converging" in p.stderr, "progress names the cases still converging")
    t0 = time.monotonic()
    p = small_run(
        bench,
        tmp,
        ["--reps", "2", "--target-ci", "0.001", "--max-rounds", "1000", "--max-time", "1"],
        out="budget.json",
    )
    wall = time.monotonic() - t0
    check(p.returncode == 0, f"time-budget: exit {p.returncode}: {p.stderr[-300:]}")
    r = load_json(os.path.join(tmp, "budget.json"))
    validate(r, "time-budget run", schema)
    check_result_invariants(r, 2, "time-budget run")
    for c in r["cases"]:
        check(
            c["stop_reason"] == "time-budget" and 2 <= len(c["samples"]) < 1000,
            f"time-budget: {c['id']} {c['stop_reason']} after {len(c['samples'])} samples",
        )
    check(wall < 120, f"time-budget: the run took {wall:.1f} s for a 1 s budget")


def t_atomic_out(tmp, bench, schema):
    """The result appears whole or not at all. Planted: writing the result in place (no temp +
    rename) is not visible here, but leaving the temp file behind fails the listing check."""
    out_dir = os.path.join(tmp, "out")
    os.mkdir(out_dir)
    p = small_run(bench, tmp, ["--reps", "1"], out=os.path.join(out_dir, "r.json"))
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-300:]}")
    check(
        os.listdir(out_dir) == ["r.json"], f"out dir holds {os.listdir(out_dir)}, want only r.json"
    )
    json.loads(open(os.path.join(out_dir, "r.json")).read())  # parses whole
    # Overwriting an existing result replaces it atomically.
    p = small_run(bench, tmp, ["--reps", "1", "--seed", "9"], out=os.path.join(out_dir, "r.json"))
    check(p.returncode == 0 and os.listdir(out_dir) == ["r.json"], "overwrite left extra files")
    check(
        load_json(os.path.join(out_dir, "r.json"))["plan"]["seed"] == 9, "overwrite did not replace"
    )
    # An uncreatable destination (root ignores chmod, /proc does not): exit 2, one line, nothing.
    p = small_run(bench, tmp, [], out="/proc/convbench-e2e.json")
    check(
        p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1,
        f"/proc destination: exit {p.returncode}: {p.stderr[:200]!r}",
    )
    check(not os.path.exists("/proc/convbench-e2e.json"), "file under /proc")


def t_hostile_out(tmp, bench, schema):
    """--out that exists and is not a regular file, and a --dump on a full disk. Planted (the code
    before): the final rename replaced a FIFO, a device node and a symlink with the record (as
    root, --out /dev/null made /dev/null a regular file); the dump aborted the run at ENOSPC and
    left a truncated .npy."""
    import stat

    victim = os.path.join(tmp, "victim")
    with open(victim, "w") as f:
        f.write("theirs")
    fifo, link, dev = (os.path.join(tmp, n) for n in ("fifo", "link", "null"))
    os.mkfifo(fifo)
    os.symlink(victim, link)
    kinds = [(fifo, stat.S_ISFIFO), (link, stat.S_ISLNK)]
    if os.geteuid() == 0:
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a /dev/null of our own
        kinds.append((dev, stat.S_ISCHR))
    for path, still in kinds:
        p = small_run(bench, tmp, ["--reps", "1"], out=path)
        err = p.stderr.strip().splitlines()
        check(
            p.returncode == 2 and len(err) == 1 and "not a regular file" in err[0],
            f"--out {os.path.basename(path)}: exit {p.returncode}, {err[:3]}",
        )
        check(p.wall < 30, f"--out {os.path.basename(path)}: refused before measuring")
        check(still(os.lstat(path).st_mode), f"--out {os.path.basename(path)}: left as it was")
    # A symlink planted where a dump file goes: refused before measuring, nothing written through.
    planted = os.path.join(tmp, "dumps", "up3-8")
    os.makedirs(planted)
    os.symlink(victim, os.path.join(planted, "input.npy"))
    p = small_run(bench, tmp, ["--reps", "1", "--dump", os.path.join(tmp, "dumps")], out="x.json")
    err = p.stderr.strip().splitlines()
    check(
        p.returncode == 2 and len(err) == 1 and "input.npy" in err[0],
        f"--dump with a planted symlink: exit {p.returncode}, {err[:3]}",
    )
    check(open(victim, "rb").read() == b"theirs", "the symlink's target is untouched")
    # A dump on a disk too small for it: one line, no partial file, the run and its record go on.
    if os.geteuid() != 0:
        print("note: the full-disk dump part needs root (mount); not run here")
        return
    mnt = os.path.join(tmp, "small")
    os.mkdir(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt]).returncode != 0:
        check(False, "cannot mount a tmpfs for the full-disk dump")
        return
    try:
        p = small_run(bench, tmp, ["--reps", "1", "--frames", "64", "--dump", mnt], out="d.json")
        check(p.returncode == 0, f"dump on a full disk: exit {p.returncode}: {p.stderr[-400:]}")
        check(os.path.exists(os.path.join(tmp, "d.json")), "dump on a full disk: the record")
        lines = [x for x in p.stderr.splitlines() if x.startswith("bench_conv: --dump:")]
        check(
            len(lines) >= 1 and "No space left" in lines[0] and "the run goes on" in lines[0],
            f"dump on a full disk: one line says so: {lines[:2]}",
        )
        import numpy as np

        for root, _, files in os.walk(mnt):
            for name in files:
                path = os.path.join(root, name)
                check(not name.startswith("."), f"a temp file left: {path}")
                if name.endswith(".npy") and not name.startswith("."):
                    try:
                        np.load(path)
                        check(True, "loads")
                    except (ValueError, OSError) as e:
                        check(False, f"a truncated .npy left: {path}: {e}")
    finally:
        subprocess.run(["umount", "-l", mnt])


def conv_transpose1d_f64(x, w, b, stride, padding):
    """torch.nn.functional.conv_transpose1d in float64 numpy: x [N, Cin, L], w [Cin, Cout, K]."""
    import numpy as np

    n, cin, l_in = x.shape
    _, cout, k = w.shape
    full = (l_in - 1) * stride + k
    y = np.zeros((n, cout, full), dtype=np.float64)
    for kk in range(k):
        # y[:, :, t*stride + kk] += sum_ic x[:, ic, t] * w[ic, :, kk]
        contrib = np.einsum("nil,io->nol", x.astype(np.float64), w[:, :, kk].astype(np.float64))
        y[:, :, kk : kk + (l_in - 1) * stride + 1 : stride] += contrib
    l_out = (l_in - 1) * stride - 2 * padding + k
    y = y[:, :, padding : padding + l_out]
    return y + b.astype(np.float64)[None, :, None]


def t_dump(tmp, bench, schema):
    """--dump: every file loads in numpy, each arm's dumped output is the one the run gated (CRC-32
    recorded in the result), and numpy recomputes the reference (the chain stage by stage through
    f32 buffers). Planted: dumping the input as the reference fails the recompute check; writing
    the .npy header with 16-byte instead of 64-byte alignment still loads, so the alignment is
    checked in the unit test."""
    try:
        import numpy as np
    except ImportError:
        skip("python module numpy is not installed")
    d = os.path.join(tmp, "dump")
    p = run(
        [
            bench,
            "--stage",
            "up3,chain",
            "--model",
            "bigvgan_base_22khz_80band",
            "--frames",
            "2",
            "--reps",
            "1",
            "--target-ci",
            "0",
            "--arms",
            "cpu-f64,cpu-f32",
            "--no-counters",
            "--no-lease",
            "--out",
            "r.json",
            "--dump",
            d,
        ],
        tmp,
    )
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-300:]}")
    r = load_json(os.path.join(tmp, "r.json"))
    validate(r, "dump run", schema)
    check_dumped_cases(np, r, d)


def check_dumped_cases(np, r, d):
    """Each case's dump: its output's CRC, its input, and numpy's recompute."""
    for c in r["cases"]:
        case_dir = os.path.join(d, f"{c['stage']}-{c['frames']}")
        meta = load_json(os.path.join(case_dir, "problem.json"))
        out = np.load(os.path.join(case_dir, f"out_{c['arm']}_{c['staging']}.npy"))
        check(out.dtype == np.float32 and out.flags["C_CONTIGUOUS"], f"{c['id']}: dtype/order")
        crc = format(zlib.crc32(out.tobytes()) & 0xFFFFFFFF, "08x")
        check(
            crc == c["gate"]["output_crc32"],
            f"{c['id']}: dumped output CRC {crc} != recorded {c['gate']['output_crc32']}",
        )
        x = np.load(os.path.join(case_dir, "input.npy"))
        shapes = meta["shape"]["stages"] if "stages" in meta["shape"] else [meta["shape"]]
        check(
            x.shape == (1, shapes[0]["cin"], shapes[0]["l_in"]), f"{c['id']}: input shape {x.shape}"
        )
        check(np.any(x != 0), f"{c['id']}: input is all zeros")
        y = x
        for s in shapes:
            sfx = "_" + s["stage"] if len(shapes) > 1 else ""
            w = np.load(os.path.join(case_dir, f"weight{sfx}.npy"))
            b = np.load(os.path.join(case_dir, f"bias{sfx}.npy"))
            check(
                w.shape == (s["cin"], s["cout"], s["k"]) and b.shape == (s["cout"],),
                f"{c['id']}: weight/bias shape",
            )
            # Each stage's output is handed on as f32, as the arms do.
            y = conv_transpose1d_f64(y, w, b, s["stride"], s["padding"]).astype(np.float32)
        ref = np.load(os.path.join(case_dir, "reference.npy"))
        check(
            ref.shape == out.shape == y.shape,
            f"{c['id']}: shapes {ref.shape} {out.shape} {y.shape}",
        )
        if ref.shape == y.shape:
            err = float(
                np.linalg.norm(ref.astype(np.float64) - y) / np.linalg.norm(y.astype(np.float64))
            )
            check(
                err < 1e-6,
                f"{c['id']}: numpy recompute differs from the reference, rel L2 {err:.3g}",
            )
        if c["arm"] == "cpu-f64":
            check(
                np.array_equal(out.view(np.uint32), ref.view(np.uint32)),
                f"{c['id']}: reference arm != reference.npy",
            )
        print(f"ok {c['id']}: crc {crc}, shape {out.shape}")


def t_default_up0(tmp, bench, schema):
    """The main job on this machine: bench_conv --stage up0 --reps 3 (default model, 96 frames,
    every arm available here), default output path, real lease. Reports its wall time."""
    p = run([bench, "--stage", "up0", "--reps", "3", "--lease-wait", "120"], tmp, timeout=900)
    print(f"wall time of 'bench_conv --stage up0 --reps 3': {p.wall:.1f} s")
    print(p.stdout)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-500:]}")
    files = (
        os.listdir(os.path.join(tmp, "results"))
        if os.path.isdir(os.path.join(tmp, "results"))
        else []
    )
    check(
        len(files) == 1 and files[0].endswith("-bigvgan_v2_44khz_128band_512x-up0.json"),
        f"default result path: {files}",
    )
    if files:
        r = load_json(os.path.join(tmp, "results", files[0]))
        validate(r, "default up0", schema)
        check_result_invariants(r, 3, "default up0")
        check(r["plan"]["frames"] == [96] and r["plan"]["stages"] == ["up0"], "defaults")
        # Planted: Options::max_time left at 20 (cli.hpp): this check failed.
        check(
            r["plan"]["stopping"]["max_time_s"] == 27,
            f"default --max-time: {r['plan']['stopping']['max_time_s']}, want 27",
        )
        check(
            r["cases"][0]["shape"]["cin"] == 1536 and r["cases"][0]["shape"]["k"] == 16, "up0 shape"
        )


def t_gpu_run(tmp, bench, schema):
    """The CUDA arms end to end (H200): every arm, both stagings, gate passing (cuda-f64 bitwise),
    GPU probes and the measured SM clock on every device sample, counters block present."""
    if not gpu_present():
        skip("no GPU here (nvidia-smi -L failed): the CUDA arms run only on the GPU machine")
    p = run(
        [
            bench,
            "--stage",
            "up3,chain",
            "--model",
            "bigvgan_base_22khz_80band",
            "--frames",
            "8,32",
            "--reps",
            "2",
            "--no-lease",
            "--out",
            "r.json",
            "--dump",
            "dump",
        ],
        tmp,
    )
    print(p.stdout)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-800:]}")
    r = load_json(os.path.join(tmp, "r.json"))
    validate(r, "gpu run", schema)
    check_result_invariants(r, 2, "gpu run")
    ids = {c["id"] for c in r["cases"]}
    for arm in ("cuda-f64", "cuda-f32"):
        for staging in ("per-call", "resident"):
            for stage in ("up3", "chain"):
                check(
                    f"{stage}/8/{arm}/{staging}" in ids, f"missing case {stage}/8/{arm}/{staging}"
                )
    check(len(r["gpus"]) >= 1 and r["gpus"][0]["uuid"], "gpus[] entry")
    check_device_cases(r)
    check_queued_timing(bench, tmp, schema)


def check_device_cases(r):
    """Each device case gated, probed, counted, and cuDNN's choice named."""
    for c in r["cases"]:
        if not c["device"]:
            continue
        check(c["gate"]["result"] == "pass", f"{c['id']}: gate {c['gate']}")
        if c["arm"] == "cuda-f64":
            check(
                c["gate"]["kind"] == "bitwise" and c["gate"]["mismatches"] == 0,
                f"{c['id']}: not byte-identical",
            )
        for s in c["samples"]:
            check(
                isinstance(s["gpu_before"], dict) and isinstance(s["gpu_after"], dict),
                f"{c['id']}: gpu probes",
            )
            sm = s["gpu_after"].get("sm_clock_mhz")
            check(
                sm is not None or "sm_clock_mhz" in s["gpu_after"]["unavailable"],
                f"{c['id']}: NVML sm clock",
            )
            m = s["measured_sm_clock_mhz"]
            check(m is not None and 100 < m < 5000, f"{c['id']}: measured SM clock {m}")
            # NVML's violation time next to the measured clock: a share of the sample per policy.
            vu, vs = s["violation_us"], s["violation_share"]
            check(
                (isinstance(vu, dict) and vu and all(0 <= x <= 1 for x in vs.values()))
                or "violation_us" in s["unavailable"],
                f"{c['id']}: violation_us {vu}",
            )
        if c["staging"] == "resident":
            check(
                c["counters"]["status"] in ("collected", "unavailable"),
                f"{c['id']}: counters {c['counters']}",
            )
        # cuDNN's Find runs per prepared case: the record says what it picked (two cuDNN twins
        # can pick different algorithms, and without this nothing in the record tells them apart).
        # Planted: CudnnPrepared::chosen() left returning null fails here.
        if c["arm"].startswith("cudnn-"):
            k = c["kernel"]
            check(
                isinstance(k.get("algorithm"), str)
                and "algo_" in k["algorithm"]
                and isinstance(k.get("workspace_bytes"), int)
                and k["name"].startswith("cuDNN "),
                f"{c['id']}: kernel {k}",
            )
    check(r["plan"]["device_timing"] == "queued", "default device timing")


def check_queued_timing(bench, tmp, schema):
    """--device-timing queued against launched on the same resident cases."""
    # --device-timing queued: the same resident cases, enqueued behind a held stream, so the
    # host's launch latency no longer counts; a queued time above the launched one means the
    # hold added time instead of removing it.
    q = {}
    for timing in ("launched", "queued"):
        p = run(
            [
                bench,
                "--stage",
                "up3,chain",
                "--model",
                "bigvgan_base_22khz_80band",
                "--frames",
                "8",
                "--reps",
                "3",
                "--staging",
                "resident",
                "--arms",
                "cuda-f32,cuda-f64",
                "--no-counters",
                "--no-lease",
                "--device-timing",
                timing,
                "--out",
                f"{timing}.json",
            ],
            tmp,
        )
        check(p.returncode == 0, f"{timing}: exit {p.returncode}: {p.stderr[-800:]}")
        rr = load_json(os.path.join(tmp, f"{timing}.json"))
        validate(rr, f"{timing} run", schema)
        check(
            rr["plan"]["device_timing"] == timing,
            f"{timing}: plan.device_timing {rr['plan'].get('device_timing')}",
        )
        q[timing] = {c["id"]: c["stats"]["median"] for c in rr["cases"] if c["device"]}
    # "chain" brings its stages up0..up3 along: 5 problems x 2 arms (the H200 run listed 10).
    check(
        len(q["queued"]) == 10 and q["queued"].keys() == q["launched"].keys(),
        f"device cases {sorted(q['queued'])}",
    )
    for cid, t in q["queued"].items():
        print(f"{cid}: launched {q['launched'][cid] * 1e6:.2f} us, queued {t * 1e6:.2f} us")
        check(
            t <= 1.05 * q["launched"][cid],
            f"{cid}: queued {t * 1e6:.2f} us > launched {q['launched'][cid] * 1e6:.2f} us",
        )


TESTS = {
    "cli_errors": t_cli_errors,
    "small_run": t_small_run,
    "atomic_out": t_atomic_out,
    "dump": t_dump,
    "hostile_out": t_hostile_out,
    "adaptive": t_adaptive,
    "default_up0": t_default_up0,
    "gpu_run": t_gpu_run,
}

if __name__ == "__main__":
    harness.main(TESTS, "bench_e2e")
