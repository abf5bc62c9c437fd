"""`convbench-analyze html`, tested as a person sees it: the pages made from committed records
(results/examples: main-h200.json, and sweep.json beside it for a sweep and a comparison; a
synthetic fleet of four hosts) are opened in headless Chromium. From the DOM Chromium built:
every ratio the analysis states is a row with its verdict and interval, every figure holds a
non-empty <svg>, there is no <script> and nothing is fetched from elsewhere; Chromium's console
shows no error; the screenshot is a PNG that is not blank.

The checker is shown failing on planted broken pages (each a test below): a figure whose SVG
was removed, a page with a script that throws, a page missing one ratio's verdict, a stylesheet
from a CDN, a blank page. The browser tests skip, saying why, where Chromium is not installed
(CI installs it: .ci/run).

Planted in the product, seen failing, reverted:
- the ratio table's verdict cell without its verdict span: test_a_run_page_as_seen[main-h200]
  failed ("cpu-f32/host / cpu-f64/host: the verdict FASTER is not shown");
- the case timelines dropped: test_a_run_page_as_seen[main-h200] failed (no timeline figure);
- the slow-CPU lane marking no round: test_a_run_page_as_seen[main-h200] failed (no "slow CPU:"
  said of any round), and fed every round: test_each_lane_marks_exactly_... failed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest
from helpers import cli
from test_fleet import host_run

from convbench_analysis.html import pages

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "results" / "examples"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium on PATH: the pages are not opened (apt-get install chromium)",
)
WINDOW = (1280, 2000)


# ---- the DOM as Chromium serialised it, as a tree ------------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}


@dataclass
class Node:
    tag: str
    attrs: dict
    children: list = field(default_factory=list)
    text: str = ""

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()

    def find(self, tag: str, **attrs) -> list[Node]:
        return [
            n
            for n in self.walk()
            if n.tag == tag
            and all(n.attrs.get(k.rstrip("_").replace("_", "-")) == v for k, v in attrs.items())
        ]

    def all_text(self) -> str:
        return self.text + "".join(c.all_text() for c in self.children)


class _Tree(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Node(tag, dict(attrs)))

    def handle_endtag(self, tag):
        for k in range(len(self.stack) - 1, 0, -1):
            if self.stack[k].tag == tag:
                del self.stack[k:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(Node("#text", {}, text=data))


def tree(dom: str) -> Node:
    t = _Tree()
    t.feed(dom)
    t.close()
    return t.root


# ---- opening a page -------------------------------------------------------------------------


@dataclass
class Seen:
    dom: Node
    console: list[str]  # the page's console errors, as Chromium logged them
    png: bytes


def _chromium(page: Path, *what: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            f"--window-size={WINDOW[0]},{WINDOW[1]}",
            *what,
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=page.parent,
    )


def console_errors(stderr: str) -> list[str]:
    """The page's own console errors (an uncaught exception, a failed load), not the browser's
    complaints about this machine (no D-Bus, no GPU)."""
    return [
        line
        for line in stderr.splitlines()
        if ":CONSOLE" in line and ("Uncaught" in line or "Error" in line or "Failed" in line)
    ]


def open_page(page: Path, shot: Path) -> Seen:
    p = _chromium(page, "--dump-dom")
    assert p.returncode == 0 and "<html" in p.stdout, p.stderr[-2000:]
    s = _chromium(page, f"--screenshot={shot}")
    assert s.returncode == 0 and shot.exists(), s.stderr[-2000:]
    return Seen(tree(p.stdout), console_errors(p.stderr + s.stderr), shot.read_bytes())


# ---- what a page must show ------------------------------------------------------------------

DRAWN = {"path", "line", "polyline", "polygon", "rect", "circle", "use", "text"}


def figure_problems(dom: Node) -> list[str]:
    out = []
    figures = dom.find("figure")
    for f in figures:
        svgs = f.find("svg")
        name = f.attrs.get("data-plot", "?")
        if len(svgs) != 1:
            out.append(f"figure {name}: {len(svgs)} <svg> (a missing plot)")
            continue
        drawn = [n for n in svgs[0].walk() if n.tag in DRAWN]
        if len(drawn) < 5:
            out.append(f"figure {name}: an empty <svg> ({len(drawn)} drawn elements)")
    for svg in dom.find("svg"):
        if svg not in [s for f in figures for s in f.find("svg")]:
            out.append("an <svg> outside any figure")
    return out


def script_problems(seen: Seen) -> list[str]:
    out = [f"console: {line}" for line in seen.console]
    if seen.dom.find("script"):
        out.append(f"{len(seen.dom.find('script'))} <script> element(s): a page carries no code")
    return out


def fetch_problems(dom: Node) -> list[str]:
    """Anything the page would load from elsewhere (a CDN's script, stylesheet, font, image)."""
    out = []
    for n in dom.walk():
        for k in ("src", "href", "xlink:href"):
            v = n.attrs.get(k) or ""
            if re.match(r"^(https?:)?//", v):
                out.append(f"<{n.tag} {k}={v}>: fetched from elsewhere")
        if n.tag == "style" and re.search(r"@import|url\((?!#)", n.all_text()):
            out.append("a style that loads something")
    return out


def png_problems(png: bytes) -> list[str]:
    """The screenshot: a PNG of the window's size that shows something (not one colour)."""
    import io

    from PIL import Image

    if not png.startswith(b"\x89PNG\r\n\x1a\n"):
        return ["the screenshot is not a PNG"]
    img = Image.open(io.BytesIO(png)).convert("RGB")
    if img.size != WINDOW:
        return [f"the screenshot is {img.size}, not {WINDOW}"]
    small = img.resize((160, 250))
    colours = small.getcolors(maxcolors=160 * 250) or []
    inked = sum(n for n, c in colours if sum(c) < 600) / (160 * 250)
    if len(colours) < 20 or inked < 0.01:
        return [f"a blank screenshot ({len(colours)} colours, {inked:.1%} inked)"]
    return []


def row_problems(dom: Node, expected: list[tuple[str, str, str | None]]) -> list[str]:
    """Each expected ratio (name, verdict, interval text) is a row that shows its verdict."""
    out = []
    rows = dom.find("tr", class_="ratio")
    for name, verdict, ci in expected:
        mine = [r for r in rows if r.attrs.get("data-ratio") == name]
        if not mine:
            out.append(f"no row for the ratio {name}")
            continue
        shown = [s for r in mine for s in r.find("span") if s.attrs.get("data-verdict") == verdict]
        if not any(r.attrs.get("data-verdict") == verdict for r in mine) or not shown:
            out.append(f"{name}: the verdict {verdict} is not shown")
        if ci and not any(ci in r.all_text() for r in mine):
            out.append(f"{name}: the interval {ci} is not shown")
    if len(rows) != len(expected):
        out.append(f"{len(rows)} ratio rows for {len(expected)} ratios")
    return out


def problems(seen: Seen, expected) -> list[str]:
    return (
        figure_problems(seen.dom)
        + script_problems(seen)
        + fetch_problems(seen.dom)
        + png_problems(seen.png)
        + row_problems(seen.dom, expected)
    )


def report_ratios(path: Path, *flags) -> list[tuple[str, str, str]]:
    """The ratios `report --json` states for one record: (name, verdict, interval text)."""
    rc, out, err = cli("report", path, "--json", *flags)
    assert rc in (0, 3), err
    rep = json.loads(out)
    return [
        (
            f"{r['arm']} / {r['den']}",
            r["verdict"],
            f"[{r['ci'][0]:.4g}, {r['ci'][1]:.4g}]" if r["ci"] else None,
        )
        for g in rep["groups"]
        for r in g["rows"]
    ]


# ---- the pages --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Pages of main-h200.json and sweep.json (one host, one after the other: a comparison),
    with the example records as their history."""
    root = tmp_path_factory.mktemp("html")
    records = root / "records"
    shutil.copytree(EXAMPLES, records)
    out = root / "site"
    rc, stdout, err = cli(
        "html", records / "main-h200.json", records / "sweep.json", "--out", out,
        "--include-examples",
    )  # fmt: skip
    assert rc == 0, err
    return {"root": root, "records": records, "out": out, "written": stdout.split()}


@pytest.fixture(scope="module")
def fleet_site(tmp_path_factory):
    """A fleet of four hosts, one of them 30% slow on the device arm with agreeing twins."""
    root = tmp_path_factory.mktemp("fleet")
    for k, host in enumerate(("node1", "node2", "node3", "node4")):
        run = host_run(k, host, scale=1.3 if host == "node3" else 1.0, twin_scale=1.0)
        (root / f"{host}.json").write_text(json.dumps(run))
    out = root / "site"
    rc, stdout, err = cli("html", root, "--out", out, "--no-history")
    assert rc == 0, err
    return {"root": root, "out": out}


def _page(out: Path, prefix: str) -> Path:
    found = sorted(out.glob(prefix + "*.html"))
    assert found, f"no {prefix}*.html among {sorted(p.name for p in out.iterdir())}"
    return found[0]


def test_the_command_writes_an_index_and_a_page_of_each_kind(site):
    names = {Path(p).name for p in site["written"]}
    assert {"index.html", "run-main-h200.html", "run-sweep.html"} <= names
    assert any(n.startswith("compare-") for n in names)
    assert any(n.startswith("history-") for n in names)
    assert not any(n.startswith("fleet") for n in names), "one host, no job array: no fleet"
    index = (site["out"] / "index.html").read_text()
    for n in names - {"index.html"}:
        assert f'href="{n}"' in index, n


def test_no_page_carries_a_script_or_loads_anything(site, fleet_site):
    for page in [*site["out"].glob("*.html"), *fleet_site["out"].glob("*.html")]:
        dom = tree(page.read_text())
        assert not dom.find("script"), page.name
        assert fetch_problems(dom) == [], page.name


@needs_chromium
@pytest.mark.parametrize("name", ["main-h200", "sweep"])
def test_a_run_page_as_seen(site, name):
    page = site["out"] / f"run-{name}.html"
    seen = open_page(page, site["root"] / f"{name}.png")
    expected = report_ratios(site["records"] / f"{name}.json")
    assert expected, "the record states ratios"
    assert problems(seen, expected) == []
    dom = seen.dom
    text = dom.all_text()
    run = json.loads((site["records"] / f"{name}.json").read_text())
    for c in run["cases"]:  # every case: a row with its verdict and a timeline figure
        assert dom.find("tr", class_="case", data_case=c["id"]), c["id"]
        assert dom.find("figure", data_plot=f"timeline {c['id']}"), c["id"]
    summary = dom.find("p", class_="summary-line")
    assert summary and "ratio(s)" in summary[0].all_text()
    if name == "main-h200":  # its record names a slow vCPU and steal in rounds of a host arm
        assert "slow CPU: cpu" in text and "steal: hypervisor steal" in text
    if name == "sweep":  # a sweep: the sweep figures and the fits over the frames
        sweep_plots = [f for f in dom.find("figure") if "sweep" in f.attrs.get("data-plot", "")]
        assert len(sweep_plots) >= 2
        assert dom.find("table", class_="fits")
        assert "power cap:" in text  # its heavy cases ran capped in some rounds


@needs_chromium
def test_the_comparison_page_as_seen(site):
    page = _page(site["out"], "compare-")
    seen = open_page(page, site["root"] / "compare.png")
    rc, out, err = cli(
        "compare", site["records"] / "sweep.json", site["records"] / "main-h200.json", "--json"
    )
    rep = json.loads(out)
    assert rep["rows"], "the two runs share a case"
    expected = [(r["case"], r.get("verdict") or r["status"], None) for r in rep["rows"]]
    assert problems(seen, expected) == []
    accepted = [r for r in rep["rows"] if r["status"] == "ok"]
    for r in accepted:
        assert f"[{r['ci'][0]:.4g}, {r['ci'][1]:.4g}]" in seen.dom.all_text()
    assert bool(seen.dom.find("figure")) == bool(accepted)


@needs_chromium
def test_a_history_page_as_seen(site):
    case = "up0/96/cuda-f32/resident"
    page = site["out"] / f"history-{case.replace('/', '-')}.html"
    seen = open_page(page, site["root"] / "history.png")
    rc, out, err = cli(
        "history", case, "--history", site["records"], "--include-examples", "--json"
    )
    assert rc == 0, err
    rep = json.loads(out)
    assert len(rep["points"]) >= 2
    assert problems(seen, []) == []
    points = seen.dom.find("tr", class_="point")
    assert len(points) == len(rep["points"])
    marked = [p for p in points if p.attrs.get("data-changepoint") == "yes"]
    assert len(marked) == len(rep["changepoints"])
    assert len(seen.dom.find("figure")) == 1


@needs_chromium
def test_the_fleet_page_as_seen(fleet_site):
    page = fleet_site["out"] / "fleet.html"
    seen = open_page(page, fleet_site["root"] / "fleet.png")
    rc, out, err = cli("fleet", fleet_site["root"], "--json")
    rep = json.loads(out)
    expected = sorted(
        (f"{r['arm']} / {r['baseline']}", r["status"])
        for h in rep["hosts"].values()
        for r in h["ratios"]
        if r["arm"] != r["baseline"]
    )
    dom = seen.dom
    assert figure_problems(dom) == [] and script_problems(seen) == []
    assert png_problems(seen.png) == []
    rows = dom.find("tr", class_="ratio")
    shown = sorted(
        (r.attrs["data-ratio"], "REFUSED" if r.attrs["data-verdict"] == "REFUSED" else "ok")
        for r in rows
    )
    assert expected and shown == expected
    assert all(r.attrs["data-verdict"] in pages.RATIO_VERDICTS for r in rows)
    outliers = {
        (li.attrs["data-host"], li.attrs["data-kind"]) for li in dom.find("li", class_="outlier")
    }
    want = {(o["host"], o["kind"]) for x in rep["arms"] for o in x["outliers"]}
    assert want and outliers == want
    assert ("node3", "slow") in outliers
    assert len(dom.find("h2", class_="host")) == 4


@needs_chromium
def test_the_index_as_seen(site):
    seen = open_page(site["out"] / "index.html", site["root"] / "index.png")
    assert script_problems(seen) == [] and png_problems(seen.png) == []
    kinds = {li.attrs["data-kind"] for li in seen.dom.find("li", class_="entry")}
    assert kinds == {"run", "compare", "history"}


# ---- the checker fails on planted broken pages --------------------------------------------


def _planted(site, name: str, change) -> Path:
    page = site["out"] / "run-main-h200.html"
    bad = site["root"] / f"planted-{name}.html"
    text = change(page.read_text())
    assert text != page.read_text(), "the plant changed the page"
    bad.write_text(text)
    return bad


@needs_chromium
def test_planted_missing_plot_is_seen(site):
    def drop_first_svg(text):
        return re.sub(r"<svg.*?</svg>", "", text, count=1, flags=re.S)

    seen = open_page(_planted(site, "no-plot", drop_first_svg), site["root"] / "p1.png")
    assert any("missing plot" in p for p in figure_problems(seen.dom))


@needs_chromium
def test_planted_script_error_is_seen(site):
    def throw(text):
        return text.replace("</body>", "<script>noSuchFunction();</script></body>")

    seen = open_page(_planted(site, "js-error", throw), site["root"] / "p2.png")
    found = script_problems(seen)
    assert any(p.startswith("console:") and "Uncaught" in p for p in found), found
    assert any("<script>" in p for p in found)


@needs_chromium
def test_planted_missing_verdict_is_seen(site):
    expected = report_ratios(site["records"] / "main-h200.json")
    name, verdict, _ = expected[0]

    def drop_verdict(text):
        row = re.search(rf'<tr class="ratio" data-ratio="{re.escape(name)}".*?</tr>', text, re.S)
        cut = re.sub(r'<span class="verdict[^>]*>.*?</span>', "", row.group(0), flags=re.S)
        return text.replace(row.group(0), cut)

    seen = open_page(_planted(site, "no-verdict", drop_verdict), site["root"] / "p3.png")
    assert f"{name}: the verdict {verdict} is not shown" in row_problems(seen.dom, expected)


@needs_chromium
def test_planted_cdn_stylesheet_and_blank_page_are_seen(site):
    def cdn(text):
        return text.replace(
            "</head>", '<link rel="stylesheet" href="https://cdn.example/x.css"></head>'
        )

    seen = open_page(_planted(site, "cdn", cdn), site["root"] / "p4.png")
    assert any("fetched from elsewhere" in p for p in fetch_problems(seen.dom))
    blank = site["root"] / "planted-blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    seen = open_page(blank, site["root"] / "p5.png")
    assert any("blank" in p for p in png_problems(seen.png))


# ---- without a browser ---------------------------------------------------------------------


def test_bad_input_one_line_and_no_page(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    out = tmp_path / "site"
    rc, stdout, err = cli("html", EXAMPLES / "main-h200.json", bad, "--out", out)
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and "bad.json" in err
    assert not out.exists() or not any(out.iterdir())


def render(page: dict) -> str:
    from convbench_analysis.html import environment

    return environment().get_template("run.html").render(page=page, kind="run")


def test_an_explanation_is_shown_only_where_explain_gives_one(site, monkeypatch):
    """explain.py (one line per ratio) is optional: absent, the ratio table has no explanation
    row at all; present, each ratio's line stands under its row."""
    import types

    import convbench_analysis
    from convbench_analysis import assess, load

    run = load.load_run(str(site["records"] / "main-h200.json"))
    a = assess.assess([run])
    # as if the package had no explain module, whether or not another test imported it
    monkeypatch.delattr(convbench_analysis, "explain", raising=False)
    monkeypatch.setitem(sys.modules, "convbench_analysis.explain", None)  # import fails
    page = pages.run_page(a, 0, None)
    assert all(r["explanation"] is None for g in page["groups"] for r in g["ratios"])
    assert 'class="explanation"' not in render(page)
    fake = types.ModuleType("convbench_analysis.explain")

    def explain_ratio(rec, pair, assessment=None, index=0):
        assert rec is a.runs[0] and index == 0
        return types.SimpleNamespace(line=f"because {pair[0]} against {pair[1]}")

    fake.explain_ratio = explain_ratio
    monkeypatch.setitem(sys.modules, "convbench_analysis.explain", fake)
    monkeypatch.setattr(convbench_analysis, "explain", fake, raising=False)
    page = pages.run_page(a, 0, None)
    lines = [r["explanation"] for g in page["groups"] for r in g["ratios"]]
    assert lines and all(x.startswith("because ") for x in lines)
    rows = tree(render(page)).find("tr", class_="explanation")
    assert [r.all_text().strip() for r in rows] == lines


def test_each_lane_marks_exactly_the_rounds_its_state_touched(write):
    """A synthetic run with one known state per round: a slow CPU in round 2, the hypervisor's
    steal in round 4 and a foreign process in round 5 of the host arm; a power cap in round 1 and
    a foreign GPU process in round 3 of the device arm. Each lane marks its round and no other.
    Planted: the slow-CPU lane fed every round (not the check's slow rounds) failed here."""
    import faults
    import synth

    from convbench_analysis import load
    from convbench_analysis.html.rounds import lanes
    from convbench_analysis.thresholds import Thresholds

    run = synth.make_run(stages=("up0",), frames=(96,), arms=("cpu-f64", "cuda-f32"), reps=7)
    host = synth.case(run, "up0/96/cpu-f64/host")
    dev = synth.case(run, "up0/96/cuda-f32/resident")
    host["samples"][2]["workers"][7]["speed_after"] = synth.speed(7, 7, 0.38)
    host["samples"][4]["contention"]["steal_share"] = 0.3
    synth.set_foreign(host["samples"][5], 0.5, top=[(4242, "hog", 0.5)])
    synth.set_violation(dev["samples"][1], "power", 0.8 * dev["samples"][1]["total_seconds"] * 1e6)
    faults.foreign_gpu(run, dev["id"], rnd=dev["samples"][3]["round"])
    r = load.load_run(str(write(run)))
    th = Thresholds()
    cases = {c.id: c for c in r.cases}

    def marked(cid):
        c = cases[cid]
        return {lane.name: sorted(lane.marks) for lane in lanes(r, c, th)}, c

    got, c = marked(host["id"])
    rounds = [s.round for s in c.samples]
    assert got["slow CPU"] == [rounds[2]]
    assert got["steal"] == [rounds[4]]
    assert got["foreign CPU"] == [rounds[5]]
    assert "pid 4242 (hog)" in lanes(r, c, th)[2].marks[rounds[5]]
    got, c = marked(dev["id"])
    rounds = [s.round for s in c.samples]
    assert got["power cap"] == [rounds[1]]
    assert got["foreign GPU"] == [rounds[3]]
    assert "slow CPU" not in got  # no speed probe on a device sample: no lane, not "nothing"


@pytest.mark.parametrize("name", ["hog-one-cpu", "hog-all-cpus"])
def test_a_foreign_process_is_marked_on_the_rounds_the_check_counted(name):
    """The committed hog records (a busy loop on a pinned worker's CPU; busy loops on every CPU):
    the timeline's foreign-CPU lane marks as many rounds as the foreign-cpu finding counts (its
    own words: "N of M rounds", else each "round R" it names), each naming the process.
    Planted: the lane reading only the machine-wide share: hog-one-cpu failed (0 marked of 6)."""
    from convbench_analysis import assess, load

    run = load.load_run(str(EXAMPLES / f"{name}.json"))
    a = assess.assess([run])
    page = pages.run_page(a, 0, None)
    (t,) = page["timelines"]
    marked = [(r, said) for r, lines in t["marked"] for said in lines if "foreign CPU" in said]
    (f,) = [f for f in a.for_case(0, t["case"]) if f.code == "foreign-cpu"]
    counted = re.search(r"(\d+) of \d+ rounds", f.detail)
    named = {int(r) for r in re.findall(r"round (\d+)", f.detail)}
    assert marked
    if counted:
        assert len(marked) == int(counted.group(1)), f.detail
    else:
        assert named <= {r for r, _ in marked}, f.detail
    assert all(re.search(r"pid \d+ \(\w+\)", said) for _, said in marked)


def test_the_frontier_section_is_the_summary(site):
    """The run page's frontier section: a row per case with two candidates or more, per
    tolerance the same pick as `frontier --summary`. Planted, seen failing: the section left out
    of the template (no table), the picks taken from the fastest of all."""
    from convbench_analysis import assess, frontier, load

    run = load.load_run(str(site["records"] / "sweep.json"))
    a = assess.assess([run])
    page = pages.run_page(a, 0, None)
    want = [r for r in frontier.summary_rows(frontier.build(a)) if r["arms"] > 1]
    assert want and len(page["frontier"]["rows"]) == len(want)
    for got, r in zip(page["frontier"]["rows"], want, strict=True):
        tols = page["frontier"]["tolerances"]
        assert got["picks"] == [frontier.arm_time(r["picks"][t]) for t in tols]
    (table,) = tree(render(page)).find("table", class_="frontier")
    rows = table.find("tr", class_="pick")
    assert len(rows) == len(want)
    assert page["frontier"]["rows"][0]["picks"][0] in rows[0].all_text()
