"""What every figure of the analysis shares, so none of them misleads: one colour per arm (a fixed
mapping from the arm's name, the A/A twin `arm#2` the same colour with its own line style), times
in the unit that suits them with the unit in the axis label, a log axis where values span more
than a decade, axis limits from the accepted points only (a refused point outside them is drawn
at the edge with an arrow and its value, never by rescaling the accepted ones), refused points
drawn with their own marker and their cause, and figures as PNG bytes or SVG text."""

from __future__ import annotations

import io
import math
import os
import zlib
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
from matplotlib.ticker import FuncFormatter  # noqa: E402

# The built-in arms, each its own colour; a family keeps to one hue family where it can (cuDNN
# warm, our CUDA arms cool, host arms grey) so the peer stands out from the arm it is set against.
ARM_COLORS = {
    "cpu-f64": "#4d4d4d",
    "cpu-f32": "#a0a0a0",
    "cuda-f32": "#1f77b4",
    "cuda-f32x3": "#17becf",
    "cuda-tf32": "#9467bd",
    "cuda-f64": "#2ca02c",
    "cuda-f64-fma": "#bcbd22",
    "cuda-f64-dmma": "#8c564b",
    "cudnn-f32": "#ff7f0e",
    "cudnn-tf32": "#e377c2",
    "cudnn-f64": "#d62728",
    "cublas-sgemm": "#393b79",
    "cublas-tf32": "#7b4173",
    "cublas-dgemm": "#637939",
    "cublas-bf16": "#843c39",
    "cuda-causal-register": "#08519c",
    "cuda-causal-tiled": "#31a354",
    "cuda-causal-tiled-bf16": "#756bb1",
}
# Any other arm (a plugin's): a colour from its name's CRC-32, the same in every figure and run.
OTHER_COLORS = (
    "#6b6ecf",
    "#b5cf6b",
    "#e7ba52",
    "#ad494a",
    "#a55194",
    "#5254a3",
    "#8ca252",
    "#bd9e39",
    "#d6616b",
    "#ce6dbd",
    "#9c9ede",
    "#cedb9c",
    "#e7969c",
    "#de9ed6",
    "#3182bd",
    "#e6550d",
)
TWIN_STYLES = ("-", "--", ":", "-.")  # arm, arm#2, arm#3, arm#4...
STAGING_MARKERS = {"resident": "o", "per-call": "s", "host": "D"}
REFUSED_MARKER = "x"  # a refused point: never a filled circle, whatever its arm


def split_twin(arm: str) -> tuple[str, int]:
    """'cuda-f32#2' -> ('cuda-f32', 2); 'cuda-f32' -> ('cuda-f32', 1)."""
    base, _, n = arm.partition("#")
    return base, int(n) if n.isdigit() else 1


def arm_color(arm: str) -> str:
    """The arm's one colour, from its name only (an A/A twin has its arm's)."""
    base, _ = split_twin(arm.split("/")[0])
    if base in ARM_COLORS:
        return ARM_COLORS[base]
    return OTHER_COLORS[zlib.crc32(base.encode()) % len(OTHER_COLORS)]


def arm_style(label: str) -> dict:
    """Line keywords for a series named 'arm/staging' (or 'arm'): the arm's colour, the twin's
    line style, the staging's marker."""
    arm, _, staging = label.partition("/")
    _, twin = split_twin(arm)
    return {
        "color": arm_color(arm),
        "ls": TWIN_STYLES[(twin - 1) % len(TWIN_STYLES)],
        "marker": STAGING_MARKERS.get(staging, "o"),
    }


# ---- values and axes ------------------------------------------------------------------------

TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def time_unit(seconds: list[float]) -> tuple[float, str]:
    """(factor, unit) so the median of the values reads between 1 and 1000 of the unit."""
    xs = sorted(v for v in seconds if v > 0 and math.isfinite(v))
    if not xs:
        return 1e6, "µs"
    mid = xs[len(xs) // 2]
    for size, unit in TIME_UNITS:
        if mid >= size:
            return 1.0 / size, unit
    return 1e9, "ns"


DECADE = 10.0  # values spanning more than this factor get a log axis


def spans_decades(values: list[float]) -> bool:
    xs = [v for v in values if v > 0 and math.isfinite(v)]
    return bool(xs) and max(xs) / min(xs) > DECADE


def limits(values: list[float], log: bool, floor_zero: bool = False) -> tuple[float, float]:
    """Axis limits holding every value with a margin (5% linear, a tenth of the span in log)."""
    xs = [v for v in values if math.isfinite(v) and (v > 0 or not log)]
    lo, hi = min(xs), max(xs)
    if log:
        pad = max(math.log10(hi / lo) * 0.1, 0.05)
        return lo / 10**pad, hi * 10**pad
    pad = (hi - lo) * 0.08 or abs(hi) * 0.05 or 1.0
    return (0.0 if floor_zero and lo >= 0 else lo - pad), hi + pad


def set_value_axis(ax, accepted: list[float], fallback: list[float], floor_zero=False) -> bool:
    """Scale and limits of the y axis from the accepted values (the fallback, e.g. the refused
    ones, only when nothing was accepted); True when the axis is log."""
    values = accepted or fallback
    if not values:
        return False
    log = spans_decades(values)
    if log:
        ax.set_yscale("log")
    ax.set_ylim(*limits(values, log, floor_zero and not log))
    plain_log_ticks(ax)
    return log


def _minor_label(v: float) -> str:
    """Minor ticks of a log axis: label only the 2s, 3s and 5s of a decade, plainly."""
    mantissa = v / 10 ** math.floor(math.log10(v) + 1e-9) if v > 0 else 0
    return (
        f"{v:g}" if round(mantissa) in (2, 3, 5) and abs(mantissa - round(mantissa)) < 1e-6 else ""
    )


PLAIN = FuncFormatter(lambda v, _: f"{v:g}")  # 0.3, 2, 1000; not 3x10^-1
_PLAIN_MINOR = FuncFormatter(lambda v, _: _minor_label(v))
NONE = FuncFormatter(lambda v, _: "")


def plain_log_ticks(ax) -> None:
    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() == "log":
            axis.set_major_formatter(PLAIN)
            axis.set_minor_formatter(_PLAIN_MINOR if axis is ax.yaxis else NONE)


# ---- refused points -------------------------------------------------------------------------


def refused_text(causes: list[str]) -> str:
    return "refused: " + (", ".join(sorted(set(causes))) or "cause not recorded")


def human_time(seconds: float) -> str:
    """A time in the unit that suits it alone: 710.7 ms, 122.0 µs."""
    scale, unit = time_unit([seconds])
    return f"{seconds * scale:.4g} {unit}"


def draw_refused(ax, x, y, color, causes: list[str], value="", label="_refused") -> str:
    """A refused point: an x at its value when inside the y limits (set beforehand from the
    accepted points), else an x on the edge it lies beyond, an arrow pointing out through that
    edge, its value and its cause. Returns where it went: 'inside', 'above' or 'below'."""
    lo, hi = ax.get_ylim()
    text = refused_text(causes)
    kw = {"marker": REFUSED_MARKER, "color": color, "ms": 9, "mew": 2, "ls": "none", "zorder": 4}
    kw["label"] = label
    if lo <= y <= hi:
        ax.plot([x], [y], **kw)
        ax.annotate(text, (x, y), textcoords="offset points", xytext=(6, 4), fontsize=7)
        return "inside"
    where = "above" if y > hi else "below"
    edge = hi if where == "above" else lo
    ax.plot([x], [edge], clip_on=False, **kw)
    ax.annotate(
        f"{text}\n{value or f'{y:.4g}'}, off the axis",
        xy=(x, edge),
        xytext=(12, -30 if where == "above" else 30),
        textcoords="offset points",
        ha="left",
        va="top" if where == "above" else "bottom",
        fontsize=7,
        arrowprops={"arrowstyle": "->", "color": color, "lw": 1.2},
        annotation_clip=False,
    )
    return where


# ---- output ---------------------------------------------------------------------------------

FORMATS = ("png", "svg")


def encode(fig, fmt: str) -> bytes | str:
    """The figure as PNG bytes or as SVG text: the <svg> element alone (no XML declaration or
    doctype), so an HTML page inlines it as it is and a .svg file of it still opens. The figure
    stays open (plt.close it when done)."""
    if fmt not in FORMATS:
        raise ValueError(f"figure format {fmt!r}: one of {', '.join(FORMATS)}")
    if fmt == "svg":
        text = io.StringIO()
        fig.savefig(text, format="svg", bbox_inches="tight")
        svg = text.getvalue()
        return svg[svg.index("<svg") :]
    raw = io.BytesIO()
    fig.savefig(raw, format="png", dpi=120, bbox_inches="tight")
    return raw.getvalue()


def write_atomically(path: Path, data: bytes | str) -> None:
    """The whole file or none: written beside its place, then renamed over it. Created with
    mode 0666 less the umask, like any file the user writes (mkstemp's 0600 is not)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # no partial figure left behind
        raise
