"""bench_conv --list: every listing parses, matches the catalog (bench/data/models.json, the
registry) and the rules of the table's "about" text; a bad value is one line on stderr, exit 2,
nothing on stdout. Usage: list_check.py BENCH_CONV MODELS_JSON"""

import json
import subprocess
import sys

FAILED = []


def check(ok, what):
    if not ok:
        FAILED.append(what)
        print("FAIL: " + what)


def run(bench, *args):
    return subprocess.run([bench, *args], capture_output=True, text=True, timeout=120)


def listing(bench, *args):
    p = run(bench, "--list", *args, "--json")
    check(
        p.returncode == 0 and p.stderr == "",
        f"--list {' '.join(args)}: exit {p.returncode}: {p.stderr}",
    )
    return json.loads(p.stdout)


def table_models(table):
    """Each listed model, then its aliases that set their own num_mels."""
    out = []
    for m in table["models"]:
        out.append(m)
        for a in m.get("aliases", []):
            if isinstance(a, dict):
                out.append({**m, "name": a["name"], "num_mels": a["num_mels"]})
    return out


def rule_shape(m, stage, frames):
    """The table's "about" rules, stated once more here as the oracle of the listing."""
    c, strides, kernels = m["channels"], m["strides"], m["kernels"]

    def length(i):
        n = frames
        for s in strides[:i]:
            n *= s
        return n

    if stage.startswith("up"):
        i = int(stage[2:])
        k, s = kernels[i], strides[i]
        return dict(
            op="transposed",
            cin=c >> i,
            cout=c >> (i + 1),
            k=k,
            stride=s,
            padding=(k - s) // 2,
            dilation=1,
            l_in=length(i),
            bias=True,
        )
    if stage == "pre":
        k = m["pre_kernel"]
        return dict(
            op="forward",
            cin=m["num_mels"],
            cout=c,
            k=k,
            stride=1,
            padding=(k - 1) // 2,
            dilation=1,
            l_in=frames,
            bias=True,
        )
    if stage == "post":
        k = m["post_kernel"]
        return dict(
            op="forward",
            cin=c >> len(strides),
            cout=1,
            k=k,
            stride=1,
            padding=(k - 1) // 2,
            dilation=1,
            l_in=length(len(strides)),
            bias=m["post_bias"],
        )
    block, kk, dd = stage.split(".")
    i, k, d = int(block[3:]), int(kk[1:]), int(dd[1:])
    return dict(
        op="forward",
        cin=c >> (i + 1),
        cout=c >> (i + 1),
        k=k,
        stride=1,
        padding=d * (k - 1) // 2,
        dilation=d,
        l_in=length(i + 1),
        bias=True,
    )


def check_models(bench, table):
    got = listing(bench, "models")
    want = table_models(table)
    check(
        [m["name"] for m in got] == [m["name"] for m in want],
        f"model names {[m['name'] for m in got]}",
    )
    for g, w in zip(got, want, strict=False):
        for key in ("num_mels", "channels", "strides", "kernels", "post_bias"):
            check(g[key] == w[key], f"{g['name']}: {key} {g[key]} != the table's {w[key]}")
        check(g["default"] == (g["name"] == table["default"]), f"{g['name']}: default flag")
    return want


def check_stages_and_cases(bench, m):
    st = listing(bench, "stages", "--model", m["name"])
    n_amp = len(m["resblock_kernels"]) * len(m["resblock_dilations"])
    check(
        len(st["stages"]) == 2 + len(m["strides"]) * (1 + n_amp),
        f"{m['name']}: {len(st['stages'])} stages",
    )
    cases = listing(
        bench, "cases", "--model", m["name"], "--stage", ",".join(st["stages"]), "--frames", "1,96"
    )
    check(len(cases) == 2 * len(st["stages"]), f"{m['name']}: {len(cases)} cases")
    for c in cases:
        want = rule_shape(m, c["stage"], c["frames"])
        got = {k: c["shape"][k] for k in want}
        check(got == want, f"{m['name']} {c['id']}: {got} != the table's {want}")
        check(c["id"] == f"{c['stage']}/{c['frames']}", f"case id {c['id']}")
    # "chain" brings its upsample stages along, then is one case of them in order.
    ups = [f"up{i}" for i in range(len(m["strides"]))]
    chain = listing(bench, "cases", "--model", m["name"], "--stage", "chain", "--frames", "8")
    check([c["stage"] for c in chain] == ups + ["chain"], f"{m['name']}: chain plans {chain}")
    stages = [s["stage"] for s in chain[-1]["shape"]["stages"]]
    check(stages == ups, f"{m['name']}: chain of {stages}")


def check_arms(bench):
    arms = listing(bench, "arms")
    names = [a["name"] for a in arms]
    check(len(names) == len(set(names)), "arm names repeat")
    refs = [a["name"] for a in arms if a["role"] == "reference"]
    check(refs == ["cpu-f64"] and names[0] == "cpu-f64", f"references {refs}, first {names[:1]}")
    for a in arms:
        # A ceiling that computes nothing (cuda-copy, cuda-launch, in CUDA builds) carries no
        # arithmetic: no precision, its own check, and never in the default set. Planted (seen
        # failing in a CUDA build): CeilingArm::hidden() returning false.
        bare = a["gate"] == "self"
        check(
            (
                a["precision"] is None
                if bare
                else a["precision"] in ("f64", "f32", "f32x3", "tf32", "bf16")
            )
            and a["math"],
            f"{a['name']}: facts",
        )
        check(a["role"] in ("reference", "candidate", "peer", "ceiling"), f"{a['name']}: role")
        if bare:
            check(
                a["role"] == "ceiling" and a["hidden"] and a["stagings"] == ["resident"],
                f"{a['name']}: a self-checked ceiling in the default set or not resident: {a}",
            )
    text = run(bench, "--list", "arms")
    check(
        [line.split()[0] for line in text.stdout.splitlines()] == names,
        "text and JSON list other arms",
    )


def check_refusals(bench):
    for args in (
        ["--list", "nothing"],
        ["--json"],
        ["--list", "cases", "--stage", "up99"],
        ["--list", "cases", "--model", "nope"],
        ["--list", "arms", "--reps", "3"],
    ):
        p = run(bench, *args)
        err = p.stderr.strip().splitlines()
        check(
            p.returncode == 2
            and len(err) == 1
            and err[0].startswith("bench_conv: ")
            and p.stdout == "",
            f"{args}: exit {p.returncode}, stdout {p.stdout[:80]!r}, stderr {err}",
        )


def main():
    bench, models_json = sys.argv[1], sys.argv[2]
    with open(models_json) as f:
        table = json.load(f)
    for m in check_models(bench, table):
        check_stages_and_cases(bench, m)
    check_arms(bench)
    check_refusals(bench)
    print(f"list_check: {len(FAILED)} failed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
