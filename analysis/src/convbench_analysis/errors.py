"""The one exception for input the analysis refuses: a record, a schema, a command line."""

from __future__ import annotations


class InputError(Exception):
    """A file we refuse to read: `where` is the file, `field` a JSON path or ''. The CLI prints it
    on one line (exit 2): a result we cannot read is never analysed."""

    def __init__(self, where: str, field: str, message: str):
        super().__init__(f"{where}: {field + ': ' if field else ''}{message}")
