"""The generated CEL against the API server's limits: dralint's estimate of every expression, the
margins it leaves, a policy too big to fit refused loudly, and the worst object the API server
admits evaluated within the budgets."""
from __future__ import annotations

from pathlib import Path

import pytest

from dralint.kube.limits import limits_for
from dralint_webhook.policy import load_policy, parse_policy
from dralint_webhook.vap import VapLimitError, generate
from dralint_webhook.vap.limits import MATCH_CONDITIONS_BUDGET, PER_CALL_LIMIT, RUNTIME_BUDGET, check_policy, sizes_for
from vap_eval import Evaluator, Request

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "webhook" / "deploy" / "base" / "policy.yaml"
# Every rule on, several namespaces with several patterns each, two admin labels.
FULL = {"organization": {
    "allowedDeviceClasses": {f"team-{i}": ["gpu.example.com", "*.gpu.example.com", "[a-c]?-*.example.org"]
                             for i in range(20)} | {"*": ["cpu.example.com"]},
    "maxDevicesPerClaim": 8,
    "adminAccessNamespaceLabels": {"dra.example.com/admin-access": "true", "team": "sre"}}}


def test_the_api_servers_limits_are_the_numbers_of_k8s_io_apiserver():
    # k8s.io/apiserver pkg/apis/cel/config.go: PerCallLimit, RuntimeCELCostBudget, RuntimeCELCostBudgetMatchConditions.
    assert (PER_CALL_LIMIT, RUNTIME_BUDGET, MATCH_CONDITIONS_BUDGET) == (1_000_000, 10_000_000, 2_500_000)


@pytest.mark.parametrize("minor", [31, 33, 34, 37])
def test_every_expression_of_the_shipped_policy_is_estimated_with_a_wide_margin(minor):
    generated = generate(load_policy(str(SHIPPED)), minor)
    for costs in generated.costs:
        # A tenth of each budget: room for a policy file many times the shipped one.
        assert costs.total <= RUNTIME_BUDGET // 10, costs
        assert costs.match_total <= MATCH_CONDITIONS_BUDGET // 10, costs
        assert all(e.cost <= PER_CALL_LIMIT // 5 for e in costs.expressions), costs
        assert len(costs.expressions) == sum(1 for _ in _expressions(generated.objects, costs.name))


def test_a_policy_with_every_rule_and_many_patterns_stays_within_the_budgets():
    costs = generate(parse_policy(FULL), 37).costs
    assert [c.name for c in costs] == ["dralint-organization-deny"]
    assert costs[0].total <= RUNTIME_BUDGET // 2
    assert max(e.cost for e in costs[0].expressions) <= PER_CALL_LIMIT // 2


def test_a_policy_whose_patterns_cannot_fit_the_per_expression_limit_is_refused_naming_the_expression():
    huge = {"organization": {"allowedDeviceClasses": {"ml": [f"class-{i}-*.example.com" for i in range(400)]}}}
    with pytest.raises(VapLimitError, match=r"dralint-organization-deny: spec\.variables\[\d+\]\.expression may cost "
                                            r"[\d,]+, over the API server's limit of 1,000,000 per expression"):
        generate(parse_policy(huge), 37)


def test_an_expression_reading_a_variable_declared_after_it_is_refused():
    vap = generate(parse_policy(FULL), 37).objects[0]
    variables = vap["spec"]["variables"]
    vap["spec"]["variables"] = [variables[-1], *variables[:-1]]
    with pytest.raises(VapLimitError, match=r"spec\.variables\[0\]\.expression reads variables declared after it"):
        check_policy(vap, 37, sizes_for(37, 200))


def test_a_validation_that_is_not_a_bool_is_refused():
    vap = generate(parse_policy(FULL), 37).objects[0]
    vap["spec"]["validations"][0]["expression"] = "variables.dra950"
    with pytest.raises(VapLimitError, match=r"spec\.validations\[0\]\.expression must evaluate to bool, not dyn"):
        check_policy(vap, 37, sizes_for(37, 200))


def test_the_largest_claim_the_api_server_admits_is_judged_within_the_budgets():
    """32 requests of 8 alternatives, 253-character classes, every one refused: the estimate's worst case,
    evaluated within the budgets."""
    limits = limits_for(37)
    policy = parse_policy(FULL)
    generated = generate(policy, 37)
    cls = ("z" * 60 + ".") * 3 + "z" * 70
    assert len(cls) == 253
    alternative = {"name": "s", "deviceClassName": cls, "count": 8, "adminAccess": True}
    requests = [{"name": f"r{i}", "firstAvailable": [alternative] * limits.subrequests}
                for i in range(limits.requests_per_claim)]
    namespace = "n" * 63
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "big", "namespace": namespace}, "spec": {"devices": {"requests": requests}}}
    ns = {"metadata": {"name": namespace, "labels": {"kubernetes.io/metadata.name": namespace}}}
    evaluator = Evaluator(list(generated.objects), 37)
    decisions = evaluator.judge(Request(claim, "resource.k8s.io", "v1", "resourceclaims", namespace=namespace,
                                        namespace_obj=ns))
    # Too long for a messageExpression's 5 KiB: the first finding, and how many more.
    classes, count, admin = (d.message for d in decisions)
    assert classes.endswith("(DRA950 device-class-not-allowed); and 255 more")
    assert admin.endswith("(DRA952 admin-access-namespace); and 255 more")
    assert count == ("spec.devices.requests: the claim may get 256 devices; the cluster's policy allows at most 8 per "
                     "claim (DRA951 too-many-devices)")
    assert not any(d.error for d in decisions)
    # dralint's runtime charges an approximation of cel-go's actual cost (not the estimate's model), so it is
    # held to the API server's budgets here, with the margin the estimate promises, not to the estimate.
    assert max(evaluator.costs.seen.values()) <= PER_CALL_LIMIT // 10
    assert sum(evaluator.costs.seen.values()) <= RUNTIME_BUDGET // 10


def _expressions(objects, name):
    for o in objects:
        if o["kind"] == "ValidatingAdmissionPolicy" and o["metadata"]["name"] == name:
            spec = o["spec"]
            yield from spec.get("variables", [])
            yield from spec.get("matchConditions", [])
            for v in spec["validations"]:
                yield v
                yield v
