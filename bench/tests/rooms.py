#!/usr/bin/env python3
"""bench/src's rooms keep their order: a room includes only rooms listed before it.

The order is the one bench/CMakeLists.txt states in its comment ("#   core/ ..."); every
`#include "room/file.hpp"` of a file in bench/src/<room>/ must name its own room or a lower one.
Prints every include that runs back up (file:line) and exits 1; 0 when none does.
Usage: rooms.py [REPO]   (planted fault seen: an include of "driver/run.hpp" from core/ -> exit 1)
"""

import re
import sys
from pathlib import Path

ROOM_LINE = re.compile(r"^#\s+([a-z_]+)/\s")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"')


def room_order(cmake: Path) -> list[str]:
    rooms = [m.group(1) for m in map(ROOM_LINE.match, cmake.read_text().splitlines()) if m]
    if not rooms:
        raise SystemExit(f"rooms: {cmake} states no room order (lines '#   room/  what it holds')")
    return rooms


def back_edges(src: Path, rooms: list[str]) -> list[str]:
    rank = {room: i for i, room in enumerate(rooms)}
    found = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in {".hpp", ".cpp", ".cu", ".cuh", ".h"}:
            continue
        room = path.relative_to(src).parts[0]
        if room not in rank:
            found.append(f"{path}: in no room of the stated order {rooms}")
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if m and m.group(1) in rank and rank[m.group(1)] > rank[room]:
                found.append(f"{path}:{n}: {room}/ includes {m.group(1)}/, a room above it")
    return found


def main(argv: list[str]) -> int:
    repo = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[2]
    rooms = room_order(repo / "bench" / "CMakeLists.txt")
    found = back_edges(repo / "bench" / "src", rooms)
    for line in found:
        print(line, file=sys.stderr)
    print(f"rooms: {len(rooms)} rooms in order, {len(found)} include(s) running back up")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
