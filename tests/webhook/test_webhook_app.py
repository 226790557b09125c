"""The Flask app through its test client: verdicts, policy, errors, health and metrics."""
from __future__ import annotations

import copy
import json
import logging
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from dralint.findings import Category, Finding, Location, Severity
from dralint_webhook import app as app_module
from dralint_webhook import judge as judge_module
from dralint_webhook.admission import MAX_BODY_BYTES
from dralint_webhook.app import Settings, Webhook, build_webhook, create_app
from dralint_webhook.logs import FIELD_MAX, LIST_MAX
from dralint_webhook.metrics import Metrics
from dralint_webhook.policy import parse_policy
from dralint_webhook.timeouts import review_deadline

NS = "ml"
# What our worker puts in the environ of a request that came in on the plain health port.
HEALTH_PORT = {"dralint.health": True}


def claim(count: Any = 1, device_class: str = "gpu.example.com", name: str = "train", **extra: Any) -> dict:
    req = {"deviceClassName": device_class, "count": count, **extra}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": NS},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": req}]}}}


def pod(container_claim: str = "gpu") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": NS},
            "spec": {"containers": [{"name": "app", "image": "busybox",
                                     "resources": {"claims": [{"name": container_claim}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpus"}]}}


def review(obj: dict | None, operation: str = "CREATE", old: dict | None = None, sub: str = "",
           uid: str = "0f6c1f3e-1", dry_run: bool = False, namespace: str = NS) -> dict:
    api_version = (obj or old or {}).get("apiVersion", "v1")
    group, _, version = api_version.rpartition("/")
    kind = (obj or old or {}).get("kind", "Pod")
    request = {"uid": uid, "kind": {"group": group, "version": version, "kind": kind},
               "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
               "subResource": sub, "operation": operation, "namespace": namespace, "name": "train",
               "object": obj, "oldObject": old, "dryRun": dry_run, "userInfo": {"username": "alice"}}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def make_client(policy: str = "", warmed: bool = True):
    hook = Webhook(settings=Settings(), metrics=Metrics(), default_policy=parse_policy(yaml.safe_load(policy) or {}),
                   warmed=warmed)
    return create_app(hook).test_client()


@pytest.fixture(scope="module")
def client():
    return make_client()


def answer(client, body: dict) -> dict:
    resp = client.post("/validate", json=body)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    out = resp.get_json()
    assert out["apiVersion"] == "admission.k8s.io/v1" and out["kind"] == "AdmissionReview"
    assert out["response"]["uid"] == body["request"]["uid"]
    assert "patch" not in out["response"] and "patchType" not in out["response"]
    return out["response"]


def test_valid_claim_is_allowed(client):
    assert answer(client, review(claim())) == {"uid": "0f6c1f3e-1", "allowed": True}


def test_invalid_claim_is_denied_with_causes(client):
    resp = answer(client, review(claim(count="2")))
    assert resp["allowed"] is False
    status = resp["status"]
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert "spec.devices.requests[0].exactly.count" in status["message"] and "DRA102" in status["message"]
    assert {"type": "FieldValueInvalid", "field": "spec.devices.requests[0].exactly.count"}.items() <= \
        status["details"]["causes"][0].items()


def test_dry_run_is_judged_the_same(client):
    assert answer(client, review(claim(count="2"), dry_run=True))["allowed"] is False
    assert answer(client, review(claim(), dry_run=True))["allowed"] is True


def test_every_error_is_listed(client):
    bad = claim(count="2", device_class="Not_A_Class")
    resp = answer(client, review(bad))
    fields = [c["field"] for c in resp["status"]["details"]["causes"]]
    assert "spec.devices.requests[0].exactly.count" in fields
    assert "spec.devices.requests[0].exactly.deviceClassName" in fields


def test_severities_from_the_policy_turn_errors_into_warnings():
    client = make_client("severities: {DRA208: warning}")
    resp = answer(client, review(claim(device_class="Not_A_Class")))
    assert resp["allowed"] is True
    assert any("DRA208" in w and w.startswith("spec.devices.requests[0].exactly.deviceClassName: ")
               for w in resp["warnings"])


def test_ignored_rules_are_not_reported():
    client = make_client("ignore: [device-class-name-invalid]")
    assert answer(client, review(claim(device_class="Not_A_Class"))) == {"uid": "0f6c1f3e-1", "allowed": True}


@pytest.mark.parametrize("operation", ["DELETE", "CONNECT"])
def test_delete_and_connect_are_allowed(client, operation):
    resp = answer(client, review(None, operation=operation, old=claim(count="2")))
    assert resp == {"uid": "0f6c1f3e-1", "allowed": True}


def test_kinds_the_engine_does_not_know_are_allowed(client):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"count": 2}}
    assert answer(client, review(cm))["allowed"] is True


def test_versions_the_release_does_not_serve_are_denied(client):
    old = {"apiVersion": "resource.k8s.io/v1alpha2", "kind": "ResourceClaim", "metadata": {"name": "x"},
           "spec": {"resourceClassName": "gpu"}}
    resp = answer(client, review(old))
    assert resp["allowed"] is False and "DRA801" in resp["status"]["message"]


def test_namespace_comes_from_the_request(client):
    obj = claim(count="2")
    del obj["metadata"]["namespace"]
    resp = answer(client, review(obj))
    assert resp["status"]["message"].startswith("ResourceClaim ml/train is invalid: ")


def test_pods_are_judged_for_their_claims(client):
    assert answer(client, review(pod()))["allowed"] is True
    resp = answer(client, review(pod("missing")))
    assert resp["allowed"] is False
    assert resp["status"]["details"]["causes"][0]["field"] == "spec.containers[0].resources.claims[0]"


def test_update_of_a_claims_spec_is_denied(client):
    resp = answer(client, review(claim(count=2), operation="UPDATE", old=claim(count=1)))
    assert resp["allowed"] is False
    assert any(c["field"].startswith("spec") for c in resp["status"]["details"]["causes"])


def test_metadata_update_of_a_claim_is_allowed(client):
    new = claim()
    new["metadata"]["labels"] = {"team": "ml"}
    assert answer(client, review(new, operation="UPDATE", old=claim()))["allowed"] is True


def test_status_update_is_judged_as_a_status_write(client):
    old = claim()
    new = copy.deepcopy(old)
    new["status"] = {"reservedFor": [{"resource": "pods", "name": f"p{i}", "uid": f"u{i}"} for i in range(300)]}
    resp = answer(client, review(new, operation="UPDATE", old=old, sub="status"))
    assert resp["allowed"] is False
    assert any(c["field"].startswith("status.reservedFor") for c in resp["status"]["details"]["causes"])


def test_exempt_namespaces_are_allowed():
    client = make_client("exemptNamespaces: [ml]")
    assert answer(client, review(claim(count="2")))["allowed"] is True


# --- organisation rules -------------------------------------------------------------------------

ORG_POLICY = """
namespaceLabels: {ml: {team: ml}}
organization:
  allowedDeviceClasses: {ml: [gpu.example.com]}
  maxDevicesPerClaim: 2
  adminAccessNamespaceLabels: {dra.example.com/admin: "true"}
"""


def test_organisation_rules_deny_with_their_ids():
    client = make_client(ORG_POLICY)
    assert answer(client, review(claim()))["allowed"] is True
    resp = answer(client, review(claim(device_class="fpga.example.com", count=3)))
    causes = {c["field"]: c["message"] for c in resp["status"]["details"]["causes"]}
    assert "DRA950 device-class-not-allowed" in causes["spec.devices.requests[0].exactly.deviceClassName"]
    assert "DRA951 too-many-devices" in causes["spec.devices.requests"]
    resp = answer(client, review(claim(adminAccess=True)))
    assert "DRA952" in resp["status"]["message"]


def test_organisation_rules_only_judge_creates():
    client = make_client(ORG_POLICY)
    big = claim(count=5)
    labelled = copy.deepcopy(big)
    labelled["metadata"]["labels"] = {"a": "b"}
    assert answer(client, review(labelled, operation="UPDATE", old=big))["allowed"] is True


def test_organisation_rules_follow_ignore_and_severities():
    client = make_client(ORG_POLICY + "ignore: [DRA950]\nseverities: {too-many-devices: warning}\n")
    resp = answer(client, review(claim(device_class="fpga.example.com", count=3)))
    assert resp["allowed"] is True
    assert [w for w in resp["warnings"] if "DRA951" in w]


def test_unknown_namespace_labels_give_a_warning():
    client = make_client(ORG_POLICY.replace("namespaceLabels: {ml: {team: ml}}", ""))
    resp = answer(client, review(claim(adminAccess=True)))
    assert resp["allowed"] is True and any("DRA953" in w for w in resp["warnings"])


def test_an_annotation_naming_an_organisation_rule_is_told_it_cannot_suppress_it():
    client = make_client(ORG_POLICY)
    for token in ("DRA950", "device-class-not-allowed"):
        obj = claim(device_class="fpga.example.com")
        obj["metadata"]["annotations"] = {"dralint.io/ignore": token}
        resp = answer(client, review(obj))
        assert resp["allowed"] is False and "DRA950" in resp["status"]["message"]
        (told,) = [w for w in resp["warnings"] if "DRA910" in w]
        assert "an organisation rule of the cluster's policy: an object cannot suppress it" in told
        assert "did you mean" not in told


# --- severities and enforcement: one token, every rule it names -----------------------------------

WOULD_DENY = 'dralint_webhook_would_deny_total{{rule="{rule}",enforcement="{action}"}} {count}'


def test_severities_dra_warning_makes_every_rule_warn():
    client = make_client(ORG_POLICY + "severities: {DRA: warning}\n")
    resp = answer(client, review(claim(count="5", device_class="fpga.example.com")))
    assert resp["allowed"] is True
    assert {rule for rule in ("DRA102", "DRA950") if any(rule in w for w in resp["warnings"])} == {"DRA102", "DRA950"}


def would_deny_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage() == "would deny"]


def test_dryrun_admits_without_a_warning_and_records_the_would_be_denial(caplog):
    client = make_client(ORG_POLICY + "enforcement: {DRA: dryrun}\n")
    bad = claim(count="5", device_class="fpga.example.com")
    with caplog.at_level(logging.INFO, logger="dralint_webhook"):
        assert answer(client, review(bad, uid="u-dry")) == {"uid": "u-dry", "allowed": True}
    text = client.get("/metrics", environ_base={"dralint.health": True}).get_data(as_text=True)
    for rule in ("DRA102", "DRA950"):
        assert WOULD_DENY.format(rule=rule, action="dryrun", count=1) in text
    (line,) = would_deny_lines(caplog)
    fields = line.fields   # type: ignore[attr-defined]
    assert (fields["uid"], fields["kind"], fields["namespace"], fields["name"]) == \
        ("u-dry", "ResourceClaim.resource.k8s.io/v1", NS, "train")
    assert fields["rules"] == ["DRA102", "DRA950"] and fields["enforcement"] == {"DRA102": "dryrun", "DRA950": "dryrun"}
    assert fields["denial"].startswith("ResourceClaim ml/train is invalid: ")
    # The review line says the same request was allowed.
    (reviewed,) = [r for r in caplog.records if r.getMessage() == "review"]
    assert reviewed.fields["allowed"] is True   # type: ignore[attr-defined]


def test_warn_admits_with_the_findings_as_warnings_and_records_them(caplog):
    client = make_client("enforcement: {wrong-type: warn}\n")
    with caplog.at_level(logging.INFO, logger="dralint_webhook"):
        resp = answer(client, review(claim(count="5")))
    assert resp["allowed"] is True and any("DRA102 wrong-type" in w for w in resp["warnings"])
    text = client.get("/metrics", environ_base={"dralint.health": True}).get_data(as_text=True)
    assert WOULD_DENY.format(rule="DRA102", action="warn", count=1) in text
    assert would_deny_lines(caplog)[0].fields["enforcement"] == {"DRA102": "warn"}   # type: ignore[attr-defined]


def test_the_rollout_switches_rule_groups_to_deny_one_at_a_time():
    bad = claim(count="5", device_class="fpga.example.com")
    steps = [("{DRA: dryrun}", True, set()),
             ("{DRA: dryrun, DRA1: deny}", False, {"DRA102"}),
             ("{DRA: dryrun, DRA1: deny, DRA95: deny}", False, {"DRA102", "DRA950"})]
    for enforcement, allowed, denying in steps:
        resp = answer(make_client(ORG_POLICY + f"enforcement: {enforcement}\n"), review(bad))
        assert resp["allowed"] is allowed
        causes = {c["message"].rsplit("(", 1)[1].split()[0] for c in resp.get("status", {}).get("details", {})
                  .get("causes", [])}
        assert causes == denying
    # The last step: no enforcement entry, every rule denies as it did before the rollout.
    assert answer(make_client(ORG_POLICY), review(bad))["allowed"] is False


def test_internal_errors_follow_on_internal_error_not_enforcement(monkeypatch):
    broken = Finding(rule="DRA000", name="internal-error", severity=Severity.ERROR, category=Category.INPUT,
                     message="internal error in check claims", location=Location("<request>"))
    monkeypatch.setattr(judge_module, "review", lambda *a, **k: [broken])
    resp = answer(make_client("onInternalError: deny\nenforcement: {DRA: dryrun}\n"), review(claim()))
    assert resp["allowed"] is False and "DRA000" in resp["status"]["message"]


# --- internal errors ----------------------------------------------------------------------------

def _boom(*args: Any, **kwargs: Any) -> list:
    raise RuntimeError("secret internal detail")


@pytest.mark.parametrize("on_error", ["allow", "deny"])
def test_internal_errors_follow_the_policy_and_stay_private(monkeypatch, caplog, on_error):
    client = make_client(f"onInternalError: {on_error}")
    monkeypatch.setattr(judge_module, "review", _boom)
    with caplog.at_level(logging.ERROR, logger="dralint_webhook"):
        resp = answer(client, review(claim()))
    assert "secret internal detail" not in json.dumps(resp) and "Traceback" not in json.dumps(resp)
    assert any("secret internal detail" in (r.exc_text or "") for r in caplog.records)
    if on_error == "allow":
        assert resp["allowed"] is True and "internal error" in resp["warnings"][0]
    else:
        assert resp["allowed"] is False
        assert (resp["status"]["code"], resp["status"]["reason"]) == (500, "InternalError")


def test_a_failing_check_is_judged_without_it_when_policy_allows(monkeypatch):
    broken = Finding(rule="DRA000", name="internal-error", severity=Severity.ERROR, category=Category.INPUT,
                     message="internal error in check claims", location=Location("<request>"))
    monkeypatch.setattr(judge_module, "review", lambda *a, **k: [broken])
    resp = answer(make_client("onInternalError: allow"), review(claim()))
    assert resp["allowed"] is True and "a check failed" in resp["warnings"][0]
    resp = answer(make_client("onInternalError: deny"), review(claim()))
    assert resp["allowed"] is False and "DRA000" in resp["status"]["message"]


# --- the organisation rules stand whatever happens to the rest of a review ------------------------------

def _endless(*args: Any, **kwargs: Any) -> list:
    end = time.monotonic() + 30   # Python bytecode, so the guard's exception arrives at the deadline
    while time.monotonic() < end:
        pass
    return []


@pytest.mark.parametrize("on_error", ["allow", "deny"])
def test_an_organisation_denial_stands_when_the_rest_misses_its_deadline(monkeypatch, on_error):
    client = make_client(ORG_POLICY + f"onInternalError: {on_error}\n")
    monkeypatch.setattr(judge_module, "review", _endless)
    deadlines: list[float] = []

    def recorded(started: float, query: str, default: float) -> float:
        deadlines.append(review_deadline(started, query, default) - started)
        return started + deadlines[-1]

    monkeypatch.setattr(app_module, "review_deadline", recorded)
    resp = client.post("/validate?timeout=1s", json=review(claim(count=5)))
    # Answered (the judging never ends), by a deadline within the API server's own timeout (?timeout=).
    assert len(deadlines) == 1 and 0 < deadlines[0] < 1.0
    out = resp.get_json()["response"]
    assert out["allowed"] is False and out["status"]["code"] == 422
    assert "DRA951 too-many-devices" in out["status"]["message"]
    assert any("denied on the organisation's rules" in w and "deadline" in w for w in out["warnings"])
    # A claim within the rules is answered as the policy says of reviews it could not finish.
    out = client.post("/validate?timeout=1s", json=review(claim(count=1))).get_json()["response"]
    assert out["allowed"] is (on_error == "allow")


def test_an_organisation_denial_stands_when_judging_fails(monkeypatch):
    client = make_client(ORG_POLICY + "onInternalError: allow\n")
    monkeypatch.setattr(judge_module, "review", _boom)
    out = answer(client, review(claim(device_class="fpga.example.com")))
    assert out["allowed"] is False and "DRA950 device-class-not-allowed" in out["status"]["message"]
    assert "secret internal detail" not in json.dumps(out)


@pytest.mark.parametrize("enforcement, allowed", [("{DRA: dryrun, DRA95: deny}", False), ("{DRA95: dryrun}", True),
                                                  ("{DRA95: warn}", True)])
def test_the_organisation_rules_stand_as_their_enforcement_says_when_the_rest_is_not_judged(monkeypatch, caplog,
                                                                                          enforcement, allowed):
    client = make_client(ORG_POLICY + f"onInternalError: allow\nenforcement: {enforcement}\n")
    monkeypatch.setattr(judge_module, "review", _boom)
    with caplog.at_level(logging.INFO, logger="dralint_webhook"):
        out = answer(client, review(claim(device_class="fpga.example.com")))
    assert out["allowed"] is allowed
    if allowed:
        assert ("DRA950" in json.dumps(out["warnings"])) is ("warn" in enforcement)
        assert would_deny_lines(caplog)[0].fields["rules"] == ["DRA950"]   # type: ignore[attr-defined]
    else:
        assert "DRA950 device-class-not-allowed" in out["status"]["message"]


def test_an_organisation_warning_is_kept_when_the_rest_is_not_judged(monkeypatch):
    client = make_client(ORG_POLICY.replace("namespaceLabels: {ml: {team: ml}}", "") + "onInternalError: allow\n")
    monkeypatch.setattr(judge_module, "review", _boom)
    out = answer(client, review(claim(adminAccess=True)))
    assert out["allowed"] is True and any("DRA953" in w for w in out["warnings"])


# --- HTTP errors, health, metrics ---------------------------------------------------------------

@pytest.mark.parametrize("body", [b"not json", b"{}",
                                  b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}'])
def test_bodies_that_are_not_reviews_get_400(client, body):
    resp = client.post("/validate", data=body, content_type="application/json")
    assert resp.status_code == 400 and resp.get_json()["error"]


def test_oversized_bodies_get_413(client):
    resp = client.post("/validate", data=b" " * (MAX_BODY_BYTES + 1), content_type="application/json")
    assert resp.status_code == 413 and "limit" in resp.get_json()["error"]


def test_wrong_method_and_path(client):
    assert client.get("/validate").status_code == 405
    assert client.get("/nope").status_code == 404


def test_health_and_readiness():
    assert make_client().get("/healthz").status_code == 200
    assert make_client().get("/readyz").status_code == 200
    resp = make_client(warmed=False).get("/readyz")
    assert resp.status_code == 503 and "not warmed" in resp.get_data(as_text=True)


def test_metrics_count_requests_findings_and_latency():
    client = make_client()
    answer(client, review(claim()))
    answer(client, review(claim(count="2")))
    client.post("/validate", data=b"x")
    text = client.get("/metrics", environ_base=HEALTH_PORT).get_data(as_text=True)
    assert 'dralint_webhook_requests_total{kind="ResourceClaim",operation="CREATE",allowed="true"} 1' in text
    assert 'dralint_webhook_requests_total{kind="ResourceClaim",operation="CREATE",allowed="false"} 1' in text
    assert 'dralint_webhook_findings_total{rule="DRA102",severity="error"} 1' in text
    assert 'dralint_webhook_invalid_requests_total{code="400"} 1' in text
    assert 'dralint_webhook_review_duration_seconds_count 2' in text
    assert 'dralint_webhook_review_duration_seconds_bucket{le="+Inf"} 2' in text


def test_metrics_are_served_on_the_health_port_only():
    client = make_client()
    refused = client.get("/metrics")
    assert refused.status_code == 404 and "--health-port" in refused.get_json()["error"]
    served = client.get("/metrics", environ_base=HEALTH_PORT)
    assert served.status_code == 200 and "dralint_webhook_build_info{" in served.get_data(as_text=True)
    # The probes stay on both ports: the kubelet may probe either, the API server never calls them.
    for path in ("/healthz", "/readyz"):
        assert client.get(path).status_code == 200 and client.get(path, environ_base=HEALTH_PORT).status_code == 200


def test_the_review_line_says_who_sent_what_and_which_rules_refused_it(caplog):
    body = review(claim(count="2"), uid="refused-1")
    groups = [f"team-{i}" for i in range(LIST_MAX + 8)]
    body["request"]["userInfo"] = {"username": "u" * 5000, "uid": "7", "groups": groups + [{"not": "a group"}]}
    with caplog.at_level(logging.INFO, logger="dralint_webhook"):
        assert answer(make_client(), body)["allowed"] is False
        assert answer(make_client(), review(claim(), uid="allowed-1"))["allowed"] is True
    lines = {r.fields["uid"]: r.fields for r in caplog.records if r.getMessage() == "review"}
    refused, allowed = lines["refused-1"], lines["allowed-1"]
    assert (refused["kind"], refused["namespace"], refused["name"], refused["operation"]) == \
        ("ResourceClaim.resource.k8s.io/v1", NS, "train", "CREATE")
    assert refused["allowed"] is False and refused["denied_by"] == ["DRA102"] and "DRA102" in refused["rules"]
    # Bounded whatever the caller sends: the name cut, the groups' first ones kept and the rest counted.
    assert refused["user"]["username"] == "u" * (FIELD_MAX - 3) + "..."
    assert refused["user"]["groups"] == groups[:LIST_MAX] + ["... and 8 more"]
    assert allowed["user"] == {"username": "alice", "groups": []} and allowed["denied_by"] == []


def test_the_review_line_is_documented_as_it_is(caplog):
    """webhook/README.md's Logs names each key of the review line, nested ones in place, in order."""
    with caplog.at_level(logging.INFO, logger="dralint_webhook"):
        answer(make_client(), review(claim()))
    (fields,) = [r.fields for r in caplog.records if r.getMessage() == "review"]
    logged = []
    for key, value in fields.items():
        logged += [key, *value] if isinstance(value, dict) else [key]
    readme = (Path(__file__).resolve().parents[2] / "webhook" / "README.md").read_text()
    documented = readme.split('`{"msg": "review", ', 1)[1].split("}`", 1)[0]
    assert re.findall(r'"(\w+)"', documented) == logged


def test_build_webhook_warms_and_reads_the_policy(tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text("kubeVersion: '1.34'\n")
    hook = build_webhook(Settings(policy_file=str(policy), reload_interval=0))
    assert hook.warmed and hook.readiness() == []
    assert hook.policy().options.release.version == "1.34"
    policy.write_text("kubeVersion: [broken\n")
    assert hook.policy().options.release.version == "1.34"    # a broken edit keeps the last good policy
    policy.write_text("kubeVersion: '1.35'\n")
    assert hook.policy().options.release.version == "1.35"


# --- feasibility against the cluster state ------------------------------------------------------

CLUSTER = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpu}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
---
apiVersion: v1
kind: Namespace
metadata:
  name: ml
  labels: {dra.example.com/admin: "true", resource.kubernetes.io/admin-access: "true"}
"""


@pytest.fixture(scope="module")
def cluster_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cluster") / "cluster.yaml"
    path.write_text(CLUSTER)
    return path


@pytest.mark.parametrize("mode, allowed, warned", [("deny", False, False), ("warn", True, True), ("off", True, False)])
def test_claims_that_can_never_be_allocated(tmp_path, cluster_file, mode, allowed, warned):
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"feasibility: {mode}\n")
    hook = build_webhook(Settings(policy_file=str(policy), cluster_paths=(str(cluster_file),)))
    client = create_app(hook).test_client()
    assert answer(client, review(claim(count=1))) == {"uid": "0f6c1f3e-1", "allowed": True}
    resp = answer(client, review(claim(count=4)))
    assert resp["allowed"] is allowed
    assert any("DRA701" in w for w in resp.get("warnings", [])) is warned
    if not allowed:
        assert "DRA701" in resp["status"]["message"]


def test_namespace_labels_can_come_from_the_cluster_state(cluster_file):
    hook = build_webhook(Settings(cluster_paths=(str(cluster_file),)))
    hook.default_policy = parse_policy(yaml.safe_load(ORG_POLICY.replace("namespaceLabels: {ml: {team: ml}}", "")))
    resp = answer(create_app(hook).test_client(), review(claim(adminAccess=True)))
    assert resp == {"uid": "0f6c1f3e-1", "allowed": True}


def test_broken_cluster_state_is_refused_at_start(tmp_path):
    from dralint_webhook.cluster import ClusterError

    bad = tmp_path / "cluster.yaml"
    bad.write_text("kind: [unclosed\n")
    with pytest.raises(ClusterError, match="cluster state"):
        build_webhook(Settings(cluster_paths=(str(bad),)))


def test_rules_settled_by_the_api_server_are_the_ones_meant():
    from dralint.catalog import load_catalog

    names = {load_catalog().get(rule_id).name for rule_id in judge_module.SETTLED_BY_SERVER}
    assert names == {"admin-access-namespace-unknown"}


def test_admin_access_reminder_is_not_passed_on(client):
    obj = claim(adminAccess=True)
    assert answer(client, review(obj)) == {"uid": "0f6c1f3e-1", "allowed": True}
