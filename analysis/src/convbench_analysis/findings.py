"""The typed findings: every reason the analysis refuses (or states and accepts), each with a
one-line message and a remedy, and the Assessment that collects them per run, case and ratio.

A finding of a `refuse` code makes the numbers it is attached to untrustworthy; a `note` is
said in the report and refuses nothing (a power cap that changed no time, tick noise)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .load import Run
from .thresholds import Thresholds


@dataclass(frozen=True)
class Check:
    code: str
    message: str  # what it means, one line
    remedy: str  # what would fix it, one line (a finding may name a more concrete one)
    thresholds: tuple[str, ...] = ()
    refuses: bool = True


def _c(*args, **kw) -> Check:
    return Check(*args, **kw)


_ALL = (
    # ---- the run ---------------------------------------------------------------------------
    _c(
        "lease-none",
        "the run was not under a lease (not collected, no token, or --no-lease)",
        "run under the lease: bench_conv without --no-lease (or under "
        "`convlease run [--gpu N] -- bench_conv ...`)",
    ),
    _c(
        "lease-void",
        "the lease verdict is void: the observation saw someone else on the resource",
        "re-run when the GPU is free; the lease reasons name who else held it",
    ),
    _c(
        "lease-expired",
        "the lease lapsed: a renewal came later than the TTL",
        "raise the lease TTL or renew more often, then re-run",
        ("renew_gap_fraction",),
    ),
    _c(
        "lease-overlap",
        "another accepted run held the same GPU (or host) through the same lease authority while "
        "this run held it: their leases' acquired-to-released times overlap",
        "re-run both, one at a time (bench_conv --lease-wait S queues a run behind the holder)",
    ),
    _c(
        "lease-two-mutexes",
        "another accepted run held the same GPU (or host) at the same time through a different "
        "lock (another lock directory or lease backend): two mutexes, neither excluding the other",
        "use the site's one authority on every run (leave CONVBENCH_LEASE_DIR and "
        "CONVBENCH_LEASE_BACKEND unset, or set them alike everywhere), then re-run both",
    ),
    _c(
        "aa-unstable",
        "the run's A/A twins of this kind of case (one arm prepared and timed twice) disagree "
        "beyond the equivalence band, interval included: the instrument was unstable in this "
        "run, and no ratio of this kind is trusted",
        "re-run; if it repeats, look for what differs between two instances of the arm (its "
        "buffers, its algorithm choice, its position in the rounds)",
        ("equivalence_band", "aa_unstable_level"),
    ),
    _c(
        "run-incomplete",
        "the run was interrupted or recovered from its journal: some cases have fewer rounds",
        "nothing to fix if every case kept enough rounds; else re-run",
        refuses=False,
    ),
    # ---- one case --------------------------------------------------------------------------
    _c(
        "gate-failed",
        "the correctness gate failed: the arm computes the wrong result",
        "fix the arm; a wrong arm is never timed",
    ),
    _c(
        "arm-faulted",
        "the arm's call failed after its gate, or its kernel faulted on the device (the CUDA "
        "context lost): the run ended there",
        "fix the arm (run it under compute-sanitizer for a device fault); the other arms' "
        "finished rounds are kept",
    ),
    _c(
        "too-few-rounds",
        "too few timed rounds for an interval: the case and its ratios are imprecise",
        "re-run with --reps at least the threshold (6 rounds give a 95% interval)",
        ("min_rounds",),
        refuses=False,
    ),
    _c(
        "spread",
        "the rounds scatter (max/min or CV above the threshold): the intervals are wider, "
        "which is said, not refused (spread alone names no cause)",
        "to narrow the interval: more rounds (the report says how many), or --staging "
        "resident where per-call staging (uploads from pageable memory) is the spread",
        ("device_cv_max", "device_spread_max", "host_cv_max", "host_spread_max"),
        refuses=False,
    ),
    _c(
        "spread-noted",
        "a host arm's samples scatter beyond the CV limit, but enough rounds make the median's "
        "interval narrow",
        "nothing to fix; pinning to full-speed CPUs narrows it",
        ("host_cv_max", "host_ci_max"),
        refuses=False,
    ),
    _c(
        "cut-short",
        "the run was interrupted while this case was still taking rounds: its stopping rule "
        "never decided",
        "re-run the case (or `bench_conv --resume JOURNAL` of a killed run, then re-run)",
    ),
    _c(
        "ci-not-reached",
        "the case stopped at its time budget before its interval reached the target",
        "give the run a longer budget, or accept the wider interval the report states",
        refuses=False,
    ),
    _c(
        "foreign-gpu",
        "another process held a context on the GPU during a sample",
        "re-run when no other process is on the GPU (nvidia-smi lists them)",
    ),
    _c(
        "foreign-cpu",
        "another process took CPU time from a host arm: its threads waited or were preempted",
        "re-run when the named process is gone, or hold the host lease",
        (
            "foreign_cpu_share_max",
            "psi_some_max",
            "preempt_per_thread_s_max",
            "run_delay_share_max",
            "host_slow_rounds_max",
        ),
    ),
    _c(
        "foreign-cpu-noise",
        "foreign CPU time was seen but the arm lost none (tick noise or an idle neighbour)",
        "nothing to fix",
        ("foreign_cpu_share_max",),
        refuses=False,
    ),
    _c(
        "host-speed",
        "host rounds were slower beyond noise while one of the arm's CPUs delivered less speed, "
        "in at least host_slow_rounds_max of the case's rounds",
        "pin the arm to the CPUs that delivered full speed (bench_conv --cpus LIST)",
        ("host_speed_min_relative", "slow_sample_k", "slow_sample_floor", "host_slow_rounds_max"),
    ),
    _c(
        "host-steal",
        "at least half of a host case's rounds ran while the hypervisor stole the CPUs' time "
        "(steal, /proc/stat) and are slower beyond noise than the unstolen rounds",
        "re-run when the host is quieter, or on a dedicated host: steal is other guests on the "
        "same physical CPUs",
        ("steal_share_max", "host_slow_rounds_max", "slow_sample_k", "slow_sample_floor"),
    ),
    _c(
        "host-steal-noted",
        "a minority of a host case's rounds were stolen by the hypervisor and slowed; the best and "
        "the median are values of unstolen rounds",
        "nothing to fix",
        refuses=False,
    ),
    _c(
        "host-speed-noted",
        "some host rounds ran slower on a CPU delivering less speed; too few to move the best "
        "or the median, which stay values of full-speed rounds",
        "nothing to fix (to avoid them: pin the arm to the CPUs that delivered full speed)",
        ("host_slow_rounds_max",),
        refuses=False,
    ),
    _c(
        "clock",
        "the SM clock measured during a sample was below the threshold of its max",
        "check power and thermals (nvidia-smi -q -d PERFORMANCE), let the GPU settle, re-run",
        ("sm_clock_min_fraction",),
    ),
    _c(
        "throttle",
        "the throttled samples are slower than the unthrottled ones of the same case",
        "lower the GPU's load or raise its power limit, then re-run; or compare arms at equal "
        "throttling",
        ("throttle_k", "throttle_floor"),
    ),
    _c(
        "throttle-noted",
        "the GPU reported a throttle reason, but the case's times show no effect",
        "nothing to fix",
        refuses=False,
    ),
    # ---- one ratio -------------------------------------------------------------------------
    _c(
        "throttle-differs",
        "the two arms of a ratio were capped for very different fractions of their time",
        "re-run with the arms interleaved on a cooler GPU, or compare at equal throttling",
        ("throttle_fraction_diff_max",),
    ),
    _c(
        "throttle-differs-noted",
        "the two arms of a ratio were capped for very different fractions of their time, but in "
        "each capped arm the capped samples are no slower than its uncapped ones",
        "nothing to fix",
        refuses=False,
    ),
    _c(
        "throttle-alike",
        "both arms of a ratio were capped for alike fractions of their time",
        "nothing to fix",
        refuses=False,
    ),
    # ---- across runs -----------------------------------------------------------------------
    _c(
        "timing-mode",
        "the same device case was timed launched in one run and queued in another: the times "
        "measure different things",
        "compare runs made with the same bench_conv --device-timing",
    ),
    _c(
        "config-changed",
        "two runs of the same request ran different kernels (algorithm, tuned config, "
        "workspace), and their times disagree",
        "pin the kernel: bench_conv --cudnn-algo ALGO, or replay the earlier run's choices",
        ("drift_k", "drift_floor"),
    ),
    _c(
        "build-changed",
        "two runs of one git sha were built differently (binary or flags), and their times "
        "disagree",
        "compare runs of one build",
        ("drift_k", "drift_floor"),
    ),
    _c(
        "driver-changed",
        "two runs ran under different GPU drivers, and their times disagree",
        "compare runs under one driver",
        ("drift_k", "drift_floor"),
    ),
    _c(
        "clock-changed",
        "two runs' device clocks or time spent throttled differ, and their times disagree",
        "re-run both when the GPU is at its usual clock (nvidia-smi -q -d PERFORMANCE)",
        ("drift_k", "drift_floor", "clock_changed_max"),
    ),
    _c(
        "host-speed-changed",
        "the arm's CPUs delivered different speed in the two runs, and their times disagree",
        "pin the arm to CPUs that deliver full speed in both runs (bench_conv --cpus LIST)",
        ("drift_k", "drift_floor", "host_speed_changed_max"),
    ),
    _c(
        "drift",
        "another run of the same binary, request and host disagrees beyond both runs' noise, "
        "and nothing recorded differs",
        "the instrument is unstable between runs: re-run both; if it persists, find the load "
        "the probes do not see",
        ("drift_k", "drift_floor"),
    ),
)

CHECKS: dict[str, Check] = {c.code: c for c in _ALL}


@dataclass(frozen=True)
class Finding:
    code: str
    detail: str  # the specific numbers, one line
    path: str  # the run's file
    case_id: str | None = None  # None: the whole run
    remedy_detail: str | None = None  # the concrete remedy, when the finding knows one

    def __post_init__(self):
        if self.code not in CHECKS:  # a typo here must not pass as an unknown refusal
            raise KeyError(f"unknown finding code {self.code!r}")

    @property
    def check(self) -> Check:
        return CHECKS[self.code]

    @property
    def refuses(self) -> bool:
        return self.check.refuses

    @property
    def remedy(self) -> str:
        return self.remedy_detail or self.check.remedy

    def line(self) -> str:
        return f"{self.code}: {self.detail} (fix: {self.remedy})"

    def as_dict(self) -> dict:
        return {
            "code": self.code,
            "refuses": self.refuses,
            "message": self.check.message,
            "detail": self.detail,
            "remedy": self.remedy,
            "file": self.path,
            "case": self.case_id,
        }


@dataclass
class Assessment:
    runs: list[Run]
    thresholds: Thresholds
    run_findings: dict[int, list[Finding]] = field(default_factory=dict)
    case_findings: dict[tuple[int, str], list[Finding]] = field(default_factory=dict)
    run_notes: dict[int, list[Finding]] = field(default_factory=dict)
    case_notes: dict[tuple[int, str], list[Finding]] = field(default_factory=dict)

    def for_case(self, i: int, case_id: str) -> list[Finding]:
        """Every reason a number from this case cannot be trusted: its run's and its own."""
        return self.run_findings.get(i, []) + self.case_findings.get((i, case_id), [])

    def notes_for_case(self, i: int, case_id: str) -> list[Finding]:
        return self.run_notes.get(i, []) + self.case_notes.get((i, case_id), [])

    def codes(self, i: int, case_id: str | None = None) -> list[str]:
        fs = self.for_case(i, case_id) if case_id else self.run_findings.get(i, [])
        return sorted({f.code for f in fs})

    def all_findings(self) -> list[Finding]:
        out = [f for fs in self.run_findings.values() for f in fs]
        return out + [f for fs in self.case_findings.values() for f in fs]

    def add(self, f: Finding, i: int) -> None:
        if f.case_id is None:
            target, key = (self.run_findings if f.refuses else self.run_notes), i
        else:
            target = self.case_findings if f.refuses else self.case_notes
            key = (i, f.case_id)
        bucket = target.setdefault(key, [])
        if f not in bucket:
            bucket.append(f)


# ---- the table of every check (`convbench-analyze checks`, docs/findings.md) -------------

FORMATS = ("text", "md", "csv", "json")

_MD_HEAD = """# Findings

Every finding the analysis can state, what it means, its remedy, and the thresholds it is judged
by (defaults; override any with `--threshold NAME=VALUE`). A `refuses` finding makes the numbers
it is attached to untrusted (exit 3); a `note` is said and accepted.

Generated by `convbench-analyze checks --format md`; do not edit by hand."""


def _check_rows() -> list[dict]:
    defaults = {name: default for name, default, _ in Thresholds.describe()}
    return [
        {
            "code": c.code,
            "action": "refuses" if c.refuses else "note",
            "meaning": c.message,
            "remedy": c.remedy,
            "thresholds": ", ".join(f"{t} = {defaults[t]:g}" for t in c.thresholds),
        }
        for c in CHECKS.values()
    ]


def _threshold_rows() -> list[dict]:
    return [
        {"threshold": name, "default": f"{default:g}", "meaning": doc}
        for name, default, doc in Thresholds.describe()
    ]


def _csv(checks: list[dict], thresholds: list[dict]) -> str:
    import csv
    import io

    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["table", "name", "action", "default", "meaning", "remedy", "thresholds"])
    for c in checks:
        w.writerow(
            ["check", c["code"], c["action"], "", c["meaning"], c["remedy"], c["thresholds"]]
        )
    for t in thresholds:
        w.writerow(["threshold", t["threshold"], "", t["default"], t["meaning"], "", ""])
    return out.getvalue().rstrip("\n")


def table(fmt: str = "text") -> str:
    """Every check with its meaning, remedy and thresholds, then every threshold with its
    default and why: as text, Markdown (docs/findings.md), CSV or JSON."""
    from tabulate import tabulate

    checks, thresholds = _check_rows(), _threshold_rows()
    if fmt == "json":
        import json

        return json.dumps({"checks": checks, "thresholds": thresholds}, indent=1)
    if fmt == "csv":
        return _csv(checks, thresholds)
    if fmt == "md":

        def md(rows):
            rows = [{k: str(v).replace("|", "\\|") for k, v in r.items()} for r in rows]
            return tabulate(rows, headers="keys", tablefmt="github")

        return "\n\n".join([_MD_HEAD, "## Checks", md(checks), "## Thresholds", md(thresholds)])
    if fmt != "text":
        raise ValueError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")
    from . import tables

    def text(rows):  # fitted to the terminal's width, wrapped between words
        return tables.render(list(rows[0]), [list(r.values()) for r in rows], "text")

    return "\n\n".join(
        [
            tables.sentence(
                "checks (refuses: the number is not trusted; note: said, and accepted):", fmt
            ),
            text(checks),
            tables.sentence("thresholds (override with --threshold NAME=VALUE):", fmt),
            text(thresholds),
        ]
    )
