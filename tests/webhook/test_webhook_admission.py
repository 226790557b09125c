"""AdmissionReview parsing and the answers written back (no engine, no server)."""
from __future__ import annotations

import json
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dralint import gojson
from dralint.findings import Category, Finding, Location, Severity
from dralint.paths import FieldPath
from dralint_webhook.admission import MAX_BODY_BYTES, BadReview, parse_review, with_identity
from dralint_webhook.answers import WARNING_MAX, WARNINGS_TOTAL_MAX, review_response, warning_lines
from dralint_webhook.verdict import Verdict, from_findings


def review_body(**request: object) -> bytes:
    base = {"uid": "uid-1", "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceClaim"},
            "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "resourceclaims"},
            "operation": "CREATE", "namespace": "ml", "name": "train", "object": {"metadata": {}}}
    base.update(request)
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": base}).encode()


def finding(rule: str = "DRA201", severity: Severity = Severity.ERROR, message: str = "must be greater than zero",
            field: str = "spec.devices.requests[0].exactly.count") -> Finding:
    return Finding(rule=rule, name="request-count-positive", severity=severity, category=Category.SEMANTIC,
                   message=message, location=Location("<request>", path=FieldPath.parse(field)))


def test_parse_keeps_what_the_webhook_needs():
    req = parse_review(review_body(subResource="status", operation="UPDATE", dryRun=True, oldObject={"a": 1}))
    assert (req.uid, req.kind.render(), req.resource, req.sub_resource) == \
        ("uid-1", "ResourceClaim.resource.k8s.io/v1", "resourceclaims", "status")
    assert req.operation == "UPDATE" and req.dry_run and req.old_obj == {"a": 1}
    assert req.display == "ResourceClaim ml/train"


@pytest.mark.parametrize("body, fragment", [
    (b"{not json", "not JSON"),
    (b"\xff\xfe", "not JSON"),
    (b"[1, 2]", "not a JSON object"),
    (json.dumps({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {}}).encode(),
     "expected apiVersion admission.k8s.io/v1"),
    (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(), "no request"),
    (review_body(uid=""), "uid is missing"),
    (review_body(operation="PATCH"), "operation"),
    (review_body(kind="ResourceClaim"), "request.kind"),
    (review_body(object=[1]), "request.object is not an object"),
    (b"[" * 100_000 + b"]" * 100_000, "nested deeper"),
    (b'{"apiVersion": "admission.k8s.io/v1", "n": ' + b"7" * 5000 + b"}", "not JSON"),
    (review_body(operation="UPDATE"), "oldObject is missing"),
], ids=["syntax", "bytes", "array", "v1beta1", "no-request", "no-uid", "operation", "kind", "object", "deep",
        "5000-digit-integer", "update-without-old"])
def test_bad_bodies_are_400_with_a_message(body, fragment):
    with pytest.raises(BadReview) as info:
        parse_review(body)
    assert info.value.status == 400
    assert fragment in str(info.value)


def test_parameters_the_api_server_keeps_verbatim_are_read_as_go_reads_them():
    # A claim's opaque parameters reach the webhook as the client wrote them: 9,000 levels deep here,
    # ending in a lone surrogate escape and a byte that is not UTF-8. Go's decoder takes both.
    gojson.allow_deep_values()
    parameters = b'{"a":' * 9_000 + b'"x\\ud800\xff"' + b"}" * 9_000
    body = review_body(object={"metadata": {"name": "train"}, "spec": "PARAMETERS"}).replace(b'"PARAMETERS"',
                                                                                              parameters)
    out: dict = {}
    thread = threading.Thread(target=lambda: out.setdefault("request", parse_review(body)))
    thread.start()
    thread.join()
    value, depth = out["request"].obj["spec"], 0
    while isinstance(value, dict):
        value, depth = value["a"], depth + 1
    assert (depth, value) == (9_000, "x\ufffd\ufffd")


def test_oversized_body_is_413():
    with pytest.raises(BadReview) as info:
        parse_review(b" " * (MAX_BODY_BYTES + 1))
    assert info.value.status == 413


def test_hostile_values_are_not_echoed_in_full():
    body = json.dumps({"apiVersion": "x" * 10_000, "kind": "AdmissionReview", "request": {}}).encode()
    with pytest.raises(BadReview) as info:
        parse_review(body)
    assert len(str(info.value)) < 200


def test_identity_comes_from_the_request_when_the_object_lacks_it():
    req = parse_review(review_body())
    obj = with_identity(req, {"metadata": {"labels": {"a": "b"}}})
    assert obj["apiVersion"] == "resource.k8s.io/v1" and obj["kind"] == "ResourceClaim"
    assert obj["metadata"] == {"labels": {"a": "b"}, "namespace": "ml", "name": "train"}
    kept = with_identity(req, {"apiVersion": "resource.k8s.io/v1beta1", "metadata": {"generateName": "x-"}})
    assert kept["apiVersion"] == "resource.k8s.io/v1beta1" and "name" not in kept["metadata"]


def test_denial_lists_each_error_with_its_field():
    req = parse_review(review_body())
    verdict = from_findings([finding(), finding("DRA208", message="bad class", field="spec.x"),
                             finding("DRA217", Severity.WARNING, "check the label", "spec.y")])
    out = review_response(req, verdict)
    assert out["apiVersion"] == "admission.k8s.io/v1" and out["kind"] == "AdmissionReview"
    resp = out["response"]
    assert resp["uid"] == "uid-1" and resp["allowed"] is False and "patch" not in resp
    status = resp["status"]
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert "spec.devices.requests[0].exactly.count: must be greater than zero (DRA201" in status["message"]
    assert "spec.x: bad class" in status["message"]
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.devices.requests[0].exactly.count", "spec.x"]
    assert resp["warnings"] == ["spec.y: check the label (DRA217 request-count-positive)"]


def test_enforcement_answers_errors_as_warnings_or_info_and_withholds_them():
    from dralint_webhook.enforcement import Action, Enforcement

    enforcement = Enforcement({"DRA201": Action.WARN, "DRA208": Action.DRYRUN})
    findings = [finding(), finding("DRA208", message="bad class", field="spec.x"),
                finding("DRA102", message="wrong type", field="spec.z"),
                finding("DRA208", Severity.WARNING, "only a warning", "spec.y")]
    verdict = from_findings(findings, enforcement=enforcement)
    assert not verdict.allowed and [f.rule for f in verdict.errors] == ["DRA102"]
    assert [(w.finding.rule, w.finding.severity, w.action) for w in verdict.withheld] == \
        [("DRA201", Severity.ERROR, Action.WARN), ("DRA208", Severity.ERROR, Action.DRYRUN)]
    resp = review_response(parse_review(review_body()), verdict)["response"]
    # The warn rule's error is a warning; the dryrun one says nothing; a warning stays a warning.
    assert [w.split(" (")[1] for w in resp["warnings"]] == ["DRA201 request-count-positive)",
                                                             "DRA208 request-count-positive)"]
    assert "bad class" not in json.dumps(resp)
    assert from_findings(findings[:2], enforcement=enforcement).allowed


def test_allowed_answer_has_no_status():
    req = parse_review(review_body())
    resp = review_response(req, from_findings([]))["response"]
    assert resp == {"uid": "uid-1", "allowed": True}


def test_internal_error_denial_keeps_its_own_message():
    req = parse_review(review_body())
    verdict = Verdict(allowed=False, code=500, reason="InternalError", message="dralint could not judge")
    status = review_response(req, verdict)["response"]["status"]
    assert (status["code"], status["reason"], status["message"]) == (500, "InternalError", "dralint could not judge")
    assert "causes" not in status["details"]


def test_many_errors_keep_the_message_short():
    req = parse_review(review_body())
    verdict = from_findings([finding(field=f"spec.f{i}") for i in range(500)])
    status = review_response(req, verdict)["response"]["status"]
    assert "and 480 more" in status["message"]
    assert len(status["details"]["causes"]) == 100


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=600), max_size=60))
def test_warnings_stay_within_the_api_servers_limits(messages):
    verdict = from_findings([finding(severity=Severity.WARNING, message=m) for m in messages])
    lines = warning_lines(verdict)
    assert sum(map(len, lines)) <= WARNINGS_TOTAL_MAX
    assert all(len(line) <= WARNING_MAX and line.isprintable() for line in lines)
    if messages:
        assert lines
        # Either every warning is there, or the last line says how many are missing.
        assert len(lines) == len(messages) or lines[-1].startswith("dralint: ")


def test_dropped_warnings_are_counted():
    verdict = from_findings([finding(severity=Severity.WARNING, message="w" * 300) for _ in range(40)])
    lines = warning_lines(verdict)
    shown = len(lines) - 1
    assert lines[-1] == f"dralint: {40 - shown} more warning(s) not shown"
