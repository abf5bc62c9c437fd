"""The package's modules import each other without a circle: the graph of every import between
them (module level and inside functions, where a circle hides from Python's import-time error)
has no cycle. Planted: consistency.py importing `from .load import parse_utc` inside a function
made test_the_package_imports_without_a_circle fail, naming load -> consistency -> load."""

from __future__ import annotations

import ast
from pathlib import Path

import convbench_analysis

PACKAGE = Path(convbench_analysis.__file__).parent


def imports_of(source: str, module: str) -> set[str]:
    """The package's modules `module` imports anywhere in `source` (relative or absolute)."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                base = node.module
            elif node.level == 0 and (node.module or "").startswith("convbench_analysis"):
                base = node.module.removeprefix("convbench_analysis").lstrip(".") or None
            else:
                continue
            if base:
                out.add(base.split(".")[0])
            else:  # from . import a, b
                out |= {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("convbench_analysis."):
                    out.add(a.name.split(".")[1])
    out.discard(module)
    return out


def graph(sources: dict[str, str]) -> dict[str, set[str]]:
    return {m: imports_of(src, m) & set(sources) for m, src in sources.items()}


def circles(g: dict[str, set[str]]) -> list[list[str]]:
    """One path per circle found by a depth-first walk: [a, b, ..., a]."""
    found, state, stack = [], {}, []

    def walk(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(g[m]):
            if state.get(n) == "open":
                found.append(stack[stack.index(n) :] + [n])
            elif n not in state:
                walk(n)
        stack.pop()
        state[m] = "done"

    for m in sorted(g):
        if m not in state:
            walk(m)
    return found


def package_sources() -> dict[str, str]:
    return {p.stem: p.read_text() for p in PACKAGE.glob("*.py")}


def test_the_package_imports_without_a_circle():
    sources = package_sources()
    assert {"load", "consistency", "checks", "drift", "assess"} <= set(sources)
    assert circles(graph(sources)) == []


def test_a_circle_hidden_in_a_function_is_found():
    sources = package_sources()
    # a function-level import back into load from consistency, as it once was
    sources["consistency"] += "\n\ndef _late():\n    from .load import parse_utc\n"
    got = circles(graph(sources))
    assert any(c[0] == c[-1] and {"load", "consistency"} <= set(c) for c in got), got


def test_imports_are_read_in_every_form():
    src = (
        "from . import a, b\nfrom .c import x\nimport convbench_analysis.d\n"
        "from convbench_analysis.e import y\ndef f():\n    from .g import z\nimport os\n"
    )
    assert imports_of(src, "m") == {"a", "b", "c", "d", "e", "g"}
