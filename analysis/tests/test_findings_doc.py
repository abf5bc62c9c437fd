"""docs/findings.md is generated, never copied: it is `convbench-analyze checks --format md`, so
a finding code, remedy or threshold default changed in findings.py / thresholds.py without
regenerating the page fails here. Planted: one threshold default in the committed page edited
by hand (renew_gap_fraction = 1 -> 2) made test_findings_page_is_the_generated_table fail."""

from __future__ import annotations

import synth

from convbench_analysis import findings

PAGE = synth.REPO / "docs" / "findings.md"
REGENERATE = "convbench-analyze checks --format md > docs/findings.md"


def test_findings_page_is_the_generated_table():
    assert PAGE.read_text() == findings.table("md") + "\n", f"regenerate it: {REGENERATE}"


def test_a_drifted_page_is_seen(tmp_path):
    drifted = PAGE.read_text().replace("renew_gap_fraction = 1", "renew_gap_fraction = 2", 1)
    assert drifted != PAGE.read_text()  # the page states the default the check uses
    assert drifted != findings.table("md") + "\n"
