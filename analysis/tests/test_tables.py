"""tables.render: each format parses as itself, cells are printed as given, and text fits the
width it is given by wrapping the long columns, never the short ones.

Planted faults seen failing (then reverted): _fit returning tabulate's text unwrapped
(test_text_fits_the_width); disable_numparse dropped ("1.250" printed as 1.25:
test_cells_are_printed_as_given); the csv writer given the cells without quoting a comma
(joined by hand: test_csv_and_md_parse)."""

import csv
import io
import json

import pytest

from convbench_analysis import tables

HEADERS = ["case", "best us", "verdict"]
ROWS = [
    ["up0/96/cuda-f32/resident", "1.250", "accepted, with a sentence long enough to need a wrap"],
    ["up3/128/cpu-f64/host", "1234.5", "REFUSED"],
    ["up3/8/cpu-f64/host", None, "a | pipe"],
]


def test_csv_and_md_parse():
    got = list(csv.reader(io.StringIO(tables.render(HEADERS, ROWS, "csv"))))
    assert got[0] == HEADERS
    assert got[1:] == [["" if v is None else v for v in r] for r in ROWS]
    md = tables.render(HEADERS, ROWS, "md").splitlines()
    assert md[0].startswith("| case") and set(md[1]) <= set("|-: ") and "---" in md[1]
    assert len(md) == 2 + len(ROWS)
    assert all(line.count("|") - line.count("\\|") == len(HEADERS) + 1 for line in md)


def test_cells_are_printed_as_given():
    text = tables.render(HEADERS, ROWS, "text", width=200)
    assert "1.250" in text and "1234.5" in text


@pytest.mark.parametrize("width", [100, 72, 50])
def test_text_fits_the_width(width):
    text = tables.render(HEADERS, ROWS, "text", align=("left", "right", "left"), width=width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width, text
    # the numbers are never cut: each stands whole on its row
    assert any(line.split()[1:2] == ["1234.5"] for line in lines), text
    words = " ".join(text.split())
    assert "1.250" in words and "wrap" in words


def test_the_width_when_not_a_terminal(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert tables.terminal_width() == tables.NOT_A_TERMINAL_WIDTH  # pytest captures stdout
    monkeypatch.setenv("COLUMNS", "61")
    assert tables.terminal_width() == 61


def test_an_unknown_format_is_refused():
    with pytest.raises(ValueError):
        tables.render(HEADERS, ROWS, "xml")


def test_json_is_strict_an_unbounded_side_is_null():
    # A t interval's bound past a double's range is inf (stats.paired_ratio): the JSON output
    # must stay readable by strict parsers. Planted: json.dumps without the conversion wrote
    # Infinity, which json.loads(parse_constant=...) below rejects.
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    text = tables.dumps({"ratio": 1.5, "ci": [0.0, float("inf")], "rows": [{"x": float("nan")}]})
    data = json.loads(text, parse_constant=refuse)
    assert data == {"ratio": 1.5, "ci": [0.0, None], "rows": [{"x": None}]}
