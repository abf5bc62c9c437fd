"""convbench-analyze: report | plot | compare | gates | fleet.

Exit codes: 0 every ratio accepted (or nothing to judge), 2 bad input (one line on stderr, no
traceback), 3 at least one ratio or comparison REFUSED."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import fleet

EXIT_OK, EXIT_BAD_INPUT, EXIT_REFUSED = 0, 2, 3
PROG = "convbench-analyze"


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, like every other bad input
        print(f"{PROG}: error: {message} (see {PROG} --help)", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Validate convbench results, apply the gates, report "
        "ratios with confidence or refuse with every reason.",
    )
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    common = _Parser(add_help=False)
    common.add_argument(
        "--threshold",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a gate threshold (see `gates`)",
    )
    common.add_argument("--seed", type=int, default=None, help="bootstrap seed")
    common.add_argument("--schema", default=None, help="validate against this schema file")
    r = sub.add_parser("report", parents=[common], help="ratios per (stage, frames) or REFUSED")
    r.add_argument("files", nargs="+")
    r.add_argument("--baseline", default=None, help="denominator arm (arm or arm/staging)")
    r.add_argument("--json", action="store_true", help="machine-readable output")
    pl = sub.add_parser("plot", parents=[common], help="scaling sweep figures (PNG + SVG)")
    pl.add_argument("files", nargs="+")
    pl.add_argument("--out", default="plots", help="output folder (default: plots)")
    pl.add_argument("--baseline", default=None)
    c = sub.add_parser("compare", parents=[common], help="the same arm across two runs")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--arm", default=None, help="only this arm (arm or arm/staging)")
    c.add_argument("--json", action="store_true")
    sub.add_parser("gates", help="list the gates and the thresholds with their defaults")
    fleet.add_parser(sub, common)
    return p


def _gates_table() -> str:
    from .gates import GATES
    from .thresholds import Thresholds

    lines = ["gates:"]
    for g in GATES.values():
        th = f"  [thresholds: {', '.join(g.thresholds)}]" if g.thresholds else ""
        lines.append(f"  {g.code:<15} {g.message}{th}\n  {'':<15} fix: {g.remedy}")
    lines.append("thresholds (override with --threshold NAME=VALUE):")
    for name, default, doc in Thresholds.describe():
        lines.append(f"  {name:<22} {default:<8g} {doc}")
    return "\n".join(lines)


def run(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.cmd == "gates":
        print(_gates_table())
        return EXIT_OK
    from . import compare, gates, plot, report
    from .load import InputError, load_run, load_schema
    from .stats import DEFAULT_SEED
    from .thresholds import Thresholds

    try:
        th = Thresholds().with_overrides(args.threshold)
    except ValueError as e:
        raise InputError("command line", "", str(e)) from None
    if args.schema:
        try:
            schema = load_schema(args.schema)
        except (OSError, ValueError) as e:
            raise InputError(args.schema, "", f"unreadable schema: {e}") from None
    else:
        schema = None
    seed = DEFAULT_SEED if args.seed is None else args.seed
    files = [args.a, args.b] if args.cmd == "compare" else args.files
    runs = [load_run(f, schema) for f in files]
    a = gates.assess(runs, th)
    if args.cmd == "fleet":
        return fleet.run(args, a, seed)
    if args.cmd == "report":
        rep = report.build(a, args.baseline, seed)
        print(json.dumps(rep, indent=1) if args.json else report.render(rep))
        return EXIT_REFUSED if rep["refused"] else EXIT_OK
    if args.cmd == "compare":
        rep = compare.build(a, args.arm, seed)
        print(json.dumps(rep, indent=1) if args.json else compare.render(rep))
        return EXIT_REFUSED if rep["refused"] else EXIT_OK
    written = plot.plot(a, Path(args.out), args.baseline)
    for p in written:
        print(p)
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    from .load import InputError

    try:
        return run(argv)
    except InputError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # `report ... | head`: the reader left, which is not bad input
        sys.stderr.close()  # no second complaint from the interpreter's flush at exit
        return 128 + 13  # what a shell reports for a process ended by SIGPIPE
    except OSError as e:  # e.g. the plot folder cannot be written
        print(f"{PROG}: error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
