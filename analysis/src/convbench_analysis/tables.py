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
import math
import shutil
import textwrap

import tabulate

FORMATS = ("text", "md", "csv", "json")
NOT_A_TERMINAL_WIDTH = 100
# A column is wrapped no narrower than this (or its own width): numbers and short words stay
# whole, and only the long text columns (case ids, paths, sentences) give way.
MIN_WRAP = 12


def add_format(
    p, json_means: str = "the command's data", json_flag: bool = False, default: str = "text"
) -> None:
    """The `--format` option; json_flag keeps a command's `--json` as `--format json`."""
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=default,
        help=f"text (fitted to the terminal), md, csv (the table alone) or json ({json_means}); "
        f"default {default}",
    )
    if json_flag:
        p.add_argument("--json", action="store_true", help="the same as --format json")


def format_of(args) -> str:
    return "json" if getattr(args, "json", False) else args.format


def terminal_width() -> int:
    return shutil.get_terminal_size((NOT_A_TERMINAL_WIDTH, 24)).columns


def time_text(s: float | None, digits: int = 4) -> str:
    """A time in the unit its magnitude suits: 7.59 ms, 122.3 us, "-" for none. By magnitude, so
    a fitted fixed cost that comes out negative reads -17.25 us, not -1.725e+04 ns."""
    if s is None:
        return "-"
    for unit, k in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(s) >= k:
            return f"{s / k:.{digits}g} {unit}"
    return f"{s / 1e-9:.{digits}g} ns"


def render(
    headers, rows, fmt: str, align=None, width: int | None = None, compact: bool = False
) -> str:
    """The table in text, md or csv; cells are text already (None prints as empty). compact: md
    rows unpadded (a generated document of long tables, where padding would be most of it)."""
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
        if compact:
            lines = [[_md_cell(h) for h in headers], ["---"] * len(headers), *cells]
            return "\n".join("| " + " | ".join(r) + " |" for r in lines)
        return _tabulate([_md_cell(h) for h in headers], cells, "github", align)
    if fmt == "text":
        return _fit(headers, rows, align, terminal_width() if width is None else width)
    raise ValueError(f"no table format {fmt!r}")


def sentence(text: str, fmt: str, indent: str = "    ") -> str:
    """A line said beside a table: wrapped to the terminal's width in text, as it is in md."""
    if fmt != "text":
        return text
    return textwrap.fill(text, terminal_width(), subsequent_indent=indent, break_on_hyphens=False)


def _finite(v):
    """JSON has no inf or NaN: an unbounded or undefined number is written as null."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    return v


def dumps(data) -> str:
    """Strict JSON (allow_nan=False): an unbounded interval's side is null, never Infinity."""
    return json.dumps(_finite(data), indent=1, allow_nan=False)


def _md_cell(v: str) -> str:
    return v.replace("|", "\\|").replace("\n", " ")


def _tabulate(headers, rows, fmt, align, limits=None) -> str:
    return tabulate.tabulate(
        rows,
        headers,
        tablefmt=fmt,
        disable_numparse=True,  # cells are printed as formatted: "1.250" stays "1.250"
        colalign=align,
        maxcolwidths=limits,
        maxheadercolwidths=limits,
    )


def _register_narrow() -> str:
    """tabulate's "simple" with one space between columns, registered by name: tabulate wraps
    multi-line cells only in the formats it knows by name."""
    simple = tabulate._table_formats["simple"]
    line, row = tabulate.Line("", "-", " ", ""), tabulate.DataRow("", " ", "")
    name = "convbench-narrow"
    tabulate._table_formats[name] = simple._replace(
        lineabove=line, linebelowheader=line, linebelow=line, headerrow=row, datarow=row
    )
    tabulate.multiline_formats[name] = name
    return name


_TEXT_FORMATS = {2: "simple", 1: _register_narrow()}


# tabulate wraps cells at hyphens too ("foreign-" / "gpu"): a hyphen travels as this character
# (one column wide, as the hyphen is) and is put back once the table is drawn.
_HYPHEN = "\u2011"  # non-breaking hyphen


def _text(headers, rows, align, limits, gap) -> str:
    def keep(v: str) -> str:
        return v.replace("-", _HYPHEN)

    headers, rows = [keep(h) for h in headers], [[keep(v) for v in r] for r in rows]
    saved, tabulate.MIN_PADDING = tabulate.MIN_PADDING, 0  # a header as wide as its words
    try:
        return _tabulate(headers, rows, _TEXT_FORMATS[gap], align, limits).replace(_HYPHEN, "-")
    finally:
        tabulate.MIN_PADDING = saved


def _longest_line(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


def _fit(headers, rows, align, width: int) -> str:
    """The text table, its widest columns wrapped until every line fits `width`, giving way in
    steps: cells wrapped down to MIN_WRAP or their longest word (a cell that narrow stays
    whole, a header wraps between its words); then one space between columns instead of two;
    then cells wrapped between their words. Only where that is not enough (words wider than the
    terminal leaves them) inside words, down to MIN_WRAP; beyond that, as narrow as it can be."""
    n = len(headers)
    columns = [[headers[i], *(r[i] for r in rows)] for i in range(n)]
    natural = [max(map(_longest_line, col)) for col in columns]
    words = [max(map(_longest_word, col)) for col in columns]  # never wrapped mid-word
    lines = [
        max(w, min(MIN_WRAP, max(map(_longest_line, col[1:]), default=0)))
        for w, col in zip(words, columns, strict=True)
    ]
    limits = list(natural)
    # the last resort, for a terminal too narrow for the longest words: inside a word
    pieces = [min(MIN_WRAP, w) for w in words]
    for floors, gap in ((lines, 2), (lines, 1), (words, 1), (pieces, 1)):
        while True:
            shrunk = [lim if lim < nat else None for lim, nat in zip(limits, natural, strict=True)]
            text = _text(headers, rows, align, shrunk, gap)
            over = _longest_line(text) - width
            slack = [i for i in range(n) if limits[i] > floors[i]]
            if over <= 0:
                return text
            if not slack:
                break
            i = max(slack, key=lambda k: limits[k])
            others = [limits[k] for k in slack if k != i]
            # the widest gives way down to the next widest, then they give way in turns
            step = min(over, limits[i] - max(others, default=floors[i])) or 1
            limits[i] = max(floors[i], limits[i] - step)
    return text
