"""The generated admission policies, evaluated by dralint's CEL runtime (vap_eval.py), against the
webhook's organisation rules (judge_org, the policy's ignore/severities, its enforcement): the same
findings, word for word, with the same action, on claims and templates of every served version."""
from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from dralint.findings import Finding, Severity
from dralint.kube.shapes import FLAT_VERSIONS
from dralint_webhook.enforcement import Action
from dralint_webhook.judge import judge_org
from dralint_webhook.manifests import EXCLUDED_NAMESPACES
from dralint_webhook.policy import Policy, parse_policy
from dralint_webhook.vap import generate
from dralint_webhook.vap.objects import served_versions
from vap_eval import Decision, Evaluator, Request

SEED = 29
CASES = 1500
MINORS = (31, 32, 33, 34, 35, 37)
ADMIN_LABEL = "dra.example.com/admin-access"
NAMESPACES = ("ml-training", "web", "team-a", "ops", "kube-system")
CLASSES = ("gpu.example.com", "a100.gpu.example.com", "cpu-1.example.com", "cpu-12.example.com", "b.example.com",
           "tpu.other.io", "x")
PATTERNS = ("gpu.example.com", "*.gpu.example.com", "cpu-?.example.com", "[a-c]*.example.com", "[!a-c]*", "*",
            "tpu.*.io")
_ACTION = {Action.DENY: "Deny", Action.WARN: "Warn", Action.DRYRUN: "Audit"}


def random_policy(rng: random.Random) -> dict[str, Any]:
    """A policy file's content: some organisation rules, and sometimes ignore, severities, enforcement."""
    org: dict[str, Any] = {}
    if rng.random() < 0.8:
        classes = {ns: rng.sample(PATTERNS, rng.randint(0, 3)) for ns in rng.sample(NAMESPACES[:4], rng.randint(0, 3))}
        if rng.random() < 0.6:
            classes["*"] = rng.sample(PATTERNS, rng.randint(0, 2))
        org["allowedDeviceClasses"] = classes
    if rng.random() < 0.8:
        org["maxDevicesPerClaim"] = rng.randint(1, 8)
    if rng.random() < 0.8:
        labels = {ADMIN_LABEL: "true"}
        if rng.random() < 0.3:
            labels["team"] = "sre"
        org["adminAccessNamespaceLabels"] = labels
    doc: dict[str, Any] = {"organization": org}
    if rng.random() < 0.3:
        doc["enforcement"] = {rng.choice(["DRA950", "DRA951", "DRA952", "DRA95"]): rng.choice(["warn", "dryrun"])}
    if rng.random() < 0.2:
        doc["severities"] = {rng.choice(["DRA950", "DRA951", "DRA952"]): rng.choice(["warning", "info"])}
    if rng.random() < 0.1:
        doc["ignore"] = [rng.choice(["DRA950", "DRA951", "DRA952"])]
    if rng.random() < 0.3:
        doc["exemptNamespaces"] = ["ops"]
    return doc


def random_body(rng: random.Random) -> dict[str, Any]:
    """The fields of one request (its ``exactly``) or alternative."""
    body: dict[str, Any] = {"deviceClassName": rng.choice(CLASSES)}
    mode = rng.random()
    if mode < 0.08:
        body["allocationMode"] = "All"
    elif mode < 0.3:
        body["allocationMode"] = "ExactCount"
    if rng.random() < 0.6 and body.get("allocationMode") != "All":
        body["count"] = rng.randint(1, 4)
    if rng.random() < 0.2:
        body["adminAccess"] = rng.random() < 0.7
    return body


def random_object(rng: random.Random, version: str, kind: str, namespace: str) -> dict[str, Any]:
    """A claim or template in ``version``'s shape: a few requests, exactly or with alternatives."""
    requests = []
    for i in range(rng.choice([0, 1, 1, 2, 2, 3, 4, 9])):
        request: dict[str, Any] = {"name": f"r{i}"}
        if rng.random() < 0.3:
            request["firstAvailable"] = [dict(random_body(rng), name=f"s{j}") for j in range(rng.randint(1, 3))]
        elif version in FLAT_VERSIONS:
            request.update(random_body(rng))
        else:
            request["exactly"] = random_body(rng)
        requests.append(request)
    spec: dict[str, Any] = {"devices": {"requests": requests}} if requests or rng.random() < 0.5 else {}
    if kind == "ResourceClaimTemplate":
        spec = {"spec": spec}
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": kind,
            "metadata": {"name": f"obj-{rng.randint(0, 999)}", "namespace": namespace}, "spec": spec}


def random_namespace(rng: random.Random, name: str) -> dict[str, Any]:
    labels = {"kubernetes.io/metadata.name": name}
    choice = rng.random()
    if choice < 0.4:
        labels[ADMIN_LABEL] = "true"
    elif choice < 0.6:
        labels[ADMIN_LABEL] = "false"
    if rng.random() < 0.5:
        labels["team"] = rng.choice(["sre", "ml"])
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def expected(obj: dict[str, Any], namespace: dict[str, Any], policy: Policy) -> set[tuple[tuple[str, ...], str]]:
    """What the webhook says: per rule, its action and its findings as its denial message lists them."""
    name = namespace["metadata"]["name"]
    if name in policy.exempt_namespaces or name in EXCLUDED_NAMESPACES:
        return set()
    findings = policy.org_filter.apply(judge_org(obj, name, policy.org, namespace["metadata"]["labels"]))
    by_rule: dict[str, list[Finding]] = {}
    for f in findings:
        by_rule.setdefault(f.rule, []).append(f)
    out = set()
    for rule, found in by_rule.items():
        severity = found[0].severity
        action = _ACTION[policy.enforcement.action(rule)] if severity is Severity.ERROR else \
            "Warn" if severity is Severity.WARNING else "Audit"
        out.add(((action,), "; ".join(f"{f.field}: {f.message} ({f.rule} {f.name})" for f in found)))
    return out


def actual(decisions: list[Decision]) -> set[tuple[tuple[str, ...], str]]:
    assert not [d for d in decisions if d.error], decisions
    return {(d.actions, d.message) for d in decisions}


@pytest.fixture(scope="module")
def outcome() -> dict[str, Any]:
    """Every generated case judged both ways; what was compared, counted."""
    rng = random.Random(SEED)
    setups: list[tuple[Policy, int, Evaluator]] = []
    for _ in range(40):
        minor = rng.choice(MINORS)
        try:
            policy = parse_policy(random_policy(rng))
            generated = generate(policy, minor)
        except ValueError:
            continue  # a policy file refused, or with nothing to enforce: the command says so (test_vap_command)
        setups.append((policy, minor, Evaluator(list(generated.objects), minor)))
    seen: Counter[str] = Counter()
    mismatches = []
    for case in range(CASES):
        policy, minor, evaluator = setups[case % len(setups)]
        version = rng.choice(served_versions(minor))
        kind = rng.choice(["ResourceClaim", "ResourceClaimTemplate"])
        namespace = random_namespace(rng, rng.choice(NAMESPACES))
        name = namespace["metadata"]["name"]
        obj = random_object(rng, version, kind, name)
        resource = "resourceclaims" if kind == "ResourceClaim" else "resourceclaimtemplates"
        request = Request(obj, "resource.k8s.io", version, resource, namespace=name, namespace_obj=namespace)
        want, got = expected(obj, namespace, policy), actual(evaluator.judge(request))
        if want != got:
            mismatches.append((minor, obj, namespace, want, got))
        seen[f"1.{minor} {version}"] += 1
        seen["violating" if want else "allowed"] += 1
        seen.update(f"action {a[0]}" for a, _ in want)
        seen.update({rule for _, text in want for rule in ("DRA950", "DRA951", "DRA952") if f"({rule} " in text})
    return {"seen": seen, "mismatches": mismatches}


def test_generated_policies_agree_with_the_webhook_on_every_case(outcome):
    assert outcome["mismatches"][:3] == []


def test_the_cases_cover_every_served_version_both_verdicts_and_every_rule_and_action(outcome):
    seen = outcome["seen"]
    assert seen["allowed"] + seen["violating"] == CASES >= 1000
    assert seen["allowed"] > 200 and seen["violating"] > 200
    for minor in MINORS:
        for version in served_versions(minor):
            assert seen[f"1.{minor} {version}"] > 0, (minor, version)
    for key in ("DRA950", "DRA951", "DRA952", "action Deny", "action Warn", "action Audit"):
        assert seen[key] > 10, key
