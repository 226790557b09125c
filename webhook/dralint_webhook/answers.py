"""Write a :class:`Verdict` as the AdmissionReview the API server expects back.

A denial carries a ``metav1.Status`` (code, reason, a message listing each error with its field,
``details.causes``); warnings are cut to what the API server keeps: at most 256 characters each
and 4,096 in total (it truncates or drops the rest, so we do it ourselves and say so). The
webhook never mutates: no ``patch`` is ever written.
"""
from __future__ import annotations

from typing import Any

from dralint.findings import Finding

from .admission import API_VERSION, KIND, AdmissionRequest
from .verdict import Verdict

WARNING_MAX = 256
WARNINGS_TOTAL_MAX = 4096
MESSAGE_ERRORS_MAX = 20     # errors listed in the status message; every one stays in details.causes
CAUSES_MAX = 100            # a hostile object can raise thousands of findings; the answer stays small
# Findings quote the object's values; a hostile object's values are megabytes. Every text of the
# answer is cut, so an answer is at most some 150 KB whatever came in.
CAUSE_MESSAGE_MAX = 1024
FIELD_MAX = 512
STATUS_MESSAGE_MAX = 16 * 1024
NAME_MAX = 253              # a Kubernetes name is at most 253 characters; a longer one is not a name


def review_response(request: AdmissionRequest, verdict: Verdict) -> dict[str, Any]:
    """The AdmissionReview answering ``request``, with the same ``uid``."""
    response: dict[str, Any] = {"uid": request.uid, "allowed": verdict.allowed}
    if not verdict.allowed:
        response["status"] = _status(request, verdict)
    warnings = warning_lines(verdict)
    if warnings:
        response["warnings"] = warnings
    return {"apiVersion": API_VERSION, "kind": KIND, "response": response}


def _status(request: AdmissionRequest, verdict: Verdict) -> dict[str, Any]:
    details: dict[str, Any] = {"kind": _cut(request.kind.kind, NAME_MAX), "group": _cut(request.kind.group, NAME_MAX)}
    if request.name:
        details["name"] = _cut(request.name, NAME_MAX)
    causes = [{"type": "FieldValueInvalid", "field": _cut(f.field, FIELD_MAX),
               "message": _cut(f.message, CAUSE_MESSAGE_MAX) + f" ({f.rule} {f.name})"}
              for f in verdict.errors[:CAUSES_MAX]]
    if causes:
        details["causes"] = causes
    message = verdict.message or denial_message(request, verdict.errors)
    return {"metadata": {}, "status": "Failure", "code": verdict.code, "reason": verdict.reason,
            "message": _cut(message, STATUS_MESSAGE_MAX), "details": details}


def denial_message(request: AdmissionRequest, errors: tuple[Finding, ...]) -> str:
    """``ResourceClaim ml/train is invalid: <field>: <message> (DRA102 wrong-type); ...``."""
    shown = [_line(f) for f in errors[:MESSAGE_ERRORS_MAX]]
    more = len(errors) - len(shown)
    if more > 0:
        shown.append(f"and {more} more")
    return f"{_cut(request.display, 2 * NAME_MAX)} is invalid: " + "; ".join(shown)


def warning_lines(verdict: Verdict) -> list[str]:
    """The response's warnings: notes first, then warning findings, within the API server's limits."""
    lines = [_cut(_clean(n), WARNING_MAX) for n in verdict.notes] + [_warning(f) for f in verdict.warnings]
    out: list[str] = []
    total = 0
    for i, line in enumerate(lines):
        rest = len(lines) - i - 1
        # Keep room for the closing "N more" line whenever more warnings follow this one.
        reserve = len(_more(rest)) if rest else 0
        if total + len(line) + reserve > WARNINGS_TOTAL_MAX:
            out.append(_more(len(lines) - i))
            break
        out.append(line)
        total += len(line)
    return out


def _line(f: Finding) -> str:
    where = f"{_cut(f.field, FIELD_MAX)}: " if f.field else ""
    return f"{where}{_cut(f.message, CAUSE_MESSAGE_MAX)} ({f.rule} {f.name})"


def _warning(f: Finding) -> str:
    """One warning line of at most WARNING_MAX characters; a long message is cut, the rule id kept."""
    where = _clean(f"{f.field}: ") if f.field else ""
    rule = f" ({f.rule} {f.name})"
    room = WARNING_MAX - len(where) - len(rule)
    if room < 20:  # a pathological field path: cut the whole line instead
        return _cut(_clean(_line(f)), WARNING_MAX)
    return where + _cut(_clean(f.message), room) + rule


def _more(n: int) -> str:
    return f"dralint: {n} more warning(s) not shown"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _clean(text: str) -> str:
    """Warnings travel in HTTP headers: no control characters, one line."""
    return "".join(ch if ch.isprintable() else " " for ch in text)
