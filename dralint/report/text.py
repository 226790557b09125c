"""``--format text``: one line per finding, grouped by file, and a summary table at the end.

A finding reads ``file:line:col: severity: message (object field) [DRA201 request-count-positive]``:
it ends with the rule's id and name so that both can be searched for (and passed to ``--explain``).
On a terminal the severities, headings and the table are coloured.
"""
from __future__ import annotations

from collections import Counter
from itertools import groupby
from typing import Any, TextIO

from ..findings import Finding, Severity
from .context import ReportContext, counts_line

_COLOURS = {"error": "\033[31m", "warning": "\033[33m", "info": "\033[36m"}
_BOLD, _DIM, _GREEN, _RESET = "\033[1m", "\033[2m", "\033[32m", "\033[0m"
_LEVELS = [s.value for s in sorted(Severity, key=lambda s: -s.rank)]


class _Paint:
    """ANSI colour when writing to a terminal, plain text otherwise."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if self.on and code else text

    def severity(self, level: str, text: str | None = None) -> str:
        return self(_COLOURS.get(level, ""), level if text is None else text)


def render(result: Any, stream: TextIO, context: ReportContext) -> None:
    """Write the findings, the allocations and traces asked for, and the summary table."""
    paint = _Paint(context.colour)
    for file, group in groupby(result.findings, key=lambda f: f.file):
        if paint.on:
            stream.write(paint(_BOLD, context.relative(file)) + "\n")
        stream.writelines(line(f, context, paint) + "\n" for f in group)
        if paint.on:
            stream.write("\n")
    for alloc in result.allocations:
        stream.write(_allocation_line(alloc) + "\n")
    for claim, lines in result.traces.items():
        stream.write(f"trace of {claim}:\n")
        stream.writelines(f"  {text}\n" for text in lines)
    stream.write(summary_table(result, context, paint))


def line(finding: Finding, context: ReportContext, paint: _Paint | None = None) -> str:
    """One finding as a line of text."""
    paint = paint or _Paint(False)
    where = f"{context.relative(finding.file)}:{finding.line}:{finding.column}:"
    inside = " ".join(p for p in (finding.object, finding.field) if p)
    inside = paint(_DIM, f" ({inside})") if inside else ""
    return (f"{where} {paint.severity(finding.severity.value)}: {finding.message}{inside} "
            f"[{finding.rule} {finding.name}]")


def summary_table(result: Any, context: ReportContext, paint: _Paint | None = None) -> str:
    """The closing table: totals, then findings per rule with their severity and file count."""
    paint = paint or _Paint(False)
    findings = result.findings
    by_level = Counter(f.severity.value for f in findings)
    head = counts_line(result)
    if context.suppressed:
        head += f", {context.suppressed} finding(s) suppressed"
    if not findings:
        return paint(_GREEN + _BOLD, f"✓ {head}: no problems found") + "\n"
    totals = ", ".join(paint.severity(level, f"{by_level[level]} {_plural(level, by_level[level])}")
                       for level in _LEVELS if by_level[level])
    rows = []
    per_rule = Counter((f.rule, f.name, f.severity.value) for f in findings)
    files_per_rule = {key: len({f.file for f in findings if (f.rule, f.name, f.severity.value) == key})
                      for key in per_rule}
    # Worst severity first, then the most frequent rule, then the id: what to fix first is on top.
    for (rule, name, level), count in sorted(per_rule.items(),
                                             key=lambda kv: (-Severity(kv[0][2]).rank, -kv[1], kv[0][0])):
        rows.append((rule, name, level, str(count), str(files_per_rule[(rule, name, level)])))
    header = ("rule", "name", "severity", "findings", "files")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]

    def row(cells: tuple[str, ...], level: str | None = None) -> str:
        padded = [cells[0].ljust(widths[0]), cells[1].ljust(widths[1]), cells[2].ljust(widths[2]),
                  cells[3].rjust(widths[3]), cells[4].rjust(widths[4])]
        if level:
            padded[2] = paint.severity(level, padded[2])
        return "  " + "  ".join(padded).rstrip() + "\n"

    out = ["\n", paint(_BOLD, row(header).rstrip("\n")) + "\n",
           "  " + "  ".join("─" * w for w in widths) + "\n"]
    out += [row(r, r[2]) for r in rows]
    out.append("\n" + paint(_BOLD, f"{head}: ") + totals + "\n")
    return "".join(out)


def _plural(level: str, count: int) -> str:
    return level if level == "info" or count == 1 else level + "s"


def _allocation_line(alloc: dict) -> str:
    """``allocation: ml/claim (Deployment ml/web) on worker-1: gpu → drv/pool/gpu-0, drv/pool/gpu-1``."""
    pod = f" ({alloc['pod']})" if alloc.get("pod") else ""
    picks = "; ".join(f"{request} → {', '.join(devices)}" for request, devices in alloc.get("devices", {}).items())
    return f"allocation: {alloc.get('claim')}{pod} on {alloc.get('node')}: {picks or 'no devices'}"

