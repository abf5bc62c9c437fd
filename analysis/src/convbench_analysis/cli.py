"""convbench-analyze: report | plot | compare | history | calibrate | index | fleet | gpus |
perf-table | host-table | tile-table | frontier | targets | checks | explain | html.

Exit codes: 0 nothing refused (or nothing to judge), 2 bad input (one line on stderr, no
traceback), 3 at least one case, ratio or comparison REFUSED for a named cause, 4 (with
--strict, for CI) nothing refused but a case imprecise or a ratio AMBIGUOUS.

A subcommand is one entry in COMMANDS: a function that adds its arguments to its parser and a
function that runs it (args -> exit code). `add_command` is how another module adds one."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from . import tables

EXIT_OK, EXIT_BAD_INPUT, EXIT_REFUSED, EXIT_STRICT = 0, 2, 3, 4
PROG = "convbench-analyze"


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, like every other bad input
        print(f"{PROG}: error: {message} (see {PROG} --help)", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


# name -> (help, add_arguments(parser), run(args) -> exit code, takes the common options)
COMMANDS: dict[str, tuple[str, Callable, Callable, bool]] = {}


_FLEET_HELP = "the same plan across hosts: spread, outlier hosts (slow or noisy), per-host ratios"


def add_command(name: str, help: str, arguments: Callable, run: Callable, common=True) -> None:
    COMMANDS[name] = (help, arguments, run, common)


# ---- shared by the commands that read records ---------------------------------------------


def _common() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument(
        "--threshold",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a check's threshold (see `checks`)",
    )
    common.add_argument("--seed", type=int, default=None, help="bootstrap seed (compare)")
    common.add_argument("--schema", default=None, help="validate against this schema file")
    return common


def thresholds(args):
    from .load import InputError
    from .thresholds import Thresholds

    try:
        return Thresholds().with_overrides(args.threshold)
    except ValueError as e:
        raise InputError("command line", "", str(e)) from None


def seed(args) -> int:
    from .stats import DEFAULT_SEED

    return DEFAULT_SEED if args.seed is None else args.seed


def load_runs(args, files) -> list:
    from .load import InputError, load_run, load_schema

    schema = None
    if args.schema:
        try:
            schema = load_schema(args.schema)
        except (OSError, ValueError) as e:
            raise InputError(args.schema, "", f"unreadable schema: {e}") from None
    return [load_run(f, schema) for f in files]


def _history_runs(args, runs, th) -> tuple[list, list]:
    """From the history folder(s) (--history DIR, else each file's own folder): the earlier runs
    to set the cases against, and the lease holds of any run there that overlap the runs'."""
    from .history import earlier_runs, open_index
    from .overlap import history_holds

    if getattr(args, "no_history", False):
        return [], []
    folders = [Path(args.history)] if args.history else sorted({Path(r.path).parent for r in runs})
    out, seen, held = [], set(), {}
    for folder in folders:
        db = open_index(folder, th)
        try:
            for run in runs:
                for h in earlier_runs(db, run, int(th.history_depth) + 2):
                    if h.data["run_id"] not in seen:
                        seen.add(h.data["run_id"])
                        out.append(h)
            for h in history_holds(db, runs):
                held[h.path] = h
        finally:
            db.close()
    return out, list(held.values())


def _history_args(p) -> None:
    p.add_argument(
        "--history",
        default=None,
        metavar="DIR",
        help="results folder to find earlier runs in (default: each file's own folder)",
    )
    p.add_argument("--no-history", action="store_true", help="do not look for earlier runs")


# ---- the commands -------------------------------------------------------------------------


def _report_args(p) -> None:
    p.add_argument("files", nargs="+", metavar="RUN.json", help="bench_conv result records")
    p.add_argument("--baseline", default=None, help="set every arm against this one")
    p.add_argument("--pairs", default=None, metavar="A:B,...", help="the ratios to show")
    tables.add_format(p, "every case, ratio and check, times in seconds", json_flag=True)
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 4 when nothing is refused but a case is imprecise or a ratio AMBIGUOUS",
    )
    _history_args(p)


def report_exit(rep: dict, strict: bool) -> int:
    if rep["refused"] or rep["refused_cases"]:
        return EXIT_REFUSED
    if strict and (rep["imprecise_cases"] or rep["ambiguous"]):
        return EXIT_STRICT
    return EXIT_OK


def _report(args) -> int:
    from . import pairs, report
    from .assess import assess
    from .load import InputError

    th = thresholds(args)
    try:
        spec = pairs.parse_spec(args.pairs) if args.pairs else None
    except ValueError as e:
        raise InputError("command line", "", str(e)) from None
    runs = load_runs(args, args.files)
    earlier, held = _history_runs(args, runs, th)
    a = assess(runs, th, earlier, held=held)
    rep = report.build(a, args.baseline, spec)
    if spec and not any(g["rows"] for g in rep["groups"]):
        raise InputError("command line", "", f"--pairs {args.pairs!r}: no run has both arms")
    fmt = tables.format_of(args)
    print(tables.dumps(rep) if fmt == "json" else report.render(rep, fmt))
    return report_exit(rep, args.strict)


def _plot_args(p) -> None:
    p.add_argument("files", nargs="*", help="runs of a sweep (or none, with --case)")
    p.add_argument("--out", default="plots", help="output folder (default: plots)")
    p.add_argument("--baseline", default=None, help="draw every arm against this one")
    p.add_argument("--case", default=None, metavar="CASE_ID", help="draw this case's history")
    p.add_argument("--history", default="results", metavar="DIR", help="default: results")


def _plot(args) -> int:
    from . import history_view, plot
    from .assess import assess
    from .load import InputError

    if args.case:
        th = thresholds(args)
        rep = history_view.build(args.history, args.case, None, th)
        written = plot.plot_history(rep, Path(args.out), th)
        said = plot.history_refused_line(rep, th)
    elif not args.files:
        raise InputError("command line", "", "plot needs result files, or --case CASE_ID")
    else:
        a = assess(load_runs(args, args.files), thresholds(args))
        written, said = plot.plot(a, Path(args.out), args.baseline), plot.refused_line(a)
    for p in written:
        print(p)
    if said:  # like report: 3 when a point is refused for a cause
        print(said, file=sys.stderr)
    return EXIT_REFUSED if said else EXIT_OK


def _compare_args(p) -> None:
    p.add_argument("a", metavar="A.json", help="the run before (A)")
    p.add_argument("b", metavar="B.json", help="the run after (B)")
    p.add_argument("--arm", default=None, help="only this arm (arm or arm/staging)")
    tables.add_format(p, "every comparison with its reasons, times in seconds", json_flag=True)


def _compare(args) -> int:
    from . import compare
    from .assess import assess

    a = assess(load_runs(args, [args.a, args.b]), thresholds(args), compared=True)
    rep = compare.build(a, args.arm, seed(args))
    fmt = tables.format_of(args)
    print(tables.dumps(rep) if fmt == "json" else compare.render(rep, fmt))
    return EXIT_REFUSED if rep["refused"] else EXIT_OK


def _calibrate_args(p) -> None:
    p.add_argument("files", nargs="+", help="runs with A/A twins (an arm listed twice)")
    tables.add_format(p, "every arm, kind and twin pair", json_flag=True)


def _calibrate(args) -> int:
    from . import calibrate
    from .assess import assess

    a = assess(load_runs(args, args.files), thresholds(args))
    rep = calibrate.build(a)
    fmt = tables.format_of(args)
    print(tables.dumps(rep) if fmt == "json" else calibrate.render(rep, fmt))
    return EXIT_OK


def _history_cmd_args(p) -> None:
    from . import history_view

    history_view.arguments(p)


def _history(args) -> int:
    from . import history_view

    return history_view.run(args, thresholds(args))


def _index_args(p) -> None:
    p.add_argument("folder", nargs="?", default="results", help="default: results")


def _index(args) -> int:
    from .history import open_index

    db = open_index(args.folder, thresholds(args))
    runs = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    skipped = db.execute("SELECT COUNT(*) FROM files WHERE error IS NOT NULL").fetchone()[0]
    db.close()
    print(f"{args.folder}: {runs} run(s) indexed, {skipped} file(s) skipped (not records)")
    return EXIT_OK


def _checks_args(p) -> None:
    from .findings import FORMATS

    p.add_argument("--format", choices=FORMATS, default="text", help="default: text")


def _checks_table(args) -> int:
    from .findings import table

    print(table(args.format))
    return EXIT_OK


add_command(
    "report", "every case's verdict, then ratios with intervals or REFUSED", _report_args, _report
)
add_command("plot", "scaling sweep figures (PNG + SVG)", _plot_args, _plot)
add_command("compare", "the same arm across two runs", _compare_args, _compare)
add_command(
    "history",
    "one case over time from the history index, changepoints marked",
    _history_cmd_args,
    _history,
)
add_command(
    "calibrate",
    "noise floor per arm and the checks' refusals of A/A twins",
    _calibrate_args,
    _calibrate,
)
add_command("index", "index the records under a results folder", _index_args, _index)


def _fleet_args(p) -> None:
    from . import fleet

    fleet.arguments(p)


def _fleet(args) -> int:
    from . import fleet
    from .assess import assess

    th = thresholds(args)
    runs = load_runs(args, args.files)
    return fleet.run(args, assess(runs, th))


add_command("fleet", _FLEET_HELP, _fleet_args, _fleet)


def _gpus_args(p) -> None:
    from . import gpus

    gpus.arguments(p)


def _gpus(args) -> int:
    from . import gpus

    return gpus.run(args)


add_command(
    "gpus",
    "one node's GPUs side by side: slow GPUs, GPUs coupled to their neighbours' load",
    _gpus_args,
    _gpus,
)


def _perf_table_args(p) -> None:
    from . import perf_table

    perf_table.arguments(p)


def _perf_table(args) -> int:
    from . import perf_table

    perf_table.check_arguments(args)
    return perf_table.run(args, load_runs(args, args.files), thresholds(args))


def _host_table_args(p) -> None:
    from . import host_table

    host_table.arguments(p)


def _host_table(args) -> int:
    from . import host_table

    return host_table.run(args)


def _tile_table_args(p) -> None:
    from . import tile_table

    tile_table.arguments(p)


def _tile_table(args) -> int:
    from . import tile_table

    return tile_table.run(args)


add_command(
    "host-table",
    "the host arms' noise: CV, best-of-N drift and what the round times move with (--doc)",
    _host_table_args,
    _host_table,
    common=False,
)
add_command(
    "tile-table",
    "the tile sweep: the plan's tile against every forced tile and split",
    _tile_table_args,
    _tile_table,
    common=False,
)
add_command(
    "perf-table",
    "the performance targets of one record: peer, floors, cuBLAS ceilings (--doc: the document)",
    _perf_table_args,
    _perf_table,
)


def _html_args(p) -> None:
    from . import html

    html.arguments(p)


def _html(args) -> int:
    from . import html

    th = thresholds(args)
    runs = load_runs(args, args.files)
    earlier, held = _history_runs(args, runs, th)
    return html.run(args, runs, th, earlier, held, seed(args))


_HTML_HELP = "pages to open in a browser: each run, comparisons, histories, a fleet; an index"
add_command("html", _HTML_HELP, _html_args, _html)


def _frontier_args(p) -> None:
    p.add_argument("files", nargs="+", metavar="RUN.json", help="records bench_conv wrote")
    p.add_argument(
        "--tolerances",
        default=None,
        metavar="FILE",
        help="more consumers' tolerances (JSON, as data/tolerances.json; an id given replaces)",
    )
    p.add_argument(
        "--summary",
        action="store_true",
        help="one table: a row per case, per tolerance its fastest arm, the fastest of all",
    )
    tables.add_format(p, "every point, pick and tolerance, times in seconds")
    _history_args(p)


def _frontier(args) -> int:
    from . import frontier
    from .assess import assess

    th = thresholds(args)
    tols = frontier.load_tolerances(args.tolerances)
    runs = load_runs(args, args.files)
    earlier, held = _history_runs(args, runs, th)
    rep = frontier.build(assess(runs, th, earlier, held=held), tols)
    print((frontier.render_summary if args.summary else frontier.render)(rep, args.format))
    return EXIT_OK


add_command(
    "frontier",
    "per case, each arm's accuracy beside its time: the fastest arm within each tolerance",
    _frontier_args,
    _frontier,
)


def _targets_args(p) -> None:
    p.add_argument("files", nargs="+", metavar="RUN.json", help="records bench_conv wrote")
    p.add_argument(
        "--targets",
        default=None,
        metavar="FILE",
        help="more performance targets (JSON, as data/targets.json; an id given replaces)",
    )
    p.add_argument(
        "--doc-file",
        default=None,
        metavar="FILE",
        help="the file --format md is written to, named in the document's command",
    )
    tables.add_format(p, "every target's rows and summary, times in seconds")


def _targets(args) -> int:
    from . import targets
    from .assess import assess

    th = thresholds(args)
    wanted = targets.load_targets(args.targets)
    runs = load_runs(args, args.files)
    rep = targets.build_each([assess([run], th) for run in runs], wanted)
    argv = {"files": args.files, "targets": args.targets, "doc_file": args.doc_file}
    print(targets.render(rep, args.format, argv))
    return EXIT_OK


add_command(
    "targets",
    "the performance targets across records: per case met, MISSED (kernel, counters) or no data",
    _targets_args,
    _targets,
)
_CHECKS_HELP = "every finding code: what it means, its remedy, its thresholds and their defaults"
add_command("checks", _CHECKS_HELP, _checks_args, _checks_table, common=False)


def _explain_args(p) -> None:
    p.add_argument("file", metavar="RUN.json", help="a record bench_conv wrote")
    p.add_argument(
        "--pair",
        default=None,
        metavar="A:B,...",
        help="the ratios to explain (arm or arm/staging); default: those report shows",
    )
    p.add_argument("--json", action="store_true", help="each line with the figures it used")


def _explain(args) -> int:
    from . import explain, pairs
    from .assess import assess
    from .load import InputError

    try:
        spec = pairs.parse_spec(args.pair) if args.pair else None
    except ValueError as e:
        raise InputError("command line", "", str(e).replace("--pairs", "--pair")) from None
    runs = load_runs(args, [args.file])
    got = explain.explain_record(runs[0], spec, assess(runs, thresholds(args)))
    if spec and not got:
        raise InputError("command line", "", f"--pair {args.pair!r}: the run has no such ratio")
    if args.json:
        print(tables.dumps([vars(e) for e in got]))
    elif not got:
        print(f"{args.file}: no ratio to explain (no peer or reference here): name one, --pair A:B")
    for e in [] if args.json else got:
        stage, frames = e.num.split("/")[:2]
        print(f"{stage}/{frames} {e.line}")
    return EXIT_OK


_EXPLAIN_HELP = "each ratio in one line: staging, compute, sweep, counters, checks, and the gaps"
add_command("explain", _EXPLAIN_HELP, _explain_args, _explain)


def version() -> str:
    """The package's version, and the git describe of the checkout it runs from, if any."""
    import subprocess
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as package_version

    try:
        said = f"{PROG} {package_version('convbench-analysis')}"
    except PackageNotFoundError:  # run from a source tree that was never installed
        said = f"{PROG} (not installed)"
    try:
        git = subprocess.run(
            ["git", "-C", str(Path(__file__).parent), "describe", "--always", "--dirty", "--tags"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):  # no git: the package's version alone
        return said
    return said + (f" (git {git.stdout.strip()})" if git.returncode == 0 else "")


class _Version(argparse.Action):
    """--version, computed when asked (git describe is not run for every command)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, **kw):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version())
        parser.exit()


class _NoCompletion(argparse.Action):
    """--print-completion where shtab is not installed: one line, exit 2 (every other command
    still runs)."""

    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs=1, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.exit(2, f"{PROG}: --print-completion needs the shtab package (pip install shtab)\n")


def _parser() -> argparse.ArgumentParser:
    try:
        import shtab
    except ImportError:  # a declared dependency, missing where the wheels were not all carried
        shtab = None

    p = _Parser(
        prog=PROG,
        description="Validate convbench results, apply the checks, report "
        "ratios with confidence or refuse with every reason.",
    )
    p.add_argument(
        "--version", action=_Version, help="the version, and the checkout's git describe"
    )
    if shtab is not None:
        shtab.add_argument_to(
            p, ["--print-completion"], help="print a shell completion script (bash)"
        )
    else:
        p.add_argument(
            "--print-completion",
            action=_NoCompletion,
            metavar="SHELL",
            help="print a shell completion script (bash; needs shtab)",
        )
    sub = p.add_subparsers(
        dest="cmd", required=True, parser_class=_Parser, metavar="COMMAND", help="one of:"
    )
    common = _common()
    for name, (help_, arguments, _, takes_common) in COMMANDS.items():
        aliases = ["gates"] if name == "checks" else []  # the command's earlier name
        sp = sub.add_parser(
            name, parents=[common] if takes_common else [], help=help_, aliases=aliases
        )
        arguments(sp)
    return p


def run(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return COMMANDS["checks" if args.cmd == "gates" else args.cmd][2](args)


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
