"""Load and validate one result file. Every failure is an InputError naming the file and the
field, which the CLI prints on one line (exit 2): a result we cannot read is never analysed."""

from __future__ import annotations

import json
import math
import os
import stat
from functools import lru_cache
from importlib import resources
from pathlib import Path

import jsonschema

from . import consistency
from .errors import InputError
from .record import Run, parse_utc  # noqa: F401  (readers import them from here too)

# A real run of a full sweep is a few MB; anything far larger is not a result we wrote.
MAX_BYTES = 64 * 1024 * 1024


class _NonFinite:
    """Stands where the text had NaN, Infinity or a number too large for a double."""

    def __init__(self, text: str):
        self.text = text


def _parse_float(text: str):
    x = float(text)
    return x if math.isfinite(x) else _NonFinite(text)


def _find_nonfinite(node, path="$"):
    if isinstance(node, _NonFinite):
        return path, node.text
    if isinstance(node, dict):
        items = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return None
    for k, v in items:
        hit = _find_nonfinite(v, f"{path}[{k}]" if isinstance(k, int) else f"{path}.{k}")
        if hit:
            return hit
    return None


@lru_cache(maxsize=4)
def load_schema(path: str | None = None) -> dict:
    if path:
        return json.loads(Path(path).read_text())
    return json.loads(resources.files(__package__).joinpath("result.schema.json").read_text())


def _json_path(parts) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def parse(text: bytes, where: str) -> object:
    """JSON text to Python, refusing NaN/Infinity/overflow, bad UTF-8 and hostile nesting."""
    try:
        s = text.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(where, "", f"not UTF-8 text (byte {e.start})") from None
    try:
        data = json.loads(s, parse_constant=_NonFinite, parse_float=_parse_float)
    except json.JSONDecodeError as e:
        end = s.rstrip()
        cut = (
            e.pos >= len(end)
            or e.msg.startswith("Unterminated string")
            or (e.pos == len(end) - 1 and end[-1] in ".eE+-")
        )
        what = "truncated JSON" if cut else "malformed JSON"
        at = f"line {e.lineno} column {e.colno}"
        raise InputError(where, "", f"{what}: {e.msg} at {at}") from None
    except RecursionError:
        raise InputError(where, "", "JSON nested too deeply to be a result record") from None
    except ValueError as e:  # e.g. an integer with more digits than Python converts
        raise InputError(where, "", f"unreadable JSON value: {e}") from None
    try:
        hit = _find_nonfinite(data)
    except RecursionError:
        raise InputError(where, "", "JSON nested too deeply to be a result record") from None
    if hit:
        raise InputError(
            where,
            hit[0],
            f"{hit[1]} is not a finite number (NaN/Infinity are not JSON and no time can be one)",
        )
    return data


def validate(data: object, where: str, schema: dict | None = None) -> None:
    validator = jsonschema.Draft202012Validator(schema or load_schema())
    errors = list(validator.iter_errors(data))
    if not errors:
        consistency.check(data, where)
        return
    # the shallowest error first: a missing block is the cause of everything beneath it
    err = min(errors, key=lambda e: (len(e.absolute_path), str(list(e.absolute_path))))
    err = jsonschema.exceptions.best_match([err])
    msg = err.message
    if len(msg) > 160:
        msg = msg[:157] + "..."
    raise InputError(where, _json_path(err.absolute_path), msg)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def load_run(path: str | Path, schema: dict | None = None) -> Run:
    where = str(path)
    p = Path(path)
    try:
        # Opened without blocking and checked before reading: a FIFO (or a device) named *.json
        # would block the open or the read for good, and is no record.
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with open(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(21, "is a directory")
            if not stat.S_ISREG(st.st_mode):
                raise InputError(where, "", f"is {_kind(st.st_mode)}, not a result file")
            if st.st_size > MAX_BYTES:
                raise InputError(
                    where,
                    "",
                    f"{st.st_size} bytes, larger than "
                    f"{MAX_BYTES // (1024 * 1024)} MiB: not a result record "
                    "(refused unread)",
                )
            os.set_blocking(f.fileno(), True)
            # read at most one byte past the cap: a file may grow after its stat
            text = f.read(MAX_BYTES + 1)
    except IsADirectoryError:
        raise InputError(where, "", "is a directory, not a result file") from None
    except OSError as e:
        raise InputError(where, "", e.strerror or str(e)) from None
    if len(text) > MAX_BYTES:
        raise InputError(
            where,
            "",
            f"larger than {MAX_BYTES // (1024 * 1024)} MiB: not a result record (refused unread)",
        )
    if not text.strip():
        raise InputError(where, "", "empty file")
    data = parse(text, where)
    validate(data, where, schema)
    return Run(where, data)
