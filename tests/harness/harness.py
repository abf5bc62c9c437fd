"""The one harness of convbench's end-to-end tests (bench/tests, bench/tests/plugin, lease/tests).

A test script is a table of test functions and one call: ``harness.main(TESTS)`` reads
``SCRIPT TEST ARGS...``, gives ``TESTS[TEST](tmp, *ARGS)`` a fresh temporary directory, and exits
0 (every check held), 1 (a check failed, the test raised, or no check ran: a suite of 0 checks is
a skip wearing a pass) or 77 (``skip(reason)``: could not run here, and why). Everything a test
asserts goes through ``check``, which counts it; the last line says how many ran and failed.
A failed test keeps its temporary directory and says where.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NoReturn

SKIP = 77
REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "results" / "result.schema.json"


class Checks:
    """Counts checks and keeps the failed ones. With echo, each check is printed as it is made
    ("ok   WHAT" / "FAIL WHAT" and its detail); without, only the failures, at the end."""

    def __init__(self, echo: bool = False):
        self.echo = echo
        self.count = 0
        self.failures: list[str] = []

    def __call__(self, cond, what: str, detail="") -> bool:
        self.count += 1
        ok = bool(cond)
        if self.echo:
            print(("ok   " if ok else "FAIL ") + what, flush=True)
        if not ok:
            self.failures.append(what)
            if detail != "" and detail is not None:
                print("     " + str(detail).replace("\n", "\n     "), flush=True)
        return ok

    def verdict(self, name: str) -> int:
        """Prints the failures (when not echoed) and the count line; the exit status."""
        if not self.echo:
            for f in self.failures:
                print("FAIL: " + f)
        print(f"{name}: {self.count} checks, {len(self.failures)} failed", flush=True)
        if self.count == 0:
            print("FAIL: no check ran")
            return 1
        return 1 if self.failures else 0


check = Checks()  # the process's one count: every helper below records through it


def skip(reason: str) -> NoReturn:
    """The test cannot run here: says why, loudly, and exits 77 (CTest's SKIP_RETURN_CODE)."""
    print("SKIPPED: " + reason, flush=True)
    sys.exit(SKIP)


class Abort(Exception):
    """A check whose failure leaves nothing further to test (a record that cannot be read)."""


# ---- processes ----------------------------------------------------------------------------------


def environ(base: dict | None = None, drop: Iterable[str] = (), **extra) -> dict:
    """base (default os.environ) without the variables named or prefixed (a trailing '*') in
    drop, plus extra."""
    drop = tuple(drop)
    exact = {d for d in drop if not d.endswith("*")}
    prefixes = tuple(d[:-1] for d in drop if d.endswith("*"))
    e = {
        k: v
        for k, v in (os.environ if base is None else base).items()
        if k not in exact and not (prefixes and k.startswith(prefixes))
    }
    e.update({k: str(v) for k, v in extra.items()})
    return e


def run(
    cmd: list[str],
    cwd=None,
    env: dict | None = None,
    timeout: float = 600,
    *,
    extra: dict | None = None,
    drop: Iterable[str] = (),
    stdin=None,
) -> subprocess.CompletedProcess:
    """Runs cmd to its end with its output captured (text) and `wall` (seconds) set. env is the
    whole environment (default os.environ), less drop, plus extra. A run past timeout is killed
    and fails a check naming it; its returncode then reads None."""
    e = environ(env, drop, **(extra or {}))
    t0 = time.monotonic()
    try:
        p = subprocess.run(
            [str(c) for c in cmd],
            cwd=cwd,
            env=e,
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as t:
        check(
            False,
            f"{Path(str(cmd[0])).name} {' '.join(map(str, cmd[1:]))[:200]}: "
            f"still running after {timeout} s, killed",
        )
        p = subprocess.CompletedProcess(cmd, None, _text(t.stdout), _text(t.stderr))
    p.wall = time.monotonic() - t0
    return p


def _text(b) -> str:
    return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")


def start(cmd: list[str], env: dict | None = None, new_session: bool = False, **kw):
    """Starts cmd with piped text output; new_session puts it in a process group of its own (for
    finish() to kill whole)."""
    return subprocess.Popen(
        [str(c) for c in cmd],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=new_session,
        **kw,
    )


def finish(p: subprocess.Popen, timeout: float) -> tuple[int | None, str]:
    """(returncode, stderr) of a started process; one still going after timeout is killed with
    its process group and reads as None."""
    try:
        _, err = p.communicate(timeout=timeout)
        return p.returncode, err
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, signal.SIGKILL)
        p.kill()
        _, err = p.communicate()
        return None, err


def wait_for(pred: Callable[[], bool], timeout: float, step: float = 0.05) -> bool:
    """Polls pred until it holds or timeout passes; its last value."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return bool(pred())


def procs_with(needle: str) -> list[int]:
    """Processes whose command line holds needle (a run's unique --out path)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if needle.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def children_of(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def last_line(text: str) -> str:
    lines = [x for x in (text or "").strip().splitlines() if x.strip()]
    return lines[-1] if lines else ""


def lines_with(text: str, needle: str) -> list[str]:
    return [line for line in (text or "").splitlines() if needle in line]


# ---- records ------------------------------------------------------------------------------------


def load_json(path) -> object:
    """The JSON in path; a file that cannot be read fails a check and ends the test (Abort)."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        check(False, f"cannot load {path}: {e}")
        raise Abort(str(path)) from e


_validators: dict[str, object] = {}


def validate(record, what: str, schema=SCHEMA) -> bool:
    """One check: record is valid against the result schema (jsonschema is a project
    dependency: missing, it is a failure, not a skip). The first errors are named."""
    try:
        import jsonschema
    except ImportError:
        return check(
            False, f"{what}: python module jsonschema is not installed (pip install jsonschema)"
        )
    key = str(schema)
    if key not in _validators:
        if not os.path.exists(key):
            return check(False, f"{what}: schema file missing: {key}")
        with open(key) as f:
            s = json.load(f)
        _validators[key] = jsonschema.validators.validator_for(s)(s)
    errors = sorted(_validators[key].iter_errors(record), key=lambda e: list(e.path))
    detail = "; ".join(f"{'/'.join(map(str, e.path))}: {e.message[:200]}" for e in errors[:5])
    return check(not errors, f"{what}: valid against the result schema", detail)


def load_record(path, what: str | None = None, schema=SCHEMA) -> dict:
    """A result record read (load_json) and validated (validate)."""
    r = load_json(path)
    validate(r, what or os.path.basename(str(path)), schema)
    return r


# ---- the machine --------------------------------------------------------------------------------


def gpu_present() -> bool:
    try:
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30, check=False)
        return p.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def nvml_present() -> bool:
    import ctypes

    try:
        ctypes.CDLL("libnvidia-ml.so.1")
        return True
    except OSError:
        return False


def module(name: str):
    """An optional Python module, or a skip naming it."""
    try:
        return __import__(name)
    except ImportError:
        skip(f"python module {name} is not installed")


# ---- the run of one test ------------------------------------------------------------------------


def run_test(name: str, test: Callable[..., object], args: list[str], prefix: str) -> int:
    """test(tmp, *args) in a fresh temporary directory; its verdict (see the module's text)."""
    tmp = tempfile.mkdtemp(prefix=f"{prefix}_{name}_")
    try:
        test(tmp, *args)
    except Abort:
        pass
    except SystemExit:  # skip(): nothing to keep
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    except Exception:  # a test that raises has failed: say where, then count it
        traceback.print_exc()
        check(False, f"{name} raised {sys.exc_info()[0].__name__}")
    status = check.verdict(name)
    if status == 0:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"files kept in {tmp}")
    return status


def main(tests: dict[str, Callable[..., object]], prefix: str, echo: bool = False) -> NoReturn:
    """SCRIPT TEST ARGS...: runs tests[TEST] (run_test) and exits with its verdict; an unknown
    TEST is bad usage (one line, exit 2)."""
    check.echo = echo
    if len(sys.argv) < 2 or sys.argv[1] not in tests:
        got = sys.argv[1] if len(sys.argv) > 1 else "nothing"
        print(
            f"{Path(sys.argv[0]).name}: unknown test {got}; tests: {' '.join(tests)}",
            file=sys.stderr,
        )
        sys.exit(2)
    sys.exit(run_test(sys.argv[1], tests[sys.argv[1]], sys.argv[2:], prefix))
