"""``--format text``: ``file:line:col: severity rule message``, grouped by file, coloured on a terminal."""
from __future__ import annotations

from itertools import groupby
from typing import Any, TextIO

from .json_report import summary

_COLOURS = {"error": "\033[31m", "warning": "\033[33m", "info": "\033[36m"}
_BOLD, _DIM, _RESET = "\033[1m", "\033[2m", "\033[0m"


def render(result: Any, stream: TextIO, *, colour: bool = False, **_: Any) -> None:
    def c(code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if colour else text

    for file, group in groupby(result.findings, key=lambda f: f.file):
        if colour:
            stream.write(c(_BOLD, file) + "\n")
        for f in group:
            where = f"{f.file}:{f.line}:{f.column}:"
            sev = c(_COLOURS.get(f.severity.value, ""), f.severity.value)
            obj = f" ({f.object}{' ' + f.field if f.field else ''})" if f.object else (f" ({f.field})" if f.field else "")
            stream.write(f"{where} {sev} {f.rule} {f.message}{c(_DIM, obj)} [{f.name}]\n")
        if colour:
            stream.write("\n")
    for alloc in result.allocations:
        stream.write(f"allocation: {alloc}\n")
    for claim, lines in result.traces.items():
        stream.write(f"trace of {claim}:\n")
        stream.writelines(f"  {line}\n" for line in lines)
    s = summary(result)
    line = (f"{s['files']} file(s), {s['objects']} object(s): {s['errors']} error(s), {s['warnings']} warning(s), "
            f"{s['info']} info")
    stream.write((c(_BOLD, line) if colour else line) + "\n")
