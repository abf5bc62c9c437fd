"""Every check over the named runs: per run (the lease), per case, the run's A/A twins, then
across runs (lease overlap, timing mode, drift). The one entry point of the analysis' refusals."""

from __future__ import annotations

from . import checks, drift, overlap, verdicts
from .findings import Assessment
from .load import Run
from .thresholds import Thresholds


def assess(
    runs: list[Run],
    th: Thresholds | None = None,
    history: list[Run] | None = None,
    compared: bool = False,
    held: list | None = None,
) -> Assessment:
    """Every finding of the named runs. `history`: earlier runs to set each case against for
    drift (they are references only: nothing is reported on them). `compared`: the runs' cases
    are set against each other (compare A B), so their timing modes must agree. `held`: the
    history index's lease holds that overlap the runs' (overlap.history_holds)."""
    a = Assessment(runs, th or Thresholds())
    for i, run in enumerate(runs):
        for f in checks.lease_findings(run, a.thresholds):
            a.add(f, i)
        for c in run.cases:
            for f in checks.case_findings(run, c, a.thresholds):
                a.add(f, i)
        for f in verdicts.aa_findings(run, a.thresholds):
            a.add(f, i)
    overlap.overlap_findings(a, held)
    drift.timing_mode_findings(a, compared)
    drift.drift_findings(a, history or [])
    return a
