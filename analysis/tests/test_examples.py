"""Real H200 runs under results/examples/ (added by the coordinator): every one must validate
and be judged without a crash; the ones listed in accepted_examples.txt must be accepted
outright. A real run may honestly trip a gate, so acceptance is opt-in per file."""

from pathlib import Path

import pytest
from conftest import EXAMPLES

from convbench_analysis import gates, load, plot, report

ALLOW = Path(__file__).with_name("accepted_examples.txt")


def _allowed() -> set[str]:
    lines = ALLOW.read_text().splitlines() if ALLOW.exists() else []
    return {ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")}


def test_allowlist_names_existing_examples():
    names = {p.name for p in EXAMPLES}
    assert _allowed() <= names, f"accepted_examples.txt names missing files: {_allowed() - names}"


if not EXAMPLES:

    def test_real_examples():
        pytest.skip("no results/examples/*.json yet: real H200 runs not committed")
else:

    @pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
    def test_real_example(path):
        run = load.load_run(path)
        a = gates.assess([run])
        rep = report.build(a)
        assert rep["groups"], "a real run with no cases"
        if path.name in _allowed():
            assert [f.line() for f in a.all_findings()] == []
            assert rep["refused"] == 0

    def test_real_examples_together(tmp_path):
        runs = [load.load_run(p) for p in EXAMPLES]
        a = gates.assess(runs)  # cross-run gates (drift, overlap) over all of them
        report.build(a)
        written = plot.plot(a, tmp_path)
        assert written and all(p.stat().st_size > 0 for p in written)
