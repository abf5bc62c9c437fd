"""What a newcomer meets at the terminal: every table-printing command in every --format, the
report fitted to the terminal's width and said once per cause, --version, the bash completion
and a help text on every option.

Planted faults seen failing (then reverted):
- calibrate printing its text whatever --format asked (render(rep) without fmt):
  test_every_table_command_in_md_and_csv[calibrate-md] failed (no `|---` rule);
- the index command's folder without a help: test_every_option_and_positional_has_help failed;
- a run's causes under every case again (_is_run_wide always False):
  test_a_run_wide_cause_is_said_once failed (the lease's detail said 25 times);
- shtab imported unconditionally by the parser (the GPU image has no shtab):
  test_every_command_runs_without_shtab failed (ModuleNotFoundError traceback);
- tables wrapped at hyphens (the placeholder taken out of tables._text):
  test_report_fits_the_terminal_and_breaks_no_word failed ("foreign-" / "gpu)").
"""

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import synth

from convbench_analysis import cli

REPO = Path(__file__).resolve().parents[2]
EX = "results/examples"

# every command that prints a table, on committed records
TABLE_COMMANDS = {
    "report": ["report", f"{EX}/main-h200.json", "--no-history"],
    "compare": ["compare", f"{EX}/cudnn-algo-0.json", f"{EX}/cudnn-algo-1.json"],
    "calibrate": ["calibrate", f"{EX}/instrument.json"],
    "fleet": ["fleet", f"{EX}/hog-all-cpus.json", f"{EX}/hog-one-cpu.json"],
    "gpus": ["gpus", f"{EX}/main-h200.json"],
    "history": ["history", "up0/96/cuda-f32/resident", "--history", "results"]
    + ["--include-examples"],
    "perf-table": ["perf-table", f"{EX}/main-h200.json"],
    "host-table": ["host-table", f"{EX}/main-h200.json"],
    "tile-table": ["tile-table", f"{EX}/f32x3-up3.json"],
    "checks": ["checks"],
    "frontier": ["frontier", f"{EX}/sweep.json", "--no-history"],
    "targets": ["targets", f"{EX}/f32x3-up3.json"],
}
MD_RULE = re.compile(r"^\| ?:?---")


def run(*args, columns=None, cwd=REPO):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    p = subprocess.run(
        [sys.executable, "-m", "convbench_analysis", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=env,
    )
    return p.returncode, p.stdout, p.stderr


def test_the_table_commands_are_every_command_that_prints_a_table():
    # a new command that prints a table joins TABLE_COMMANDS (index, plot and html write files;
    # explain prints lines, or --json)
    assert set(cli.COMMANDS) - set(TABLE_COMMANDS) == {"index", "plot", "html", "explain"}


@pytest.mark.parametrize("fmt", ["md", "csv"])
@pytest.mark.parametrize("command", sorted(TABLE_COMMANDS))
def test_every_table_command_in_md_and_csv(command, fmt):
    rc, out, err = run(*TABLE_COMMANDS[command], "--format", fmt)
    assert rc in (0, 3, 4) and out.strip() and "Traceback" not in err, err
    if fmt == "md":
        assert any(MD_RULE.match(ln) for ln in out.splitlines()), out
        return
    rows = list(csv.reader(io.StringIO(out)))
    blocks, block = [], []  # tables one after another are separated by an empty line
    for r in rows:
        if r:
            block.append(r)
        elif block:
            blocks, block = [*blocks, block], []
    blocks += [block] if block else []
    assert blocks and all(len(b) >= 2 for b in blocks), out  # a header row and a row at least
    for b in blocks:
        assert all(len(r) == len(b[0]) for r in b), out
        assert not any(MD_RULE.match(",".join(r)) for r in b)


def _walk(parser, where="convbench-analyze"):
    import argparse

    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            yield where, a
            for name, sub in a.choices.items():
                yield from _walk(sub, f"{where} {name}")
        elif not isinstance(a, argparse._HelpAction):
            yield where, a


def test_every_option_and_positional_has_help():
    said = list(_walk(cli._parser()))
    assert len(said) > 60  # the walk reached the subcommands' options
    empty = [(w, a.option_strings or a.dest) for w, a in said if not (a.help or "").strip()]
    assert not empty, empty


def test_version_names_the_package_and_the_checkout():
    rc, out, err = run("--version")
    assert rc == 0 and not err
    assert out.startswith(f"convbench-analyze {version('convbench-analysis')}")
    if shutil.which("git") and (REPO / ".git").exists():
        assert "(git " in out


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash on this machine")
def test_bash_completion_is_a_script_naming_every_command(tmp_path):
    rc, out, err = run("--print-completion", "bash")
    assert rc == 0 and not err
    script = tmp_path / "convbench-analyze.bash"
    script.write_text(out)
    check = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    for name in [*cli.COMMANDS, "gates"]:
        assert re.search(rf"\b{re.escape(name)}\b", out), name
    assert "--format" in out and "--print-completion" in out


def test_every_command_runs_without_shtab(tmp_path):
    """shtab (the completion script) missing: commands still run; --print-completion says so in
    one line and exits 2."""
    blocker = tmp_path / "shtab.py"
    blocker.write_text("raise ImportError('shtab hidden by the test')\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}

    def run_env(*args):
        p = subprocess.run(
            [sys.executable, "-m", "convbench_analysis", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
        )
        return p.returncode, p.stdout, p.stderr

    rc, out, err = run_env("gpus", f"{EX}/main-h200.json")
    assert rc == 0 and "Traceback" not in err, err
    rc, out, err = run_env("--print-completion", "bash")
    assert rc == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "shtab" in err


def _tokens(text: str) -> list[str]:
    """The words of the output, rules (---) left out: what no wrapping may change."""
    return sorted(w for w in text.split() if set(w) != {"-"})


@pytest.mark.parametrize("record", ["main-h200", "foreign-gpu", "counters", "sweep"])
def test_report_fits_the_terminal_and_breaks_no_word(record):
    path = f"{EX}/{record}.json"
    _, wide, _ = run("report", path, "--no-history", columns=1000)
    for columns in (80, None):  # None: piped, no COLUMNS: 100
        rc, out, err = run("report", path, "--no-history", columns=columns)
        width = columns or 100
        assert rc in (0, 3) and out.startswith("SUMMARY\n"), err
        over = [ln for ln in out.splitlines() if len(ln) > width]
        assert not over, over
        assert _tokens(out) == _tokens(wide)  # wrapped between words, never inside one


@pytest.mark.parametrize("command", ["checks", "gates"])
def test_checks_fit_the_terminal(command):
    for columns in (80, None):
        rc, out, _ = run(command, columns=columns)
        assert rc == 0 and max(map(len, out.splitlines())) <= (columns or 100)


def test_the_summary_counts_the_verdicts_and_the_twins():
    rc, out, _ = run("report", f"{EX}/instrument.json", "--no-history", columns=100)
    rep = json.loads(run("report", f"{EX}/instrument.json", "--no-history", "--json")[1])
    summary = " ".join(out.split("\n\n", 1)[0].split())  # wrapped: its words
    cases = [r for g in rep["groups"] for r in g["cases"]]
    ok = sum(r["verdict"] == "ok" for r in cases)
    assert f"cases: {len(cases)}: {ok} ok," in summary
    assert f"A/A twins (an arm timed twice): {len(rep['aa'])}, measured error up to" in summary


def test_a_run_wide_cause_is_said_once(tmp_path):
    # A sweep run outside the lease: its one cause refuses each of its 24 cases and their
    # ratios; the report says it once, at the top, and each case says REFUSED (run).
    sweep = synth.make_run()
    sweep["lease"]["verdict"] = "outside-lease"
    path = synth.write(sweep, tmp_path / "outside.json")
    detail = "verdict outside-lease (run with --no-lease)"
    rc, out, err = run("report", path, "--no-history", columns=100)
    assert rc == 3, err
    assert out.count(detail) == 1 and out.count("lease-none") == 2  # the cause; the top causes
    summary = " ".join(out.split("\n\n", 1)[0].split())  # wrapped: its words
    assert (
        f"top causes of refusal: lease-none ({len(sweep['cases'])} case(s), the whole run)"
        in summary
    )
    refused = [ln for ln in out.splitlines() if "REFUSED (run)" in ln]
    assert len(refused) == len(sweep["cases"])
    rc, md, _ = run("report", path, "--no-history", "--format", "md")
    assert md.count(detail) == 1
    rep = json.loads(run("report", path, "--no-history", "--json")[1])
    assert all(r["reasons"] for g in rep["groups"] for r in g["cases"])  # the data keeps them all


def test_a_cause_two_cases_share_word_for_word_is_said_once():
    # foreign-gpu.json: the same foreign process refuses both cases of the run, in one sentence;
    # the second case points to the first. Planted (then reverted): _Doc.finding saying every
    # finding in full failed here (the sentence said twice).
    rc, out, _ = run("report", f"{EX}/foreign-gpu.json", "--no-history", columns=1000)
    assert rc == 3
    assert out.count("1 foreign process(es) on the GPU in round 0") == 1
    assert "cuda-f32/resident: REFUSED foreign-gpu, as for cuda-f32/per-call above" in out
