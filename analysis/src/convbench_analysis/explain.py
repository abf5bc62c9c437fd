"""`explain`: each ratio the analysis reports, decomposed by the run's own evidence, in one line,
with the figures it used and what the run cannot tell (and the run that would tell it).

Sources, all in the record:
- staging: a per-call case against its resident twin (same arm, stage, frames): the per-call
  staging cost is the difference of their medians, its share of the per-call median;
- the size sweep: the same two arms on one stage at three or more frames: the ratio at each size
  (flat = a compute-rate difference; falling = a fixed per-call cost in the numerator; rising =
  in the denominator) and each arm's time = a + b x FLOPs fit (fit.py);
- the counters (record.achieved): the pipe that did most of the arithmetic and its % of peak, the
  instruction mix, DRAM bytes and TB/s against the copy bandwidth the case's memory floor was
  set by (min_bytes / floor_s.memory);
- the floors: the arm's own floor over its best time;
- the per-call sample's launching thread: its CPU time over the sample's wall time;
- the checks (assess.py, checks.pair_findings): co-tenants, foreign processes, clock caps.
Nothing is estimated that the record does not hold: where a source is missing, the line says what
it cannot tell and the exact bench_conv flags of the run that would supply it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from . import checks, pairs, record, verdicts
from .assess import assess
from .findings import Assessment
from .fit import fit_line
from .load import Run
from .tables import time_text
from .thresholds import Thresholds

MEMORY_BOUND = 0.5  # DRAM traffic at this share of the copy bandwidth or above: memory-bound
SWEEP = (96, 384, 1536)  # the sweep suggested (the README's); else f, 4f, 16f around the run's


@dataclass(frozen=True)
class Explanation:
    num: str  # the numerator's case id
    den: str  # the denominator's case id
    line: str  # one line: the ratio, its decomposition, what the run cannot tell
    figures: dict = field(default_factory=dict)  # every number the line states, by part
    cannot_tell: tuple[str, ...] = ()  # each gap with the run that would close it


@dataclass
class _Ctx:
    run: Run
    th: Thresholds
    a: Assessment
    index: int
    errors: dict  # the twins' widening per kind of case, as the report's intervals use
    details: bool = True  # the checks' part (the report says the checks itself)


def _ctx(run: Run, a: Assessment | None, index: int) -> _Ctx:
    a = a or assess([run], Thresholds())
    th = a.thresholds
    errors = verdicts.kind_errors(verdicts.twins(run.cases, th.ci_level), th)
    return _Ctx(run, th, a, index, errors)


def _run_of(rec) -> Run:
    return rec if isinstance(rec, Run) else Run("<record>", rec)


# ---- small readers -----------------------------------------------------------------------


def _median(case) -> float:
    return float(np.median(checks.seconds(case)))


def _best(case) -> float:
    return float(checks.seconds(case).min())


def _find(run: Run, stage: str, frames: int, arm: str, staging: str):
    for c in run.cases:
        if (c.stage, c.frames, c.arm, c.staging) == (stage, frames, arm, staging) and c.samples:
            return c
    return None


def _bench(case, arms: str, **flags) -> str:
    """The bench_conv command that times these arms on this case's stage and frames."""
    out = f"bench_conv --stage {case.stage} --frames {flags.pop('frames', case.frames)}"
    out += f" --arms {arms}"
    return out + "".join(f" --{k.replace('_', '-')} {v}" for k, v in flags.items() if v)


CARRIED = ("--model", "--plugin", "--device-timing")  # what the run chose that a re-run keeps


def _carried(run: Run) -> str:
    """The run's own choices a suggested run must repeat: its model, its plugins (their arms are
    not built in), its device timing; from the record's argv."""
    argv = run.data.get("argv") or []
    out = []
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag in CARRIED:
            out.append(f"{flag} {value}")
    return " ".join(out)


def _arms(*cases) -> str:
    names = []
    for c in cases:
        if record.twin_base(c.arm) not in names:
            names.append(record.twin_base(c.arm))
    return ",".join(names)


# ---- the parts ---------------------------------------------------------------------------


def _staging(case, run: Run) -> tuple[str | None, dict, list[str], object]:
    """A per-call case against its resident twin: (text, figures, gaps, the compute stand-in)."""
    if case.staging != "per-call":
        return None, {}, [], case
    twin = _find(run, case.stage, case.frames, case.arm, "resident")
    if twin is None:
        gap = (
            f"how much of {record.label(case)} is staging (no resident twin in this run): "
            + _bench(case, case.arm, staging="both")
        )
        return None, {}, [gap], case
    med, res = _median(case), _median(twin)
    cost = med - res
    figs = {
        "per_call_median_s": med,
        "resident_median_s": res,
        "staging_s": cost,
        "staging_share": cost / med,
        "operand_bytes": case.get("min_bytes"),
        "twin": twin.id,
    }
    moved = ""
    if case.get("min_bytes") and cost > 0:
        figs["staging_gbps"] = case["min_bytes"] / cost / 1e9
        moved = f", {case['min_bytes'] / 1e6:.3g} MB of operands at {figs['staging_gbps']:.3g} GB/s"
    same = record.kernel_choice(case)["name"] == record.kernel_choice(twin)["name"]
    text = (
        f"{case.arm}'s staging (upload, download, alloc/free per call) is {time_text(cost, 3)} of "
        f"{time_text(med, 3)} ({cost / med:.0%}, from its resident twin{moved})"
    )
    if not same:
        text += " (the twin ran another kernel: the split is approximate)"
    return text, figs, [], twin


def _host_share(case) -> tuple[str | None, dict]:
    """The launching thread's CPU time over a per-call sample's wall time, where recorded."""
    shares = []
    for s in case.samples:
        c = s.get("contention") or {}
        wall = c.get("wall_s")
        t0 = next((t for t in c.get("threads") or [] if t.get("worker") == 0), None)
        if wall and t0 and t0.get("cpu_s") is not None:
            shares.append(t0["cpu_s"] / wall)
    if case.staging != "per-call" or not shares:
        return None, {}
    share = float(np.median(shares))
    text = (
        f"its launching thread was on a CPU {share:.0%} of each call's wall time (median of "
        f"{len(shares)}; copies and waits for the GPU alike)"
    )
    return text, {"host_cpu_share": share, "samples": len(shares)}


_MIX = {
    "fp64": ("dadd", "dmul", "dfma"),
    "fp32": ("fadd", "fmul", "ffma"),
}
_OP = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"


def _mix(case, precision: str) -> str | None:
    """The SIMT instruction mix from the counted opcodes: 'DMUL+DADD, no FMA' or 'DFMA'."""
    m = (case.get("counters") or {}).get("metrics") or {}
    counts = {op: m.get(_OP.format(op)) for op in _MIX.get(precision, ())}
    if not counts or any(v is None for v in counts.values()):
        return None
    fma = next(op for op in counts if op.endswith("fma"))
    used = [op.upper() for op in sorted(counts, key=lambda o: -counts[o]) if counts[op] > 0]
    if not used:
        return None
    text = "+".join(used)
    if counts[fma] == 0:
        text += ", no FMA"
        if case.gate.kind == "bitwise":
            text += ": the bitwise gate's contract"
    return text


def _dram(case) -> dict | None:
    ctr = case.get("counters") or {}
    d, m = ctr.get("derived") or {}, ctr.get("metrics") or {}
    nbytes = d.get("dram_bytes")
    if nbytes is None and m.get("dram__bytes_read.sum") is not None:
        nbytes = m["dram__bytes_read.sum"] + (m.get("dram__bytes_write.sum") or 0.0)
    if nbytes is None:
        return None
    tbps = d.get("dram_tbps")
    if tbps is None:
        tbps = nbytes / _best(case) / 1e12
    floor = case.get("floor_s") or {}
    copy = case["min_bytes"] / floor["memory"] / 1e12 if floor.get("memory") else None
    return {"dram_bytes": nbytes, "dram_tbps": tbps, "copy_tbps": copy}


def _pipe(case, ach: dict, gaps: list[str], arms: str) -> tuple[str, dict]:
    """The path that did most of the counted arithmetic, unless the counted paths miss most of
    the nominal FLOP (a profile without the tensor paths): then that is what is said."""
    counted = sum(p["flop"] for p in ach["paths"])
    share = counted / case["flops"] if case.get("flops") else 1.0
    missing = ach.get("not_counted") or []
    if share < 0.5 and missing:
        names = ", ".join(m["name"] for m in missing)
        gaps.append(
            f"which pipe bounds {record.label(case)} ({missing[0]['why']}): "
            + _bench(case, arms, staging="resident", profile="fp-throughput")
        )
        text = f"{case.arm}: the counted pipes hold {share:.1%} of its nominal FLOP (not counted: "
        return text + f"{names})", {"counted_share": share, "not_counted": names}
    dom = ach["dominant"]
    figs = {"pipe": dom["name"], "tflops": dom["tflops"], "pct_peak": dom["pct_peak"]}
    text = f"{case.arm}: {dom['name']} {dom['tflops']:.3g} TFLOP/s"
    if dom["pct_peak"] is not None:
        text += f" = {dom['pct_peak']:.1f}% of its peak"
    mix = _mix(case, dom["precision"]) if dom["pipe"] == "simt" else None
    if mix:
        figs["mix"] = mix
        text += f" ({mix})"
    return text, figs


def _counters(case, gaps: list[str], arms: str) -> tuple[str | None, dict]:
    """Where the case's arithmetic ran and whether it waited on memory, from its counters;
    `arms`: the pair's arms, for the run that would count them."""
    ach = record.achieved(case)
    if not case.device:
        gaps.append("where a host arm's time goes (no counters exist for host arms)")
        return None, {}
    if ach is None or ach["status"] != "collected" or not ach.get("dominant"):
        why = ach["why"] if ach and ach.get("why") else "not collected in this run"
        gaps.append(
            f"which pipe bounds {record.label(case)} (counters: {why}): "
            + _bench(case, arms, staging="resident")
            + " (counters are taken unless --no-counters, on resident cases)"
        )
        return None, {}
    text, figs = _pipe(case, ach, gaps, arms)
    dram = _dram(case)
    if dram:
        figs.update(dram)
        text += f"; DRAM {dram['dram_tbps']:.3g} TB/s"
        if dram["copy_tbps"]:
            share = dram["dram_tbps"] / dram["copy_tbps"]
            figs["dram_share_of_copy"] = share
            figs["memory_bound"] = share >= MEMORY_BOUND
            text += f" = {share:.0%} of the {dram['copy_tbps']:.3g} TB/s copy: " + (
                "memory-bound" if share >= MEMORY_BOUND else "not memory-bound"
            )
    return text, figs


def counters(case) -> tuple[str | None, dict, list[str]]:
    """What one case's counters say, as the ratio lines say it: (text, figures, gaps), text
    'ARM: PIPE x TFLOP/s = y% of its peak; DRAM z TB/s = w% of the copy: ...' or None where
    the record holds none (gaps: the run that would count them)."""
    case = record.Case.of(case)
    gaps: list[str] = []
    text, figs = _counters(case, gaps, record.twin_base(case.arm))
    return text, figs, gaps


def _floor(case) -> tuple[str | None, dict]:
    floor = case.get("floor_s") or {}
    if not floor.get("arm"):
        return None, {}
    pct = 100.0 * floor["arm"] / _best(case)
    kind = floor.get("arm_kind") or "arm"
    figs = {"floor_s": floor["arm"], "floor_kind": kind, "pct_floor": pct, "case": case.id}
    return f"{case.arm} at {pct:.1f}% of its {kind} floor ({time_text(floor['arm'], 3)})", figs


def _compute(num, den, split: bool, ctx: _Ctx, gaps: list[str]) -> tuple[list[str], dict]:
    """The two compute stand-ins (resident twins where split): their ratio of medians, each one's
    floor and counters."""
    parts, figs = [], {}
    if split:
        r = _median(num) / _median(den)
        figs["compute_ratio"] = r
        figs["compute_cases"] = [num.id, den.id]
        parts.append(f"compute {r:.3g}x {den.arm}'s (ratio of medians, staging left out)")
    own: list[str] = []
    for side, c in (("num", num), ("den", den)):
        text, f = _counters(c, own, _arms(num, den))
        if text:
            parts.append(text)
            figs[f"counters_{side}"] = f
        text, f = _floor(c)
        if text:
            parts.append(text)
            figs[f"floor_{side}"] = f
    gaps += _merge_by_command(own)
    return parts, figs


def _merge_by_command(gaps: list[str]) -> list[str]:
    """The counters gaps one run would close, said once: 'which pipe bounds A (why): CMD' and
    '... B (why): CMD' -> 'which pipe bounds A, B (why): CMD'."""
    head = "which pipe bounds "
    out: dict[str, list[str]] = {}
    for g in dict.fromkeys(gaps):
        label, sep, rest = g.removeprefix(head).partition(" (")
        key = head + "{} (" + rest if g.startswith(head) and sep else g
        out.setdefault(key, []).append(label)
    return [k.format(", ".join(v)) if k.startswith(head) else k for k, v in out.items()]


def _sweep_points(num, den, ctx: _Ctx) -> list[tuple[int, float, object, object]]:
    """(frames, flops, num case, den case) at every size of the stage that has both arms."""
    out = []
    for fr in sorted({c.frames for c in ctx.run.cases if c.stage == num.stage}):
        a = _find(ctx.run, num.stage, fr, num.arm, num.staging)
        b = _find(ctx.run, den.stage, fr, den.arm, den.staging)
        if a is not None and b is not None:
            out.append((fr, float(a["flops"]), a, b))
    return out


def _shape(pts: list, ctx: _Ctx) -> tuple[str, list]:
    """flat / falling / rising, by the report's rule: moved beyond signature_flat_tol with the
    smallest and largest sizes' intervals apart."""
    stated = [verdicts.state(a, b, ctx.errors, ctx.th) for _, _, a, b in pts]
    small, large = stated[0], stated[-1]
    moved = large.value / small.value - 1.0
    apart = (
        small.lo is not None
        and large.lo is not None
        and (large.hi < small.lo or large.lo > small.hi)
    )
    if apart and abs(moved) > ctx.th.signature_flat_tol:
        return ("falling" if moved < 0 else "rising"), stated
    return "flat", stated


def _fit(pts: list, which: int) -> dict | None:
    try:
        f = fit_line([p[1] for p in pts], [_best(p[which]) for p in pts])
    except ValueError:
        return None
    t0 = _best(pts[0][which])
    return {"a_s": f.a, "rate_tflops": f.rate / 1e12, "r2": f.r2, "fixed_share_small": f.a / t0}


def _sweep(num, den, ctx: _Ctx, gaps: list[str]) -> tuple[str | None, dict]:
    pts = _sweep_points(num, den, ctx)
    if len(pts) < 3:
        sizes = SWEEP if num.frames in SWEEP else (num.frames, 4 * num.frames, 16 * num.frames)
        frames = ",".join(map(str, sizes))
        gaps.append(
            f"fixed per-call cost vs rate ({len(pts)} size(s) of {num.stage} here, a fit needs "
            f"3): " + _bench(num, _arms(num, den), frames=frames, staging=_staging_flag(num, den))
        )
        return None, {}
    kind, stated = _shape(pts, ctx)
    if any(s is None for s in stated):
        return None, {}
    fits = {"num": _fit(pts, 2), "den": _fit(pts, 3)}
    sizes = ", ".join(f"{p[0]}: {s.value:.3g}" for p, s in zip(pts, stated, strict=True))
    staged = " such as per-call staging" if "per-call" in (num.staging, den.staging) else ""
    what = {
        "flat": f"a compute-rate difference (the fits' slopes), not a fixed per-call cost{staged}",
        "falling": f"a fixed per-call cost in {num.arm} that the larger sizes amortise",
        "rising": f"a fixed per-call cost in {den.arm}, or {num.arm}'s rate falling at scale",
    }[kind]
    text = f"{kind} across frames ({sizes}; tolerance {ctx.th.signature_flat_tol:.0%}): {what}"
    for f, c in ((fits["num"], num), (fits["den"], den)):
        if f:
            text += (
                f"; fit {c.arm}: a = {time_text(f['a_s'], 3)} "
                f"({f['fixed_share_small']:.0%} of its time at "
                f"frames {pts[0][0]}), rate {f['rate_tflops']:.3g} TFLOP/s"
            )
    if fits["num"] and fits["den"] and fits["num"]["rate_tflops"] > 0:
        fits["rate_ratio"] = fits["den"]["rate_tflops"] / fits["num"]["rate_tflops"]
        text += f"; the rates' ratio, where the ratio tends at scale: {fits['rate_ratio']:.3g}"
    figs = {
        "kind": kind,
        "frames": [p[0] for p in pts],
        "ratios": [s.value for s in stated],
        "fits": fits,
    }
    return text, figs


def _staging_flag(num, den) -> str | None:
    stagings = {c.staging for c in (num, den) if c.device}
    if not stagings:
        return None  # host arms only: no staging to name
    return "both" if "per-call" in stagings else "resident"


def _checks(num, den, ctx: _Ctx) -> tuple[str, dict]:
    """What the checks saw on the two cases and between them: refusals, notes, GPU caps."""
    a, i = ctx.a, ctx.index
    refuses, notes = [], []
    for c in (num, den):
        refuses += [f for f in a.for_case(i, c.id) if f not in refuses]
        notes += [f for f in a.notes_for_case(i, c.id) if f not in notes]
    both = checks.pair_findings(ctx.run, num, ctx.run, den, ctx.th)
    refuses += [f for f in both if f.refuses]
    notes += [f for f in both if not f.refuses]
    caps = {c.arm: record.capped_fraction(c)[0] for c in (num, den) if c.device}
    foreign = max(
        (n for c in (num, den) for s in c.samples for n in s.foreign_gpu_processes()), default=0
    )
    figs = {
        "refused": sorted({f.code for f in refuses}),
        "notes": sorted({f.code for f in notes}),
        "capped": caps,
        "foreign_gpu_processes_max": foreign,
    }
    if refuses:
        text = "REFUSED: " + "; ".join(f"{f.code} ({f.detail})" for f in refuses)
    else:
        cap = ", ".join(f"{arm} {v:.0%}" for arm, v in caps.items())
        text = f"checks: nothing refused (foreign GPU processes {foreign}" + (
            f", clock-capped {cap} of the time)" if cap else ")"
        )
    said = [f.code for f in notes if f.code not in ("ci-not-reached",)]
    if said:
        text += "; noted: " + ", ".join(dict.fromkeys(said))
    return text, figs


# ---- one ratio, one record ---------------------------------------------------------------


def _case(run: Run, x):
    if isinstance(x, dict):
        return record.Case.of(x)
    c = next((c for c in run.cases if c.id == x), None)
    if c is None:
        raise KeyError(f"no case {x!r} in {run.path}")
    return c


def explain_ratio(
    rec, pair, assessment: Assessment | None = None, index: int = 0, details: bool = True
) -> Explanation:
    """One ratio's line. `rec`: a loaded Run (or a record's dict); `pair`: (numerator,
    denominator) as case ids or cases; `assessment`: the one the report made (else the run is
    assessed alone), `index` the run's place in it; `details`: the checks' part (off under the
    report, which says each finding itself)."""
    run = _run_of(rec)
    ctx = _ctx(run, assessment, index)
    ctx.details = details
    num, den = _case(run, pair[0]), _case(run, pair[1])
    st = verdicts.state(num, den, ctx.errors, ctx.th)
    head = f"{record.label(num)} / {record.label(den)}"
    if st is None:
        line = f"{head}: no rounds timed both cases; nothing to explain"
        return Explanation(num.id, den.id, line, {}, ())
    ci = f"[{st.lo:.3g}, {st.hi:.3g}]" if st.lo is not None else "[no interval]"
    figures: dict = {"ratio": st.value, "ci": [st.lo, st.hi], "verdict": st.verdict}
    gaps: list[str] = []
    parts = []
    stand = {}
    for side, c in (("num", num), ("den", den)):
        text, figs, g, stand[side] = _staging(c, run)
        gaps += g
        if text:
            parts.append(text)
            figures[f"staging_{side}"] = figs
        text, figs = _host_share(c)
        if text:
            parts.append(text)
            figures[f"host_share_{side}"] = figs
    split = stand["num"] is not num or stand["den"] is not den
    texts, figs = _compute(stand["num"], stand["den"], split, ctx, gaps)
    parts += texts
    figures.update(figs)
    text, figs = _sweep(num, den, ctx, gaps)
    if text:
        parts.append(text)
        figures["sweep"] = figs
    text, figures["checks"] = _checks(num, den, ctx)
    if ctx.details:  # under the report, the checks are said by the report itself
        parts.append(text)
    line = f"{head} = {st.value:.3g}x {ci}: " + "; ".join(parts)
    carried = _carried(run)
    if carried:
        gaps = [g.replace("bench_conv ", f"bench_conv {carried} ", 1) for g in gaps]
    gaps = list(dict.fromkeys(gaps))
    if gaps:
        line += ("; " if parts else "") + "cannot tell " + "; nor ".join(gaps)
    return Explanation(num.id, den.id, line, figures, tuple(gaps))


def explain_record(
    rec, spec: list | None = None, assessment: Assessment | None = None, index: int = 0
) -> list[Explanation]:
    """Every ratio the report shows for the record (pairs.choose: the defaults, or `spec`'s
    NUM:DEN items), in the report's order: per (stage, frames), then pair."""
    run = _run_of(rec)
    a = assessment or _ctx(run, None, 0).a
    groups = defaultdict(dict)
    for c in run.cases:
        groups[(c.stage, c.frames)][record.label(c)] = c
    out = []
    for _, by_label in groups.items():
        chosen, _note = pairs.choose(by_label, None, spec)
        for n, d in chosen:
            out.append(explain_ratio(run, (by_label[n], by_label[d]), a, index))
    return out
