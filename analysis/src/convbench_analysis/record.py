"""The one place on the Python side that knows the result record's field names beyond the
schema: arm labels, run summaries, counters. Everything else asks here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


class _View(dict):
    """A record object as read: still the dict it was (callers may index it, json writes it),
    with its fields as typed attributes."""

    __slots__ = ()

    @classmethod
    def of(cls, d):
        """d as this view (itself when it is one already); None stays None."""
        return d if isinstance(d, cls) or d is None else cls(d)


class Sample(_View):
    """One round's timing of one case, with the probes around it."""

    __slots__ = ()

    @property
    def round(self) -> int:
        return int(self["round"])

    @property
    def seconds(self) -> float:
        return float(self["seconds"])

    @property
    def iterations(self) -> int:
        return self["iterations"]

    @property
    def total_seconds(self) -> float | None:
        return self.get("total_seconds")

    @property
    def window_s(self) -> float:
        """The sample's whole window (all its iterations)."""
        return self.total_seconds or self.seconds

    @property
    def wall_s(self) -> float | None:
        """The contention probe's wall time around the sample."""
        return (self.get("contention") or {}).get("wall_s")

    def foreign_gpu_processes(self) -> list[int]:
        """Foreign processes on the GPU right before and right after the sample."""
        return [(self.get(k) or {}).get("foreign_processes") or 0 for k in _GPU_READS]


_GPU_READS = ("gpu_before", "gpu_after")


class CorrectnessGate(_View):
    """The arm's correctness gate against the reference (or bitwise against its sibling)."""

    __slots__ = ()

    @property
    def result(self) -> str:
        return self["result"]

    @property
    def kind(self) -> str:
        return self["kind"]

    @property
    def mismatches(self) -> int | None:
        return self.get("mismatches")

    def summary(self) -> str:
        if self.kind == "self":  # a copy's bytes or a launch's word against what it must write
            return f"self gate: {self.mismatches} of {self.get('cells')} checked differ"
        return (
            f"{self.kind} gate: {self.mismatches} mismatching cells, max abs err "
            f"{self.get('max_abs_err')}, rel L2 {self.get('rel_l2_err')} "
            f"(tolerance {self.get('tolerance')})"
        )


class Case(_View):
    """One case: a stage at a size, one arm, one staging; its gate and its samples."""

    __slots__ = ()

    def __init__(self, d: dict):
        super().__init__(d)
        if isinstance(self.get("samples"), list):
            self["samples"] = [Sample.of(x) for x in self["samples"]]
        if isinstance(self.get("gate"), dict):
            self["gate"] = CorrectnessGate.of(self["gate"])

    @property
    def id(self) -> str:
        return self["id"]

    @property
    def arm(self) -> str:
        return self["arm"]

    @property
    def stage(self) -> str:
        return self["stage"]

    @property
    def frames(self) -> int:
        return self["frames"]

    @property
    def staging(self) -> str | None:
        return self.get("staging")

    @property
    def device(self) -> bool:
        return bool(self.get("device"))

    @property
    def samples(self) -> list[Sample]:
        xs = self.get("samples") or []
        if not all(isinstance(x, Sample) for x in xs):  # a sample set after the view was made
            xs[:] = [Sample.of(x) for x in xs]
        return xs

    @property
    def gate(self) -> CorrectnessGate:
        g = self["gate"]
        if not isinstance(g, CorrectnessGate):
            g = self["gate"] = CorrectnessGate.of(g)
        return g

    @property
    def stats(self) -> dict | None:
        return self.get("stats")

    @property
    def stop_reason(self) -> str | None:
        return self.get("stop_reason")

    @property
    def twin_of(self) -> str | None:
        return self.get("twin_of")


class Lease(_View):
    """The run's lease: who granted it, its token, what was observed, the verdict."""

    __slots__ = ()

    @property
    def status(self) -> str | None:
        return self.get("status")

    @property
    def collected(self) -> bool:
        return self.status == "collected"

    @property
    def token(self):
        return self.get("token")

    @property
    def verdict(self) -> str | None:
        return self.get("verdict")

    @property
    def reasons(self) -> list[str]:
        return self.get("reasons") or []

    @property
    def why(self) -> str | None:
        """Why it was not collected, as the record says."""
        return self.get("reason") or self.get("message")

    @property
    def backend(self) -> str | None:
        return self.get("backend")

    @property
    def resource(self) -> dict:
        return self.get("resource") or {}

    @property
    def observation(self) -> dict:
        return self.get("observation") or {}

    @property
    def foreign_gpu_samples(self) -> list:
        return self.observation.get("foreign_gpu_samples") or []

    @property
    def fencing(self) -> dict | None:
        f = self.get("fencing")
        return f if isinstance(f, dict) else None

    @property
    def acquired_utc(self) -> str | None:
        return self.get("acquired_utc")

    @property
    def released_utc(self) -> str | None:
        return self.get("released_utc")

    @property
    def adopted(self) -> bool:
        """Acquired by `convlease run` for the commands it ran, this run among them."""
        return bool(self.get("adopted"))

    @property
    def max_renew_gap_s(self) -> float | None:
        return self.get("max_renew_gap_s")

    @property
    def ttl_s(self) -> float | None:
        return self.get("ttl_s")

    @property
    def foreign_gpu_processes_max(self) -> int:
        return self.observation.get("foreign_gpu_processes_max") or 0


class Plan(_View):
    __slots__ = ()

    @property
    def rounds(self) -> int | None:
        """The run's rounds, from its realised order; None when not recorded."""
        order = self.get("order")
        return len(order) if order else None

    @property
    def threads(self) -> int | None:
        return self.get("threads")

    @property
    def model(self) -> str | None:
        return self.get("model")

    @property
    def device_timing(self) -> str:
        """How resident device arms were timed; results older than the field: launched."""
        return self.get("device_timing", "launched")


class Fault(_View):
    """The arm whose fault ended the run, and in which step."""

    __slots__ = ()

    @property
    def arm(self) -> str | None:
        return self.get("arm")

    @property
    def during(self) -> str | None:
        return self.get("during")

    @property
    def message(self) -> str | None:
        return self.get("message")


@dataclass
class Run:
    """One loaded record: the file it came from and its JSON, its cases, lease and plan as
    views (still the dicts they were)."""

    path: str
    data: dict

    def __post_init__(self):
        if isinstance(self.data.get("cases"), list):
            self.data["cases"] = [Case.of(c) for c in self.data["cases"]]
        for key, view in (("lease", Lease), ("plan", Plan), ("fault", Fault)):
            self._view(key, view)

    def _view(self, key: str, view: type):
        """The block at `key` as its view, made in place (also for a block set later)."""
        v = self.data.get(key)
        if isinstance(v, dict) and not isinstance(v, view):
            v = self.data[key] = view(v)
        return v

    @property
    def cases(self) -> list[Case]:
        cs = self.data["cases"]
        if not all(isinstance(c, Case) for c in cs):  # a case set after the run was made
            cs[:] = [Case.of(c) for c in cs]
        return cs

    @property
    def lease(self) -> Lease:
        return self._view("lease", Lease)

    @property
    def plan(self) -> Plan:
        return self._view("plan", Plan)

    @property
    def fault(self) -> Fault | None:
        return self._view("fault", Fault) or None

    @property
    def run_id(self) -> str:
        return self.data["run_id"]

    @property
    def started_utc(self) -> str:
        return self.data["started_utc"]

    @property
    def ended_utc(self) -> str:
        return self.data["ended_utc"]

    @property
    def tool(self) -> dict:
        return self.data["tool"]

    @property
    def cores(self) -> int:
        """The host's CPU count (1 when not recorded)."""
        return max(1, int((self.data.get("host") or {}).get("cores") or 1))


def parse_utc(text: str) -> datetime:
    """A record's ISO-8601 UTC time ('...Z' or '+00:00')."""
    return datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)


# ---- what an arm is (the record's `precision`, `math`, `role`; older records: its name) -------

ROLES = ("reference", "candidate", "peer", "ceiling")
_PRECISIONS = ("f64", "f32x3", "f32", "tf32", "bf16", "f16")


@dataclass(frozen=True)
class ArmFacts:
    precision: str | None  # f64, f32, f32x3, tf32, bf16; None: the arm does not say
    math: str | None  # simt, simt-fma, dmma, mma-tf32, wgmma-tf32, cudnn, cublas, host, ...
    role: str  # reference, candidate, peer (the library to beat), ceiling (cuBLAS, copy, launch)
    stated: bool  # True: the record's own fields; False: read from the arm's name

    @property
    def accuracy(self) -> str | None:
        """The precision a peer is matched on: 3xTF32 is f32-accurate."""
        return "f32" if self.precision == "f32x3" else self.precision


def twin_base(arm: str) -> str:
    """An A/A twin's arm without its suffix (cuda-f32#2 -> cuda-f32); other arms unchanged."""
    base, sep, n = arm.rpartition("#")
    return base if sep and n.isdigit() else arm


def is_twin_arm(arm: str) -> bool:
    return twin_base(arm) != arm


def _precision_in_name(tokens: list[str]) -> str | None:
    for t in tokens[1:]:
        head, _, n = t.partition("x")
        if head in _PRECISIONS and (not n or n.isdigit()):
            return t if t in _PRECISIONS else head
    return None


# The ceilings with no arithmetic, by name, and what they run (their records' `math`).
_HARDWARE_CEILINGS = {"cuda-copy": "memcpy", "cuda-launch": "launch"}


def _facts_from_name(arm: str) -> ArmFacts:
    """An older record's arm, read from its name: <provider>-<precision>[-<variant>]."""
    base = twin_base(arm)
    tokens = base.split("-")
    prec = _precision_in_name(tokens)
    if base == "cpu-f64":
        role = "reference"
    elif base.startswith(("cudnn-", "torch-cudnn-")):
        role = "peer"
    elif base.startswith("cublas-") or base in _HARDWARE_CEILINGS:
        role = "ceiling"
    else:
        role = "candidate"
    math = next((m for m in ("cudnn", "cublas", "dmma") if m in tokens), None)
    if base in _HARDWARE_CEILINGS:
        math = _HARDWARE_CEILINGS[base]
    elif math is None and tokens[0] == "cpu":
        math = "host"
    elif math is None and tokens[0] == "cuda":
        math = (
            "simt-fma" if "fma" in tokens else ("mma-tf32" if prec in ("tf32", "f32x3") else "simt")
        )
    return ArmFacts(prec, math, role, False)


def arm_facts(case: dict) -> ArmFacts:
    """What the case's arm computes with and what it is in the comparison: the record's fields
    `precision`, `math`, `role` where it has them, else read from the arm's name."""
    role = case.get("role")
    if role in ROLES:
        return ArmFacts(case.get("precision"), case.get("math"), role, True)
    return _facts_from_name(case.get("arm") or "")


# CUPTI metric names: FLOP = add + mul + 2 x fma, peak = 2 x fma/cycle x SM clock
_OP = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
_PEAK = "sm__sass_thread_inst_executed_op_{}_pred_on.sum.peak_sustained"
_CLOCK = "sm__cycles_elapsed.avg.per_second"


def label(case: dict) -> str:
    """An arm as the report names it: arm and staging, e.g. cuda-f64/resident, cpu-f64/host."""
    return f"{case['arm']}/{case['staging']}"


def summary(run: Run) -> dict:
    d = run.data
    lease = d["lease"]
    uuid = (lease.get("resource") or {}).get("gpu_uuid")
    gpus = d["gpus"]
    gpu = next((g for g in gpus if uuid and g.get("uuid") == uuid), gpus[0] if gpus else None)
    verdict = lease.get("verdict") if lease.get("status") == "collected" else lease.get("status")
    return {
        "path": run.path,
        "run_id": d["run_id"],
        "host": d["host"].get("name"),
        "gpu": (gpu or {}).get("name") or "no GPU",
        "gpu_uuid": (gpu or {}).get("uuid"),
        "model": d["plan"].get("model"),
        "device_timing": d["plan"].get("device_timing", "launched"),
        "lease": verdict or "unknown",
        "lease_backend": lease.get("backend"),
        "lease_token": lease.get("token"),
        "git_sha": d["tool"].get("git_sha"),
        "started_utc": d["started_utc"],
    }


def _simt_paths(m: dict) -> list[dict]:
    """The SIMT paths from the opcode counts, for records whose counters block has no paths."""
    clock = m.get(_CLOCK)
    out = []
    for prec, p in (("fp64", "d"), ("fp32", "f")):
        ops = [m.get(_OP.format(p + op)) for op in ("add", "mul", "fma")]
        flop = None if any(v is None for v in ops) else ops[0] + ops[1] + 2.0 * ops[2]
        peak_inst = m.get(_PEAK.format(p + "fma"))
        peak = 2.0 * peak_inst * clock / 1e12 if peak_inst and clock else None
        out.append(
            {
                "name": f"{prec} SIMT",
                "pipe": "simt",
                "precision": prec,
                "flop": flop,
                "peak_tflops": peak,
                "util_pct": None,
                "why": None,
            }
        )
    return out


def _recorded_paths(paths: list[dict]) -> list[dict]:
    out = []
    for p in paths:
        why = p.get("unavailable") or {}
        out.append(
            {
                "name": p["name"],
                "pipe": p["pipe"],
                "precision": p["precision"],
                "flop": p.get("flop"),
                "peak_tflops": p.get("peak_tflops"),
                "util_pct": p.get("util_pct"),
                "why": why.get("flop") or None,
            }
        )
    return out


def achieved(case: dict) -> dict | None:
    """Where a case's arithmetic ran, from collected counters and the event-timed best: per path
    (SIMT fp64 / fp32, fp64 DMMA, tf32 / bf16 / fp16 tensor) its TFLOP/s per call, peak, % of
    peak, pipe busy % and share of the counted FLOP; `dominant`, the path that did most of it;
    `fp64` / `fp32`, the SIMT paths that counted work. None when not collected; unavailable
    counters say why. A path not counted (a refused metric, a profile without tensor paths) says
    so in `not_counted`: no arm is called idle on a pipe nobody counted."""
    ctr = case.get("counters") or {}
    status = ctr.get("status")
    if status == "unavailable":
        why = ctr.get("message") or ctr.get("reason") or "no reason recorded"
        return {"status": "unavailable", "why": f"{ctr.get('call') or 'counters'}: {why}"}
    if status != "collected" or not case.get("stats"):
        return None
    best = case["stats"]["best"]
    recorded = ctr.get("paths")
    paths = _recorded_paths(recorded) if recorded else _simt_paths(ctr.get("metrics") or {})
    total = sum(p["flop"] for p in paths if p["flop"])
    out: dict = {"status": "collected", "paths": [], "not_counted": []}
    if not recorded:
        out["not_counted"].append(
            {"name": "tensor pipes", "why": f"profile {ctr.get('profile')!r} counts no tensor path"}
        )
    for p in paths:
        if p["flop"] is None:
            out["not_counted"].append({"name": p["name"], "why": p["why"] or "not counted"})
            continue
        tf = p["flop"] / best / 1e12 if best > 0 else None
        peak = p["peak_tflops"]
        out["paths"].append(
            {
                "name": p["name"],
                "pipe": p["pipe"],
                "precision": p["precision"],
                "flop": p["flop"],
                "tflops": tf,
                "peak_tflops": peak,
                "pct_peak": 100.0 * tf / peak if tf is not None and peak else None,
                "util_pct": p["util_pct"],
                "share_pct": 100.0 * p["flop"] / total if total > 0 else None,
            }
        )
    worked = [p for p in out["paths"] if p["flop"] > 0 and p["tflops"] is not None]
    out["dominant"] = max(worked, key=lambda p: p["flop"]) if worked else None
    for p in worked:
        if p["pipe"] == "simt":
            out[p["precision"]] = p
    return out


# ---- per-sample probes (schema: docs/record.md; absent in older records: None) -------------

BENIGN_THROTTLE = {"", "none", "idle", "gpuidle", "applicationsclockssetting"}
# violation reasons that lower the clock under load (NVML violation counters, µs)
CAPPING = ("power", "thermal", "board_limit", "reliability")


def _norm_reason(r: str) -> str:
    return "".join(ch for ch in r.lower() if ch.isalnum()).removeprefix("clocksevent")


def throttle_reasons(sample: dict) -> list[str]:
    """Non-benign throttle reasons NVML reported right before or after the sample."""
    out = []
    for k in ("gpu_before", "gpu_after"):
        for r in (sample.get(k) or {}).get("throttle_reasons") or []:
            if _norm_reason(r) not in BENIGN_THROTTLE and r not in out:
                out.append(r)
    return out


def capped_us(sample: dict) -> float | None:
    """µs of the sample the GPU spent clock-capped (power, thermal, board, reliability), from the
    NVML violation counters differenced around it; None when the record has none."""
    v = sample.get("violation_us")
    if not isinstance(v, dict):
        return None
    return float(sum(v.get(k) or 0.0 for k in CAPPING))


def capped_fraction(case: dict) -> tuple[float, str]:
    """The fraction of the case's sampled time the GPU was capped, and how it was measured:
    by violation µs where recorded, else the fraction of samples with a throttle reason."""
    samples = case.get("samples") or []
    us = [capped_us(s) for s in samples]
    if samples and all(u is not None for u in us):
        total = sum((s.get("total_seconds") or 0.0) * 1e6 for s in samples)
        return (min(1.0, sum(us) / total) if total > 0 else 0.0), "violation time"
    if not samples:
        return 0.0, "samples"
    return sum(1 for s in samples if throttle_reasons(s)) / len(samples), "samples with a reason"


def measured_clock(sample: dict) -> float | None:
    """The SM clock *during* the sample: measured (clock64 over %globaltimer), else NVML right
    after it; gpu_before is read between samples and legitimately shows idle clocks."""
    mhz = sample.get("measured_sm_clock_mhz")
    if mhz is None:
        mhz = (sample.get("gpu_after") or {}).get("sm_clock_mhz")
    return mhz


def host_speed(sample: dict) -> dict | None:
    """Each worker's delivered CPU speed during a host sample: the slower of the probe's readings
    just before and just after it, {"workers": [{worker, cpu, adds_per_s, relative}],
    "slowest_relative"}; None for device samples and records without the probe."""
    workers = []
    for w in sample.get("workers") or []:
        readings = [r for r in (w.get("speed_before"), w.get("speed_after")) if r]
        readings = [r for r in readings if r.get("adds_per_s")]
        if not readings:
            continue
        r = min(readings, key=lambda r: r["adds_per_s"])
        rel = r.get("relative")
        workers.append(
            {
                "worker": w.get("worker"),
                "cpu": r.get("cpu", w.get("cpu")),
                "adds_per_s": float(r["adds_per_s"]),
                "relative": float(rel) if rel is not None else 1.0,
            }
        )
    if not workers:
        return None
    return {"workers": workers, "slowest_relative": min(w["relative"] for w in workers)}


def slowest_worker(sample: dict) -> dict | None:
    hs = host_speed(sample)
    if not hs:
        return None
    return min(hs["workers"], key=lambda w: w.get("relative", 1.0))


def contention(sample: dict) -> dict | None:
    """The sample's contention signals: PSI (µs, after - before), the arm's own threads'
    involuntary switches and migrations (summed over its threads), steal share."""
    c = sample.get("contention")
    if not isinstance(c, dict):
        return None
    threads = c.get("threads") or []

    def total(key):
        vals = [t.get(key) for t in threads if t.get(key) is not None]
        return sum(vals) if vals else None

    return {
        "psi_some_us": c.get("psi_some_us"),
        "psi_full_us": c.get("psi_full_us"),
        "nivcsw": total("involuntary_cs"),
        "migrations": total("migrations"),
        "steal_share": c.get("steal_share"),
    }


def foreign_share(sample: dict) -> tuple[float, float]:
    """(foreign CPU share, the share one scheduler tick per CPU makes over its window): shares at
    or below the resolution are tick noise. The share is measured over a window long enough for
    1% resolution (foreign_cpu_window); records without it carry only the per-sample
    foreign_cpu_share, whose resolution is one 10 ms tick over the sample."""
    w = sample.get("foreign_cpu_window") or {}
    share, res = w.get("share"), w.get("resolution")
    if share is None:
        # The sample's own share counts /proc/stat's steal (busy ticks include it): the
        # hypervisor's time, no process's; over the same window the contention block has it
        # apart, so it is taken out here (host-steal judges it).
        steal = (contention(sample) or {}).get("steal_share") or 0.0
        share = max(0.0, (sample.get("foreign_cpu_share") or 0.0) - steal)
        window = sample.get("total_seconds") or sample.get("seconds") or 0.0
        res = min(1.0, 0.010 / window) if window > 0 else 1.0
    return float(share), float(res if res is not None else 1.0)


def top_foreign(sample: dict) -> str | None:
    """The foreign process that took most CPU in the window: 'pid 1234 (python3)'."""
    top = sample.get("top_foreign") or []
    if not top:
        return None
    t = max(top, key=lambda p: p.get("share") or 0.0)
    return f"pid {t.get('pid')} ({t.get('comm') or '?'})"


def top_foreign_of(samples: list[dict]) -> str | None:
    """The foreign process that took most CPU over all the given samples' windows (summed by
    pid): a sample's own list can be empty, or hold another process, when its window was short."""
    total: dict = {}
    comm: dict = {}
    for s in samples:
        for t in s.get("top_foreign") or []:
            pid = t.get("pid")
            total[pid] = total.get(pid, 0.0) + float(t.get("cpu_s") or t.get("share") or 0.0)
            comm[pid] = t.get("comm") or comm.get(pid)
    if not total:
        return None
    pid = max(total, key=total.get)
    return f"pid {pid} ({comm.get(pid) or '?'})"


def most_delayed_thread(sample: dict) -> dict | None:
    """The arm's worker that waited longest for its CPU in the sample (schedstat run delay):
    {worker, cpu, run_delay_s, share of the sample's time}; None without the field."""
    c = sample.get("contention")
    # The sample's whole window (all its iterations), as the threads' counters cover it.
    secs = sample.get("total_seconds") or sample.get("seconds") or 0.0
    if not isinstance(c, dict) or secs <= 0:
        return None
    best = None
    for t in c.get("threads") or []:
        d = t.get("run_delay_s")
        if d is None:
            continue
        if best is None or d > best["run_delay_s"]:
            cpu = t.get("cpu_before") if t.get("cpu_before") == t.get("cpu_after") else None
            best = {
                "worker": t.get("worker"),
                "cpu": cpu if cpu is not None else t.get("cpu_after"),
                "run_delay_s": float(d),
                "share": float(d) / secs,
            }
    return best


def pinned_cpus(run: Run) -> list | None:
    """The CPUs the host workers were pinned to; None when not pinned (or not recorded)."""
    pl = run.data["plan"].get("placement") or {}
    return pl.get("cpus") if pl.get("pinned") else None


def ci_target(case: dict) -> float | None:
    """The half-width (a fraction) the adaptive rule aimed at; None for a fixed count."""
    t = case.get("target_ci")
    return float(t) if t else None


def ci_reached(case: dict) -> bool | None:
    """Whether the case's interval met its target; None when there was no target."""
    if not ci_target(case):
        return None
    return case.get("stop_reason") == "target-met"


def kernel_choice(case: dict) -> dict:
    """What the arm chose when prepared: cuDNN's algorithm and workspace, the tuned config."""
    k = case.get("kernel") if isinstance(case.get("kernel"), dict) else {}
    return {key: k.get(key) for key in ("algorithm", "name", "workspace_bytes", "config")}


def host_id(run: Run) -> str | None:
    h = run.data["host"]
    res = run.data["lease"].get("resource") or {}
    return h.get("machine_id") or res.get("machine_id") or h.get("name")


def binary_id(run: Run) -> str | None:
    t = run.data["tool"]
    return t.get("binary_sha") or t.get("git_sha")


def run_status(run: Run) -> str:
    return run.data.get("status") or "complete"


def gpu_of(run: Run) -> dict | None:
    uuid = (run.data["lease"].get("resource") or {}).get("gpu_uuid")
    gpus = run.data["gpus"]
    return next((g for g in gpus if uuid and g.get("uuid") == uuid), gpus[0] if gpus else None)
