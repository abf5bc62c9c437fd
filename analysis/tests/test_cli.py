"""The command line as scripts use it: exit codes (0 accepted, 2 bad input, 3 refused), one
line on stderr and no traceback for bad input, REFUSED with reasons in the report.

Planted faults seen failing (then reverted):
- main() without the InputError handler: test_bad_input_one_line[*] saw a traceback, exit 1;
- report returning 0 when rows were refused: test_report_refused_exit_3 failed;
- the baseline's own reasons not carried into the other rows: test_refused_baseline_refuses_
  every_ratio failed (only the baseline row said REFUSED);
- a ratio gated on every case of its group (the old rule): test_a_ratio_is_gated_on_its_own_
  two_cases failed (the device ratio was refused for the host baseline's spread).
"""

import json
import shutil
import subprocess
import sys

import pytest
import synth

DEV = "up0/96/cuda-f64/resident"


def cli(*args, cwd=None):
    p = subprocess.run(
        [sys.executable, "-m", "convbench_analysis", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )
    return p.returncode, p.stdout, p.stderr


def test_report_clean_exit_0(clean, write):
    rc, out, err = cli("report", write(clean))
    assert rc == 0, err
    assert "REFUSED" not in out and "not admissible" not in out and "nothing refused" in out
    assert "fp64 " in out and "% of 33.3" in out  # counters collected: achieved vs peak
    assert "falling with size" not in out  # no per-call signature in the clean run
    assert "device timing launched" in out  # synth's runs predate the field: launched


def test_report_names_the_device_timing(clean, write):
    clean["plan"]["device_timing"] = "queued"
    rc, out, err = cli("report", write(clean))
    assert rc == 0 and "device timing queued, lease valid" in out, err


def test_report_json(clean, write):
    rc, out, _ = cli("report", write(clean), "--json")
    rep = json.loads(out)
    assert rc == 0 and rep["refused"] == 0
    g = next(g for g in rep["groups"] if g["stage"] == "up0" and g["frames"] == 96)
    row = next(r for r in g["rows"] if r["arm"] == "cuda-f64/resident")
    assert row["den"] == "cpu-f64/host"  # no peer of its precision in the run: the reference
    assert row["ci"][0] <= row["ratio"] <= row["ci"][1] and row["verdict"] == "FASTER"
    best = {r["arm"]: r["best_s"] for r in g["cases"]}
    assert row["best_ratio"] == pytest.approx(best["cuda-f64/resident"] / best["cpu-f64/host"])
    assert row["ratio"] == pytest.approx(row["best_ratio"], rel=0.05)  # paired, per round
    case = next(r for r in g["cases"] if r["arm"] == "cuda-f64/resident")
    assert 40 < case["counters"]["fp64"]["pct_peak"] < 50  # synth: 15 of 33.3 TFLOP/s
    assert {f["arm"] for f in rep["fits"]} >= {"cuda-f64/resident", "cpu-f64/host"}


def test_report_baseline_option(clean, write):
    rc, out, _ = cli("report", write(clean), "--json", "--baseline", "cuda-f32")
    g = json.loads(out)["groups"][0]
    assert g["baseline"] == "cuda-f32/resident"
    assert {r["den"] for r in g["rows"]} == {"cuda-f32/resident"} and len(g["rows"]) == 3


def test_default_pairs_set_each_device_arm_against_its_peer(write):
    run = synth.make_run(arms=("cpu-f64", "cpu-f32", "cuda-f32", "cuda-f64", "cudnn-f32"))
    rc, out, _ = cli("report", write(run), "--json")
    g = json.loads(out)["groups"][0]
    assert {(r["arm"], r["den"]) for r in g["rows"]} == {
        ("cpu-f32/host", "cpu-f64/host"),
        ("cuda-f32/resident", "cudnn-f32/resident"),
        ("cuda-f64/resident", "cpu-f64/host"),  # no cudnn-f64 in this run
    }


def test_pairs_option(clean, write):
    rc, out, _ = cli("report", write(clean), "--json", "--pairs", "cuda-f64:cuda-f32")
    g = json.loads(out)["groups"][0]
    assert [(r["arm"], r["den"]) for r in g["rows"]] == [("cuda-f64/resident", "cuda-f32/resident")]
    assert cli("report", write(clean), "--pairs", "cuda-f64")[0] == 2
    rc, _, err = cli("report", write(clean), "--pairs", "cuda-f64:cudnn-f64")
    assert rc == 2 and "no run has both arms" in err and err.count("\n") == 1


def test_a_ratio_is_judged_on_its_own_two_cases(write):
    run = synth.make_run(arms=("cpu-f64", "cuda-f32", "cudnn-f32"))
    s = synth.case(run, "up0/96/cpu-f64/host")["samples"][1]
    synth.set_foreign(s, 0.4)  # a cause on the host baseline only
    s["contention"]["psi_some_us"] = 0.3 * s["total_seconds"] * 1e6
    rc, out, _ = cli("report", write(run), "--json")
    rep = json.loads(out)
    g = next(g for g in rep["groups"] if g["stage"] == "up0" and g["frames"] == 96)
    base = next(r for r in g["cases"] if r["arm"] == "cpu-f64/host")
    assert rc == 3 and base["status"] == "REFUSED"
    (row,) = g["rows"]
    assert (row["arm"], row["den"], row["status"]) == (
        "cuda-f32/resident",
        "cudnn-f32/resident",
        "ok",
    )


def test_report_refused_exit_3(clean, write):
    synth.case(clean, DEV)["samples"][1]["gpu_after"]["foreign_processes"] = 2
    clean["lease"]["observation"]["foreign_gpu_processes_max"] = 2
    clean["lease"]["verdict"] = "void"
    clean["cases"] = [c for c in clean["cases"] if c["id"].startswith("up0/96/")]
    rc, out, _ = cli("report", write(clean))
    assert rc == 3
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("cuda-f64/resident /"))
    assert "not admissible" in line and "[" in line  # its value and interval still shown
    assert "foreign-gpu: 2 foreign process(es) on the GPU in round 1" in out
    assert "3 ratio(s) and 4 case(s) refused for a cause" in out  # a void lease: the run


def test_refused_baseline_refuses_every_ratio(clean, write):
    # only the baseline case is bad: every ratio over it must carry its reason
    host = "up0/96/cpu-f64/host"
    s = synth.case(clean, host)["samples"][0]
    synth.set_foreign(s, 0.4)
    s["contention"]["psi_some_us"] = 0.3 * s["total_seconds"] * 1e6
    rc, out, _ = cli("report", write(clean), "--json")
    rep = json.loads(out)
    g = next(g for g in rep["groups"] if g["stage"] == "up0" and g["frames"] == 96)
    assert rc == 3 and rep["refused"] == len(g["rows"]) == 3  # every arm's den is cpu-f64
    for r in g["rows"]:
        assert r["status"] == "REFUSED"
        assert [(f["code"], f["case"]) for f in r["reasons"]] == [("foreign-cpu", host)]


def test_run_without_token_refuses_every_ratio(clean, write):
    clean["lease"]["token"] = None
    rc, out, _ = cli("report", write(clean), "--json")
    rep = json.loads(out)
    assert rc == 3
    rows = [r for g in rep["groups"] for r in g["rows"] + g["cases"]]
    assert all(r["status"] == "REFUSED" for r in rows)
    assert all([f["code"] for f in r["reasons"]] == ["lease-none"] for r in rows)


def test_report_historical_drift_exit_3(write):
    a, b = synth.make_run(seed=1), synth.make_run(seed=2, start=1_795_100_000.0, token="9")
    host = "up0/96/cpu-f64/host"
    synth.set_seconds(synth.case(a, host), [0.0765, 0.0768, 0.0766])
    synth.set_seconds(synth.case(b, host), [0.2280, 0.2290, 0.2284])
    rc, out, _ = cli("report", write(a), write(b))
    assert rc == 3 and "drift" in out and "x2.98" in out


def test_threshold_override_changes_verdict(clean, write):
    synth.case(clean, DEV)["samples"][3]["measured_sm_clock_mhz"] = 1500.0
    p = write(clean)
    assert cli("report", p)[0] == 0
    assert cli("report", p, "--threshold", "sm_clock_min_fraction=0.8")[0] == 3


@pytest.mark.parametrize(
    "case",
    [
        "missing",
        "truncated",
        "nan",
        "negative",
        "huge_threshold",
        "bad_threshold",
        "no_args",
        "bad_subcommand",
    ],
)
def test_bad_input_one_line(clean, write, tmp_path, case):
    text = json.dumps(clean)
    args = {
        "missing": ["report", tmp_path / "absent.json"],
        "truncated": ["report", tmp_path / "t.json"],
        "nan": ["report", tmp_path / "n.json"],
        "negative": ["report", tmp_path / "neg.json"],
        "huge_threshold": ["report", write(clean), "--threshold", "nope=1"],
        "bad_threshold": ["report", write(clean), "--threshold", "drift_k=NaN"],
        "no_args": [],
        "bad_subcommand": ["frobnicate"],
    }[case]
    (tmp_path / "t.json").write_text(text[:1000])
    (tmp_path / "n.json").write_text(text.replace('"flops": ', '"flops": NaN, "x": ', 1))
    clean["cases"][0]["samples"][0]["seconds"] = -3.0
    (tmp_path / "neg.json").write_text(json.dumps(clean))
    rc, out, err = cli(*args)
    assert rc == 2, (rc, err)
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("convbench-analyze: error: ")


def test_compare_same_binary_two_clean_runs(clean, write):
    other = synth.make_run(seed=5, start=1_795_100_000.0, token="555")
    rc, out, _ = cli("compare", write(clean), write(other), "--arm", "cuda-f64", "--json")
    rep = json.loads(out)
    assert rc == 0 and len(rep["rows"]) == 6
    assert all(r["status"] == "ok" and "p" in r for r in rep["rows"])


def test_compare_detects_a_real_change(clean, write):
    # after a change: another git sha, the device arm 20% faster in every round
    after = synth.make_run(seed=5, start=1_795_100_000.0, token="555", git_sha="a" * 40)
    c = synth.case(after, DEV)
    before = [s["seconds"] for s in synth.case(clean, DEV)["samples"]]
    synth.set_seconds(c, [0.8 * x for x in before])
    rc, out, _ = cli("compare", write(clean), write(after), "--json")
    row = next(r for r in json.loads(out)["rows"] if r["case"] == DEV)
    assert rc == 0 and row["verdict"] == "B faster" and row["p"] < 0.05
    assert row["ratio_b_over_a"] == pytest.approx(0.8, rel=0.01)


def test_compare_refused_when_a_run_fails_a_check(clean, write):
    after = synth.make_run(seed=5, start=1_795_100_000.0, token="555", git_sha="a" * 40)
    after["lease"]["verdict"] = "void"
    rc, out, _ = cli("compare", write(clean), write(after))
    assert rc == 3 and "REFUSED" in out and "lease-void" in out


@pytest.mark.parametrize("command", ["checks", "gates"])  # gates: the command's earlier name
def test_checks_lists_every_finding_code(command):
    rc, out, _ = cli(command)
    from convbench_analysis.findings import CHECKS

    assert rc == 0 and all(code in out for code in CHECKS)


@pytest.mark.parametrize("fmt", ["text", "md", "csv", "json"])
def test_checks_table_in_each_format_has_every_code_and_threshold(fmt):
    import csv
    import io

    from convbench_analysis.findings import CHECKS
    from convbench_analysis.thresholds import Thresholds

    rc, out, err = cli("checks", "--format", fmt)
    assert rc == 0 and not err
    if fmt == "json":
        got = json.loads(out)
        codes = [c["code"] for c in got["checks"]]
        names = [t["threshold"] for t in got["thresholds"]]
        assert got["checks"][0]["meaning"] == CHECKS[codes[0]].message
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        codes = [r["name"] for r in rows if r["table"] == "check"]
        names = [r["name"] for r in rows if r["table"] == "threshold"]
    else:
        codes = [c for c in CHECKS if c in out]
        names = [n for n in Thresholds.names() if n in out]
    assert codes == list(CHECKS) and names == Thresholds.names()
    # a check's thresholds are shown with their defaults
    assert "renew_gap_fraction = 1" in out


def test_checks_unknown_format_is_one_line():
    rc, out, err = cli("checks", "--format", "html")
    assert rc == 2 and not out and len(err.strip().splitlines()) == 1


def test_console_script_installed():
    exe = shutil.which("convbench-analyze")
    if exe is None:
        pytest.skip("convbench-analyze not on PATH: run `pip install -e analysis/`")
    p = subprocess.run([exe, "checks"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "lease-overlap" in p.stdout


def test_reader_leaving_early_is_not_bad_input(clean, write):
    # `report ... | head -1`: the pipe closes under a long report. Planted fault seen failing:
    # without the BrokenPipeError handler the CLI said "error: : Broken pipe" and exited 2.
    paths = [
        write(synth.make_run(seed=s, start=1_795_000_000.0 + s * 1e5, token=str(3000 + s)))
        for s in range(40)
    ]  # ~200 KB of report: more than a pipe holds
    p = subprocess.Popen(
        [sys.executable, "-m", "convbench_analysis", "report", "--no-history", *map(str, paths)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 141 and err == ""
