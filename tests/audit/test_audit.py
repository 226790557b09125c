"""``dralint audit``: the objects a fake API server stores, judged as the webhook would judge them now."""
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Iterator

import xml.etree.ElementTree as ET

import jsonschema
import pytest
import yaml

from dralint.cli import main
from fakeapi import FakeApiServer, FakeCluster, version_info
from test_cluster_live import TOKEN, held, kubeconfig, slice_of

GOOD_CLAIM = {"metadata": {"name": "train", "namespace": "ml"},
              "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
# Admitted while the webhook was down: its class does not exist.
TYPO_CLAIM = {"metadata": {"name": "typo", "namespace": "ml"},
              "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.exmaple.com"}}]}}}


BIG_CLAIM = {"metadata": {"name": "big", "namespace": "ml"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                                                                           "count": 3}}]}}}
SCHEMAS = Path(__file__).resolve().parents[1] / "data"


def pod(name: str, claims: list[dict] | None, node: str | None = None) -> dict:
    spec: dict = {"containers": [{"name": "main", "image": "busybox"}]}
    if claims is not None:
        spec["resourceClaims"] = claims
        spec["containers"][0]["resources"] = {"claims": [{"name": c["name"]} for c in claims]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "ml"}, "spec": spec}


@pytest.fixture
def cluster() -> FakeCluster:
    c = FakeCluster()
    c.create("namespaces", {"metadata": {"name": "ml"}})
    for n in range(2):
        c.create("nodes", {"metadata": {"name": f"node-{n}"}})
        c.create("resourceslices", slice_of(f"node-{n}"))
    c.create("deviceclasses", {"metadata": {"name": "gpu.example.com"},
                               "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}})
    c.create("resourceclaims", held("node-0"))
    c.create("resourceclaims", GOOD_CLAIM)
    c.create("resourceclaims", TYPO_CLAIM)
    return c


@pytest.fixture
def server(cluster: FakeCluster, certs: Path) -> Iterator[FakeApiServer]:
    with FakeApiServer(cluster, tls=(str(certs / "tls.crt"), str(certs / "tls.key"))) as srv:
        srv.faults.token = TOKEN
        yield srv


@pytest.fixture
def config(tmp_path: Path, server: FakeApiServer, certs: Path) -> Path:
    return kubeconfig(tmp_path / "kubeconfig", server.url, certs)


def audit(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["audit", *argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def by_object(out: str) -> dict[str, set[str]]:
    """The rules of a JSON audit, per object."""
    found: dict[str, set[str]] = {}
    for f in json.loads(out)["findings"]:
        found.setdefault(f["object"], set()).add(f["rule"])
    return found


def test_a_claim_admitted_while_the_webhook_was_down_is_found(config, tmp_path):
    reports = tmp_path / "reports.yaml"
    code, out, err = audit("--kubeconfig", str(config), "--policy-report", str(reports))
    assert code == 1 and err == ""
    assert out.splitlines()[0].startswith("ResourceClaim ml/typo (resourceclaims): ")
    assert "ResourceClaim ml/typo (resourceclaims): error: claim ml/typo, request gpu: device class gpu.exmaple.com " \
           "does not exist (spec.devices.requests[0].exactly.deviceClassName) [DRA703 " in out
    assert "DeviceClass 'gpu.exmaple.com' is not among" in out
    assert out.splitlines()[-1].startswith("audited 6 object(s) of https://127.0.0.1:")
    (report,) = [r for r in yaml.safe_load_all(reports.read_text()) if r["kind"] == "PolicyReport"]
    failed = [r for r in report["results"] if r["result"] == "fail"]
    assert [(r["resources"][0]["name"], r["rule"]) for r in failed] == [
        ("typo", "DRA703 allocation-device-class-missing")]


def test_each_object_is_judged_on_its_own_as_stored(config, cluster):
    cluster.create("resourceclaims", BIG_CLAIM)
    code, out, _ = audit("--kubeconfig", str(config), "--format", "json")
    found = by_object(out)
    assert code == 1
    assert found["ResourceClaim ml/big"] == {"DRA701"}   # three GPUs on nodes of two
    assert found["ResourceClaim ml/typo"] == {"DRA600", "DRA703"}
    # Allocated: the scheduler answered; its own devices are not counted against it, its status is no finding.
    assert "ResourceClaim ml/held-node-0" not in found
    assert "ResourceClaim ml/train" not in found and "DeviceClass gpu.example.com" not in found
    files = {f["file"] for f in json.loads(out)["findings"]}
    assert files == {"cluster:resourceclaims/ml/big", "cluster:resourceclaims/ml/typo"}
    assert json.loads(out)["summary"]["objects"] == 7


def test_pods_with_claims_are_audited_and_the_others_are_not(config, cluster):
    cluster.create("pods", pod("plain", None))
    cluster.create("pods", pod("lost", [{"name": "gpu", "resourceClaimName": "gone"}]))
    cluster.create("pods", pod("runs", [{"name": "gpu", "resourceClaimName": "held-node-0"}], node="node-0"))
    cluster.create("pods", pod("pinned", [{"name": "gpu", "resourceClaimName": "train"}], node="node-1"))
    code, out, _ = audit("--kubeconfig", str(config), "--format", "json")
    found = by_object(out)
    assert "DRA601" in found["Pod ml/lost"]
    assert found["Pod ml/pinned"] == {"DRA249"}   # bound to a node, its claim never allocated: it never runs
    assert "Pod ml/runs" not in found and "Pod ml/plain" not in found
    assert json.loads(out)["summary"]["objects"] == 9   # three Pods with claims beside the six DRA objects


def test_the_policy_files_organisation_rules_and_severities(config, tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump({"organization": {"allowedDeviceClasses": {"ml": ["tpu.*"]}},
                                      "severities": {"DRA600": "error"}, "ignore": ["DRA703"],
                                      "enforcement": {"DRA600": "warn"}}))
    code, out, _ = audit("--kubeconfig", str(config), "--policy", str(policy), "--format", "json")
    found = by_object(out)
    assert code == 1
    assert found["ResourceClaim ml/train"] == {"DRA950"}
    assert found["ResourceClaim ml/typo"] == {"DRA600", "DRA950"}
    severities = {(f["object"], f["rule"]): f["severity"] for f in json.loads(out)["findings"]}
    assert severities[("ResourceClaim ml/typo", "DRA600")] == "error"
    policy.write_text(yaml.safe_dump({"ignore": ["DRA950", "DRA6", "DRA7"]}))
    code, out, _ = audit("--kubeconfig", str(config), "--policy", str(policy), "--format", "json")
    assert (code, json.loads(out)["findings"]) == (0, [])


def test_exempt_namespaces_are_skipped(config, tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump({"exemptNamespaces": ["ml"]}))
    reports = tmp_path / "reports.yaml"
    code, out, _ = audit("--kubeconfig", str(config), "--policy", str(policy), "--policy-report", str(reports))
    assert code == 0 and "(3 in exempt namespaces, not judged): no problems found" in out
    (report,) = [r for r in yaml.safe_load_all(reports.read_text()) if r["kind"] == "PolicyReport"]
    assert report["summary"] == {"pass": 0, "fail": 0, "warn": 0, "error": 0, "skip": 3}


def test_a_bad_policy_file_is_a_usage_error(config, tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text("organization: {maxDevicesPerClaim: 0}\n")
    code, out, err = audit("--kubeconfig", str(config), "--policy", str(policy))
    assert (code, out) == (2, "")
    assert err == (f"dralint audit: error: --policy {policy}: organization.maxDevicesPerClaim: expected a positive "
                   "integer (leave the key out for no limit)\n")


def test_the_policy_report_shape(config, tmp_path):
    reports = tmp_path / "reports.yaml"
    audit("--kubeconfig", str(config), "--policy-report", str(reports))
    text = reports.read_text()
    assert "&id" not in text   # no YAML anchors: each result names its object in full
    documents = list(yaml.safe_load_all(text))
    assert [(d["apiVersion"], d["kind"], d["metadata"].get("namespace")) for d in documents] == [
        ("wgpolicyk8s.io/v1alpha2", "ClusterPolicyReport", None), ("wgpolicyk8s.io/v1alpha2", "PolicyReport", "ml")]
    cluster_report, ml = documents
    assert cluster_report["summary"] == {"pass": 3, "fail": 0, "warn": 0, "error": 0, "skip": 0}
    assert ml["summary"] == {"pass": 2, "fail": 1, "warn": 1, "error": 0, "skip": 0}
    kinds = {r["resources"][0]["kind"] for r in cluster_report["results"]}
    assert kinds == {"DeviceClass", "ResourceSlice"}
    for document in documents:
        assert document["metadata"]["name"] == "dralint-audit"
        for result in document["results"]:
            assert result["policy"] == result["source"] == "dralint"
            assert result["result"] in ("pass", "fail", "warn", "error", "skip")
            assert result["severity"] in ("critical", "high", "medium", "low", "info")
            assert isinstance(result["timestamp"]["seconds"], int)
            (ref,) = result["resources"]
            assert ref["uid"].startswith("00000000-") and ref["apiVersion"] == "resource.k8s.io/v1"
            assert ("namespace" in ref) == (document["kind"] == "PolicyReport")
    warned = [r for r in ml["results"] if r["result"] == "warn"]
    assert warned[0]["rule"] == "DRA600 device-class-not-found" and warned[0]["severity"] == "medium"
    assert warned[0]["properties"] == {"field": "spec.devices.requests[0].exactly.deviceClassName"}


@pytest.fixture(scope="module")
def sarif_validator() -> jsonschema.Draft4Validator:
    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "junit"])
def test_every_output_format_parses_and_names_the_object(fmt, config, tmp_path, sarif_validator):
    output = tmp_path / f"audit.{fmt}"
    code, out, _ = audit("--kubeconfig", str(config), "--format", fmt, "--output", str(output))
    text = output.read_text()
    assert code == 1 and out == ""
    if fmt == "json":
        assert {f["object"] for f in json.loads(text)["findings"]} == {"ResourceClaim ml/typo"}
    elif fmt == "sarif":
        log = json.loads(text)
        sarif_validator.validate(log)
        uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
        assert uris == {"cluster%3Aresourceclaims/ml/typo"}
    elif fmt == "github":
        lines = text.splitlines()
        assert lines and all(line.startswith("::") for line in lines if line.startswith("::"))
        assert any(line.startswith("::error file=cluster%3Aresourceclaims/ml/typo") for line in lines)
    elif fmt == "junit":
        suites = ET.fromstring(text).findall("testsuite")
        assert len(suites) == 6   # one per audited object, the clean ones passing
        failing = [s.get("name") for s in suites if s.get("failures") != "0"]
        assert failing == ["cluster:resourceclaims/ml/typo"]
    else:
        assert "ResourceClaim ml/typo (resourceclaims): error:" in text


def test_forbidden_pods_are_reported_and_the_rest_audited(server, config, cluster):
    cluster.create("pods", pod("lost", [{"name": "gpu", "resourceClaimName": "gone"}]))
    server.faults.forbidden = {"pods"}
    code, out, err = audit("--kubeconfig", str(config), "--format", "json")
    assert code == 1 and set(by_object(out)) == {"ResourceClaim ml/typo"}
    assert err == ("dralint audit: warning: forbidden: dralint needs `list pods` (cluster-wide): pods is forbidden: "
                   'User "system:serviceaccount:dralint:dralint-webhook" cannot list resource "pods" in API group "" '
                   "at the cluster scope; Pods are not audited\n")


def test_forbidden_device_classes_turn_the_cluster_state_rules_off(server, config):
    server.faults.forbidden = {"deviceclasses"}
    code, out, err = audit("--kubeconfig", str(config), "--format", "json")
    # Without the classes every claim's class would be "missing": those rules are not judged at all.
    assert (code, json.loads(out)["findings"]) == (0, [])
    assert "needs `list deviceclasses.resource.k8s.io`" in err
    assert "deviceclasses could not be listed: the rules that judge against the cluster's state" in err


def test_lists_are_read_page_by_page(server, config, cluster):
    for n in range(1203):
        cluster.create("resourceclaims", {**GOOD_CLAIM, "metadata": {"name": f"c-{n:04d}", "namespace": "ml"}})
    code, out, _ = audit("--kubeconfig", str(config), "--format", "json")
    assert json.loads(out)["summary"]["objects"] == 6 + 1203
    assert by_object(out).keys() == {"ResourceClaim ml/typo"}
    pages = server.calls("resourceclaims")
    assert len(pages) == 3 and [("continue" in p) for p in pages] == [False, True, True]


def test_one_namespace_alone(config, cluster):
    cluster.create("namespaces", {"metadata": {"name": "other"}})
    cluster.create("resourceclaims", {**TYPO_CLAIM, "metadata": {"name": "typo", "namespace": "other"}})
    code, out, _ = audit("--kubeconfig", str(config), "-n", "other", "--format", "json")
    assert code == 1 and set(by_object(out)) == {"ResourceClaim other/typo"}
    assert json.loads(out)["summary"]["objects"] == 1


def test_the_servers_release_unless_one_is_given(server, config):
    server.version = version_info("v1.34.3")
    code, out, err = audit("--kubeconfig", str(config), "--format", "json")
    assert code == 1 and err == ""
    server.version = version_info("v1.90.1")
    code, _, err = audit("--kubeconfig", str(config), "--format", "json")
    assert code == 1 and err.startswith("dralint audit: note: the API server https://127.0.0.1:") \
        and "runs v1.90.1: judging as 1." in err
    code, _, err = audit("--kubeconfig", str(config), "--kube-version", "1.2")
    assert code == 2 and err.startswith("dralint audit: error: --kube-version '1.2'")


def test_connection_errors_exit_2(tmp_path, certs):
    config = kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:9", certs)
    code, out, err = audit("--kubeconfig", str(config))
    assert (code, out) == (2, "") and err.startswith("dralint audit: error: cannot reach the API server")
    code, _, err = audit("--kubeconfig", str(config), "--context", "nowhere")
    assert code == 2 and "context 'nowhere' does not exist" in err


def test_a_wrong_token_is_a_usage_error(tmp_path, server, certs):
    config = kubeconfig(tmp_path / "kubeconfig", server.url, certs, token="wrong")
    code, _, err = audit("--kubeconfig", str(config))
    assert code == 2 and "refused the credentials (401 Unauthorized)" in err


def webhook_findings(obj: dict, cluster: FakeCluster, policy: dict, tmp_path: Path) -> set[tuple[str, str, str]]:
    """What the webhook's own judging says of a CREATE of ``obj`` against a dump of ``cluster``."""
    from dralint.engine import load_cluster
    from dralint_webhook.admission import parse_review
    from dralint_webhook.cluster import ClusterState
    from dralint_webhook.judge import judge
    from dralint_webhook.policy import parse_policy
    from test_cluster_live import dump

    parsed = parse_policy(policy)
    index, _ = load_cluster([str(dump(cluster, tmp_path / "dump.yaml"))], parsed.options)
    meta = obj["metadata"]
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u-1", "operation": "CREATE", "namespace": meta.get("namespace", ""), "name": meta["name"],
        "kind": {"group": "resource.k8s.io", "version": "v1", "kind": obj["kind"]},
        "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "resourceclaims"}, "object": obj}}
    verdict = judge(parse_review(json.dumps(body).encode()), parsed, ClusterState(index, ()))
    return {(f.rule, f.severity.value, f.field) for f in verdict.errors + verdict.warnings}


def test_verdicts_equal_the_webhooks_own_judging(config, cluster, tmp_path):
    cluster.create("resourceclaims", BIG_CLAIM)
    policy = {"organization": {"allowedDeviceClasses": {"ml": ["gpu.example.*"]}, "maxDevicesPerClaim": 2},
              "feasibility": "deny"}
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    code, out, _ = audit("--kubeconfig", str(config), "--policy", str(path), "--format", "json")
    audited: dict[str, set[tuple[str, str, str]]] = {}
    for f in json.loads(out)["findings"]:
        if f["severity"] != "info":
            audited.setdefault(f["object"], set()).add((f["rule"], f["severity"], f["field"]))
    for name in ("train", "typo", "big"):
        stored = cluster.objects["resourceclaims"][f"ml/{name}"]
        assert audited.get(f"ResourceClaim ml/{name}", set()) == webhook_findings(stored, cluster, policy, tmp_path)
    assert {rule for rule, _, _ in audited["ResourceClaim ml/big"]} == {"DRA701", "DRA951"}


def test_objects_recorded_from_a_real_api_server_audit_cleanly(shared, tmp_path, certs):
    """kube-apiserver 1.36's own lists (managedFields, uids, status...) raise nothing but what is wrong."""
    with FakeApiServer(replay=shared / "fixtures" / "apiserver-1.36", tls=(str(certs / "tls.crt"),
                                                                           str(certs / "tls.key"))) as server:
        config = kubeconfig(tmp_path / "kubeconfig", server.url, certs)
        code, out, err = audit("--kubeconfig", str(config), "--format", "json")
    assert (code, err) == (0, "")
    assert [(f["object"], f["rule"]) for f in json.loads(out)["findings"]] == [
        ("DeviceClass nic.example.com", "DRA603")]   # no slice publishes its driver
    assert json.loads(out)["summary"]["objects"] == 6


def reviewed_one_by_one(state, options, settings) -> dict[str, list[tuple[str, str, str, str]]]:
    """What one webhook review per object (the audit's judging before it judged objects together)
    says of each object of ``state``: the reference the audit's engine runs must equal."""
    from dataclasses import replace

    from dralint.audit.judge import FEASIBILITY_KINDS, LEFT_OUT, _fleet, settled
    from dralint.checks import org
    from dralint.engine import review

    fleet = _fleet(state, options)
    engine = replace(options, org_policy=None)
    no_feasibility = replace(engine, ignore=engine.ignore + ("DRA7",))
    organisation = replace(options, select=org.RULES) if options.org_policy is not None else None
    found = {}
    for obj in state.audited:
        findings = review(obj.value, None, "CREATE", "", no_feasibility if settled(obj) else engine,
                          cluster=state.index, name=obj.source, fleet=fleet if obj.kind in FEASIBILITY_KINDS else None)
        if organisation is not None and obj.kind in org.KINDS:
            findings += review(obj.value, None, "CREATE", "", organisation, cluster=state.index, name=obj.source)
        found[obj.source] = sorted((f.rule, f.severity.value, f.field, f.message, f.file)
                                   for f in findings if f.rule not in LEFT_OUT)
    return found


@pytest.mark.parametrize("gates", ["", "DRAPrioritizedList=false", "DRADeviceTaints=true,DRADeviceTaintRules=true"])
def test_objects_judged_together_get_the_findings_of_one_review_each(gates, config, cluster):
    from dralint.audit.judge import audit_options, judge
    from dralint.audit.listing import AUDITED, audit_state
    from dralint.cluster.connect import connect
    from dralint.cluster.state import list_cluster
    from dralint.kube.releases import Release
    from dralint.options import Options
    from dralint.policy_file import parse_settings

    cluster.create("resourceclaims", BIG_CLAIM)
    # A class the API server would refuse (its CEL does not compile), and claims and Pods using it.
    cluster.create("deviceclasses", {"metadata": {"name": "bad.example.com"},
                                     "spec": {"selectors": [{"cel": {"expression": "device.driver == "}}]}})
    cluster.create("resourceclaims", {**GOOD_CLAIM, "metadata": {"name": "uses-bad", "namespace": "ml"}, "spec": {
        "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "bad.example.com"}}]}}})
    # A field behind a gate (firstAvailable): dropped on create when the gate is off.
    cluster.create("resourceclaims", {"metadata": {"name": "prio", "namespace": "ml"}, "spec": {"devices": {
        "requests": [{"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "gpu.example.com",
                                                         "count": 9}]}]}}})
    cluster.create("resourceclaimtemplates", {"metadata": {"name": "four", "namespace": "ml"}, "spec": {"spec": {
        "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 4}}]}}}})
    # Pods whose claims are judged in the same audit: each Pod against the claims as stored.
    cluster.create("pods", pod("both", [{"name": "a", "resourceClaimName": "train"},
                                        {"name": "b", "resourceClaimName": "big"}]))
    cluster.create("pods", pod("bad", [{"name": "a", "resourceClaimName": "uses-bad"},
                                       {"name": "b", "resourceClaimName": "typo"}]))
    cluster.create("pods", pod("templated", [{"name": "a", "resourceClaimTemplateName": "four"}]))
    cluster.create("pods", pod("held", [{"name": "a", "resourceClaimName": "held-node-0"}]))
    cluster.create("pods", pod("pinned", [{"name": "gpu", "resourceClaimName": "train"}], node="node-1"))
    cluster.create("devicetaintrules", {"metadata": {"name": "node-1"}, "spec": {
        "deviceSelector": {"driver": "gpu.example.com", "pool": "node-1"}, "taint": {"key": "broken", "effect": "NoSchedule"}}})
    api = connect(str(config), None)
    try:
        snapshot = list_cluster(api, None, resources=AUDITED)
    finally:
        api.close()
    state = audit_state(snapshot)
    settings = parse_settings({"organization": {"allowedDeviceClasses": {"ml": ["gpu.example.*"]},
                                                "maxDevicesPerClaim": 2}})
    for policy in (None, settings):
        options = audit_options(Options(release=Release.parse(None, gates)[0]), policy, state)
        together = {v.obj.source: sorted((f.rule, f.severity.value, f.field, f.message, f.file) for f in v.findings)
                    for v in judge(state, options, policy)}
        assert together == reviewed_one_by_one(state, options, policy)
        assert any(together.values())
