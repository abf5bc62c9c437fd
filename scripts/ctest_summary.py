#!/usr/bin/env python3
"""The test command's summary of a CTest run: how many ran, passed, failed and were skipped, the
skips grouped by the reason each test printed (a GPU test on a machine without one says so), and
the failures by name; every line within 100 columns.

    ctest ... --output-junit FILE.xml; ctest_summary.py FILE.xml

Reads CTest's JUnit file (CMake >= 3.21). A skip's reason is the line a test printed: after
GoogleTest's "file:line: Skipped", or after "SKIPPED:" (the end-to-end scripts' exit 77);
the reason's first clause (up to ':') groups it. Exit 0; 2 when the file cannot be read.
"""

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import Counter

WIDTH = 100


def skip_reason(out: str) -> str:
    lines = [ln.strip() for ln in (out or "").splitlines()]
    for i, ln in enumerate(lines):
        if ln.startswith("SKIPPED:"):
            return ln[len("SKIPPED:") :].strip() or "no reason given"
        if ln.endswith(": Skipped") and i + 1 < len(lines) and lines[i + 1]:
            return lines[i + 1]
    return "no reason given"


def group_of(reason: str) -> str:
    return reason.split(":", 1)[0].strip() or reason


def fit(line: str) -> str:
    return line if len(line) <= WIDTH else line[: WIDTH - 3] + "..."


def summary(root) -> list[str]:
    cases = root.iter("testcase")
    passed, failed, skipped = [], [], Counter()
    for tc in cases:
        status = tc.get("status", "run")
        if tc.find("skipped") is not None or status in ("notrun", "disabled"):
            skipped[group_of(skip_reason(tc.findtext("system-out")))] += 1
        elif tc.find("failure") is not None or status == "fail":
            failed.append(tc.get("name", "?"))
        else:
            passed.append(tc.get("name", "?"))
    n = len(passed) + len(failed) + sum(skipped.values())
    out = [
        f"tests: {n} ran, {len(passed)} passed, {len(failed)} failed, "
        f"{sum(skipped.values())} skipped"
    ]
    for reason, count in skipped.most_common():
        out.append(fit(f"  {count} skipped: {reason}"))
    for name in failed:
        out.append(fit(f"  FAILED {name}"))
    return out


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line on stderr, exit 2, like an unreadable file
        print(f"ctest_summary: {message}", file=sys.stderr)
        raise SystemExit(2)


def main(argv: list[str]) -> int:
    p = _Parser(prog="ctest_summary.py", description=__doc__.split("\n\n")[0])
    p.add_argument("junit", metavar="CTEST_JUNIT.xml", help="ctest --output-junit's file")
    args = p.parse_args(argv[1:])
    try:
        root = ET.parse(args.junit).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"ctest_summary: {args.junit}: {e}", file=sys.stderr)
        return 2
    print("\n".join(summary(root)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
