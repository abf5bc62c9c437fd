"""The instrument's own error rates: a clean corpus (noise resampled from the committed H200
records) is refused in at most 5% of its rows; each fault corpus is refused every time, with the
right code, at the right place; and a weakened check must fail its corpus (each weakening below
is planted with monkeypatch and the corpus check is asserted to fail under it)."""

import corpus
import pytest

from convbench_analysis import assess, checks


def test_clean_corpus_false_refusals_at_most_5_percent(tmp_path):
    refused, total = corpus.false_refusals(tmp_path)
    assert total > 500 and refused / total <= 0.05, (refused, total)


@pytest.mark.parametrize("kind", sorted(corpus.EXPECT))
def test_fault_corpus_refused_every_time(tmp_path, kind):
    assert corpus.caught(kind, tmp_path) == 1.0


def _weaker_thresholds(monkeypatch, **changes):
    base = checks.Thresholds
    weak = base().with_overrides([f"{k}={v}" for k, v in changes.items()])
    real_assess = assess.assess
    monkeypatch.setattr(
        assess, "assess", lambda runs, th=None, history=None: real_assess(runs, weak, history)
    )


def _drop_lease_none(monkeypatch):
    real = checks.lease_findings
    monkeypatch.setattr(
        checks,
        "lease_findings",
        lambda run, th: [f for f in real(run, th) if f.code != "lease-none"],
    )


WEAKENINGS = {
    "foreign-gpu": lambda mp: mp.setattr(checks, "_foreign_gpu", lambda run, case: []),
    # no lost-time evidence can be shown any more: the hog reads as noise
    "cpu-hog": lambda mp: _weaker_thresholds(
        mp, psi_some_max=1, preempt_per_thread_s_max=1e9, slow_sample_floor=1
    ),
    "slow-cpu": lambda mp: _weaker_thresholds(mp, host_speed_min_relative=0.3),
    # the waiting worker no longer counts: the loop on one CPU is invisible again
    "pinned-hog": lambda mp: _weaker_thresholds(mp, run_delay_share_max=1),
    "bypassing-run": _drop_lease_none,
    "lapsed-lease": lambda mp: _weaker_thresholds(mp, renew_gap_fraction=2),
    "power-capped-arm": lambda mp: _weaker_thresholds(mp, throttle_fraction_diff_max=1),
    # steal no longer counted: the stolen rounds read as plain spread (or pass)
    "stolen-host": lambda mp: _weaker_thresholds(mp, steal_share_max=1),
}


@pytest.mark.parametrize("kind", sorted(WEAKENINGS))
def test_a_weakened_check_fails_its_corpus(tmp_path, monkeypatch, kind):
    WEAKENINGS[kind](monkeypatch)
    assert corpus.caught(kind, tmp_path, n=4) < 1.0


def test_slowed_rounds_refuse_only_when_they_set_the_estimate(tmp_path, monkeypatch):
    # Planted: slowed rounds never enough (host_slow_rounds_max above 1): the slow-CPU corpus
    # (most rounds slowed) would be accepted as a note.
    _weaker_thresholds(monkeypatch, host_slow_rounds_max=1.01)
    assert corpus.caught("slow-cpu", tmp_path, n=4) < 1.0


def test_a_tightened_check_fails_the_clean_corpus(tmp_path, monkeypatch):
    # spread refusing again, with the old host limit of a device arm's (2% CV): host rows refused
    from dataclasses import replace

    from convbench_analysis import findings

    monkeypatch.setitem(findings.CHECKS, "spread", replace(findings.CHECKS["spread"], refuses=True))
    _weaker_thresholds(monkeypatch, host_cv_max=0.02, host_spread_max=1.05)
    refused, total = corpus.false_refusals(tmp_path, n=4)
    assert refused / total > 0.05
