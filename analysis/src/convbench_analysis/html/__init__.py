"""`html RUN.json... --out DIR`: pages a person opens in a browser, each one file that needs
nothing else (figures inline as SVG, the style inline, no script, nothing fetched):

- a page per run: its verdicts, every case and ratio with its interval (and, where explain.py
  is there, the ratio's one-line explanation), each case's rounds over the host's and GPU's
  state (steal, slow CPUs, power caps, low clocks, foreign processes marked on the rounds they
  touched), the sweep's figures and fits when the run is a sweep, the A/A twins, the counters;
- a comparison page for two runs of one host that share cases, one after the other in time;
- a history page for each case that the history index holds at least twice, changepoints marked;
- a fleet page (per host, across hosts, outlier hosts) when the runs come from more than one
  host or a Slurm job array, or with --fleet;
- index.html linking them.

The pages are built in memory and written only when all of them are made, each atomically: bad
input leaves no page behind."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import jinja2

from .. import pairs, record
from ..assess import assess
from ..fleet import ExpandDirs
from ..history_view import EXAMPLES
from ..history_view import build as history_build
from ..load import InputError
from . import pages

MIN_HISTORY_POINTS = 2  # one point is no history


def arguments(p) -> None:
    """The `html` subcommand's arguments (cli.py registers the command)."""
    p.add_argument(
        "files", nargs="+", action=ExpandDirs, metavar="RUN", help="records or folders of them"
    )
    p.add_argument("--out", required=True, metavar="DIR", help="where the pages are written")
    p.add_argument("--baseline", default=None, help="set every arm against this one")
    p.add_argument("--pairs", default=None, metavar="A:B,...", help="the ratios to show")
    p.add_argument(
        "--history",
        default=None,
        metavar="DIR",
        help="results folder of earlier runs, for drift and history pages (default: each "
        "file's own folder)",
    )
    p.add_argument("--no-history", action="store_true", help="no earlier runs, no history pages")
    p.add_argument(
        "--include-examples",
        action="store_true",
        help=f"history pages also read the committed example records ({EXAMPLES}/)",
    )
    p.add_argument("--fleet", action="store_true", help="a fleet page even for runs of one host")


def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("convbench_analysis.html", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "page"


def compared_pairs(runs: list) -> list[tuple[int, int]]:
    """Each run and the next one of its host in time, where the two share a case."""
    by_host: dict = {}
    for i, r in enumerate(runs):
        by_host.setdefault(record.host_id(r), []).append(i)
    out = []
    for idx in by_host.values():
        idx.sort(key=lambda i: runs[i].started_utc)
        for i, j in zip(idx, idx[1:], strict=False):
            if {c.id for c in runs[i].cases} & {c.id for c in runs[j].cases}:
                out.append((i, j))
    return out


def is_fleet(runs: list) -> bool:
    hosts = {record.host_id(r) for r in runs}
    arrays = [(r.data["lease"].get("slurm") or {}).get("array_job_id") for r in runs]
    return len(hosts) > 1 or any(arrays)


def _histories(runs, args, th) -> list[dict]:
    if args.no_history:
        return []
    folders = [Path(args.history)] if args.history else sorted({Path(r.path).parent for r in runs})
    ids = list(dict.fromkeys(c.id for r in runs for c in r.cases))
    out = []
    for folder in folders:
        for cid in ids:
            try:
                rep = history_build(folder, cid, None, th, args.include_examples)
            except InputError:
                continue  # no indexed run of this case: nothing over time to show
            if len(rep["points"]) >= MIN_HISTORY_POINTS:
                out.append(rep)
    return out


def write_atomically(path: Path, text: str) -> None:
    """The whole file or nothing, readable as any file the user makes (umask, not mkstemp's
    0600: a page is for others to open)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
        raise


class Site:
    """The pages in memory: file name -> text, and the index's entries."""

    def __init__(self):
        self.env = environment()
        self.files: dict[str, str] = {}
        self.entries: list[dict] = []

    def add(self, kind: str, name: str, template: str, page: dict, line: str) -> None:
        name = slug(name)
        while name + ".html" in self.files:
            name += "-2"
        text = self.env.get_template(template).render(page=page, kind=kind)
        self.files[name + ".html"] = text
        self.entries.append(
            {"kind": kind, "file": name + ".html", "title": page["title"], "line": line}
        )

    def write(self, out: Path) -> list[Path]:
        index = self.env.get_template("index.html").render(
            page={"title": "convbench pages", "entries": self.entries}, kind="index"
        )
        written = []
        for name, text in [*self.files.items(), ("index.html", index)]:
            write_atomically(out / name, text)
            written.append(out / name)
        return written


def build(args, runs, th, earlier, held, seed) -> Site:
    try:
        spec = pairs.parse_spec(args.pairs) if args.pairs else None
    except ValueError as e:
        raise InputError("command line", "", str(e)) from None
    site = Site()
    a = assess(runs, th, earlier, held=held)
    for i, run in enumerate(runs):
        page = pages.run_page(a, i, args.baseline, spec)
        site.add("run", f"run-{Path(run.path).stem}", "run.html", page, page["line"])
    for i, j in compared_pairs(runs):
        page = pages.compare_page(assess([runs[i], runs[j]], th, compared=True), seed)
        name = f"compare-{Path(runs[i].path).stem}-{Path(runs[j].path).stem}"
        line = f"{len(page['rows'])} case(s) in both, {page['refused']} refused"
        site.add("compare", name, "compare.html", page, line)
    for rep in _histories(runs, args, th):
        page = pages.history_page(rep, th)
        line = f"{len(rep['points'])} run(s), {len(rep['changepoints'])} changepoint(s)"
        site.add("history", f"history-{rep['case']}", "history.html", page, line)
    if args.fleet or is_fleet(runs):
        page = pages.fleet_page(assess(runs, th), args.baseline)
        line = f"{len(page['hosts'])} host(s), {page['runs']} run(s)"
        site.add("fleet", "fleet", "fleet.html", page, line)
    return site


def run(args, runs, th, earlier, held, seed) -> int:
    site = build(args, runs, th, earlier, held, seed)
    for p in site.write(Path(args.out)):
        print(p)
    return 0
