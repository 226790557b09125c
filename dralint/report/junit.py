"""``--format junit``: JUnit XML, the test-report format every CI system can display.

One ``<testsuite>`` per linted file. A clean file is one passing test case; otherwise every
finding is a test case named after its object and rule. Findings at or above the failing
severity (errors, or what ``--fail-on`` says) carry a ``<failure>``; lesser ones pass and keep
their text in ``<system-out>``, so the report agrees with the exit code.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any, TextIO

from ..findings import Finding, Severity
from .context import ReportContext


def render(result: Any, stream: TextIO, context: ReportContext) -> None:
    """Write the JUnit XML document of one run."""
    root = document(result, context)
    ET.indent(root)
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    stream.write(ET.tostring(root, encoding="unicode"))
    stream.write("\n")


def document(result: Any, context: ReportContext) -> ET.Element:
    """The ``<testsuites>`` element of one run."""
    by_file: dict[str, list[Finding]] = {}
    for finding in result.findings:
        by_file.setdefault(finding.file, []).append(finding)
    # Linted files in order, then files that only appear in findings (cluster state, stdin).
    files = list(dict.fromkeys(list(context.files) + list(by_file)))
    root = ET.Element("testsuites", name="dralint")
    for file in files:
        root.append(_suite(context.relative(file), by_file.get(file, []), context.fail_on))
    _count(root, root.findall("testsuite"))
    return root


def _suite(name: str, findings: list[Finding], fail_on: Severity) -> ET.Element:
    suite = ET.Element("testsuite", name=name)
    if not findings:
        ET.SubElement(suite, "testcase", classname=name, name="no findings")
    for f in findings:
        where = f"{name}:{f.line}:{f.column}"
        case = ET.SubElement(suite, "testcase", classname=f.object or name,
                             name=f"{f.rule} {f.name} at {where}" + (f" {f.field}" if f.field else ""),
                             file=name, line=str(f.line))
        body = (f"{where}: {f.severity.value}: {f.message}\nobject: {f.object or '-'}\nfield: {f.field or '-'}\n"
                f"rule: {f.rule} {f.name} ({f.category.value})")
        if f.severity.rank >= fail_on.rank:
            failure = ET.SubElement(case, "failure", message=f.message, type=f.rule)
            failure.text = body
        else:
            out = ET.SubElement(case, "system-out")
            out.text = body
    _count(suite, suite.findall("testcase"))
    return suite


def _count(element: ET.Element, children: list[ET.Element]) -> None:
    """Set the ``tests`` / ``failures`` / ``errors`` / ``skipped`` counts JUnit readers expect."""
    if element.tag == "testsuites":
        tests = sum(int(c.get("tests", "0")) for c in children)
        failures = sum(int(c.get("failures", "0")) for c in children)
    else:
        tests = len(children)
        failures = sum(c.find("failure") is not None for c in children)
    element.set("tests", str(tests))
    element.set("failures", str(failures))
    element.set("errors", "0")
    element.set("skipped", "0")
