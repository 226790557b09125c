"""``--format sarif``: a SARIF 2.1.0 log for GitHub code scanning and other SARIF viewers.

One run; ``tool.driver.rules`` is the whole catalog (so a viewer can show any rule's help), and
each finding is a result pointing at its rule by id and index, with the file, line and column.
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import Any, Sequence, TextIO

from .. import __version__
from ..catalog import Rule
from ..findings import Finding
from ..project import repository
from .context import ReportContext, file_uri, rule_url, unwrap
from .json_report import dumps

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
# SARIF knows no "info": its informational level is "note".
LEVELS = {"error": "error", "warning": "warning", "info": "note"}
# v1 was rule|object|field, which every finding about a whole file shared.
FINGERPRINT = "dralint/v2"
_NUMBERS = re.compile(r"\d+")


def render(result: Any, stream: TextIO, context: ReportContext) -> None:
    """Write the SARIF log of one run."""
    stream.write(dumps(log(result, context)))
    stream.write("\n")


def log(result: Any, context: ReportContext) -> dict[str, Any]:
    """The SARIF log as a JSON-ready dict."""
    rules = list(context.catalog)
    index = {rule.id: i for i, rule in enumerate(rules)}
    driver: dict[str, Any] = {"name": "dralint", "version": __version__, "semanticVersion": __version__}
    if repository():
        driver["informationUri"] = repository()
    driver["rules"] = [_descriptor(rule) for rule in rules]
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": driver},
            "invocations": [{"executionSuccessful": context.exit_code != 2, "exitCode": context.exit_code}],
            "columnKind": "unicodeCodePoints",
            "results": [_result(f, index.get(f.rule, -1), context, print_)
                        for f, print_ in zip(result.findings, fingerprints(result.findings, context), strict=True)],
        }],
    }


def _descriptor(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": unwrap(rule.rationale)},
        "help": {"text": f"{unwrap(rule.rationale)}\n\nFix: {unwrap(rule.fix)}",
                 "markdown": f"{unwrap(rule.rationale)}\n\n**Fix.** {unwrap(rule.fix)}\n\n"
                             f"[{rule.id} {rule.name}]({rule_url(rule)})"},
        "helpUri": rule_url(rule),
        "defaultConfiguration": {"level": LEVELS[rule.severity.value]},
        "properties": {"tags": ["kubernetes", "dra", rule.category.value], "category": rule.category.value},
    }


def fingerprints(findings: Sequence[Finding], context: ReportContext) -> list[str]:
    """One fingerprint per finding, distinct within the run and stable across commits.

    Code scanning matches a result across commits by it, and merges results that share one. It is
    built from what moving code does not change: rule, file, object and field; a finding about a
    whole file (no object) adds its message with the numbers taken out ("first at line 3"), and
    findings alike in all of that are told apart by their order in the file.
    """
    seen: Counter[str] = Counter()
    out = []
    for finding in findings:
        message = "" if finding.object or finding.field else _NUMBERS.sub("#", finding.message)
        key = "\x1f".join((finding.rule, context.relative(finding.file), finding.object, finding.field, message))
        seen[key] += 1
        out.append(hashlib.sha256(f"{key}\x1f{seen[key]}".encode("utf-8")).hexdigest()[:32])
    return out


def _result(finding: Finding, rule_index: int, context: ReportContext, fingerprint: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ruleId": finding.rule,
        "level": LEVELS[finding.severity.value],
        "message": {"text": _message(finding)},
        "locations": [_location(finding, context)],
        "partialFingerprints": {FINGERPRINT: fingerprint},
    }
    if rule_index >= 0:
        out["ruleIndex"] = rule_index
    return out


def _message(finding: Finding) -> str:
    where = " ".join(p for p in (finding.object, finding.field) if p)
    return f"{finding.message} ({where})" if where else finding.message


def _location(finding: Finding, context: ReportContext) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": file_uri(context.relative(finding.file))}}
    if finding.line > 0:  # 0 means unknown; SARIF regions start at line 1
        region: dict[str, Any] = {"startLine": finding.line}
        if finding.column > 0:
            region["startColumn"] = finding.column
            end = finding.location.end
            if end.line > 0:  # the key or value the finding starts at (unknown for input errors)
                region["endLine"], region["endColumn"] = end.line, end.column
        physical["region"] = region
    location: dict[str, Any] = {"physicalLocation": physical}
    if finding.object:
        name = f"{finding.object} {finding.field}".strip()
        location["logicalLocations"] = [{"fullyQualifiedName": name, "kind": "object"}]
    return location
