"""The analysis' user-extendable tables (data/tolerances.json, data/targets.json): a JSON object
holding a list of entries under one key, each checked by its module; the built-in file, with a
user file's entries added (an entry of the same id replaces the built-in one)."""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources

from .errors import InputError


def read(data, key: str, where: str, checked: Callable) -> list[dict]:
    """The checked entries of `data[key]` ('tolerances', 'targets')."""
    items = data.get(key) if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise InputError(where, key, f"a list of {key} is needed")
    return [checked(t, where) for t in items]


def builtin(key: str, checked: Callable) -> list[dict]:
    """The package's data/KEY.json, checked."""
    text = resources.files(__package__).joinpath(f"data/{key}.json").read_text()
    return read(json.loads(text), key, f"data/{key}.json", checked)


def with_file(entries: list[dict], path: str | None, key: str, checked: Callable) -> list[dict]:
    """`entries` with the file's added, by id (the same id: the file's); one InputError for an
    unreadable file, bad JSON or a bad entry."""
    out = {t["id"]: t for t in entries}
    if path:
        try:
            with open(path) as f:
                data = json.load(f)
        except OSError as e:
            raise InputError(path, "", f"unreadable: {e.strerror or e}") from None
        except ValueError as e:
            raise InputError(path, "", f"not JSON: {e}") from None
        out |= {t["id"]: t for t in read(data, key, path, checked)}
    return list(out.values())
