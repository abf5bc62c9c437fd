"""Which ratios a report shows: the comparison a user asks for. By default each device candidate
against the peer of its accuracy (cudnn-f32 / cudnn-f64 / cudnn-tf32) when the run has it, else
against the reference, and each host arm against the reference cpu-f64. What an arm is comes from
the record (record.arm_facts: its precision and role): peers and the reference are denominators
only, ceilings (cuBLAS) are stated beside, never paired as candidates, and A/A twins go to the
A/A table. `--baseline ARM` sets every arm against one; `--pairs A:B,...` names the ratios."""

from __future__ import annotations

from collections.abc import Mapping

from . import record

REFERENCE = "cpu-f64/host"


def split(label: str) -> tuple[str, str]:
    arm, _, staging = label.rpartition("/")
    return arm, staging


def facts_of(labels) -> dict[str, record.ArmFacts]:
    """label -> its arm's facts: from the cases when given a mapping label -> case, else (bare
    labels) from the arms' names."""
    if isinstance(labels, Mapping):
        return {lb: record.arm_facts(c) for lb, c in labels.items()}
    return {lb: record.arm_facts({"arm": split(lb)[0]}) for lb in labels}


def _is_twin(label: str, labels) -> bool:
    case = labels.get(label) if isinstance(labels, Mapping) else None
    return bool(case and record.Case.of(case).twin_of) or record.is_twin_arm(split(label)[0])


def resolve(name: str, labels) -> str | None:
    """An arm as the user wrote it (arm or arm/staging) to the one label it names here."""
    if name in labels:
        return name
    same = [lb for lb in labels if split(lb)[0] == name]
    if len(same) == 1:
        return same[0]
    resident = [lb for lb in same if split(lb)[1] == "resident"]
    return resident[0] if len(resident) == 1 else None


def _peer_of(label: str, facts: dict, labels) -> str | None:
    """The peer of the label's accuracy, on its own staging, else resident."""
    want = facts[label].accuracy
    if want is None:
        return None
    staging = split(label)[1]
    for st in (staging, "resident"):
        peers = sorted(
            lb
            for lb, f in facts.items()
            if f.role == "peer"
            and f.accuracy == want
            and split(lb)[1] == st
            and not _is_twin(lb, labels)
        )
        if peers:
            return peers[0]
    return None


def default_pairs(labels) -> list[tuple[str, str]]:
    facts = facts_of(labels)
    refs = sorted(lb for lb, f in facts.items() if f.role == "reference" and split(lb)[1] == "host")
    ref = REFERENCE if REFERENCE in facts else (refs[0] if refs else None)
    out = []
    for lb in sorted(facts):
        if facts[lb].role != "candidate" or _is_twin(lb, labels):
            continue  # twins go to the A/A table; peers, ceilings and the reference are not asked
        den = _peer_of(lb, facts, labels) if split(lb)[1] != "host" else None
        den = den or ref
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


def choose(labels, baseline: str | None, spec: list | None) -> tuple[list, str | None]:
    """(pairs of labels for this group, a note when the request names something absent).
    `labels`: the group's labels, or a mapping label -> case (then the record's arm facts)."""
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
        facts = facts_of(labels)
        return [
            (lb, base) for lb in sorted(labels) if lb != base and facts[lb].role != "ceiling"
        ], None
    return default_pairs(labels), None


def pick_baseline(labels, wanted: str | None) -> str | None:
    """One denominator for the sweep figures and fits: the one asked for, else the reference."""
    if not wanted:
        return REFERENCE if REFERENCE in labels else (sorted(labels) or [None])[0]
    return resolve(wanted, labels)
