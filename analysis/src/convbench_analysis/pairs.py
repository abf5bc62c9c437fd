"""Which ratios a report shows: the comparison a user asks for. By default each device arm
against the peer of its precision (cudnn-f32 / cudnn-f64 / cudnn-tf32) when the run has it,
else against the reference, and each host arm against the reference cpu-f64. `--baseline ARM`
sets every arm against one; `--pairs A:B,...` names the ratios."""

from __future__ import annotations

import re

REFERENCE = "cpu-f64/host"
TWIN = re.compile(r"#\d+$")  # an A/A twin's suffix: cuda-f32#2
PEERS = ("cudnn-", "torch-cudnn-")
CEILINGS = ("cublas-",)  # a GEMM, not the convolution: ceilings.py sets arms against them


def split(label: str) -> tuple[str, str]:
    arm, _, staging = label.rpartition("/")
    return arm, staging


def precision(arm: str) -> str | None:
    """cuda-f64-fma -> f64, cuda-f32x3 -> f32, cudnn-tf32 -> tf32."""
    for tok in TWIN.sub("", arm).split("-")[1:]:
        m = re.fullmatch(r"(tf32|f64|f32|bf16|f16)(x\d+)?", tok)
        if m:
            return m.group(1)
    return None


def is_peer(arm: str) -> bool:
    return arm.startswith(PEERS)


def resolve(name: str, labels: list[str]) -> str | None:
    """An arm as the user wrote it (arm or arm/staging) to the one label it names here."""
    if name in labels:
        return name
    same = [lb for lb in labels if split(lb)[0] == name]
    if len(same) == 1:
        return same[0]
    resident = [lb for lb in same if split(lb)[1] == "resident"]
    return resident[0] if len(resident) == 1 else None


def _peer_of(label: str, labels: list[str]) -> str | None:
    arm, staging = split(label)
    p = precision(arm)
    if p is None:
        return None
    for prefix in PEERS:
        for st in (staging, "resident"):
            cand = f"{prefix}{p}/{st}"
            if cand in labels:
                return cand
    return None


def default_pairs(labels: list[str]) -> list[tuple[str, str]]:
    out = []
    for lb in sorted(labels):
        arm, staging = split(lb)
        if lb == REFERENCE or TWIN.search(arm) or is_peer(arm) or arm.startswith(CEILINGS):
            continue  # twins go to the A/A table; peers and the reference are denominators
        den = _peer_of(lb, labels) if staging != "host" else None
        den = den or (REFERENCE if REFERENCE in labels else None)
        if den:
            out.append((lb, den))
    return out


def parse_spec(spec: str) -> list[tuple[str, str]]:
    """'cuda-f32:cudnn-f32,cpu-f32:cpu-f64' -> [(num, den), ...]; ValueError on a bad item."""
    out = []
    for item in spec.split(","):
        num, sep, den = item.strip().partition(":")
        if not sep or not num or not den:
            raise ValueError(f"--pairs item {item!r}: expected NUM:DEN (arm or arm/staging)")
        out.append((num, den))
    return out


def choose(labels: list[str], baseline: str | None, spec: list | None) -> tuple[list, str | None]:
    """(pairs of labels for this group, a note when the request names something absent)."""
    if spec:
        got, missing = [], []
        for num, den in spec:
            a, b = resolve(num, labels), resolve(den, labels)
            if a and b:
                got.append((a, b))
            else:
                missing.append(f"{num}:{den}")
        return got, (f"pairs {', '.join(missing)} not in this group" if missing else None)
    if baseline:
        base = resolve(baseline, labels)
        if base is None:
            return [], f"baseline {baseline!r} not among {', '.join(sorted(labels))}"
        return [(lb, base) for lb in sorted(labels) if lb != base], None
    return default_pairs(labels), None


def pick_baseline(labels: list[str], wanted: str | None) -> str | None:
    """One denominator for the sweep figures and fits: the one asked for, else the reference."""
    if not wanted:
        return REFERENCE if REFERENCE in labels else (sorted(labels) or [None])[0]
    return resolve(wanted, labels)
