"""kernels/tc/tools/gen_wgmma.py: the committed wrappers are what the script writes, and --check
sees a difference (a planted one-character change to a copy fails it)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "kernels" / "tc" / "tools" / "gen_wgmma.py"
COMMITTED = ROOT / "kernels" / "tc" / "src" / "wgmma_ops.inc"


def check(path):
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "--out", str(path)], capture_output=True, text=True
    )


def test_committed_file_is_current():
    r = check(COMMITTED)
    assert r.returncode == 0, r.stderr


def test_a_changed_file_fails_the_check(tmp_path):
    text = COMMITTED.read_text()
    planted = tmp_path / "wgmma_ops.inc"
    planted.write_text(text.replace("m64n128k8", "m64n120k8", 1))
    r = check(planted)
    assert r.returncode == 1
    assert "differs" in r.stderr


def test_every_width_has_its_registers():
    text = COMMITTED.read_text()
    for kind, widths in (("Wgmma", (64, 96, 128, 192, 256)), ("WgmmaRS", (8, 24, 96, 192))):
        for n in widths:
            body = text.split(f"struct {kind}<{n}> {{")[1].split("};")[0]
            assert f"float (&d)[{n // 2}]" in body
            assert f'"+f"(d[{n // 2 - 1}])' in body
            assert f'"+f"(d[{n // 2}])' not in body
            assert f"m64n{n}k8.f32.tf32.tf32" in body
            # The register A operand: four registers after the N/2 accumulators.
            if kind == "WgmmaRS":
                assert f"{{%{n // 2}, %{n // 2 + 1}, %{n // 2 + 2}, %{n // 2 + 3}}}" in body
