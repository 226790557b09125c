"""The audit's findings in the command line's formats.

json, sarif, github and junit are the CLI's own reporters (``dralint.report``): each finding's file
is its object's listing (``cluster:resourceclaims/ml/train``), with no line, and its object
``ResourceClaim ml/train``. Text names the object first, as an audit reads best:
``ResourceClaim ml/train (resourceclaims): error: ... [DRA600 device-class-not-found]``.
"""
from __future__ import annotations

from collections import Counter
from typing import TextIO

from ..catalog import load_catalog
from ..cluster.state import ClusterSnapshot
from ..engine import RunResult
from ..findings import Finding
from ..report import FORMATS, ReportContext, reporter
from .judge import Verdict

FORMAT_NAMES = tuple(FORMATS)   # the command line's, text first


def render(fmt: str, verdicts: list[Verdict], snapshot: ClusterSnapshot, exit_code: int, stream: TextIO) -> None:
    """Write the audit of ``verdicts`` in format ``fmt``."""
    findings = sorted((f for v in verdicts for f in v.findings), key=Finding.sort_key)
    if fmt == "text":
        _text(verdicts, snapshot, stream)
        return
    result = RunResult(findings=findings, files=len(verdicts), documents=len(verdicts), objects=len(verdicts))
    context = ReportContext(catalog=load_catalog(), exit_code=exit_code, files=tuple(v.obj.source for v in verdicts))
    reporter(fmt).render(result, stream, context)


def _text(verdicts: list[Verdict], snapshot: ClusterSnapshot, stream: TextIO) -> None:
    for verdict in verdicts:
        obj = verdict.obj
        for f in verdict.findings:
            where = f" ({f.field})" if f.field else ""
            stream.write(f"{obj.display} ({obj.resource}): {f.severity.value}: {f.message}{where} "
                         f"[{f.rule} {f.name}]\n")
    levels = Counter(f.severity.value for v in verdicts for f in v.findings)
    with_findings = sum(1 for v in verdicts if v.findings)
    exempt = sum(1 for v in verdicts if v.exempt)
    counts = ", ".join(f"{levels[level]} {level}(s)" for level in ("error", "warning", "info") if levels[level])
    head = f"audited {len(verdicts)} object(s) of {snapshot.server}"
    if exempt:
        head += f" ({exempt} in exempt namespaces, not judged)"
    stream.write(f"{head}: {counts} in {with_findings} object(s)\n" if counts else f"{head}: no problems found\n")
