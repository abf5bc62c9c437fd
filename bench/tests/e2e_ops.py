"""End-to-end tests of the generator's Conv1d stages and the causal depthwise conv1d through
bench_conv, run by CTest: e2e_ops.py TEST BENCH_CONV SCHEMA REPO.

What a user sees on a CPU-only machine: the new stages and the causal cases gated and timed on
cpu-f64 and cpu-f32, the record valid against the schema, the analysis report reading it, the
generator as one case beside the sum of its stages, --dump recomputed by
scripts/torch_dump_check.py (with numpy here; with torch on the GPU machine), bad stage names
refused in one line. Exit 0 = pass, 1 = fail, 77 = could not run here (the reason is printed).
Planted faults that were seen to fail each test are noted beside the checks.
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "harness"))
import harness  # noqa: E402
from harness import check, gpu_present, load_json, run, skip, validate  # noqa: E402

CPU = ["--arms", "cpu-f64,cpu-f32", "--no-counters", "--no-lease", "--min-time", "0.001"]


def analyze(repo, result, tmp):
    # The analysis from this tree, ahead of whatever else the path holds (its dependencies may
    # live there: carried wheels on the GPU machine).
    path = [os.path.join(repo, "analysis", "src")] + [os.environ.get("PYTHONPATH") or ""]
    return run(
        [sys.executable, "-m", "convbench_analysis", "report", result],
        tmp,
        extra={"PYTHONPATH": os.pathsep.join(p for p in path if p)},
        timeout=300,
    )


def t_ops_run(tmp, bench, schema, repo):
    """AMP, pre and post stages and causal cases on the CPU arms: gated, recorded, reported.
    Planted: the causal shape's "op" written as "forward": the shape checks failed on every causal
    case."""
    stages = "pre,amp3.k3.d1,amp0.k11.d5,post,causal.c64.l64.b2.state,causal.c32.l300.k3.none"
    p = run(
        [bench]
        + [
            "--stage",
            stages,
            "--model",
            "hifigan_v1",
            "--frames",
            "4",
            "--reps",
            "2",
            "--target-ci",
            "0",
            "--out",
            "r.json",
        ]
        + CPU,
        tmp,
    )
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-500:]}")
    r = load_json(os.path.join(tmp, "r.json"))
    validate(r, "ops run", schema)
    ids = {c["id"] for c in r["cases"]}
    for stage, frames in (
        ("pre", 4),
        ("amp3.k3.d1", 4),
        ("amp0.k11.d5", 4),
        ("post", 4),
        ("causal.c64.l64.b2.state", 64),
        ("causal.c32.l300.b1.k3.none", 300),
    ):
        for arm in ("cpu-f64", "cpu-f32"):
            check(
                f"{stage}/{frames}/{arm}/host" in ids, f"missing case {stage}/{frames}/{arm}/host"
            )
    for c in r["cases"]:
        check(c["gate"]["result"] == "pass", f"{c['id']}: gate {c['gate']}")
        check(len(c["samples"]) == 2, f"{c['id']}: {len(c['samples'])} samples")
        s = c["shape"]
        if c["stage"].startswith("causal"):
            check(
                s["op"] == "causal_depthwise" and s["l_in"] == s["l_out"] == c["frames"],
                f"{c['id']}: shape {s}",
            )
            check(
                c["flops"] == 2 * s["batch"] * s["channels"] * s["l_in"] * s["k"],
                f"{c['id']}: flops",
            )
        elif c["stage"].startswith("amp"):
            check(
                s["op"] == "forward" and s["cin"] == s["cout"] and s["l_in"] == s["l_out"],
                f"{c['id']}: shape {s}",
            )
    amp0 = next(c for c in r["cases"] if c["stage"] == "amp0.k11.d5")["shape"]
    check(
        amp0["cin"] == 256
        and amp0["dilation"] == 5
        and amp0["padding"] == 25
        and amp0["l_in"] == 32,
        f"amp0.k11.d5 of hifigan_v1 at 4 frames: {amp0}",
    )
    a = analyze(repo, os.path.join(tmp, "r.json"), tmp)
    # Outside the lease the analysis refuses (exit 3) and says why; it must not crash.
    check(
        a.returncode in (0, 3) and "Traceback" not in a.stderr,
        f"analysis exit {a.returncode}: {a.stderr[-500:]}",
    )
    for stage in ("amp3.k3.d1", "causal.c64.l64.b2.state"):
        check(stage in a.stdout, f"analysis report does not name {stage}")
    print(a.stdout[:1500])


def t_ops_generator(tmp, bench, schema, repo):
    """--stage generator: every convolution in order as one case, its distinct stages beside it,
    the sum of their bests (with multiplicity) in the table. Planted: report.cpp's sum loop
    skipping the generator case made the 'sum(pre..post)' check fail."""
    p = run(
        [bench]
        + [
            "--stage",
            "generator",
            "--model",
            "hifigan_v1",
            "--frames",
            "1",
            "--reps",
            "1",
            "--target-ci",
            "0",
            "--out",
            "g.json",
        ]
        + CPU,
        tmp,
        timeout=900,
    )
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-500:]}")
    r = load_json(os.path.join(tmp, "g.json"))
    validate(r, "generator run", schema)
    gen = [c for c in r["cases"] if c["stage"] == "generator"]
    check(len(gen) == 2, f"{len(gen)} generator cases")
    if gen:
        names = [s["stage"] for s in gen[0]["shape"]["stages"]]
        check(
            len(names) == 1 + 4 + 4 * 18 + 1 and names[0] == "pre" and names[-1] == "post",
            f"generator stages {len(names)}: {names[:3]}..{names[-2:]}",
        )
        check(names.count("amp1.k7.d1") == 4 and names.count("amp1.k7.d3") == 1, "AMP multiplicity")
        singles = {c["stage"] for c in r["cases"]} - {"generator"}
        check(
            singles == set(names),
            f"distinct stages run beside it: {sorted(set(names) - singles)} missing",
        )
        flops = {c["stage"]: c["flops"] for c in r["cases"]}
        want = sum(flops.get(n, 0.0) for n in names)
        check(
            abs(gen[0]["flops"] - want) <= 1e-9 * want, "the generator's FLOPs count every repeat"
        )
    check("sum(pre..post)" in p.stdout, f"no sum row in the table: {p.stdout[-600:]}")


def t_ops_dump(tmp, bench, schema, repo):
    """--dump of the new ops, recomputed by scripts/torch_dump_check.py (numpy backend here).
    Planted: one cell of a dumped cpu-f64 output moved by one ulp, and a causal final state
    changed: the script exits 1 naming both (done below, on a copy of the dump)."""
    try:
        import numpy as np
    except ImportError:
        skip("python module numpy is not installed")
    d = os.path.join(tmp, "dump")
    p = run(
        [bench]
        + [
            "--stage",
            "amp1.k7.d3,post,chain,causal.c24.l300.b3.state",
            "--model",
            "hifigan_v1",
            "--frames",
            "2",
            "--reps",
            "1",
            "--target-ci",
            "0",
            "--out",
            "d.json",
            "--dump",
            d,
        ]
        + CPU,
        tmp,
    )
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-500:]}")
    script = os.path.join(repo, "scripts", "torch_dump_check.py")
    c = run(
        [sys.executable, script, d, "--backend", "numpy"],
        timeout=600,
    )
    check(
        c.returncode == 0,
        f"torch_dump_check exit {c.returncode}: {c.stdout[-800:]} {c.stderr[-300:]}",
    )
    check(" 0 failed" in c.stdout, f"torch_dump_check: {c.stdout[-300:]}")
    print(c.stdout[-1200:])
    case = os.path.join(d, "amp1.k7.d3-2", "out_cpu-f64_host.npy")
    y = np.load(case)
    y.view(np.int32).flat[3] += 1
    np.save(case, y)
    fs = os.path.join(d, "causal.c24.l300.b3.state-300", "out_cpu-f32_host_final_state.npy")
    f = np.load(fs)
    f.flat[0] += 1.0
    np.save(fs, f)
    c = run(
        [sys.executable, script, d, "--backend", "numpy"],
        timeout=600,
    )
    check(c.returncode == 1, f"planted faults: torch_dump_check exit {c.returncode}")
    check(
        "amp1.k7.d3-2: cpu-f64/host (reference) is not bit-identical" in c.stdout,
        "planted ulp not named",
    )
    check("cpu-f32/host: final state differs" in c.stdout, "planted final state not named")
    h = run([sys.executable, script, "--help"], timeout=60)
    check(h.returncode == 0 and "--backend" in h.stdout, "--help without torch")
    t_ops_dump_no_bias(np, bench, repo, tmp)


def t_ops_dump_no_bias(np, bench, repo, tmp):
    """--dump of a stage without bias (the default model, BigVGAN v2, has post_bias false): no
    bias file, "bias" false in the shape and null in stage_files, and the dump recomputed.
    Planted: the bias file written for every stage: the run exits 1 ("bias.npy: shape does not
    match the element count"), as it did on the GPU machine."""
    d = os.path.join(tmp, "dump_no_bias")
    p = run(
        [bench]
        + ["--stage", "post,amp0.k3.d1", "--frames", "2", "--reps", "1", "--target-ci", "0"]
        + ["--out", "nb.json", "--dump", d]
        + CPU,
        tmp,
    )
    check(p.returncode == 0, f"no bias: exit {p.returncode}: {p.stderr[-500:]}")
    post = os.path.join(d, "post-2")
    meta = load_json(os.path.join(post, "problem.json"))
    check(meta["shape"]["bias"] is False, f"no bias: shape {meta['shape']}")
    check(meta["stage_files"][0]["bias"] is None, f"no bias: stage_files {meta['stage_files']}")
    check(not os.path.exists(os.path.join(post, "bias.npy")), "no bias: no bias.npy")
    check("bias" not in meta["files"], f"no bias: files {meta['files']}")
    amp = load_json(os.path.join(d, "amp0.k3.d1-2", "problem.json"))
    b = np.load(os.path.join(d, "amp0.k3.d1-2", amp["stage_files"][0]["bias"]))
    check(b.shape == (amp["shape"]["cout"],), f"a stage with bias keeps its file: {b.shape}")
    script = os.path.join(repo, "scripts", "torch_dump_check.py")
    c = run(
        [sys.executable, script, d, "--backend", "numpy"],
        timeout=600,
    )
    check(
        c.returncode == 0 and " 0 failed" in c.stdout,
        f"no bias: torch_dump_check exit {c.returncode}: {c.stdout[-800:]} {c.stderr[-300:]}",
    )


def t_ops_errors(tmp, bench, schema, repo):
    """Bad stage names: exit 2, one line naming what the model has, no file. Planted: dropping the
    dilation check let amp0.k3.d2 through (exit 0, an empty plan)."""
    for args, want in (
        (["amp9"], "amp0..amp3"),
        (["amp0.k5.d1"], "AMP kernels 3, 7, 11"),
        (["amp0.k3.d2"], "AMP dilations 1, 3, 5"),
        (["up4"], "up0..3"),
        (["causal.c8"], "expected causal.c"),
        (["causal.c8.l4.k1"], "k must be in"),
        (["generator,Pre"], "unknown stage"),
    ):
        before = set(os.listdir(tmp))
        p = run(
            [bench]
            + ["--stage", args[0], "--model", "hifigan_v1", "--no-lease", "--out", "x.json"],
            tmp,
        )
        lines = p.stderr.strip().splitlines()
        check(
            p.returncode == 2 and len(lines) == 1 and want in lines[0],
            f"[{args[0]}] exit {p.returncode}: {p.stderr.strip()[:300]!r}",
        )
        check(set(os.listdir(tmp)) == before, f"[{args[0]}] left files")
        print(f"ok exit 2: {args[0]}: {lines[0] if lines else ''}")


def t_ops_gpu(tmp, bench, schema, repo):
    """On a GPU: the AMP stages on every forward-capable device arm beside cuDNN, and the causal
    pair (f32 and bf16) gated; the register and the tiled kernel's dumped outputs bit-identical."""
    if not gpu_present():
        skip(
            "no GPU here (nvidia-smi -L failed): the causal CUDA pair and the device AMP arms "
            "run on the GPU machine only"
        )
    import numpy as np

    d = os.path.join(tmp, "dump")
    pair = ["cuda-causal-register", "cuda-causal-tiled"]
    arms = ",".join(["cpu-f64"] + pair + [a + "-bf16" for a in pair])
    p = run(
        [bench]
        + [
            "--stage",
            "causal.c1024.l1024.b8.state,causal.c1024.l1.b1,causal.c4096.l8192.b1",
            "--arms",
            arms,
            "--reps",
            "2",
            "--target-ci",
            "0",
            "--no-lease",
            "--out",
            "c.json",
            "--dump",
            d,
        ],
        tmp,
    )
    check(p.returncode == 0, f"causal exit {p.returncode}: {p.stderr[-800:]}")
    r = load_json(os.path.join(tmp, "c.json"))
    validate(r, "causal gpu run", schema)
    for c in r["cases"]:
        check(c["gate"]["result"] == "pass", f"{c['id']}: {c['gate']}")
    for case in os.listdir(d):
        for staging in ("per-call", "resident"):
            for out in ("", "-bf16"):
                a = np.load(os.path.join(d, case, f"out_cuda-causal-register{out}_{staging}.npy"))
                b = np.load(os.path.join(d, case, f"out_cuda-causal-tiled{out}_{staging}.npy"))
                check(
                    np.array_equal(a.view(np.uint32), b.view(np.uint32)),
                    f"{case} {staging}{out}: register and tiled differ",
                )
    p = run(
        [bench]
        + [
            "--stage",
            "amp0,generator",
            "--frames",
            "96",
            "--arms",
            "cpu-f64,cuda-f64,cuda-f32,cuda-tf32,cudnn-f32,cudnn-f64",
            "--staging",
            "resident",
            "--reps",
            "2",
            "--target-ci",
            "0",
            "--no-lease",
            "--out",
            "a.json",
        ],
        tmp,
        timeout=1800,
    )
    check(p.returncode == 0, f"amp exit {p.returncode}: {p.stderr[-800:]}")
    check(
        "cuda-tf32 does not run amp0.k3.d1/96: the tensor-core kernels handle ConvTranspose1d"
        in p.stderr,
        "the tensor-core arm must refuse a forward stage, saying why",
    )
    check("cudnn-f32 does not run generator/96" in p.stderr, "cuDNN runs single stages only")
    r = load_json(os.path.join(tmp, "a.json"))
    validate(r, "amp gpu run", schema)
    for c in r["cases"]:
        check(c["gate"]["result"] == "pass", f"{c['id']}: {c['gate']}")
    print(p.stdout[-3000:])
    ceilings_gpu(tmp, bench, schema, repo, pair)


def ceilings_gpu(tmp, bench, schema, repo, pair):
    """The causal pair beside the copy and launch ceilings in the same rounds: both self-checked
    and timed on every single stage (a Conv1d one too), the generator refused with the reason, and
    the report's % of ceiling rows for the pair against each. Teeth, still to be seen failing on
    the GPU machine: CeilingArm::supports accepting a sequence (no refusal line)."""
    hardware = ["cuda-copy", "cuda-launch"]
    p = run(
        [bench]
        + [
            "--stage",
            "causal.c1024.l1024.b8.state,causal.c1024.l1.b1,amp0.k3.d1,generator",
            "--frames",
            "8",
            "--arms",
            ",".join(["cpu-f64", *pair, *hardware]),
            "--staging",
            "resident",
            "--reps",
            "3",
            "--target-ci",
            "0",
            "--no-lease",
            "--no-counters",
            "--out",
            "h.json",
        ],
        tmp,
    )
    check(p.returncode == 0, f"ceilings exit {p.returncode}: {p.stderr[-800:]}")
    for arm in hardware:
        check(
            f"{arm} does not run generator/8: a copy or launch ceiling stands beside one stage"
            in p.stderr,
            f"{arm} must refuse the generator, saying why",
        )
    r = load_json(os.path.join(tmp, "h.json"))
    validate(r, "ceilings gpu run", schema)
    seen = set()
    for c in r["cases"]:
        if c["arm"] in hardware:
            seen.add((c["stage"], c["arm"]))
            g = c["gate"]
            check(g["kind"] == "self" and g["result"] == "pass", f"{c['id']}: {g}")
            check(c["role"] == "ceiling" and len(c["samples"]) >= 3, f"{c['id']} not timed")
    check(len(seen) == 2 * 3, f"copy and launch cases: {sorted(seen)}")  # 3 single stages
    a = analyze(repo, os.path.join(tmp, "h.json"), tmp)
    check(a.returncode in (0, 3, 4), f"analysis exit {a.returncode}: {a.stderr[-500:]}")
    for arm in hardware:
        check(
            any(f"/{pair[0]}/resident" in ln and arm in ln for ln in a.stdout.splitlines()),
            f"no % of ceiling row of {pair[0]} against {arm}",
        )
    print(a.stdout[-3000:])


TESTS = {
    "ops_run": t_ops_run,
    "ops_generator": t_ops_generator,
    "ops_dump": t_ops_dump,
    "ops_errors": t_ops_errors,
    "ops_gpu": t_ops_gpu,
}

if __name__ == "__main__":
    harness.main(TESTS, "bench_e2e")
