"""What bench_conv shows a person, end to end: terminal.py TEST BENCH_CONV SCHEMA [CONVLEASE].

sigpipe: stderr (or stdout) read by a reader that closes after one line, as `2>&1 | head -3` does:
the run still ends 0 with a whole, valid record. progress: the default on a log (stderr not a
terminal) is a few plain lines, on a terminal one updating line cleared at the end; --verbose
every round's lines; --quiet only the table and the result path. dry_run: the plan, its memory
and time, and nothing written or leased. version, completion: --version and the bash script.
Planted faults seen failing are noted in each test's text.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "harness"))
import harness  # noqa: E402
from harness import check, load_json, run, validate  # noqa: E402

SMALL = [
    "--stage",
    "up3",
    "--model",
    "bigvgan_base_22khz_80band",
    "--frames",
    "8",
    "--arms",
    "cpu-f64,cpu-f32",
    "--no-counters",
    "--no-lease",
]


def small(out, *extra):
    return [*SMALL, "--out", out, *extra]


def raw_run(cmd, tmp, **env):
    """(returncode, stdout, stderr) with the carriage returns kept (text mode would turn each
    into a newline)."""
    p = subprocess.run(
        [str(c) for c in cmd],
        cwd=tmp,
        env=harness.environ(None, (), **env),
        capture_output=True,
        timeout=300,
        check=False,
    )
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def t_sigpipe(tmp, bench, schema, *_):
    """A reader that closes its end after one line: stderr, then stdout (the table). Exit 0 and a
    valid record both times, no temp file left. Planted: ignore_sigpipe() not called -> killed
    by SIGPIPE (exit -13), seen failing."""
    for stream in ("stderr", "stdout"):
        out = os.path.join(tmp, f"{stream}.json")
        cmd = [bench, *small(out, "-v", "--reps", "4", "--target-ci", "0")]
        pipe = {"stderr": subprocess.PIPE, "stdout": subprocess.DEVNULL}
        if stream == "stdout":
            pipe = {"stdout": subprocess.PIPE, "stderr": subprocess.DEVNULL}
        p = subprocess.Popen(cmd, text=True, **pipe)
        reader = p.stderr if stream == "stderr" else p.stdout
        first = reader.readline()
        reader.close()  # the reader goes away, as `| head -1` does
        try:
            rc = p.wait(timeout=300)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = None
        check(first != "", f"{stream}: the reader got a first line")
        check(rc == 0, f"{stream} closed after one line: exit {rc}, want 0")
        check(os.path.exists(out), f"{stream} closed: the record is written")
        if os.path.exists(out):
            r = load_json(out)
            validate(r, f"{stream} closed", schema)
            check(r["status"] == "complete", f"{stream} closed: status {r['status']}")
        left = [
            f for f in os.listdir(tmp) if f.startswith(f"{stream}.json") and f != f"{stream}.json"
        ]
        check(not left, f"{stream} closed: files left beside the record: {left}")


def t_progress(tmp, bench, schema, *_):
    """Stderr by mode. Planted: the per-sample lines at the normal level -> the log check (few
    lines) fails, seen; show_status drawing on a log -> '\\r' on a log, seen failing; --quiet not
    silencing the gate's pass lines -> the quiet check fails, seen."""
    fixed = ["--reps", "3", "--target-ci", "0"]
    rc, out, err = raw_run(
        [bench, *small(os.path.join(tmp, "log.json"), *fixed)], tmp, CONVBENCH_TTY="0"
    )
    check(rc == 0, f"log: exit {rc}: {err[-300:]}")
    lines = err.split("\n")[:-1]
    check(len(lines) <= 8, f"log: {len(lines)} stderr lines for 2 cases x 3 rounds: {lines}")
    check("\r" not in err, "log: no carriage return on a log")
    check(any("rounds done: 3 rounds" in x for x in lines), f"log: the rounds' end said: {lines}")
    check(any("ETA ~" in x for x in lines), f"log: the plan line states an ETA: {lines[:3]}")
    check("verdict" in out and "result: " in out, "log: the table and the result")

    verbose = run([bench, *small(os.path.join(tmp, "v.json"), "-v", *fixed)], tmp)
    check("round 3/3" in verbose.stderr, "--verbose: every sample's line (round 3/3)")
    check(len(verbose.stderr.splitlines()) > len(lines), "--verbose says more than the default")

    q = run([bench, *small(os.path.join(tmp, "q.json"), "-q", *fixed)], tmp)
    check(q.returncode == 0 and q.stderr == "", f"--quiet: stderr {q.stderr[:300]!r}")
    check("result: " in q.stdout and "cpu-f32" in q.stdout, "--quiet: the table and the path")

    rc, _, err = raw_run(
        [bench, *small(os.path.join(tmp, "tty.json"), "--reps", "6", "--max-time", "2")],
        tmp,
        CONVBENCH_TTY="1",
    )
    check(rc == 0, f"terminal: exit {rc}: {err[-300:]}")
    drawn = [x for x in err.split("\r") if "round " in x]
    check(len(drawn) >= 6, f"terminal: an updating line is drawn: {err[-300:]!r}")
    check(all("ETA ~" in x for x in drawn), f"terminal: every state says its ETA: {drawn[:3]}")
    rounds = [x for x in err.split("\n") if "round " in x]
    check(len(rounds) == 1, f"terminal: the round states share one line: {rounds[:3]!r}")
    check(
        err.split("rounds done")[0].endswith("\r\033[Kbench_conv: "),
        f"terminal: the line is cleared before the next: {err[-200:]!r}",
    )


def t_dry_run(tmp, bench, schema, *_):
    """--dry-run: the plan, memory, time; exit 0; nothing written (no results folder, no record);
    the causal op's length column says L. Planted: make_plan creating the results folder on a dry
    run -> 'nothing written' fails, seen."""
    before = set(os.listdir(tmp))
    p = run([bench, "--dry-run", "--stage", "up0", "--reps", "3"], tmp)
    check(p.returncode == 0, f"dry run: exit {p.returncode}: {p.stderr[-300:]}")
    check(set(os.listdir(tmp)) == before, f"dry run wrote {set(os.listdir(tmp)) - before}")
    for word in ("cpu-f64", "cpu-f32", "twin of", "host", "device", "memory: host", "time: about"):
        check(word in p.stdout, f"dry run says {word!r}: {p.stdout[:400]}")
    j = run([bench, "--dry-run", "--json", "--stage", "up0"], tmp)
    check(j.returncode == 0, f"dry run --json: exit {j.returncode}")
    try:
        d = json.loads(j.stdout)
    except ValueError:
        check(False, f"dry run --json is not JSON: {j.stdout[:200]}")
        return
    check(d["cases"] and all(c["host_bytes"] > 0 for c in d["cases"]), "each case's host bytes")
    check(
        abs(sum(c["host_bytes"] for c in d["cases"]) - d["memory"]["host_bytes"]) < 1024,
        "the cases' host bytes sum to the plan's",
    )
    check(any(c["twin_of"] for c in d["cases"]), "the twin is planned and named")
    check(d["time"]["total_s"] >= 27, f"the estimate holds the 27 s budget: {d['time']}")
    c = run([bench, "--dry-run", "--stage", "causal.c1024.l64.b8"], tmp)
    check(c.returncode == 0, f"causal dry run: exit {c.returncode}: {c.stderr}")
    head = c.stdout.splitlines()[1].split() if len(c.stdout.splitlines()) > 1 else []
    check(head[:2] == ["stage", "L"], f"causal: the length column says L: {head}")


def t_version(tmp, bench, schema, convlease=None):
    """--version: the tool, the project version, git describe, CUDA on or off; convlease alike.
    Planted: the word 'git' dropped from version_text -> the pattern fails, seen."""
    pat = re.compile(
        r"^(bench_conv|convlease) \d+\.\d+\.\d+ \(git [0-9a-zA-Z.\-_]+\), CUDA (on|off)$"
    )
    for tool in [bench] + ([convlease] if convlease else []):
        p = run([tool, "--version"], tmp)
        check(p.returncode == 0, f"{tool} --version: exit {p.returncode}")
        check(pat.match(p.stdout.strip()), f"{tool} --version: {p.stdout.strip()!r}")


def t_completion(tmp, bench, schema, *_):
    """source <(bench_conv --completion bash) completes options and values in a real bash.
    Planted: the --stage values left out of the script -> 'up0' not offered, seen failing."""
    script = run([bench, "--completion", "bash"], tmp)
    check(script.returncode == 0 and "complete -F" in script.stdout, "a completion script")
    path = os.path.join(tmp, "c.bash")
    with open(path, "w") as f:
        f.write(script.stdout)
    check(run(["bash", "-n", path], tmp).returncode == 0, "bash -n accepts it")

    def complete(*words):
        line = " ".join(f"'{w}'" for w in words)
        sh = (
            f"source <({bench} --completion bash); COMP_WORDS=(bench_conv {line}); "
            f"COMP_CWORD={len(words)}; _bench_conv; printf '%s\\n' \"${{COMPREPLY[@]}}\""
        )
        return run(["bash", "-c", sh], tmp).stdout.split()

    check("--stage" in complete("--stag"), f"--stag -> {complete('--stag')}")
    check(complete("--staging", "") == ["per-call", "resident", "both"], "--staging's values")
    check("up0" in complete("--stage", "up"), f"--stage up -> {complete('--stage', 'up')}")
    check("up0,amp" in complete("--stage", "up0,am"), "a comma list completes its last item")
    check("cpu-f32" in complete("--arms", "cpu-"), f"--arms cpu- -> {complete('--arms', 'cpu-')}")


TESTS = {
    "sigpipe": t_sigpipe,
    "progress": t_progress,
    "dry_run": t_dry_run,
    "version": t_version,
    "completion": t_completion,
}

if __name__ == "__main__":
    harness.main(TESTS, "convbench_terminal")
