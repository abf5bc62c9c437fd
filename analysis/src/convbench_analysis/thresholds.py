"""Every threshold the checks use, in one place, with where its default comes from.
Override any of them on the command line with `--threshold name=value`."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace


def _t(default: float, doc: str):
    return field(default=default, metadata={"doc": doc})


@dataclass(frozen=True)
class Thresholds:
    device_cv_max: float = _t(
        0.02,
        "device arm: CV (stdev/mean) of the round samples above this -> spread "
        "(nvbench's robust compare refuses a verdict when noise > 2%)",
    )
    device_spread_max: float = _t(
        1.10, "device arm: max/min of the round samples above this -> spread"
    )
    host_cv_max: float = _t(
        0.10,
        "host arm: CV above this -> spread (pyperf: 'may be unstable' when stdev >= 10% "
        "of the mean)",
    )
    host_spread_max: float = _t(
        1.50, "host arm: max/min above this -> spread (pyperf: min or max 50% from the mean)"
    )
    host_ci_max: float = _t(
        0.05,
        "host arm whose CV is above host_cv_max (max/min within its limit): accepted when the "
        "median's 95% order-statistic interval is within +-this of it (spread-noted), else spread",
    )
    foreign_cpu_share_max: float = _t(
        0.10,
        "host arm: foreign CPU share of a sample above this AND above its tick resolution, with "
        "the arm losing time, -> foreign-cpu (else foreign-cpu-noise, accepted)",
    )
    psi_some_max: float = _t(
        0.10,
        "host arm: CPU pressure (PSI some) stall time over the sample's time above this -> "
        "the arm's threads waited for a CPU",
    )
    preempt_per_thread_s_max: float = _t(
        20.0,
        "host arm: involuntary context switches of the arm's own threads per thread-second "
        "above this -> its threads were preempted",
    )
    host_speed_min_relative: float = _t(
        0.70,
        "host arm: a worker CPU delivering less than this x the fastest CPU's speed is slow",
    )
    host_slow_rounds_max: float = _t(
        0.50,
        "host arm: slowed rounds (a slow CPU, or a worker waiting for its pinned CPU) refuse only "
        "when at least this fraction of the case's rounds: with fewer, the best and the median "
        "are both values of full-speed rounds, so the estimators the ratios use are not moved "
        "(said as host-speed-noted / foreign-cpu-noise)",
    )
    steal_share_max: float = _t(
        0.02,
        "host arm: the hypervisor's steal (of every CPU's time, /proc/stat) during a sample above "
        "this, and above two ticks of the window, marks a stolen round (clean H200 rounds: under "
        "0.015; rounds 1.4-1.7x slower: 0.12-0.20)",
    )
    run_delay_share_max: float = _t(
        0.20,
        "host arm, pinned: a worker that waited for its CPU (schedstat run delay) more than this "
        "fraction of the sample shared that CPU with another process (clean pinned H200 runs: p99 "
        "0.047, max 0.17 over 584 samples; one CPU hogged: 0.47)",
    )
    slow_sample_k: float = _t(
        3.0,
        "a sample is slower beyond noise when above best x (1 + max(k x robust CV, floor))",
    )
    slow_sample_floor: float = _t(0.03, "the smallest slowdown counted as beyond noise")
    sm_clock_min_fraction: float = _t(
        0.75,
        "device arm: SM clock during a sample below this x sm_clock_max_mhz -> clock "
        "(nvbench discards samples under 75% of the default clock)",
    )
    throttle_k: float = _t(
        3.0,
        "device arm: throttled samples' median above the unthrottled ones' by more than "
        "max(k x their CV, throttle_floor) -> throttle",
    )
    throttle_floor: float = _t(
        0.02,
        "the smallest throttle slowdown counted as an effect (nvbench's 2% noise level)",
    )
    throttle_fraction_diff_max: float = _t(
        0.25,
        "ratio: the two arms' fractions of time capped (power/thermal) differ by more than "
        "this -> throttle-differs",
    )
    min_rounds: float = _t(
        3, "fewer timed rounds than this -> too-few-rounds (said: the interval shows it)"
    )
    drift_k: float = _t(
        3.0, "drift: allowed disagreement = max(drift_k x combined CV of both runs, drift_floor)"
    )
    drift_floor: float = _t(
        0.10,
        "drift, resident device cases: the smallest disagreement of best times between two runs "
        "that trips it (ten clean main-job runs on the H200: within 1.2%)",
    )
    drift_floor_host: float = _t(
        0.35,
        "drift, host cases: the same (ten clean H200 runs minutes apart: bests up to 1.29x "
        "apart; the seed's 3x swing is far beyond)",
    )
    drift_floor_per_call: float = _t(
        0.60,
        "drift, per-call device cases: the same (uploads from pageable memory; ten clean H200 "
        "runs: bests up to 1.45x apart, medians 1.53x)",
    )
    clock_changed_max: float = _t(
        0.03,
        "drift cause: median measured SM clocks of the two runs' cases differ by more than "
        "this fraction, or their capped fractions by more than throttle_fraction_diff_max",
    )
    host_speed_changed_max: float = _t(
        0.20,
        "drift cause: the arm's slowest CPU delivered speed differing by more than this "
        "fraction between the two runs",
    )
    history_depth: float = _t(
        3, "report: how many earlier comparable runs from the history each case is set against"
    )
    renew_gap_fraction: float = _t(
        1.0, "lease: max_renew_gap_s >= this x ttl_s means the lease lapsed -> lease-expired"
    )
    signature_flat_tol: float = _t(
        0.15,
        "signature (one layer at 3+ sizes): the ratio at the largest size within this of the "
        "ratio at the smallest, or their intervals overlapping -> flat",
    )
    aa_tolerance: float = _t(
        0.01,
        "report: an A/A twin (an arm listed twice, cuda-f32#2) whose best time differs from its "
        "arm's by more than this is flagged OUTSIDE (the ratio within [0.99, 1.01])",
    )
    ci_level: float = _t(0.95, "confidence level of every interval (a ratio's, a median's)")
    equivalence_band: float = _t(
        0.01,
        "ratio verdict: SAME when its interval lies within 1 -+ this, FASTER / SLOWER when it "
        "lies wholly beyond it, AMBIGUOUS when it straddles an edge (nvbench's robust compare)",
    )
    aa_floor_resident: float = _t(
        0.0025,
        "the least a resident device case's interval is widened by (log half-width, in "
        "quadrature): two instances of one arm differ by this much even when the run's twins "
        "agree better (buffers at other addresses)",
    )
    aa_floor_per_call: float = _t(
        0.005, "the same for a per-call device case (its twins' disagreement widens it further)"
    )
    aa_floor_host: float = _t(
        0.005, "the same for a host case (its twins' disagreement widens it further)"
    )
    aa_unstable_level: float = _t(
        0.999,
        "a twin pair whose interval at this confidence (widened by the floor and the other "
        "twins of its kind) lies wholly beyond 1 -+ equivalence_band refuses every ratio of its "
        "kind of case in the run: the instrument was unstable (1 in 1000 clean pairs would)",
    )
    precision_target: float = _t(
        0.0,
        "a case's median interval half-width above this is imprecise (0: the case's own "
        "--target-ci, and none for a fixed count of rounds)",
    )
    bootstrap_resamples: float = _t(2000, "bootstrap resamples per ratio (seeded)")
    alpha: float = _t(0.05, "compare: Mann-Whitney U significance level (Google Benchmark's)")

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def describe(cls) -> list[tuple[str, float, str]]:
        return [(f.name, f.default, f.metadata["doc"]) for f in fields(cls)]

    def with_overrides(self, items: list[str]) -> Thresholds:
        """`items` like ['device_cv_max=0.03']; raises ValueError with one clear line."""
        changes = {}
        for item in items or []:
            name, sep, value = item.partition("=")
            name = name.strip().replace("-", "_")
            if not sep or name not in self.names():
                raise ValueError(
                    f"--threshold {item!r}: expected NAME=VALUE with NAME one of "
                    + ", ".join(self.names())
                )
            try:
                v = float(value)
            except ValueError:
                raise ValueError(f"--threshold {item!r}: {value!r} is not a number") from None
            if not v == v or v in (float("inf"), float("-inf")) or v < 0:
                raise ValueError(f"--threshold {item!r}: must be a finite number >= 0")
            changes[name] = v
        return replace(self, **changes)
