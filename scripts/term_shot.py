#!/usr/bin/env python3
"""A terminal screenshot: run a command in a detached tmux window of a given size (a real
terminal, so programs see isatty), capture what the window shows, and draw it into a PNG.

    python3 scripts/term_shot.py --out shot.png -- build/bin/bench_conv --stage up0 --reps 3
    python3 scripts/term_shot.py --at 8 --out progress.png -- build/bin/bench_conv ...

By default the capture is taken when the command has ended (the window's last screen plus its
scroll-back, --lines of it); `--at S` takes it S seconds after the start instead (a progress
line mid-run), and the command is then left to finish in its window.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
DONE = "__term_shot_done__"


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="PNG file to write")
    p.add_argument("--columns", type=int, default=100, help="window width (default 100)")
    p.add_argument("--rows", type=int, default=40, help="window height (default 40)")
    p.add_argument("--lines", type=int, default=60, help="most lines drawn, the last ones (60)")
    p.add_argument("--at", type=float, help="capture this many seconds after the start")
    p.add_argument("--timeout", type=float, default=600, help="give up after this many seconds")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = p.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        p.error("no command given (put it after --)")
    return args


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def capture(args: argparse.Namespace) -> list[str]:
    """The window's text: ran in a private tmux server (-L) so no user session is touched."""
    sock = f"term-shot-{uuid.uuid4().hex[:8]}"
    cmd = shlex.join(args.command)
    shell = f"cd {shlex.quote(os.getcwd())} && {cmd}; echo {DONE}; sleep 3600"
    base = ["-L", sock]
    tmux(*base, "new-session", "-d", "-x", str(args.columns), "-y", str(args.rows), shell)
    try:
        t0 = time.monotonic()
        while True:
            text = tmux(*base, "capture-pane", "-p", "-S", "-", "-E", "-")
            elapsed = time.monotonic() - t0
            if args.at is not None and elapsed >= args.at:
                break
            if DONE in text:
                break
            if elapsed > args.timeout:
                sys.exit(f"term_shot: the command did not end within {args.timeout:g} s")
            time.sleep(0.2)
    finally:
        subprocess.run(["tmux", *base, "kill-server"], capture_output=True)
    lines = [ln for ln in text.rstrip("\n").split("\n") if DONE not in ln]
    while lines and not lines[-1].strip():
        lines.pop()
    prompt = "$ " + shlex.join(args.command)
    return ([prompt] + lines)[-args.lines :]


def draw(lines: list[str], columns: int, out: str) -> None:
    font = ImageFont.truetype(FONT, 14)
    cw = font.getlength("M")  # the advance of one cell (monospace)
    lh = 18
    img = Image.new("RGB", (int(cw * columns) + 20, lh * len(lines) + 20), (30, 30, 30))
    d = ImageDraw.Draw(img)
    for i, ln in enumerate(lines):
        d.text((10, 10 + i * lh), ln[:columns], font=font, fill=(220, 220, 220))
    with tempfile.NamedTemporaryFile(dir=Path(out).parent or ".", suffix=".png", delete=False) as f:
        img.save(f, format="PNG")
    os.replace(f.name, out)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if not shutil.which("tmux"):
        sys.exit("term_shot: tmux is not installed (apt-get install tmux)")
    lines = capture(args)
    draw(lines, args.columns, args.out)
    print(f"term_shot: {args.out} ({len(lines)} lines, {args.columns} columns)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
