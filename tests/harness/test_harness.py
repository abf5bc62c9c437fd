"""The end-to-end tests' harness, tested: what it counts, what makes a test fail, skip or pass,
and that a run past its timeout or an invalid record is a failure, never a pass. Each test runs
a small test script through harness.main in a child Python, as CTest runs the real ones."""

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import harness  # noqa: E402


def script(tmp_path, body, *args, timeout=60):
    """Runs a test script whose TESTS table holds body's function `t` as test "t"."""
    src = tmp_path / "case.py"
    src.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(HERE)!r})\n"
        "import harness\n"
        "from harness import check\n"
        + textwrap.dedent(body)
        + '\nharness.main({"t": t}, "selftest")\n'
    )
    p = subprocess.run(
        [sys.executable, str(src), "t", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return p.returncode, p.stdout + p.stderr


@pytest.fixture(autouse=True)
def fresh_count():
    harness.check = harness.Checks()
    yield


def test_passing_checks_pass_and_are_counted(tmp_path):
    rc, out = script(tmp_path, "def t(tmp):\n    check(1 == 1, 'one')\n    check(True, 'two')\n")
    assert rc == 0, out
    assert "t: 2 checks, 0 failed" in out


def test_a_failed_check_fails_and_is_named(tmp_path):
    rc, out = script(tmp_path, "def t(tmp):\n    check(True, 'a')\n    check(0, 'the b check')\n")
    assert rc == 1, out
    assert "FAIL: the b check" in out and "t: 2 checks, 1 failed" in out


def test_no_check_is_a_failure_not_a_pass(tmp_path):
    rc, out = script(tmp_path, "def t(tmp):\n    pass\n")
    assert rc == 1, out
    assert "no check ran" in out


def test_skip_exits_77_with_its_reason(tmp_path):
    rc, out = script(tmp_path, "def t(tmp):\n    harness.skip('no GPU here')\n")
    assert rc == harness.SKIP, out
    assert "SKIPPED: no GPU here" in out


def test_a_test_that_raises_fails_and_keeps_its_files(tmp_path):
    body = """
    def t(tmp):
        check(True, 'before')
        open(tmp + '/left.txt', 'w').write('x')
        {}['missing']
    """
    rc, out = script(tmp_path, body)
    assert rc == 1, out
    assert "KeyError" in out and "t: 2 checks, 1 failed" in out
    kept = [line.split("files kept in ")[1] for line in out.splitlines() if "files kept in" in line]
    assert kept and os.path.exists(os.path.join(kept[0], "left.txt"))


def test_a_passing_test_leaves_no_files(tmp_path):
    rc, out = script(tmp_path, "def t(tmp):\n    print('TMP', tmp)\n    check(True, 'x')\n")
    assert rc == 0, out
    tmp = next(line.split()[1] for line in out.splitlines() if line.startswith("TMP "))
    assert not os.path.exists(tmp)


def test_arguments_follow_the_temporary_directory(tmp_path):
    body = "def t(tmp, a, b):\n    check(os.path.isdir(tmp) and (a, b) == ('x', 'y'), 'args')\n"
    rc, out = script(tmp_path, "import os\n" + body, "x", "y")
    assert rc == 0, out


def test_an_unknown_test_is_bad_usage_in_one_line(tmp_path):
    src = tmp_path / "case.py"
    src.write_text(
        f"import sys\nsys.path.insert(0, {str(HERE)!r})\nimport harness\n"
        "harness.main({'t': lambda tmp: None}, 'selftest')\n"
    )
    p = subprocess.run([sys.executable, str(src), "nope"], capture_output=True, text=True)
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and "unknown test nope" in p.stderr


def test_run_captures_and_times():
    p = harness.run(
        [sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr)"]
    )
    assert (p.returncode, p.stdout, p.stderr) == (0, "out\n", "err\n")
    assert 0 < p.wall < 30
    assert harness.check.count == 0  # a run is not a check


def test_run_past_its_timeout_is_a_failed_check():
    p = harness.run([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert p.returncode is None and p.wall < 10
    assert harness.check.count == 1 and "still running after 0.5 s" in harness.check.failures[0]


def test_run_environment_drop_and_extra(monkeypatch):
    monkeypatch.setenv("CONVBENCH_LEASE_DIR", "/x")
    monkeypatch.setenv("CONVBENCH_LEASE_POLICY", "y")
    monkeypatch.setenv("CONVBENCH_KEEP", "z")
    code = "import os; print(sorted(k for k in os.environ if k.startswith('CONVBENCH')))"
    p = harness.run(
        [sys.executable, "-c", code], drop=["CONVBENCH_LEASE*"], extra={"CONVBENCH_A": 1}
    )
    assert p.stdout.strip() == "['CONVBENCH_A', 'CONVBENCH_KEEP']"
    p = harness.run([sys.executable, "-c", code], env={"PATH": os.environ["PATH"]})
    assert p.stdout.strip() == "[]"


def test_finish_kills_a_hung_process_group():
    p = harness.start([sys.executable, "-c", "import time; time.sleep(60)"], new_session=True)
    t0 = time.monotonic()
    rc, _ = harness.finish(p, timeout=0.3)
    assert rc is None and p.poll() is not None and time.monotonic() - t0 < 10


def test_validate_counts_one_check_and_names_the_error(tmp_path):
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": "object", "required": ["status"]}))
    assert harness.validate({"status": "complete"}, "good", schema)
    assert not harness.validate({"cases": []}, "bad", schema)
    assert harness.check.count == 2 and harness.check.failures == [
        "bad: valid against the result schema"
    ]


def test_the_result_schema_refuses_a_planted_record():
    example = next((harness.REPO / "results" / "examples").glob("*.json"))
    record = json.loads(example.read_text())
    assert harness.validate(record, "example")
    record["status"] = "mostly-fine"  # planted: a status the schema does not know
    assert not harness.validate(record, "planted")


def test_load_json_of_a_broken_file_fails_and_aborts(tmp_path):
    bad = tmp_path / "r.json"
    bad.write_text("{ not json")
    with pytest.raises(harness.Abort):
        harness.load_json(bad)
    assert harness.check.failures and "cannot load" in harness.check.failures[0]


def test_environ_keeps_base_and_drops_exact_names():
    e = harness.environ({"A": "1", "AB": "2", "B": "3"}, drop=["A"], C=4)
    assert e == {"AB": "2", "B": "3", "C": "4"}


def test_wait_for_polls_until_true_or_timeout():
    seen = []
    assert harness.wait_for(lambda: seen.append(1) or len(seen) >= 3, 5, step=0.001)
    assert not harness.wait_for(lambda: False, 0.05)


def test_procs_with_finds_a_process_by_its_argument(tmp_path):
    needle = str(tmp_path / "unique-needle")
    p = harness.start([sys.executable, "-c", "import time; time.sleep(20)", needle])
    try:
        assert harness.wait_for(lambda: p.pid in harness.procs_with(needle), 5)
    finally:
        p.kill()
        p.wait()
    assert p.pid not in harness.procs_with(needle)
