import copy
import json
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # synth.py
REPO = HERE.parents[1]
# Test this source tree, installed or not (and whichever checkout an editable install points
# at), in this process and in CLI subprocesses.
SRC = str(HERE.parent / "src")
sys.path.insert(0, SRC)
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")]))
# The width text tables fit (tables.terminal_width): what a command sees off a terminal, whatever
# width a library of the test process left in the environment its subprocesses inherit.
os.environ["COLUMNS"] = str(100)
EXAMPLES = sorted((REPO / "results" / "examples").glob("*.json"))

import synth  # noqa: E402

_CLEAN = synth.make_run()


@pytest.fixture
def clean():
    """A fresh deep copy of one clean synthetic run (mutate freely)."""
    return copy.deepcopy(_CLEAN)


@pytest.fixture
def write(tmp_path):
    counter = iter(range(10_000))

    def _write(run, name=None):
        p = tmp_path / (name or f"run{next(counter)}.json")
        p.write_text(json.dumps(run))
        return p

    return _write
