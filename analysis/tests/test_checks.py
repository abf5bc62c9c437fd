"""Each check: a mutated copy of a clean run that trips it (asserting the EXACT set of reasons,
so a check that also trips something else, or a neighbour that trips too, fails the test) and a
near-miss copy that must not trip it.

Planted faults seen failing (then reverted):
- drift with the floor ignored (allowed = k x noise only): the near-miss
  test_drift_within_floor_accepted failed (4.6% apart tripped drift);
- case_findings without the early return after gate-failed: test_gate_failed_exact also saw
  too-few-rounds and failed;
- clock read gpu_before (the idle clock between samples): test_clock_idle_before_not_tripped
  failed;
- foreign-cpu compared with >= 0.0 instead of the threshold: every host case tripped and
  test_clean_run_accepted failed;
- foreign-cpu refusing on the share alone (no lost-time evidence asked for):
  test_foreign_cpu_share_without_lost_time_is_a_note failed;
- throttle refusing on any reason (the effect test removed): test_throttle_without_effect_is_a_
  note failed;
- timing-mode with its test inverted (tripping on equal modes): both timing-mode tests failed;
- record.host_speed reading speed_before only: test_slow_cpu_read_after_the_sample_is_still_named
  failed;
- record.foreign_share judging the sample's share at the short window's resolution:
  test_short_window_falls_back_to_the_sample_share_and_its_tick failed;
- record.ci_reached true whatever stop_reason says: test_ci_not_reached_is_a_note failed;
- record.run_status reading a field the bench does not write: test_incomplete_run_is_stated
  failed.
"""

import re

import corpus
import faults
import pytest
import synth
from helpers import assess_files, tripped

from convbench_analysis import assess, checks

HOST = "up0/96/cpu-f64/host"
DEV = "up0/96/cuda-f64/resident"


def test_clean_run_accepted(clean, write):
    assert tripped(assess_files([write(clean)])) == set()


def test_two_clean_runs_of_one_binary_accepted(clean, write):
    other = synth.make_run(seed=7, start=1_795_100_000.0, token="1042")
    assert tripped(assess_files([write(clean), write(other)])) == set()


# ---- lease ----------------------------------------------------------------------------------


def test_lease_not_collected_is_lease_none(clean, write):
    clean["lease"] = {"status": "not-collected"}
    assert tripped(assess_files([write(clean)])) == {(0, None, "lease-none")}


def test_historical_run_without_token_is_lease_none(clean, write):
    clean["lease"]["token"] = None
    assert tripped(assess_files([write(clean)])) == {(0, None, "lease-none")}


def test_outside_lease_is_lease_none(clean, write):
    clean["lease"]["verdict"] = "outside-lease"
    assert tripped(assess_files([write(clean)])) == {(0, None, "lease-none")}


def test_void_verdict(clean, write):
    clean["lease"]["verdict"] = "void"
    clean["lease"]["reasons"] = ["foreign GPU process pid 991 during up0/96/cuda-f64/resident"]
    a = assess_files([write(clean)])
    assert tripped(a) == {(0, None, "lease-void")}
    assert "pid 991" in a.run_findings[0][0].detail


@pytest.mark.parametrize("gap,expect", [(31.0, True), (30.0, True), (29.9, False)])
def test_lease_expired(clean, write, gap, expect):
    clean["lease"]["ttl_s"], clean["lease"]["max_renew_gap_s"] = 30.0, gap
    want = {(0, None, "lease-expired")} if expect else set()
    assert tripped(assess_files([write(clean)])) == want


def test_lease_overlap_same_gpu_different_tokens(clean, write):
    # the two-mutex story: a second run took "its" lock while the first held the fleet lease
    other = synth.make_run(seed=7, start=1_795_000_000.0 + 5.0, token="77")
    a = assess_files([write(clean), write(other)])
    assert tripped(a) == {(0, None, "lease-overlap"), (1, None, "lease-overlap")}


def test_lease_overlap_not_tripped_when_disjoint_in_time(clean, write):
    other = synth.make_run(seed=7, start=1_795_000_000.0 + 10_000.0, token="77")
    assert tripped(assess_files([write(clean), write(other)])) == set()


def test_lease_overlap_not_tripped_on_another_gpu(clean, write):
    other = synth.make_run(seed=7, start=1_795_000_000.0 + 5.0, token="77")
    other["lease"]["resource"]["gpu_uuid"] = "GPU-00000000-0000-0000-0000-000000000001"
    other["gpus"][0]["uuid"] = "GPU-00000000-0000-0000-0000-000000000001"
    assert tripped(assess_files([write(clean), write(other)])) == set()


def test_lease_overlap_ignores_runs_not_accepted(clean, write):
    # a void run is already refused; it does not make the valid one overlap
    other = synth.make_run(seed=7, start=1_795_000_000.0 + 5.0, token="77")
    other["lease"]["verdict"] = "void"
    assert tripped(assess_files([write(clean), write(other)])) == {(1, None, "lease-void")}


# ---- host and GPU observation ---------------------------------------------------------------


def _sample(run, cid, rnd):
    return next(s for s in synth.case(run, cid)["samples"] if s["round"] == rnd)


@pytest.mark.parametrize("psi,expect", [(0.45, True), (0.11, True), (0.05, False)])
def test_foreign_cpu_refused_when_the_arm_waited(clean, write, psi, expect):
    s = _sample(clean, HOST, 2)
    synth.set_foreign(s, 0.6, top=[(1234, "python3", 0.6)])
    s["contention"]["psi_some_us"] = psi * s["total_seconds"] * 1e6
    a = assess_files([write(clean)])
    assert tripped(a) == ({(0, HOST, "foreign-cpu")} if expect else set())
    if expect:
        f = a.case_findings[(0, HOST)][0]
        assert "pid 1234 (python3)" in f.detail and "pid 1234 (python3) is gone" in f.remedy
    else:
        assert [f.code for f in a.case_notes[(0, HOST)]] == ["foreign-cpu-noise"]


def test_foreign_cpu_refused_when_its_threads_were_preempted(clean, write):
    # 8 involuntary switches in each of 16 threads over ~50 ms: ~180 per thread-second, over
    # the limit only summed over the arm's threads (one thread's alone reads ~11). Planted fault
    # seen failing: record.contention summing the first thread only.
    s = _sample(clean, HOST, 2)
    synth.set_foreign(s, 0.5)
    for t in s["contention"]["threads"]:
        t["involuntary_cs"] = 8
    assert tripped(assess_files([write(clean)])) == {(0, HOST, "foreign-cpu")}


def test_foreign_cpu_share_without_lost_time_is_a_note(clean, write):
    synth.set_foreign(_sample(clean, HOST, 2), 0.5)  # no stall, no preemption, not slower
    a = assess_files([write(clean)])
    assert tripped(a) == set()
    assert a.case_notes[(0, HOST)][0].code == "foreign-cpu-noise"


def test_tick_noise_below_resolution_never_refuses(clean, write):
    # the idle H200: 0.10-0.12 of foreign share over a 68 ms window, one 10 ms tick = 0.15
    s = _sample(clean, HOST, 2)
    synth.set_foreign(s, 0.12, resolution=0.15)
    s["contention"]["psi_some_us"] = s["total_seconds"] * 1e6
    assert tripped(assess_files([write(clean)])) == set()


def test_short_window_falls_back_to_the_sample_share_and_its_tick(clean, write):
    # the run's first second: the window has no share yet, so the sample's own share is judged
    # at one tick over the sample (0.010 / ~0.05 s = 0.2): 0.15 is noise, 0.6 with a stall is not
    s = _sample(clean, HOST, 2)
    s["foreign_cpu_window"] = synth.foreign_window(None, 0.4)
    s["foreign_cpu_share"] = 0.15
    s["contention"]["psi_some_us"] = s["total_seconds"] * 1e6
    a = assess_files([write(clean, "noise.json")])
    assert tripped(a) == set() and "tick resolution" in a.case_notes[(0, HOST)][0].detail
    s["foreign_cpu_share"] = 0.6
    assert tripped(assess_files([write(clean, "hog.json")])) == {(0, HOST, "foreign-cpu")}


def test_older_record_without_contention_refuses_only_a_slower_round(write):
    run = synth.make_run(probes=False)
    c = synth.case(run, HOST)
    c["samples"][2]["foreign_cpu_share"] = 0.9
    assert tripped(assess_files([write(run, "a.json")])) == set()  # not slower: noise
    synth.set_seconds(c, [s["seconds"] * (1.3 if s["round"] == 2 else 1) for s in c["samples"]])
    assert tripped(assess_files([write(run, "b.json")])) == {(0, HOST, "foreign-cpu")}


def test_foreign_cpu_applies_to_host_arms_only(clean, write):
    synth.case(clean, DEV)["samples"][2]["foreign_cpu_share"] = 0.5
    assert tripped(assess_files([write(clean)])) == set()


def test_slow_cpu_in_most_rounds_is_named(clean, write):
    faults.slow_cpu(clean, HOST, rounds=(1, 2, 3), cpu=7)
    a = assess_files([write(clean)])
    assert tripped(a) == {(0, HOST, "host-speed")}
    f = a.case_findings[(0, HOST)][0]
    # the most slowed of the three is named
    assert re.match(r"round [123]: cpu 7 delivered 1.1 G/s of 2.9", f.detail)
    assert "3 of 5 rounds slowed so" in f.detail
    assert "pin the arm to cpus 0-6,8-15" in f.remedy


def test_slow_cpu_in_one_round_is_said_and_accepted(clean, write):
    # One slowed round of five leaves the best and the median to full-speed rounds, and the
    # other rounds agree: a note, not a refusal (nor a spread refusal for that one round).
    # Planted: refusing at any slowed round (host_slow_rounds_max 0) fails this.
    faults.slow_cpu(clean, HOST, rounds=(3,), cpu=7)
    a = assess_files([write(clean)])
    assert tripped(a) == set()
    notes = [n for n in a.case_notes[(0, HOST)] if n.code == "host-speed-noted"]
    assert len(notes) == 1 and notes[0].detail.startswith("round 3: cpu 7 delivered 1.1 G/s")
    assert "1 of 5 rounds" in notes[0].detail


def test_slow_cpu_without_a_slow_sample_is_not_refused(clean, write):
    s = synth.case(clean, HOST)["samples"][3]
    s["workers"][7]["speed_after"] = synth.speed(7, 7, 0.38)  # slow CPU, the sample not slower
    assert tripped(assess_files([write(clean)])) == set()


def test_slow_cpu_read_after_the_sample_is_still_named(clean, write):
    # the slower of the readings before and after counts: a CPU slowed during the sample
    c = synth.case(clean, HOST)
    for r in (1, 2, 3):
        c["samples"][r]["workers"][7]["speed_after"] = synth.speed(7, 7, 0.38)
    synth.set_seconds(
        c, [s["seconds"] * (1.35 if s["round"] in (1, 2, 3) else 1) for s in c["samples"]]
    )
    a = assess_files([write(clean)])
    assert tripped(a) == {(0, HOST, "host-speed")}
    assert re.match(r"round [123]: cpu 7 delivered 1.1 G/s", a.case_findings[(0, HOST)][0].detail)


def test_steal_in_most_rounds_is_named(clean, write):
    # H200: the hypervisor took 12-20% of every CPU's time in 13 of 21 cpu-f32 rounds, those
    # samples 1.4-1.8x slower; the speed probes between samples saw nothing.
    faults.stolen_host(clean, HOST, rounds=(1, 2, 3))
    a = assess_files([write(clean)])
    assert tripped(a) == {(0, HOST, "host-steal")}
    f = a.case_findings[(0, HOST)][0]
    assert re.match(r"round [123]: the hypervisor took 18% of the CPUs' time \(steal\)", f.detail)
    assert "3 of 5 rounds stolen and slowed" in f.detail
    assert "dedicated" in f.remedy


def test_steal_in_one_round_is_said_and_accepted(clean, write):
    # Planted: the spread judged with the stolen round in it (no exclusion for host-steal-noted)
    # refused this as spread.
    faults.stolen_host(clean, HOST, rounds=(3,))
    a = assess_files([write(clean)])
    assert tripped(a) == set()
    notes = [n for n in a.case_notes[(0, HOST)] if n.code == "host-steal-noted"]
    assert len(notes) == 1 and notes[0].detail.startswith("round 3: the hypervisor took 18%")


def test_steal_without_a_slower_sample_or_under_two_ticks_is_nothing(clean, write):
    c = synth.case(clean, HOST)
    c["samples"][3]["contention"]["steal_share"] = 0.3  # stolen, the sample not slower
    a = assess_files([write(clean)])
    assert tripped(a) == set() and not a.case_notes.get((0, HOST))
    # a steal share of a window too short to hold more than two ticks of 16 CPUs is resolution
    faults.stolen_host(clean, HOST, rounds=(1, 2, 3), share=0.1)
    for s in c["samples"]:
        s["contention"]["wall_s"] = 0.001  # 1.6 ticks in the window
    a = assess_files([write(clean)])  # the scatter is said (spread alone refuses nothing)
    assert tripped(a) == set() and "spread" in {f.code for f in a.case_notes[(0, HOST)]}


def test_foreign_gpu(clean, write):
    faults.foreign_gpu(clean, DEV, rnd=1)
    a = assess_files([write(clean)])
    assert tripped(a) == {(0, None, "lease-void"), (0, DEV, "foreign-gpu")}
    assert "pid 991 (python3)" in a.run_findings[0][0].detail


@pytest.mark.parametrize("n", [0, -1])
def test_no_foreign_gpu(clean, write, n):
    synth.case(clean, DEV)["samples"][1]["gpu_after"]["foreign_processes"] = n
    assert tripped(assess_files([write(clean)])) == set()


def test_foreign_gpu_from_lease_observation(clean, write):
    clean["lease"]["observation"]["foreign_gpu_samples"] = [DEV]
    clean["lease"]["verdict"] = "void"
    assert tripped(assess_files([write(clean)])) == {
        (0, None, "lease-void"),
        (0, DEV, "foreign-gpu"),
    }


@pytest.mark.parametrize("mhz,expect", [(1400.0, True), (1484.0, True), (1500.0, False)])
def test_clock_measured(clean, write, mhz, expect):
    # 0.75 x 1980 = 1485 MHz
    synth.case(clean, DEV)["samples"][3]["measured_sm_clock_mhz"] = mhz
    want = {(0, DEV, "clock")} if expect else set()
    assert tripped(assess_files([write(clean)])) == want


def test_clock_falls_back_to_nvml_after(clean, write):
    s = synth.case(clean, DEV)["samples"][3]
    s["measured_sm_clock_mhz"] = None
    s["gpu_after"]["sm_clock_mhz"] = 900.0
    assert tripped(assess_files([write(clean)])) == {(0, DEV, "clock")}


def test_clock_idle_before_not_tripped(clean, write):
    # between samples NVML reads the idle clock: that is not the clock the sample ran at
    synth.case(clean, DEV)["samples"][3]["gpu_before"]["sm_clock_mhz"] = 345.0
    assert tripped(assess_files([write(clean)])) == set()


@pytest.mark.parametrize("reasons", [["SwPowerCap"], ["HwThermalSlowdown"], ["GpuIdle"], ["none"]])
def test_throttle_without_effect_is_a_note(clean, write, reasons):
    synth.case(clean, DEV)["samples"][0]["gpu_after"]["throttle_reasons"] = reasons
    a = assess_files([write(clean)])
    assert tripped(a) == set()
    notes = [f.code for f in a.case_notes.get((0, DEV), [])]
    assert notes == ([] if reasons[0] in ("GpuIdle", "none") else ["throttle-noted"])


def test_throttle_with_effect_is_refused(clean, write):
    c = synth.case(clean, DEV)
    for s in c["samples"][:2]:
        s["gpu_after"]["throttle_reasons"] = ["SwPowerCap"]
    synth.set_seconds(c, [s["seconds"] * (1.04 if s["round"] < 2 else 1) for s in c["samples"]])
    a = assess_files([write(clean)], device_spread_max=2, device_cv_max=1)
    assert tripped(a) == {(0, DEV, "throttle")}
    assert "SwPowerCap in round(s) 0, 1" in a.case_findings[(0, DEV)][0].detail


def test_clock_threshold_override(clean, write):
    synth.case(clean, DEV)["samples"][3]["measured_sm_clock_mhz"] = 1500.0
    assert tripped(assess_files([write(clean)], sm_clock_min_fraction=0.8)) == {(0, DEV, "clock")}


# ---- spread, rounds, correctness ------------------------------------------------------------


def test_spread_device_max_over_min(clean, write):
    t = 250e-6
    synth.set_seconds(synth.case(clean, DEV), [t, t, t, t, t * 1.2])
    a = assess_files([write(clean)])  # said, not refused: the interval carries it
    assert tripped(a) == set() and "spread" in {f.code for f in a.case_notes[(0, DEV)]}


def test_spread_device_quiet_accepted(clean, write):
    t = 250e-6
    synth.set_seconds(synth.case(clean, DEV), [t, t * 1.005, t * 1.01, t * 1.002, t * 1.008])
    assert tripped(assess_files([write(clean)])) == set()


def test_spread_host_thresholds_are_wider(clean, write):
    # the same 1.2 max/min on a host arm is within pyperf's limits (CV 8.6%, max/min 1.2)
    t = 0.011
    synth.set_seconds(synth.case(clean, HOST), [t, t, t, t, t * 1.2])
    assert tripped(assess_files([write(clean)])) == set()
    synth.set_seconds(synth.case(clean, HOST), [t, t, t, t, t * 2.0])
    a = assess_files([write(clean)])
    assert tripped(a) == set() and "spread" in {f.code for f in a.case_notes[(0, HOST)]}


@pytest.mark.parametrize("n,expect", [(2, True), (3, False)])
def test_too_few_rounds(clean, write, n, expect):
    c = synth.case(clean, DEV)
    synth.set_seconds(c, [s["seconds"] for s in c["samples"]][:n])
    a = assess_files([write(clean)])  # said (the interval shows it), never refused
    assert tripped(a) == set()
    assert ("too-few-rounds" in {f.code for f in a.case_notes.get((0, DEV), [])}) == expect


def test_ci_not_reached_is_a_note(write):
    # an adaptive run: the quiet cases met 0.5%, the noisy one ran out of rounds first
    run = synth.make_run(reps=40, target_ci=0.005, cvs={"cuda-f64": 0.05})
    assert synth.case(run, DEV)["stop_reason"] == "max-rounds"
    assert {c["stop_reason"] for c in run["cases"] if c["arm"] != "cuda-f64"} == {"target-met"}
    a = assess_files([write(run)], device_cv_max=1, device_spread_max=10)
    assert tripped(a) == set()
    notes = {cid: [f.code for f in fs] for (_, cid), fs in a.case_notes.items()}
    noisy = {c["id"] for c in run["cases"] if c["arm"] == "cuda-f64"}
    assert {cid for cid, codes in notes.items() if "ci-not-reached" in codes} == noisy
    f = next(f for f in a.case_notes[(0, DEV)] if f.code == "ci-not-reached")
    assert "max-rounds after 40 rounds before the 0.50% interval target" in f.detail


def test_fixed_count_has_no_target_to_miss(write):
    run = synth.make_run(reps=6, cvs={"cuda-f64": 0.05})
    assert {c["stop_reason"] for c in run["cases"]} == {"fixed-count"}
    a = assess_files([write(run)], device_cv_max=1, device_spread_max=10)
    assert not any(f.code == "ci-not-reached" for fs in a.case_notes.values() for f in fs)


@pytest.mark.parametrize("status", ["interrupted", "recovered"])
def test_incomplete_run_is_stated(clean, write, status):
    # an incomplete run's finished cases stand (their samples are real); the report says so
    clean["status"] = status
    if status == "interrupted":
        clean["interrupted"] = {
            "signal": "SIGINT",
            "rounds_started": 5,
            "at_utc": clean["ended_utc"],
        }
        synth.case(clean, DEV)["stop_reason"] = "interrupted"
    else:
        clean["recovered"] = {"journal": clean["journal"], "rounds": 5, "torn_bytes": 112}
    a = assess_files([write(clean)])
    # The case the interrupt cut short is refused (its stopping rule never decided); the cases
    # that had finished stand. Planted: the cut-short check removed, this failed (set() != ...).
    want = {(0, DEV, "cut-short")} if status == "interrupted" else set()
    assert tripped(a) == want and [f.code for f in a.run_notes[0]] == ["run-incomplete"]
    cut = "; 1 case(s) cut short" if status == "interrupted" else ""
    assert a.run_notes[0][0].detail == f"status {status}{cut}"


def test_complete_run_states_nothing(clean, write):
    assert assess_files([write(clean)]).run_notes.get(0, []) == []


def test_gate_failed_exact(clean, write):
    c = synth.case(clean, DEV)
    c["gate"].update({"result": "fail", "mismatches": 17, "max_abs_err": 0.25})
    c["samples"], c["stats"] = [], None
    a = assess_files([write(clean)])
    assert tripped(a) == {(0, DEV, "gate-failed")}
    assert "17 mismatching" in a.case_findings[(0, DEV)][0].detail


# ---- drift -----------------------------------------------------------------------------------


def _pair(best_a, best_b, **other_changes):
    a = synth.make_run(seed=1)
    b = synth.make_run(seed=2, start=1_795_100_000.0, token="2001", **other_changes)
    synth.set_seconds(synth.case(a, HOST), [best_a * f for f in (1.0, 1.004, 1.002, 1.006, 1.003)])
    synth.set_seconds(synth.case(b, HOST), [best_b * f for f in (1.0, 1.005, 1.001, 1.003, 1.002)])
    return a, b


def test_historical_drift_0_0765_vs_0_2280_refused(write):
    a, b = _pair(0.0765, 0.2280)
    got = assess_files([write(a), write(b)])
    assert tripped(got) == {(0, HOST, "drift"), (1, HOST, "drift")}
    assert "x2.98" in got.case_findings[(0, HOST)][0].detail


def test_drift_within_floor_accepted(write):
    a, b = _pair(0.0765, 0.0800)  # 4.6% apart: inside the 10% floor
    assert tripped(assess_files([write(a), write(b)])) == set()


def test_drift_floor_override(write):
    a, b = _pair(0.0765, 0.0800)
    got = assess_files([write(a), write(b)], drift_floor_host=0.02)
    assert tripped(got) == {(0, HOST, "drift"), (1, HOST, "drift")}


def test_drift_needs_the_same_binary(write):
    a, b = _pair(0.0765, 0.2280, git_sha="0" * 40)  # a different build may legitimately differ
    assert tripped(assess_files([write(a), write(b)])) == set()


def test_drift_needs_the_same_host(write):
    a, b = _pair(0.0765, 0.2280)
    b["host"]["machine_id"] = "1" * 32
    assert tripped(assess_files([write(a), write(b)])) == set()


def test_historical_case_without_token_and_drift_reports_every_reason(write):
    a, b = _pair(0.0765, 0.2280)
    b["lease"]["token"] = None
    got = tripped(assess_files([write(a), write(b)]))
    assert got == {(0, HOST, "drift"), (1, HOST, "drift"), (1, None, "lease-none")}


# ---- timing mode -----------------------------------------------------------------------------


def test_launched_against_queued_refused_on_device_cases_only(write):
    a = synth.make_run(seed=1)
    b = synth.make_run(seed=2, start=1_795_100_000.0, token="2001")
    b["plan"]["device_timing"] = "queued"
    got = tripped(assess_files([write(a), write(b)]))
    dev = {c["id"] for c in a["cases"] if c["device"]}
    assert dev and got == {(i, cid, "timing-mode") for i in (0, 1) for cid in dev}


def test_same_timing_mode_accepted_and_absent_means_launched(write):
    a = synth.make_run(seed=1)
    b = synth.make_run(seed=2, start=1_795_100_000.0, token="2001")
    a["plan"].pop("device_timing", None)
    b["plan"]["device_timing"] = "launched"
    assert tripped(assess_files([write(a), write(b)])) == set()


def test_timing_mode_only_between_runs_whose_cases_are_set_against_each_other(write):
    # another host's queued run named beside a launched one: nothing is compared across them
    # in a report, so nothing is refused; `compare` sets them against each other and refuses.
    # Planted fault seen failing: timing_mode_findings ignoring `compared` (always tripping).
    from convbench_analysis import load

    a = synth.make_run(seed=1)
    b = synth.make_run(seed=2, start=1_795_100_000.0, token="2001", host="gpu-node-18")
    b["host"]["machine_id"] = "1" * 32
    b["plan"]["device_timing"] = "queued"
    runs = [load.load_run(write(a)), load.load_run(write(b))]
    assert tripped(assess.assess(runs)) == set()
    got = tripped(assess.assess(runs, compared=True))
    assert got and {code for _, _, code in got} == {"timing-mode"}


def test_pinned_hog_on_one_cpu_is_refused_and_named(clean, write):
    # The machine-wide foreign share stays under its threshold; the pinned worker's run delay
    # shows the loop, and the process table of one round names it.
    # Planted: _pinned_cpu_shared returning [] made this fail (nothing tripped).
    faults.pinned_hog(clean, HOST, cpu=3)
    a = assess_files([write(clean)])
    assert tripped(a) == {(0, HOST, "foreign-cpu")}
    f = a.case_findings[(0, HOST)][0]
    assert re.match(r"worker 3 \(cpu 3\) waited for its CPU \d+% of round \d", f.detail)
    assert "5 of 5 rounds" in f.detail and "pid 10323 (bash)" in f.detail
    assert "pin the arm away from cpu 3" in f.remedy


def test_pinned_hog_in_one_round_is_said_not_refused(clean, write):
    c = synth.case(clean, HOST)
    c["samples"][2]["contention"]["threads"][3]["run_delay_s"] = (
        0.47 * c["samples"][2]["total_seconds"]
    )
    a = assess_files([write(clean)])
    assert tripped(a) == set()
    assert any(
        n.code == "foreign-cpu-noise" and "1 of 5 rounds" in n.detail
        for n in a.case_notes[(0, HOST)]
    )


def test_run_delay_of_unpinned_workers_is_not_foreign(clean, write):
    # Unpinned workers queue behind each other: their run delay is not another process's.
    clean["plan"]["placement"]["pinned"] = False
    faults.pinned_hog(clean, HOST, cpu=3)
    assert (0, HOST, "foreign-cpu") not in tripped(assess_files([write(clean)]))


def test_scattered_host_arm_with_a_narrow_interval_is_accepted(write):
    # CV over the host limit (uniform scatter of 0-45%: CV ~10.6%, max/min under 1.5), but 100
    # rounds narrow the median's interval: said as spread-noted; with 5 rounds the scatter is
    # said as spread (neither refuses: spread names no cause).
    # Planted: the interval limit ignored (always spread) made the first half fail.
    import numpy as np

    rng = np.random.default_rng(3)
    for reps, want in ((100, set()), (5, set())):
        run = synth.make_run(reps=reps)
        c = synth.case(run, HOST)
        base = c["samples"][0]["seconds"]
        x = base * (1 + rng.uniform(0, 0.45, reps))
        x[:2] = base, base * 1.45  # the extremes, so that the CV is over 10% at 5 rounds too
        synth.set_seconds(c, list(x))
        a = assess_files([write(run)])
        assert tripped(a) == want, reps
        said = {n.code for n in a.case_notes[(0, HOST)]}
        assert ("spread-noted" if reps == 100 else "spread") in said


def test_a_case_never_gated_is_cut_short_not_a_wrong_arm(clean, write):
    # A signal before the gate reached the case: the record says not-run; the analysis must not
    # call the arm wrong. Planted: without the not-run branch it was not cut-short.
    c = synth.case(clean, DEV)
    c["gate"].update(result="not-run", mismatches=None, max_abs_err=None, rel_l2_err=None)
    c["samples"], c["stats"] = [], None
    a = assess_files([write(clean)])
    assert (0, DEV, "cut-short") in tripped(a) and (0, DEV, "gate-failed") not in tripped(a)


def test_a_faulted_run_names_the_arm_and_keeps_the_others(clean, write):
    # A plugin arm's fault ended the run: its cases are refused naming it, the run says it is
    # incomplete, the other arms' finished rounds are judged as usual.
    # Planted: case_findings without the fault branch judged the faulted arm's case "ok".
    arm = synth.case(clean, DEV)["arm"]
    clean["status"] = "faulted"
    clean["fault"] = {
        "arm": arm,
        "message": "plugin /x.so: arm x: up0/96 resident: CUDA error: cudaErrorIllegalAddress",
        "context_lost": True,
        "during": "rounds",
        "at_utc": clean["ended_utc"],
    }
    a = assess_files([write(clean)])
    assert (0, DEV, "arm-faulted") in tripped(a)
    assert (0, HOST, "arm-faulted") not in tripped(a)
    assert any(
        f.code == "run-incomplete" and "faulted in its rounds" in f.detail for f in a.run_notes[0]
    )


# ---- a ratio whose arms were capped for different fractions of their time ------------------

RATIO = ("cuda-f32/resident", "cudnn-f32/resident")


def _capped_half(run: dict, cid: str, slower: float = 1.0) -> None:
    """cid capped (power, 80% of each sample) in its even rounds; those samples `slower` x."""
    c = synth.case(run, cid)
    for s in c["samples"]:
        if s["round"] % 2 == 0:
            s["gpu_after"]["throttle_reasons"] = ["SwPowerCap"]
            synth.set_violation(s, "power", 0.8 * s["total_seconds"] * 1e6)
    synth.set_seconds(
        c, [s["seconds"] * (slower if s["round"] % 2 == 0 else 1.0) for s in c["samples"]]
    )


def _ratio(rep: dict, stage_frames: str = "up0/96") -> dict:
    return next(
        r
        for g in rep["groups"]
        for r in g["rows"]
        if (r["arm"], r["den"]) == RATIO and r["case"].startswith(stage_frames + "/")
    )


def test_capped_fractions_differ_without_effect_the_ratio_stands(tmp_path):
    # H200: cudnn-f32 capped 42-67% of its time at >= 1944 MHz, cuda-f32 0%, the capped samples
    # no slower than the others: the cap is said, the ratio kept.
    run = corpus.clean_run(3, reps=8)
    _capped_half(run, "up0/96/cudnn-f32/resident")
    r = _ratio(corpus.judge(run, tmp_path, "capped-no-effect.json"))
    assert r["status"] == "ok", r["reasons"]
    assert [n["code"] for n in r["notes"]] == ["throttle-differs-noted"]


def test_capped_fractions_differ_with_effect_refuses(tmp_path):
    run = corpus.clean_run(3, reps=8)
    _capped_half(run, "up0/96/cudnn-f32/resident", slower=1.05)
    r = _ratio(corpus.judge(run, tmp_path, "capped-slower.json"))
    assert r["status"] == "REFUSED"
    assert "throttle-differs" in {f["code"] for f in r["reasons"]}


def test_an_arm_capped_in_every_round_cannot_show_no_effect(tmp_path, monkeypatch):
    # Planted: the effect test always passing would accept the power-capped-arm corpus (capped in
    # every round, so nothing uncapped to compare): seen caught here.
    monkeypatch.setattr(checks, "_cap_without_effect", lambda case, th: True)
    assert corpus.caught("power-capped-arm", tmp_path, n=4) < 1.0


def test_steal_is_not_counted_as_a_foreign_process(clean, write):
    # A round whose 1 s foreign window is unavailable falls back to the sample's own share,
    # which counts the steal: that part is the hypervisor's, not a process's. (Planted: the
    # fallback without the steal taken out refused this as foreign-cpu.)
    faults.stolen_host(clean, HOST, rounds=(3,))
    s = synth.case(clean, HOST)["samples"][3]
    s["foreign_cpu_window"] = {"share": None, "resolution": None, "cpu_s": None, "window_s": 0.5}
    s["foreign_cpu_window"]["unavailable"] = "window 0.5 s is under the 1.00 s"
    a = assess_files([write(clean)])
    assert tripped(a) == set()
    assert [n.code for n in a.case_notes[(0, HOST)]] == ["host-steal-noted"]
