"""The tables of compare, fleet and history in each --format: csv parses with the csv module into
the command's columns, json with json, md has its header rule, text fits the width COLUMNS
gives it. fleet orders cases by the numbers in them; history prints microseconds and the host's
name, and leaves the committed examples out unless asked.

Planted faults seen failing (then reverted): fleet sorting its cases as strings (key=str:
test_fleet_orders_cases_numerically); history printing best in seconds (test_history_in_us);
is_example always False (test_history_leaves_examples_out); compare's text not fitted (the
terminal width ignored: test_compare_formats)."""

import csv
import io
import json
import os
import subprocess
import sys

import synth
from test_fleet import host_run

from convbench_analysis import compare, fleet, history_view

HOST_CASE = "up0/96/cpu-f64/host"


def cli(*args, columns=100):
    p = subprocess.run(
        [sys.executable, "-m", "convbench_analysis", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ | {"COLUMNS": str(columns)},
    )
    return p.returncode, p.stdout, p.stderr


def parsed(fmt, out):
    if fmt == "csv":
        return list(csv.reader(io.StringIO(out)))
    if fmt == "json":
        return json.loads(out)
    table = [ln for ln in out.splitlines() if ln.startswith("|")]
    assert set(table[1]) <= set("|-:") and "---" in table[1], out
    return table


def test_compare_formats(tmp_path):
    paths = []
    for k in (1, 2):
        p = tmp_path / f"r{k}.json"
        p.write_text(json.dumps(synth.make_run(seed=k, start=1_795_000_000.0 + 9000 * k)))
        paths.append(p)
    rc, out, err = cli("compare", *paths, "--format", "csv")
    table = parsed("csv", out)
    assert rc == 0 and table[0] == list(compare.HEADERS), err
    n = len(synth.make_run()["cases"])
    assert len(table) == 1 + n and all(len(r) == len(compare.HEADERS) for r in table)
    rc, out, _ = cli("compare", *paths, "--format", "json")
    assert len(parsed("json", out)["rows"]) == n
    rc, out, _ = cli("compare", *paths, "--format", "md")
    assert len(parsed("md", out)) == 2 + n
    rc, out, _ = cli("compare", *paths, columns=80)
    assert rc == 0 and max(map(len, out.splitlines())) <= 80, out
    assert "all comparisons accepted" in out


def test_fleet_orders_cases_numerically(tmp_path):
    runs = []
    for k in range(1, 4):
        r = synth.make_run(
            stages=("up3",),
            frames=(128, 8, 32),
            arms=("cpu-f64", "cuda-f32"),
            seed=k,
            host=f"h{k}",
            token=str(1000 + k),
            start=1_795_000_000.0 + 5000 * k,
        )
        r["host"]["machine_id"] = f"{k:032x}"
        r["lease"]["resource"]["gpu_uuid"] = r["gpus"][0]["uuid"] = f"GPU-{k}"
        runs.append(r)
        (tmp_path / f"h{k}.json").write_text(json.dumps(r))
    rc, out, err = cli("fleet", tmp_path, "--format", "csv")
    table = parsed("csv", out)
    assert rc == 0 and table[0] == list(fleet.SPREAD_HEADERS), err
    assert [r[0] for r in table[1:]] == ["up3/8"] * 2 + ["up3/32"] * 2 + ["up3/128"] * 2
    assert fleet.natural("up3/8") < fleet.natural("up3/32") < fleet.natural("up3/128")
    rc, out, _ = cli("fleet", tmp_path, "--format", "md")
    assert rc == 0 and parsed("md", out)
    rc, out, _ = cli("fleet", tmp_path, columns=72)
    assert max(map(len, out.splitlines())) <= 72, out
    spread = out[out.index("across hosts") :].splitlines()
    cases = [ln.split()[0] for ln in spread if ln.startswith("up3/")]
    assert cases == ["up3/8"] * 2 + ["up3/32"] * 2 + ["up3/128"] * 2, out


def _history(folder, bests, examples=()):
    """One run per best (an hour apart), those in `examples` under folder/examples."""
    (folder / "examples").mkdir()
    for i, best in enumerate(bests):
        run = synth.make_run(seed=10 + i, start=1_795_000_000.0 + 3600 * i, token=str(40 + i))
        run["host"]["name"] = f"box{i}"
        synth.set_seconds(
            synth.case(run, HOST_CASE), [best * f for f in (1.0, 1.01, 1.004, 1.02, 1.006)]
        )
        where = folder / "examples" if i in examples else folder
        (where / f"r{i}.json").write_text(json.dumps(run))


def test_history_in_us(tmp_path):
    _history(tmp_path, [0.0765, 0.0805, 0.00001234])
    rc, out, err = cli("history", HOST_CASE, "--history", tmp_path, "--format", "csv")
    table = parsed("csv", out)
    assert rc == 0 and table[0] == list(history_view.HEADERS), err
    rows = {r[3]: r for r in table[1:]}
    assert rows["box0"][4] == "76500" and rows["box1"][4] == "80500"
    assert rows["box2"][4] == "12.34" and rows["box0"][5] == "[76500, 78030]"
    assert history_view.us(0.000000123456) == "0.1235"
    rc, out, _ = cli("history", HOST_CASE, "--history", tmp_path, columns=60)
    lines = out.splitlines()
    assert max(map(len, lines)) <= 60, out
    assert "76500" in out and "0.0765" not in out


def test_history_leaves_examples_out(tmp_path):
    _history(tmp_path, [0.0765, 0.0805, 0.0770], examples=(2,))
    rc, out, err = cli("history", HOST_CASE, "--history", tmp_path, "--format", "json")
    rep = parsed("json", out)
    assert rc == 0 and [p["host_name"] for p in rep["points"]] == ["box0", "box1"], err
    assert rep["examples"] == "1 left out"
    rc, out, _ = cli("history", HOST_CASE, "--history", tmp_path, "--include-examples", "--json")
    assert [p["host_name"] for p in json.loads(out)["points"]] == ["box0", "box1", "box2"]
    rc, out, _ = cli("history", HOST_CASE, "--history", tmp_path, "--host", "box1", "--json")
    assert [p["host_name"] for p in json.loads(out)["points"]] == ["box1"]
    rc, out, err = cli("history", HOST_CASE, "--history", tmp_path / "examples", "--format", "md")
    assert rc == 0 and len(parsed("md", out)) == 2 + 1, err
    rc, out, err = cli("history", HOST_CASE, "--history", tmp_path, "--host", "box2")
    assert rc == 2 and "1 example record(s) left out: --include-examples" in err and not out


def test_fleet_rows_still_read_in_json(tmp_path):
    runs = [host_run(k, f"n{k}") for k in range(1, 4)]
    for i, r in enumerate(runs):
        (tmp_path / f"run{i}.json").write_text(json.dumps(r))
    rc, out, _ = cli("fleet", tmp_path, "--format", "json")
    assert rc == 0 and set(parsed("json", out)["hosts"]) == {"n1", "n2", "n3"}
