"""The tables the commands print, in one of four formats (`--format`):

  text  aligned columns (tabulate's "simple"), wrapped to fit the terminal's width (100 columns
        when the output is not a terminal; COLUMNS overrides both);
  md    a GitHub markdown table;
  csv   the table alone, for a spreadsheet (Python's csv module);
  json  the command's data (numbers in seconds, not the formatted cells).

A command builds its rows as formatted cells once and hands them here; text and md may add its
own lines around the table, csv and json never do."""

from __future__ import annotations

import csv
import io
import json
import shutil

from tabulate import tabulate

FORMATS = ("text", "md", "csv", "json")
NOT_A_TERMINAL_WIDTH = 100
# A column is wrapped no narrower than this (or its own width): numbers and short words stay
# whole, and only the long text columns (case ids, paths, sentences) give way.
MIN_WRAP = 10


def add_format(p, json_means: str = "the command's data") -> None:
    """The `--format` option, with `--json` kept as the older spelling of `--format json`."""
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help=f"text (fitted to the terminal), md, csv (the table alone) or json ({json_means})",
    )
    p.add_argument("--json", action="store_true", help="the same as --format json")


def format_of(args) -> str:
    return "json" if getattr(args, "json", False) else args.format


def terminal_width() -> int:
    return shutil.get_terminal_size((NOT_A_TERMINAL_WIDTH, 24)).columns


def render(headers, rows, fmt: str, align=None, width: int | None = None) -> str:
    """The table in text, md or csv; cells are text already (None prints as empty)."""
    rows = [["" if v is None else str(v) for v in r] for r in rows]
    headers = [str(h) for h in headers]
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(headers)
        w.writerows(rows)
        return buf.getvalue().rstrip("\n")
    if fmt == "md":
        cells = [[_md_cell(v) for v in r] for r in rows]
        return _tabulate([_md_cell(h) for h in headers], cells, "github", align)
    if fmt == "text":
        return _fit(headers, rows, align, terminal_width() if width is None else width)
    raise ValueError(f"no table format {fmt!r}")


def dumps(data) -> str:
    return json.dumps(data, indent=1)


def _md_cell(v: str) -> str:
    return v.replace("|", "\\|").replace("\n", " ")


def _tabulate(headers, rows, fmt, align, limits=None) -> str:
    return tabulate(
        rows,
        headers,
        tablefmt=fmt,
        disable_numparse=True,  # cells are printed as formatted: "1.250" stays "1.250"
        colalign=align,
        maxcolwidths=limits,
        maxheadercolwidths=limits,
    )


def _longest_line(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def _fit(headers, rows, align, width: int) -> str:
    """tabulate's text, its widest columns wrapped until every line fits `width` (or no column
    can give more: the table is then as narrow as it can be)."""
    n = len(headers)
    natural = [max(_longest_line(v) for v in [headers[i], *(r[i] for r in rows)]) for i in range(n)]
    floors = [min(w, MIN_WRAP) for w in natural]
    limits = list(natural)
    while True:
        shrunk = [lim if lim < nat else None for lim, nat in zip(limits, natural, strict=True)]
        text = _tabulate(headers, rows, "simple", align, shrunk)
        over = _longest_line(text) - width
        slack = [i for i in range(n) if limits[i] > floors[i]]
        if over <= 0 or not slack:
            return text
        i = max(slack, key=lambda k: limits[k])
        others = [limits[k] for k in slack if k != i]
        # the widest gives way down to the next widest, then they give way in turns
        step = min(over, limits[i] - max(others, default=floors[i])) or 1
        limits[i] = max(floors[i], limits[i] - step)
