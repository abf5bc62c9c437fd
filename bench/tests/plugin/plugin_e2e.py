"""End-to-end tests of plugins through the bench_conv binary, run by CTest:

  plugin_e2e.py cli BENCH_CONV PLUGIN_DIR SCHEMA
  plugin_e2e.py crash_in_process BENCH_CONV PLUGIN_DIR
  plugin_e2e.py installed_package BUILD_DIR SOURCE_DIR CMAKE SCHEMA

Exit 0 = pass, 1 = fail (with the reasons), 77 = could not run here (the reason is printed).
The planted fault each check was seen to catch is noted beside it.
"""

import hashlib
import os
import re
import shutil
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "harness"))
import harness  # noqa: E402
from harness import (  # noqa: E402
    check,
    finish,
    gpu_present,
    last_line,
    lines_with,
    load_json,
    procs_with,
    skip,
    validate,
)

SMALL = [
    "--model",
    "bigvgan_base_22khz_80band",
    "--stage",
    "up3",
    "--frames",
    "4",
    "--no-lease",
    "--no-counters",
    "--min-time",
    "0.001",
    "--threads",
    "2",
]


def run(cmd, cwd=None, env=None, timeout=600):
    """cmd without the caller's plugin path and data directory; env: variables to add."""
    return harness.run(
        cmd, cwd, timeout=timeout, drop=["CONVBENCH_PLUGIN_PATH", "CONVBENCH_DATA_DIR"], extra=env
    )


def case_of(result, arm):
    return [c for c in result["cases"] if c["arm"] == arm]


def test_cli(tmp, bench, plugin_dir, schema):
    def so(name):
        return os.path.join(plugin_dir, name + ".so")

    # A path that names no file: bad usage, one line, nothing run.
    p = run([bench, "--plugin", "/nonexistent/x.so", "--out", tmp + "/r.json"] + SMALL)
    check(p.returncode == 2, f"missing plugin file: exit {p.returncode}, expected 2")
    check(
        len(p.stderr.strip().splitlines()) == 1,
        "missing plugin file: not one line: " + p.stderr,
    )
    check(not os.path.exists(tmp + "/r.json"), "missing plugin file: a result was written")
    check_refused_plugin(bench, tmp, so, schema)
    check_failing_timed_call(bench, tmp, so, schema)
    check_plugin_path_and_abi_twin(bench, tmp, so, schema)


def check_refused_plugin(bench, tmp, so, schema):
    """A plugin of another ABI version refused in one line; the run goes on."""
    # A refused plugin costs the run nothing: cpu-f64 still runs, exit 0, result written.
    # (Planted: refusing by throwing from load_plugin made this exit 1 with no result.)
    out = tmp + "/abi.json"
    p = run(
        [
            bench,
            "--plugin=" + so("fault_abi"),
            "--arms",
            "cpu-f64",
            "--reps",
            "1",
            "--target-ci",
            "0",
            "--out",
            out,
        ]
        + SMALL
    )
    check(p.returncode == 0, f"refused plugin: exit {p.returncode}, expected 0: {p.stderr}")
    check(
        len(lines_with(p.stderr, "fault_abi.so: refused: it was built for plugin ABI version 99"))
        == 1,
        "refused plugin: no one line naming it: " + p.stderr,
    )
    if check(os.path.exists(out), "refused plugin: no result"):
        validate(load_json(out), "result", schema)


def check_failing_timed_call(bench, tmp, so, schema):
    """A call failing in a timed round: exit 1, one line, a faulted record."""
    # A call that fails after its gate passed, in a timed round: the run cannot step around it
    # (the case's samples would be partial): exit 1, one line naming the plugin, the arm and
    # the case, and the record of the finished rounds with status faulted naming the arm.
    # (Planted: call() ignoring the status: exit 0 and a complete record. Planted: the
    # fault not caught in the rounds: exit 1 and no record.)
    out = tmp + "/later.json"
    p = run(
        [
            bench,
            "--plugin",
            so("fault_call_later"),
            "--arms",
            "cpu-f64,fault-call-later",
            "--reps",
            "2",
            "--target-ci",
            "0",
            "--out",
            out,
        ]
        + SMALL
    )
    check(p.returncode == 1, f"failing timed call: exit {p.returncode}, expected 1")
    check(
        len(
            lines_with(
                p.stderr,
                "bench_conv: error: plugin "
                + os.path.realpath(so("fault_call_later"))
                + ": arm fault-call-later: up3/4 host: call returned status 1: planted",
            )
        )
        == 1,
        "failing timed call: no one line naming it: " + p.stderr[-1500:],
    )
    if check(os.path.exists(out), "failing timed call: no record of the finished rounds"):
        r = load_json(out)
        validate(r, "result", schema)
        check(
            r["status"] == "faulted"
            and r["exit_status"] == 1
            and r["fault"]["arm"] == "fault-call-later"
            and r["fault"]["during"] == "rounds"
            and not r["fault"]["context_lost"],
            f"failing timed call: record {r['status']}, fault {r.get('fault')}",
        )
        ref = case_of(r, "cpu-f64")
        check(
            len(ref) == 1 and len(ref[0]["samples"]) == len(r["plan"]["order"]),
            "failing timed call: the finished rounds' samples are not all kept",
        )
    check(not os.path.exists(out + ".journal"), "failing timed call: the journal is left")


def check_plugin_path_and_abi_twin(bench, tmp, so, schema):
    """Plugins from the environment and --plugin; cpu-f32 beside its ABI twin."""
    # CONVBENCH_PLUGIN_PATH and --plugin together; the help lists the plugins' arms; the
    # record's argv keeps --plugin. (Planted: plugin_paths() ignoring the environment.)
    env = {"CONVBENCH_PLUGIN_PATH": so("fault_none") + "::" + so("abi_arms")}
    p = run([bench, "--plugin", so("fault_shadow"), "--help"], env=env)
    check(p.returncode == 0, f"--help with plugins: exit {p.returncode}: {p.stderr}")
    for arm in ("fault-none [host]", "abi-cpu-f32 [host]", "fault-shadow-ok [host]"):
        check(arm in p.stdout, f"--help does not list {arm}: {p.stdout[-800:]}")
    check("refused arm cpu-f32" in p.stderr, "shadowing arm not refused on stderr: " + p.stderr)

    # Built-in cpu-f32 and the same kernel through the ABI, one run: both gated and timed, side
    # by side (what the ABI costs is read from the record; no timing is asserted here).
    out = tmp + "/aa.json"
    p = run(
        [
            bench,
            "--arms",
            "cpu-f64,cpu-f32,abi-cpu-f32,fault-none",
            "--reps",
            "3",
            "--target-ci",
            "0",
            "--out",
            out,
        ]
        + SMALL,
        env=env,
    )
    check(p.returncode == 0, f"A/A run: exit {p.returncode}: {p.stderr}")
    if check(os.path.exists(out), "A/A run: no result"):
        r = load_json(out)
        validate(r, "result", schema)
        check("--plugin" not in r["argv"], "argv holds a --plugin that was not given")
        for arm in ("cpu-f32", "abi-cpu-f32", "fault-none"):
            c = case_of(r, arm)
            if check(len(c) == 1, f"A/A run: {arm} has {len(c)} cases"):
                check(c[0]["gate"]["result"] == "pass", f"{arm}: gate {c[0]['gate']}")
                check(
                    len(c[0]["samples"]) == 3,
                    f"{arm}: {len(c[0]['samples'])} samples, expected 3",
                )
        c = case_of(r, "abi-cpu-f32")
        if c:
            pl = c[0]["kernel"].get("plugin", {})
            with open(so("abi_arms"), "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            check(pl.get("sha256") == digest, f"plugin sha256 {pl.get('sha256')} != {digest}")
            check(
                pl.get("path") == os.path.realpath(so("abi_arms")),
                f"plugin path {pl.get('path')}",
            )


def test_crash_in_process(tmp, bench, plugin_dir):
    # fault-segv-later passes its trial and its gate, then crashes in a timed round, in bench_conv's
    # own process: one line names the plugin, the arm and the call, the process dies by SIGSEGV,
    # and no result file (not even a temporary one) is left. (Planted: not installing the crash
    # notice made the line check fail.)
    so = os.path.join(plugin_dir, "fault_segv_later.so")
    out = os.path.join(tmp, "r.json")
    p = run(
        [
            bench,
            "--plugin",
            so,
            "--arms",
            "cpu-f64,fault-segv-later",
            "--reps",
            "3",
            "--target-ci",
            "0",
            "--out",
            out,
        ]
        + SMALL
    )
    check(p.returncode == -signal.SIGSEGV, f"exit {p.returncode}, expected death by SIGSEGV")
    want = (
        f"bench_conv: plugin {os.path.realpath(so)}: arm fault-segv-later: up3/4 host: call "
        "crashed (SIGSEGV); bench_conv ends without writing a result"
    )
    check(
        len(lines_with(p.stderr, want)) == 1,
        "no crash line naming the arm: " + p.stderr[-1500:],
    )
    check(
        len(lines_with(p.stderr, "gate up3/4/fault-segv-later/host: pass")) == 1,
        "the arm did not pass its gate before crashing",
    )
    # No result file; the round journal stays, holding every round finished before the
    # crash (bench_conv --resume writes a "recovered" record from it).
    left = sorted(os.listdir(tmp))
    check(left in ([], ["r.json.journal"]), f"files left behind: {left}")


def test_hang_and_exit(tmp, bench, plugin_dir):
    """Each of these failed before the plugin timeout, the trial's process group and the exit
    notice: a hanging trial hung bench_conv for good; after Ctrl-C its trial child was left
    spinning; a hang in the rounds made SIGINT a no-op; exit(0) in a plugin ended bench_conv with
    status 0, no record and no line; a constructor that crashed died with no line."""
    so = {
        n: os.path.join(plugin_dir, f"fault_{n}.so")
        for n in ("hang", "hang_later", "exit", "exit_later", "exit_at_load", "ctor_segv")
    }
    plan = SMALL + ["--target-ci", "0"]
    check_hung_trial(bench, tmp, so, plan)
    check_hung_call(bench, tmp, so, plan)
    check_exits(bench, tmp, so, plan)


def check_hung_trial(bench, tmp, so, plan):
    """A trial that hangs: killed at the timeout, or with the run on Ctrl-C."""
    # A trial that never returns: killed at the timeout, its case refused, the run goes on.
    out = os.path.join(tmp, "trial-timeout.json")
    cmd = [bench, "--plugin", so["hang"], "--arms", "cpu-f64,fault-hang", "--reps", "2"]
    p = harness.start(cmd + ["--plugin-timeout", "2", "--out", out] + plan, new_session=True)
    rc, err = finish(p, 60)
    check(rc is not None, "a hanging trial run ends at --plugin-timeout: " + err[-800:])
    check(os.path.exists(out), "... and the run writes its record")
    check("did not finish within 2 s" in err, "... the refusal says why: " + err[-800:])
    check(not procs_with(out), "... and no trial process is left")
    # Ctrl-C while the trial hangs: the record, and the trial child killed with the run.
    out = os.path.join(tmp, "trial-sigint.json")
    p = harness.start(cmd + ["--out", out] + plan, new_session=True)
    time.sleep(3)  # into the trial (a few milliseconds of gate before it)
    p.send_signal(signal.SIGINT)
    rc, err = finish(p, 30)
    time.sleep(0.5)
    check(rc == 130, f"SIGINT during a hanging trial: exit {rc}: {err[-600:]}")
    check(os.path.exists(out), "... the interrupted record is written")
    check(not procs_with(out), f"... no trial process is left: {procs_with(out)}")
    for pid in procs_with(out):
        os.kill(pid, signal.SIGKILL)


def check_hung_call(bench, tmp, so, plan):
    """A timed call that hangs: the run ends at the timeout, or on SIGINT."""
    # A timed call that never returns: the run ends at the timeout naming the call and the
    # journal, which --resume turns into a record.
    out = os.path.join(tmp, "rounds-timeout.json")
    late = [bench, "--plugin", so["hang_later"], "--arms", "cpu-f64,fault-hang-later"]
    p = harness.start(
        late + ["--reps", "3", "--plugin-timeout", "3", "--out", out] + plan, new_session=True
    )
    rc, err = finish(p, 60)
    line = last_line(err)
    check(rc == 1, f"a call hanging in the rounds: exit {rc} at --plugin-timeout")
    check(
        "did not return within 3 s" in line and out + ".journal" in line and "--resume" in line,
        "... one line naming the call and the journal: " + line,
    )
    q = run([bench, "--resume", out + ".journal"])
    check(q.returncode == 0 and os.path.exists(out), "... which --resume turns into a record")
    # SIGINT while a call hangs in the rounds: the same within seconds, exit 130.
    out = os.path.join(tmp, "rounds-sigint.json")
    p = harness.start(late + ["--reps", "3", "--out", out] + plan, new_session=True)
    for _ in range(300):
        if os.path.exists(out + ".journal"):
            break
        time.sleep(0.05)
    time.sleep(1)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    rc, err = finish(p, 30)
    took = time.monotonic() - t0
    line = last_line(err)
    check(rc == 130 and took < 10, f"SIGINT while a call hangs: exit {rc} after {took:.1f} s")
    check(
        "did not return after SIGINT" in line and out + ".journal" in line,
        "... one line naming the call and the journal: " + line,
    )


def check_exits(bench, tmp, so, plan):
    """exit() in the trial, in a timed call, at load; a crashing constructor."""
    # exit() in the trial run: the case is refused, the run goes on to its record.
    out = os.path.join(tmp, "trial-exit.json")
    p = run(
        [
            bench,
            "--plugin",
            so["exit"],
            "--arms",
            "cpu-f64,fault-exit",
            "--reps",
            "2",
            "--out",
            out,
        ]
        + plan,
        timeout=120,
    )
    check(os.path.exists(out), f"exit() in the trial run: exit {p.returncode}, a record")
    check(
        "called exit() in its trial run" in p.stderr,
        "... the refusal says so: " + p.stderr[-600:],
    )
    # exit() in a timed call: a non-zero status and one line naming the call and the journal.
    out = os.path.join(tmp, "rounds-exit.json")
    p = run(
        [
            bench,
            "--plugin",
            so["exit_later"],
            "--arms",
            "cpu-f64,fault-exit-later",
            "--reps",
            "3",
            "--out",
            out,
        ]
        + plan,
        timeout=120,
    )
    line = last_line(p.stderr)
    check(p.returncode == 1, f"exit(0) in a timed call: exit {p.returncode}, not 0")
    check(
        "fault-exit-later" in line and "called exit()" in line and ".journal" in line,
        "... one line naming the arm, the call and the journal: " + line,
    )
    # exit() and a crash in a constructor, while bench_conv loads the plugin.
    for name, want_rc, words in (
        ("exit_at_load", 1, "called exit()"),
        ("ctor_segv", -signal.SIGSEGV, "crashed (SIGSEGV)"),
    ):
        p = run(
            [
                bench,
                "--plugin",
                so[name],
                "--arms",
                "cpu-f64",
                "--reps",
                "1",
                "--out",
                os.path.join(tmp, name + ".json"),
            ]
            + plan,
            timeout=120,
        )
        line = last_line(p.stderr)
        check(p.returncode == want_rc, f"{name}: exit {p.returncode}, want {want_rc}")
        check(
            os.path.realpath(so[name]) in line and "loading" in line and words in line,
            f"{name}: one line naming the plugin: {p.stderr[-600:]!r}",
        )


def test_gpu(tmp, bench, plugin_dir, schema):
    """On a GPU machine: the example's CUDA arm and cuda-f32 through the ABI, beside cuda-f32
    (and cudnn-f32 when built), gated and timed in both stagings and counted like the built-in;
    then a plugin kernel that faults on the device ends the run, named."""
    if not gpu_present():
        skip("no GPU here (nvidia-smi -L failed): plugin device arms run on the GPU machine")
    example = os.path.join(plugin_dir, "example_arms.so")
    abi = os.path.join(plugin_dir, "abi_arms.so")
    arms = ["cuda-f32", "abi-cuda-f32", "example-cuda-f32"]
    p = run([bench, "--plugin", example, "--plugin", abi, "--help"])
    if "cudnn-f32" in p.stdout:
        arms.append("cudnn-f32")
    out = os.path.join(tmp, "r.json")
    small = [a for a in SMALL if a != "--no-counters"]
    p = run(
        [
            bench,
            "--plugin",
            example,
            "--plugin",
            abi,
            "--arms",
            ",".join(arms),
            "--reps",
            "3",
            "--target-ci",
            "0",
            "--out",
            out,
        ]
        + small
    )
    check(p.returncode == 0, f"GPU run: exit {p.returncode}: {p.stderr[-2000:]}")
    if check(os.path.exists(out), "GPU run: no result"):
        check_device_arms(load_json(out), schema)
        check_device_fault(tmp, bench, plugin_dir, schema)


def check_device_arms(r, schema):
    """The plugin device arms gated, timed and counted as the built-in cuda-f32 is."""
    validate(r, "result", schema)
    builtin = {c["staging"]: c for c in case_of(r, "cuda-f32")}
    for arm in ("abi-cuda-f32", "example-cuda-f32"):
        cases = {c["staging"]: c for c in case_of(r, arm)}
        check(set(cases) == {"per-call", "resident"}, f"{arm}: stagings {sorted(cases)}")
        for staging, c in cases.items():
            check(c["gate"]["result"] == "pass", f"{arm}/{staging}: gate {c['gate']}")
            check(len(c["samples"]) == 3, f"{arm}/{staging}: {len(c['samples'])} samples")
            check(
                all(s.get("measured_sm_clock_mhz") is not None for s in c["samples"]),
                f"{arm}/{staging}: no measured SM clock",
            )
            # Counted as the built-in is, by the same instrument.
            want = builtin.get(staging, {}).get("counters", {}).get("status")
            check(
                c["counters"].get("status") == want,
                f"{arm}/{staging}: counters {c['counters'].get('status')}, cuda-f32 {want}",
            )


def check_device_fault(tmp, bench, plugin_dir, schema):
    """A device fault: exit 1, one line naming the plugin and the arm, a faulted record."""
    fault = os.path.join(plugin_dir, "fault_device.so")
    out = os.path.join(tmp, "fault.json")
    p = run(
        [
            bench,
            "--plugin",
            fault,
            "--arms",
            "cpu-f64,fault-illegal-address",
            "--staging",
            "resident",
            "--reps",
            "1",
            "--target-ci",
            "0",
            "--out",
            out,
        ]
        + SMALL
    )
    check(p.returncode == 1, f"device fault: exit {p.returncode}, expected 1")
    # At the gate: seen right after the launch or when the stream is synchronised.
    want = re.compile(
        re.escape(f"plugin {os.path.realpath(fault)}: arm fault-illegal-address: up3/4 resident: ")
        + r"CUDA error in (the plugin's call|the stream after call): cudaErrorIllegalAddress"
    )
    named = [line for line in p.stderr.splitlines() if want.search(line)]
    check(len(named) == 1, "device fault not named: " + p.stderr[-1500:])
    # The record as far as the gate got, status faulted, the arm and the lost context named.
    if check(os.path.exists(out), "device fault: no record"):
        r = load_json(out)
        validate(r, "result", schema)
        check(
            r["status"] == "faulted"
            and r["fault"]["arm"] == "fault-illegal-address"
            and r["fault"]["context_lost"]
            and r["fault"]["during"] == "gate",
            f"device fault: record {r['status']}, fault {r.get('fault')}",
        )


def install(tmp, build_dir, cmake):
    """This build tree installed into tmp/prefix, every file a user needs there; the prefix, or
    None when the install failed."""
    prefix = os.path.join(tmp, "prefix")
    p = run([cmake, "--install", build_dir, "--prefix", prefix])
    if not check(
        p.returncode == 0, "cmake --install failed: " + p.stdout[-2000:] + p.stderr[-2000:]
    ):
        return None
    for rel in (
        "bin/bench_conv",
        "bin/convlease",
        "bin/convbench-fleet",
        "include/convbench/arm_plugin.h",
        "lib/cmake/convbench/convbenchConfig.cmake",
        "lib/cmake/convbench/convbenchConfigVersion.cmake",
        "lib/cmake/convbench/convbenchTargets.cmake",
        "share/convbench/models.json",
        "share/convbench/devices.json",
        "share/convbench/profiles/fp-throughput.json",
        "share/convbench/profiles/known_metrics.txt",
    ):
        check(os.path.exists(os.path.join(prefix, rel)), "not installed: " + rel)
    return prefix


def build_example(tmp, source_dir, cmake, prefix):
    """examples/plugin, configured against the installed package only: (its plugin, whether it
    has the CUDA arm), or None when it did not build."""
    ex = os.path.join(tmp, "example")
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    p = run(
        [
            cmake,
            "-S",
            os.path.join(source_dir, "examples", "plugin"),
            "-B",
            ex,
            "-DCMAKE_PREFIX_PATH=" + prefix,
            "-DCMAKE_BUILD_TYPE=Release",
        ]
        + gen
    )
    if not check(
        p.returncode == 0,
        "configuring examples/plugin failed: " + p.stdout[-3000:] + p.stderr[-3000:],
    ):
        return None
    with_cuda = "with the CUDA arm" in p.stdout
    p = run([cmake, "--build", ex])
    if not check(
        p.returncode == 0,
        "building examples/plugin failed: " + p.stdout[-3000:] + p.stderr[-3000:],
    ):
        return None
    return os.path.join(ex, "libexample_arms.so"), with_cuda


def test_installed_package(tmp, build_dir, source_dir, cmake, schema):
    prefix = install(tmp, build_dir, cmake)
    example = prefix and build_example(tmp, source_dir, cmake, prefix)
    if not example:
        return
    so, with_cuda = example
    bench = os.path.join(prefix, "bin", "bench_conv")

    p = run([bench, "--plugin", so, "--help"])
    check("example-cpu-f32 [host]" in p.stdout, "installed --help does not list example-cpu-f32")
    # The CUDA arm compiles wherever nvcc is; it runs on a GPU machine.
    if with_cuda:
        check(
            "example-cuda-f32 [CUDA]" in p.stdout,
            "the example's CUDA arm was built but is not listed",
        )
    else:
        print("NOTE: no CUDA compiler here: the example's CUDA arm was not built")

    out = os.path.join(tmp, "r.json")
    p = run(
        [
            bench,
            "--plugin",
            so,
            "--arms",
            "example-cpu-f32,cpu-f64",
            "--reps",
            "1",
            "--target-ci",
            "0",
            "--out",
            out,
        ]
        + SMALL,
        cwd=tmp,
    )
    check(p.returncode == 0, f"installed run: exit {p.returncode}: {p.stderr[-2000:]}")
    if not check(os.path.exists(out), "installed run: no result"):
        return
    r = load_json(out)
    validate(r, "result", schema)
    c = case_of(r, "example-cpu-f32")
    if check(len(c) == 1, f"example-cpu-f32: {len(c)} cases"):
        c = c[0]
        check(
            c["gate"]["result"] == "pass" and c["gate"]["kind"] == "tolerance",
            f"gate {c['gate']}",
        )
        check(len(c["samples"]) == 1 and c["stats"] is not None, "example-cpu-f32 was not timed")
        pl = c["kernel"].get("plugin", {})
        with open(so, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        check(pl.get("path") == os.path.realpath(so), f"plugin path {pl.get('path')}")
        check(pl.get("sha256") == digest, "plugin sha256 is not the file's")
        check(pl.get("version") == "0.1.0" and pl.get("name") == "example", f"plugin block {pl}")
        check(
            c["kernel"].get("name") == "naive f32 loop, one host thread",
            f"kernel {c['kernel']}",
        )

    # The installed bench_conv reads the installed data first: a broken models.json under the
    # prefix is what it complains about. (Planted: data_dir() trying the source tree first.)
    with open(os.path.join(prefix, "share", "convbench", "models.json"), "w") as f:
        f.write("{")
    p = run([bench, "--no-lease", "--out", os.path.join(tmp, "x.json")], cwd=tmp)
    check(
        p.returncode == 2 and os.path.join("share", "convbench") in p.stderr,
        f"installed data not read first: exit {p.returncode}: {p.stderr}",
    )


TESTS = {
    "cli": test_cli,
    "crash_in_process": test_crash_in_process,
    "hang_and_exit": test_hang_and_exit,
    "gpu": test_gpu,
    "installed_package": test_installed_package,
}

if __name__ == "__main__":
    harness.main(TESTS, "bench_plugin_e2e")
