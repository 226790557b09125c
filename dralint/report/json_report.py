"""``--format json``: exactly ``{"findings": [...], "summary": {...}}`` (runners depend on it)."""
from __future__ import annotations

import json
from collections import Counter
from typing import Any, TextIO

from .context import ReportContext


def summary(result: Any, context: ReportContext) -> dict[str, Any]:
    """The run's counts; ``exit_code`` is the command's (it follows ``--fail-on``)."""
    by_sev = Counter(f.severity.value for f in result.findings)
    return {
        "files": result.files,
        "documents": result.documents,
        "objects": result.objects,
        "errors": by_sev.get("error", 0),
        "warnings": by_sev.get("warning", 0),
        "info": by_sev.get("info", 0),
        "rules": dict(sorted(Counter(f.rule for f in result.findings).items())),
        "suppressed": context.suppressed,
        "exit_code": context.exit_code,
    }


def render(result: Any, stream: TextIO, context: ReportContext) -> None:
    """Write the findings and the summary as one JSON object."""
    payload: dict[str, Any] = {"findings": [f.to_dict() for f in result.findings], "summary": summary(result, context)}
    if result.allocations:
        payload["allocations"] = result.allocations
    if result.traces:
        payload["traces"] = result.traces
    json.dump(payload, stream, indent=2, ensure_ascii=False)
    stream.write("\n")
