"""``dralint-webhook vap``: what it writes, checked against the admissionregistration.k8s.io/v1
OpenAPI models (the ``kubernetes`` package's, generated from it: unknown fields and missing
required ones are refused), the API server's own rules for these objects, and its refusals."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kubernetes import client

from dralint_webhook.cli import main

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "webhook" / "deploy" / "base" / "policy.yaml"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["vap", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_the_output_is_valid_admissionregistration_v1_objects(capsys):
    code, out, err = run(capsys, "--config", str(SHIPPED), "--kube-version", "1.34")
    assert (code, err) == (0, "")
    docs = list(yaml.safe_load_all(out))
    assert [d["kind"] for d in docs] == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]
    policy = client.V1ValidatingAdmissionPolicy.model_validate(docs[0])
    binding = client.V1ValidatingAdmissionPolicyBinding.model_validate(docs[1])
    assert binding.spec.policy_name == policy.metadata.name
    # pkg/apis/admissionregistration/validation: matchConstraints needs matchPolicy, both selectors and a rule;
    # validationActions are Deny, Warn or Audit, never Deny with Warn.
    constraints = policy.spec.match_constraints
    assert constraints.match_policy and constraints.namespace_selector is not None
    assert constraints.object_selector is not None and constraints.resource_rules
    assert constraints.resource_rules[0].api_versions == ["v1", "v1beta2", "v1beta1"]  # what 1.34 serves
    assert binding.spec.validation_actions == ["Deny"] and policy.spec.failure_policy == "Fail"
    assert all(v.message and "\n" not in v.message and v.message_expression for v in policy.spec.validations)


def test_each_enforcement_gets_its_own_policy_and_binding(tmp_path, capsys):
    config = write(tmp_path, "enforcement: {DRA950: warn, DRA951: dryrun}\n"
                             "organization:\n  allowedDeviceClasses: {'*': [gpu.example.com]}\n"
                             "  maxDevicesPerClaim: 4\n  adminAccessNamespaceLabels: {admin: 'true'}\n")
    code, out, _ = run(capsys, "--config", config)
    docs = list(yaml.safe_load_all(out))
    bindings = {d["metadata"]["name"]: d["spec"]["validationActions"] for d in docs
                if d["kind"] == "ValidatingAdmissionPolicyBinding"}
    assert code == 0 and bindings == {"dralint-organization-deny": ["Deny"], "dralint-organization-warn": ["Warn"],
                                      "dralint-organization-audit": ["Audit"]}
    for d in docs:
        model = client.V1ValidatingAdmissionPolicy if d["kind"] == "ValidatingAdmissionPolicy" else \
            client.V1ValidatingAdmissionPolicyBinding
        model.model_validate(d)


def test_exempt_namespaces_are_out_of_scope_as_for_the_webhook(tmp_path, capsys):
    config = write(tmp_path, "exemptNamespaces: [ops, kube-system]\norganization: {maxDevicesPerClaim: 2}\n")
    _, out, _ = run(capsys, "--config", config)
    selector = next(yaml.safe_load_all(out))["spec"]["matchConstraints"]["namespaceSelector"]
    assert selector == {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                              "values": ["kube-system", "ops"]}]}


def test_the_release_defaults_to_the_policys_pin(tmp_path, capsys):
    config = write(tmp_path, 'kubeVersion: "1.32"\norganization: {maxDevicesPerClaim: 2}\n')
    _, out, _ = run(capsys, "--config", config)
    assert "for Kubernetes 1.32:" in out
    assert next(yaml.safe_load_all(out))["spec"]["matchConstraints"]["resourceRules"][0]["apiVersions"] == \
        ["v1beta1", "v1alpha3"]


@pytest.mark.parametrize("argv, message", [
    (["--kube-version", "1.29"], "Kubernetes 1.29 has no ValidatingAdmissionPolicy in admissionregistration.k8s.io/v1 "
                                 "(GA in 1.30)"),
    (["--kube-version", "1.30"], "Kubernetes 1.30 serves ResourceClaims only in classic DRA's v1alpha2"),
    (["--kube-version", "2.1"], "--kube-version '2.1': expected a Kubernetes version like 1.35"),
])
def test_a_release_without_what_it_needs_is_refused(capsys, argv, message):
    code, out, err = run(capsys, "--config", str(SHIPPED), *argv)
    assert (code, out) == (2, "") and message in err and err.startswith("dralint-webhook vap: error: ")


def test_a_policy_without_organisation_rules_or_unreadable_is_refused(tmp_path, capsys):
    code, out, err = run(capsys, "--config", write(tmp_path, "{}\n"))
    assert (code, out) == (2, "") and "sets no rule the admission policy could enforce" in err
    code, _, err = run(capsys, "--config", str(tmp_path / "missing.yaml"))
    assert code == 2 and "cannot read policy file" in err
    code, _, err = run(capsys, "--config", write(tmp_path, "organization: {maxDevicesPerClaim: 0}\n"))
    assert code == 2 and "organization.maxDevicesPerClaim: expected a positive integer" in err
