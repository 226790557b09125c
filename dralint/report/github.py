"""``--format github``: GitHub Actions workflow commands, one annotation per finding.

``::error file=F,line=L,col=C,title=T::message`` shows the finding on the pull request's diff.
Escaping follows the Actions toolkit (``@actions/core`` command.ts): in the message ``%``, CR
and LF are percent-encoded; in property values ``:`` and ``,`` are too.
"""
from __future__ import annotations

from typing import Any, TextIO

from ..findings import Finding
from .context import ReportContext, counts_line

# Actions has no "info" annotation: its lowest level is "notice".
COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    """Escape a workflow command's message."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command's property value."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding, context: ReportContext) -> str:
    """One ``::level file=...::message`` line."""
    props = [("file", context.relative(finding.file))]
    if finding.line > 0:
        props.append(("line", str(finding.line)))
        if finding.column > 0:
            props.append(("col", str(finding.column)))
    props.append(("title", f"{finding.rule} {finding.name}"))
    where = " ".join(p for p in (finding.object, finding.field) if p)
    message = f"{finding.message} ({where})" if where else finding.message
    joined = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    return f"::{COMMANDS[finding.severity.value]} {joined}::{escape_data(message)}"


def render(result: Any, stream: TextIO, context: ReportContext) -> None:
    """Write one annotation per finding, then a plain summary line for the job log."""
    for finding in result.findings:
        stream.write(annotation(finding, context) + "\n")
    counts = {level: sum(f.severity.value == level for f in result.findings) for level in COMMANDS}
    stream.write(f"dralint: {counts_line(result)}: {counts['error']} error(s), "
                 f"{counts['warning']} warning(s), {counts['info']} info\n")
