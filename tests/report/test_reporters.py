"""The report formats: SARIF against the official schema, GitHub annotations, JUnit XML, text."""
from __future__ import annotations

import dataclasses
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from dralint.catalog import load_catalog
from dralint.cli import main
from dralint.engine import RunResult
from dralint.findings import Category, Finding, Location, Position, Severity
from dralint.paths import FieldPath
from dralint.report import ReportContext, reporter
from dralint.project import rules_doc_url
from dralint.report.github import annotation, escape_data, escape_property

from conftest import BAD_CLAIM

DATA = Path(__file__).resolve().parents[1] / "data"
CATALOG = load_catalog()
GOOD_CLASS = "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: gpu.example.com\nspec: {}\n"


def finding(rule: str = "DRA201", severity: Severity = Severity.ERROR, **kw) -> Finding:
    where = dict(file="manifests/claim.yaml", line=12, column=9, field="spec.devices.requests[0].exactly.count")
    where.update((key, kw.pop(key)) for key in list(kw) if key in where)
    base = dict(rule=rule, name=CATALOG.get(rule).name, severity=severity, category=Category.SEMANTIC,
                message="count must be > 0", object="ResourceClaim default/gpu-claim",
                location=Location(where["file"], Position(where["line"], where["column"]),
                                  path=FieldPath.parse(where["field"])))
    base.update(kw)
    return Finding(**base)


def render(fmt: str, findings: list[Finding], *, files: tuple[str, ...] = (), exit_code: int = 1,
           fail_on: Severity = Severity.ERROR) -> str:
    out = io.StringIO()
    result = RunResult(findings=findings, files=len(files) or 1, documents=1, objects=1)
    reporter(fmt).render(result, out, ReportContext(catalog=CATALOG, exit_code=exit_code, files=files, fail_on=fail_on))
    return out.getvalue()


def run(tmp_path: Path, *args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["--no-config", *args], stdout=out, stderr=err)
    return code, out.getvalue()


# SARIF ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sarif_validator() -> jsonschema.Draft4Validator:
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())


def test_sarif_of_a_real_run_is_valid_sarif_2_1_0(tmp_path, sarif_validator, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "claim.yaml").write_text(BAD_CLAIM)
    code, out = run(tmp_path, "--format", "sarif", "claim.yaml")
    log = json.loads(out)
    sarif_validator.validate(log)
    assert code == 1
    run_ = log["runs"][0]
    driver = run_["tool"]["driver"]
    assert [r["id"] for r in driver["rules"]] == [r.id for r in CATALOG]
    result = next(r for r in run_["results"] if r["ruleId"] == "DRA201")
    assert result["level"] == "error"
    assert driver["rules"][result["ruleIndex"]]["id"] == "DRA201"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "claim.yaml"
    # the region ends where the key `count` ends: SARIF's end column is the one after it
    assert location["region"] == {"startLine": 12, "startColumn": 9, "endLine": 12, "endColumn": 14}


def test_sarif_rules_carry_help_uri_into_the_rule_docs(sarif_validator):
    log = json.loads(render("sarif", []))
    sarif_validator.validate(log)
    rule = next(r for r in log["runs"][0]["tool"]["driver"]["rules"] if r["id"] == "DRA201")
    assert rule["helpUri"] == f"{rules_doc_url()}#dra201"
    assert rule["defaultConfiguration"]["level"] == "error"
    assert rule["shortDescription"]["text"] == CATALOG.get("DRA201").summary


def test_sarif_edge_cases_stay_valid(sarif_validator):
    findings = [finding(line=0, column=0, file="<stdin>", object="", field=""),
                finding(severity=Severity.INFO, file="dir with space/ä.yaml", message="line\nbreak"),
                finding(severity=Severity.WARNING, file="/elsewhere/abs.yaml", line=3, column=0)]
    log = json.loads(render("sarif", findings))
    sarif_validator.validate(log)
    results = log["runs"][0]["results"]
    assert "region" not in results[0]["locations"][0]["physicalLocation"]
    assert results[1]["level"] == "note"
    assert results[1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "dir%20with%20space/%C3%A4.yaml"
    assert results[2]["locations"][0]["physicalLocation"]["region"] == {"startLine": 3}


def _prints(findings: list[Finding]) -> list[str]:
    return [r["partialFingerprints"]["dralint/v2"] for r in json.loads(render("sarif", findings))["runs"][0]["results"]]


def test_sarif_fingerprints_are_distinct_and_stable():
    # Code scanning merges results that share a fingerprint: two broken files must stay two alerts.
    whole_file = dict(rule="DRA001", object="", field="", line=3, column=5, category=Category.INPUT)
    findings = [finding(file="a.yaml", message="invalid YAML: mapping values are not allowed here", **whole_file),
                finding(file="b.yaml", message="invalid YAML: mapping values are not allowed here", **whole_file),
                finding(file="b.yaml", message="invalid YAML: found character '\\t'", **whole_file),
                finding(), finding(file="other/claim.yaml"),
                finding(message="second finding on the same field")]
    prints = _prints(findings)
    assert len(set(prints)) == len(prints)
    # Stable: the same findings on other lines (code moved), with other numbers in a whole-file message.
    moved = [dataclasses.replace(f, location=dataclasses.replace(f.location, start=Position(f.line + 10, f.column)),
                                 message=f.message.replace("3", "7")) for f in findings]
    assert _prints(moved) == prints


def test_the_validator_rejects_a_broken_log(sarif_validator):
    """The schema copy is live: a result with a level SARIF does not know fails validation."""
    log = json.loads(render("sarif", [finding()]))
    log["runs"][0]["results"][0]["level"] = "info"
    with pytest.raises(jsonschema.ValidationError):
        sarif_validator.validate(log)


# GitHub ---------------------------------------------------------------------------------------

def test_github_escaping_follows_the_actions_toolkit():
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_github_annotation_line():
    context = ReportContext(catalog=CATALOG, exit_code=1)
    line = annotation(finding(message="bad: 100%,\nreally"), context)
    assert line == ("::error file=manifests/claim.yaml,line=12,col=9,title=DRA201 request-count-positive"
                    "::bad: 100%25,%0Areally (ResourceClaim default/gpu-claim spec.devices.requests[0].exactly.count)")
    assert annotation(finding(severity=Severity.INFO, line=0, file="a,b:c.yaml"), context).startswith(
        "::notice file=a%2Cb%3Ac.yaml,title=")


def test_github_format_from_the_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "claim.yaml").write_text(BAD_CLAIM)
    code, out = run(tmp_path, "--format", "github", "claim.yaml")
    lines = out.splitlines()
    assert code == 1
    assert any(line.startswith("::error file=claim.yaml,line=12,col=9,title=DRA201 request-count-positive::")
               for line in lines)
    assert lines[-1].startswith("dralint: 1 file(s)")


# JUnit ----------------------------------------------------------------------------------------

def junit(text: str) -> ET.Element:
    root = ET.fromstring(text)
    assert root.tag == "testsuites"
    for suite in root.findall("testsuite"):
        cases = suite.findall("testcase")
        assert suite.get("name") and int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures")) == sum(c.find("failure") is not None for c in cases)
        for case in cases:
            assert case.get("classname") and case.get("name")
            assert len(case.findall("failure")) <= 1
    assert int(root.get("tests")) == sum(int(s.get("tests")) for s in root.findall("testsuite"))
    assert int(root.get("failures")) == sum(int(s.get("failures")) for s in root.findall("testsuite"))
    return root


def test_junit_one_suite_per_file_failures_per_finding():
    findings = [finding(), finding(rule="DRA202", line=13, message='quote " & <tag>'),
                finding(severity=Severity.WARNING, line=14)]
    root = junit(render("junit", findings, files=("clean.yaml", "manifests/claim.yaml")))
    clean, bad = root.findall("testsuite")
    assert clean.get("name") == "clean.yaml" and clean.get("failures") == "0"
    assert [c.get("name") for c in clean.findall("testcase")] == ["no findings"]
    assert bad.get("tests") == "3" and bad.get("failures") == "2"
    failure = bad.findall("testcase")[1].find("failure")
    assert failure.get("type") == "DRA202" and failure.get("message") == 'quote " & <tag>'
    assert bad.findall("testcase")[2].find("system-out") is not None


def test_junit_follows_fail_on():
    root = junit(render("junit", [finding(severity=Severity.WARNING)], fail_on=Severity.WARNING))
    assert root.get("failures") == "1"


# Text -----------------------------------------------------------------------------------------

def test_text_lines_end_with_rule_id_and_name_and_a_summary_table():
    text = render("text", [finding(), finding(line=20), finding(rule="DRA202", severity=Severity.WARNING)])
    lines = text.splitlines()
    assert lines[0] == ("manifests/claim.yaml:12:9: error: count must be > 0 (ResourceClaim default/gpu-claim "
                        "spec.devices.requests[0].exactly.count) [DRA201 request-count-positive]")
    table = [line.split() for line in lines if line.startswith("  DRA")]
    assert table == [["DRA201", "request-count-positive", "error", "2", "1"],
                     ["DRA202", CATALOG.get("DRA202").name, "warning", "1", "1"]]
    assert lines[-1] == "1 file(s), 1 object(s): 2 errors, 1 warning"
    assert "\033[" not in text


def test_text_clean_run_and_colour():
    assert render("text", []).strip() == "✓ 1 file(s), 1 object(s): no problems found"
    out = io.StringIO()
    reporter("text").render(RunResult(findings=[finding()], files=1), out,
                           ReportContext(catalog=CATALOG, exit_code=1, colour=True))
    assert "\033[31merror\033[0m" in out.getvalue()


def test_output_file_and_exit_code(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.yaml").write_text(GOOD_CLASS)
    code, out = run(tmp_path, "--format", "sarif", "-o", "report.sarif", "good.yaml")
    assert code == 0 and out == ""
    assert json.loads((tmp_path / "report.sarif").read_text())["runs"][0]["results"] == []


def test_json_text_is_what_the_standard_library_writes():
    from dralint.report.json_report import dumps

    payload = {"findings": [{"message": "é ✓ \"quoted\"", "line": 3, "details": {"limit": 16, "ok": True, "x": None}}],
               "summary": {"rules": {}, "files": []}}
    assert dumps(payload) == json.dumps(payload, indent=2, ensure_ascii=False)
    # What orjson refuses is still written, by json.
    odd = {"message": "lone \ud800 surrogate", "big": 2**70}
    assert dumps(odd) == json.dumps(odd, indent=2, ensure_ascii=False)
