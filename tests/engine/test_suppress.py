"""Suppressions: comments, file-level comments, the object annotation, and unused-suppression reports."""
from __future__ import annotations

import dataclasses
import io
import json

import pytest

from dralint import suppress
from dralint.catalog import load_catalog
from dralint.cli import main
from dralint.engine import Options, review
from dralint.findings import Category, Finding, Location, Position, Severity
from dralint.paths import FieldPath
from dralint.rule_filter import RuleFilter
from dralint.suppress import Scope, Suppression, parse_comments

CATALOG = load_catalog()
ALL = RuleFilter.build(CATALOG, (), (), {})
CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: {name}
  namespace: default{annotations}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
{count}
"""


def claim(name: str = "c", count: str = "        count: -1", annotations: str = "") -> str:
    return CLAIM.format(name=name, count=count, annotations=annotations)


def finding(rule: str = "DRA201", line: int = 12, file: str = "f.yaml",
            obj: str = "ResourceClaim default/c") -> Finding:
    return Finding(rule=rule, name=CATALOG.get(rule).name, severity=Severity.ERROR, category=Category.SEMANTIC,
                   message="m", location=Location(file, Position(line, 9), path=FieldPath(("spec",))), object=obj)


# Parsing ------------------------------------------------------------------------------------

def test_trailing_and_own_line_comments():
    text = ("a: 1  # dralint: ignore=DRA201,request-count-positive  generated upstream\n"
            "# dralint: ignore=DRA202\n"
            "\n"
            "#   another comment\n"
            "b: 2\n")
    first, second = parse_comments(text, "f.yaml")
    assert (first.scope, first.line, first.column, first.covers) == (Scope.LINE, 1, 7, 1)
    assert first.tokens == ("DRA201", "request-count-positive") and first.reason == "generated upstream"
    assert (second.line, second.covers, second.tokens) == (2, 5, ("DRA202",))


def test_file_level_and_bare_forms():
    sups = parse_comments("# dralint: ignore-file\n# dralint: ignore-file = DRA201 , DRA202\nx: 1 # dralint: ignore\n",
                          "f.yaml")
    assert [(s.scope, s.tokens) for s in sups] == [(Scope.FILE, ()), (Scope.FILE, ("DRA201", "DRA202")),
                                                   (Scope.LINE, ())]


def test_text_that_only_looks_like_a_comment_is_not_one():
    text = ('a: "x # dralint: ignore=DRA201"\n'
            "b: |\n"
            "  # dralint: ignore=DRA202\n"
            "c: url#dralint:ignore=DRA203\n"
            "d: 'multi\n"
            "  # dralint: ignore=DRA204'\n")
    assert parse_comments(text, "f.yaml") == []


def test_unparsable_yaml_still_yields_its_comments():
    assert [s.tokens for s in parse_comments("a: [\n# dralint: ignore=DRA001\n", "f.yaml")] == [("DRA001",)]


def test_annotation():
    value = {"metadata": {"annotations": {"dralint.io/ignore": "DRA201, request-count-positive"}}}
    sup = suppress.from_object(value, file="f.yaml", object="ResourceClaim default/c", line=7, column=5)
    assert sup == Suppression("f.yaml", 7, 5, Scope.OBJECT, ("DRA201", "request-count-positive"),
                              object="ResourceClaim default/c")
    assert suppress.from_object({"metadata": {"annotations": {"other": "x"}}}, file="f", object="o") is None
    assert suppress.from_object(["not", "a", "mapping"], file="f", object="o") is None


# Applying -----------------------------------------------------------------------------------

def test_apply_matches_scope_and_rule():
    sups = [Suppression("f.yaml", 11, 9, Scope.LINE, ("request-count-positive",), covers=12),
            Suppression("g.yaml", 1, 1, Scope.FILE, ()),
            Suppression("f.yaml", 5, 5, Scope.OBJECT, ("DRA202",), object="ResourceClaim default/other")]
    findings = [finding(), finding(line=13), finding(rule="DRA202", line=12), finding(file="g.yaml", rule="DRA101"),
                finding(rule="DRA202", obj="ResourceClaim default/other", line=30)]
    outcome = suppress.apply(findings, sups, CATALOG, ALL)
    assert outcome.findings == [findings[1], findings[2]] and outcome.suppressed == 3


def test_unused_suppressions_are_reported_once_asked():
    sups = [Suppression("f.yaml", 11, 9, Scope.LINE, ("DRA201", "DRA202", "DRA2O1"), covers=12),
            Suppression("f.yaml", 1, 1, Scope.FILE, ()),
            Suppression("f.yaml", 5, 5, Scope.OBJECT, ("DRA101",), object="ResourceClaim default/c")]
    findings = [finding()]
    # A rule that does not exist is reported on every run: the suppression never worked.
    (typo,) = suppress.apply(findings, sups, CATALOG, ALL).findings
    assert (typo.rule, typo.line) == ("DRA910", 11) and "'DRA2O1', which is no dralint rule" in typo.message
    reported = suppress.apply(findings, sups, CATALOG, ALL, report_unused=True).findings
    # The bare ignore-file covers the DRA201 finding too, so it is in use.
    assert [(f.rule, f.line) for f in reported] == [("DRA910", 5), ("DRA910", 11), ("DRA910", 11)]
    messages = " | ".join(f.message for f in reported)
    assert "DRA202 reported nothing on line 12" in messages and "'DRA2O1', which is no dralint rule" in messages
    assert "DRA201 reported" not in messages and "matched no finding on this file" not in messages
    assert reported[0].field == "metadata.annotations.dralint.io/ignore"


def test_a_suppression_naming_a_policy_rule_is_told_it_cannot_hide_it():
    sups = [Suppression("f.yaml", 5, 5, Scope.OBJECT, ("dra950", "too-many-devices"), object="ResourceClaim default/c")]
    policy_rules = {"DRA950": "device-class-not-allowed", "DRA951": "too-many-devices"}
    told = suppress.apply([finding()], sups, CATALOG, ALL, policy_rules=policy_rules).findings
    assert [f.rule for f in told] == ["DRA910", "DRA910", "DRA201"]
    assert "DRA950 (device-class-not-allowed), an organisation rule of the cluster's policy: an object cannot " \
           "suppress it" in told[0].message and "DRA951 (too-many-devices)" in told[1].message
    # Without policy rules (the command line), the same names are catalog rules like any other: quiet
    # unless unused suppressions are asked for.
    assert [f.rule for f in suppress.apply([finding()], sups, CATALOG, ALL).findings] == ["DRA201"]
    plain = suppress.apply([finding()], sups, CATALOG, ALL, report_unused=True).findings
    assert "DRA950 reported nothing" in plain[0].message and "DRA951 reported nothing" in plain[1].message


def test_rules_that_did_not_run_are_not_called_stale():
    sups = [Suppression("f.yaml", 11, 9, Scope.LINE, ("DRA202",), covers=12)]
    only_2xx_but_202 = RuleFilter.build(CATALOG, ("DRA2", "DRA910"), ("DRA202",), {})
    assert suppress.apply([], sups, CATALOG, only_2xx_but_202, report_unused=True).findings == []
    without_910 = RuleFilter.build(CATALOG, (), ("DRA910",), {})
    assert suppress.apply([], sups, CATALOG, without_910, report_unused=True).findings == []
    as_error = RuleFilter.build(CATALOG, (), (), {"DRA910": "error"})
    (f,) = suppress.apply([], sups, CATALOG, as_error, report_unused=True).findings
    assert f.severity is Severity.ERROR


# End to end ---------------------------------------------------------------------------------

def run(*args: str) -> tuple[int, dict]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["--no-config", "--format", "json", *args], stdout=out, stderr=err)
    return code, json.loads(out.getvalue())


def test_every_spelling_from_the_command(tmp_path):
    path = tmp_path / "claims.yaml"
    path.write_text("\n---\n".join([
        claim("a", annotations='\n  annotations:\n    dralint.io/ignore: "DRA201"'),
        claim("b", count="        # dralint: ignore=request-count-positive reviewed\n        count: -1"),
        claim("c", count="        count: -1  # dralint: ignore=DRA201"),
        claim("d"),
    ]))
    code, report = run(str(path))
    assert [f["object"] for f in report["findings"] if f["rule"] == "DRA201"] == ["ResourceClaim default/d"]
    assert code == 1 and report["summary"]["suppressed"] == 3
    path.write_text("# dralint: ignore-file=DRA201\n" + claim("d"))
    code, report = run(str(path))
    assert "DRA201" not in {f["rule"] for f in report["findings"]}


def test_unused_from_the_command(tmp_path):
    path = tmp_path / "claim.yaml"
    path.write_text(claim(count="        count: 2  # dralint: ignore=DRA201"))
    _, report = run(str(path))
    assert "DRA910" not in {f["rule"] for f in report["findings"]}
    _, report = run("--report-unused-ignores", str(path))
    (unused,) = [f for f in report["findings"] if f["rule"] == "DRA910"]
    assert unused["line"] == 12 and unused["severity"] == "warning"


def test_a_suppression_naming_no_rule_is_reported_without_being_asked(tmp_path):
    path = tmp_path / "claim.yaml"
    path.write_text(claim(count="        count: -1  # dralint: ignore=DRA2O1"))
    _, report = run(str(path))
    assert {f["rule"] for f in report["findings"]} == {"DRA201", "DRA910"}
    (typo,) = [f for f in report["findings"] if f["rule"] == "DRA910"]
    assert "which is no dralint rule; did you mean DRA201?" in typo["message"]


def engine_applies_suppressions() -> bool:
    return "report_unused_ignores" in {f.name for f in dataclasses.fields(Options)}


@pytest.mark.skipif(not engine_applies_suppressions(),
                    reason="engine.review does not apply suppressions yet (see dralint/suppress.py)")
def test_the_webhook_face_honours_the_annotation():
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
           "metadata": {"name": "x", "annotations": {"dralint.io/ignore": "unknown-field"}}, "spec": {"bogus": 1}}
    assert [f.rule for f in review(obj, None, "CREATE", "", Options())] == []
    obj["metadata"]["annotations"]["dralint.io/ignore"] = "DRA201"
    assert [f.rule for f in review(obj, None, "CREATE", "", Options())] == ["DRA101"]
