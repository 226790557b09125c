"""The policy file, the organisation rules and reloading files (no server)."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

from dralint.findings import Category, Severity
from dralint.checks import org
from dralint.org_policy import OrgPolicy
from dralint_webhook.judge import judge_org
from dralint.kube.releases import DEFAULT_MINOR
from dralint_webhook.policy import Policy, PolicyError, at_release, load_policy, parse_policy
from dralint_webhook.reloading import Reloading

EXAMPLE_POLICY = Path(__file__).resolve().parents[2] / "webhook" / "deploy" / "base" / "policy.yaml"


def claim(requests: list, version: str = "v1", kind: str = "ResourceClaim") -> dict:
    spec = {"devices": {"requests": requests}}
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": kind, "metadata": {"name": "c", "namespace": "ml"},
            "spec": {"spec": spec} if kind == "ResourceClaimTemplate" else spec}


def exactly(cls: str = "gpu.example.com", count: int | None = None, mode: str | None = None,
            admin: bool = False) -> dict:
    body: dict = {"deviceClassName": cls}
    if count is not None:
        body["count"] = count
    if mode:
        body["allocationMode"] = mode
    if admin:
        body["adminAccess"] = True
    return body


def test_defaults_without_a_file():
    policy = parse_policy({})
    assert policy == Policy(options=policy.options)
    assert policy.on_internal_error == "allow" and policy.feasibility == "warn"
    # The allocator's budget fits in the webhook's timeout.
    from dralint_webhook.manifests import TIMEOUT_SECONDS
    assert policy.options.max_seconds < TIMEOUT_SECONDS
    assert not policy.org.active


def test_full_policy():
    policy = parse_policy(yaml.safe_load("""
kubeVersion: "1.34"
featureGates: {DRAConsumableCapacity: true, SomethingElse: true}
strictFields: false
ignore: [DRA101, device-class-not-allowed]
severities: {DRA208: warning, DRA951: warning, DRA9: info}
exemptNamespaces: [kube-system]
onInternalError: deny
feasibility: deny
namespaceLabels: {debug: {team: infra}}
organization:
  allowedDeviceClasses: {ml: ["*.example.com"], "*": [cpu.example.com]}
  maxDevicesPerClaim: 4
  adminAccessNamespaceLabels: {dra.example.com/admin: "true"}
"""))
    opts = policy.options
    assert opts.release.version == "1.34" and opts.release.overrides == {"DRAConsumableCapacity": True}
    assert not opts.strict and opts.ignore == ("DRA101",)
    assert opts.severities["DRA208"] == "warning" and "DRA951" not in opts.severities
    assert policy.org_filter.ignored == {"DRA950"}
    # The prefix DRA9 names the organisation rules too; as with the CLI, a later entry overrides an earlier one.
    assert policy.org_filter.severities["DRA951"] is Severity.INFO
    assert policy.exempt_namespaces == {"kube-system"}
    assert (policy.on_internal_error, policy.feasibility) == ("deny", "deny")
    assert policy.namespace_labels == {"debug": {"team": "infra"}}
    assert policy.org == OrgPolicy({"ml": ("*.example.com",), "*": ("cpu.example.com",)}, 4,
                                   {"dra.example.com/admin": "true"})
    assert any("SomethingElse" in n for n in policy.notes)


@pytest.mark.parametrize("text, fragment", [
    ("[1]", "expected a mapping"),
    ("kubeVersion: '2.0'", "kubeVersion"),
    ("kubeVersion: 1.30", "quote the version"),
    ("featureGates: {DRAAdminAccess: 'yes'}", "featureGates.DRAAdminAccess"),
    ("featureGates: {DRANoSuchGate: true}", "unknown DRA feature gate"),
    ("ignore: [DRA999]", "ignore"),
    ("ignore: DRA101", "list of strings"),
    ("severities: {DRA101: fatal}", "not error, warning or info"),
    ("onInternalError: maybe", "onInternalError"),
    ("feasibility: sometimes", "feasibility"),
    ("strictFields: 1", "strictFields"),
    ("exemptNamespace: [a]", "exemptNamespace: unknown key"),
    ("organization: {maxDevices: 3}", "organization.maxDevices: unknown key"),
    ("organization: {maxDevicesPerClaim: 0}", "positive integer"),
    ("organization: {adminAccessNamespaceLabels: {a: true}}", "quote"),
    ("organization: {adminAccessNamespaceLabels: {}}", "at least one label"),
    # A key without a value, as a file cut after it reads: refused, not read as "no such rule".
    ("organization:\n  maxDevicesPerClaim:\n", "leave the key out"),
    ("organization:\n  adminAccessNamespaceLabels:\n", "organization.adminAccessNamespaceLabels: expected a mapping"),
    ("namespaceLabels: {ns: [a]}", "namespaceLabels.ns"),
])
def test_bad_policies_name_the_key(text, fragment):
    with pytest.raises(PolicyError) as info:
        parse_policy(yaml.safe_load(text))
    assert fragment in str(info.value)


# --- one token, every rule it names; enforcement and its refusals ---------------------------------

def test_a_token_names_the_same_rules_in_every_key():
    from dralint.catalog import load_catalog
    from dralint.rule_filter import RuleFilter

    policy = parse_policy({"severities": {"DRA": "warning"}, "ignore": ["DRA95"]})
    catalog = load_catalog()
    engine = RuleFilter.build(catalog, (), policy.options.ignore, policy.options.severities)
    assert {engine.severity(rule, None) for rule in catalog} == {Severity.WARNING}
    assert set(policy.org_filter.severities) == set(org.RULES)
    assert policy.org_filter.ignored == set(org.RULES) and not engine.ignored_ids
    # A token names every rule it names, or nothing at all: then it is refused, as the CLI refuses it.
    for key in ("ignore", "severities", "enforcement"):
        value = ["DRAX"] if key == "ignore" else {"DRAX": "warning" if key == "severities" else "warn"}
        with pytest.raises(PolicyError, match=rf"^{key}(\.DRAX)?: unknown rule 'DRAX'"):
            parse_policy({key: value})


def test_enforcement_by_id_name_and_prefix_a_later_entry_overriding_an_earlier_one():
    from dralint_webhook.enforcement import Action

    policy = parse_policy(yaml.safe_load("enforcement: {DRA: dryrun, DRA2: deny, too-many-devices: warn, "
                                         "DRA702: warn}"))
    action = policy.enforcement.action
    assert (action("DRA101"), action("DRA201"), action("DRA951"), action("DRA950")) == \
        (Action.DRYRUN, Action.DENY, Action.WARN, Action.DRYRUN)
    # An entry names cluster-state rules too, over `feasibility`; internal errors are never enforcement's.
    assert (action("DRA702"), action("DRA703"), action("DRA000")) == (Action.WARN, Action.DRYRUN, Action.DENY)


@pytest.mark.parametrize("feasibility, expected", [("deny", "deny"), ("warn", "warn"), ("dryrun", "dryrun"),
                                                   ("off", "deny")])
def test_feasibility_is_the_enforcement_of_the_cluster_state_rules_no_entry_names(feasibility, expected):
    from dralint.catalog import load_catalog

    entry = "\nenforcement: {DRA604: dryrun}" if feasibility != "off" else ""
    policy = parse_policy(yaml.safe_load(f"feasibility: {feasibility}{entry}"))
    cluster = [r.id for r in load_catalog() if r.cluster_state]
    assert {"DRA216", "DRA506", "DRA600", "DRA701", "DRA702", "DRA703"} <= set(cluster)
    # Under off they are not judged at all (no cluster state is used): nothing to enforce.
    assert {policy.enforcement.action(r).value for r in cluster if r != "DRA604" or not entry} == {expected}
    assert policy.enforcement.action("DRA604").value == ("dryrun" if entry else "deny")
    assert policy.enforcement.action("DRA101").value == "deny"


@pytest.mark.parametrize("text, fragment", [
    ("enforcement: {DRA1: block}", "enforcement.DRA1: expected one of deny, warn, dryrun"),
    ("enforcement: [DRA1]", "enforcement: expected a mapping"),
    ("enforcement: {DRA000: warn}", "enforcement.DRA000: internal errors (DRA000) follow onInternalError"),
    ("ignore: [DRA7]\nenforcement: {DRA701: deny}", "enforcement.DRA701: none of the rules it names is judged "
                                                       "(they are all in `ignore`)"),
    ("feasibility: off\nenforcement: {DRA7: warn}", "enforcement.DRA7: none of the rules it names is judged (they "
                                                     "are cluster-state rules, which `feasibility: off` does not judge)"),
    ("severities: {DRA: warning}\nenforcement: {DRA: dryrun}", "enforcement.DRA: every rule it names reports "
                                                                  "warnings or info (severities.DRA)"),
    ("enforcement: {DRA600: deny}", "enforcement.DRA600: every rule it names reports warnings or info (their "
                                    "default severity)"),
    ("severities: {DRA953: info}\nenforcement: {namespace-labels-unknown: deny}", "severities.DRA953"),
])
def test_enforcement_that_can_never_act_is_refused_naming_the_key(text, fragment):
    with pytest.raises(PolicyError) as info:
        parse_policy(yaml.safe_load(text))
    assert fragment in str(info.value)


def test_enforcement_beside_what_leaves_some_of_its_rules_judged_is_accepted():
    parse_policy(yaml.safe_load("feasibility: off\nignore: [DRA101]\nenforcement: {DRA: dryrun, DRA1: deny}"))
    parse_policy(yaml.safe_load("severities: {DRA953: error}\nenforcement: {DRA953: warn}"))


@pytest.mark.parametrize("text, protected, open_", [
    ("feasibility: warn", set(), {"DRA701", "DRA506"}),
    ("feasibility: deny", {"DRA701", "DRA703", "DRA604"}, {"DRA506", "DRA709", "DRA101"}),
    ("feasibility: dryrun", {"DRA701"}, {"DRA506"}),
    ("enforcement: {DRA1: dryrun}", {"DRA101"}, {"DRA701", "DRA201"}),
    ("enforcement: {DRA1: dryrun}\nannotationSuppressions: all", set(), {"DRA101"}),
])
def test_an_objects_annotation_cannot_hide_the_rules_the_policy_enforces(text, protected, open_):
    hidden_from_annotations = parse_policy(yaml.safe_load(text)).options.protected
    assert protected <= hidden_from_annotations and not open_ & hidden_from_annotations


def test_load_policy_reports_unreadable_and_invalid_files(tmp_path):
    with pytest.raises(PolicyError, match="cannot read"):
        load_policy(str(tmp_path / "missing.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [\n")
    with pytest.raises(PolicyError, match="not valid YAML"):
        load_policy(str(bad))
    empty = tmp_path / "empty.yaml"
    empty.write_text("")       # what a writer leaves between truncating and writing: never the defaults
    with pytest.raises(PolicyError, match="empty"):
        load_policy(str(empty))
    empty.write_text("{}\n")
    assert load_policy(str(empty)).options.release.version == parse_policy({}).options.release.version


def test_the_shipped_example_policy_loads():
    policy = load_policy(str(EXAMPLE_POLICY))
    assert policy.org.active


def test_the_readme_example_policy_loads():
    readme = (EXAMPLE_POLICY.parents[2] / "README.md").read_text(encoding="utf-8")
    example = readme.split("### Example", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    policy = parse_policy(yaml.safe_load(example))
    assert policy.enforcement.action("DRA101").value == "deny" and policy.enforcement.action("DRA301").value == "dryrun"


def test_the_readme_rollout_policies_load():
    readme = (EXAMPLE_POLICY.parents[2] / "README.md").read_text(encoding="utf-8")
    rollout = readme.split("### Warn-only rollout: the policy", 1)[1].split("\n### ", 1)[0]
    snippets = re.findall(r"`((?:enforcement|severities): \{[^`]*\})`", rollout)
    assert len(snippets) >= 4
    for snippet in snippets:
        parse_policy(yaml.safe_load(snippet))


def test_the_shipped_policy_follows_the_servers_release_and_grants_no_namespace_labels():
    policy = load_policy(str(EXAMPLE_POLICY))
    assert policy.pinned_minor is None and policy.namespace_labels == {}


def test_a_policy_without_kube_version_is_not_pinned_and_reads_its_gates_again_for_another_release():
    policy = parse_policy({"featureGates": {"DRAConsumableCapacity": True}})
    assert policy.pinned_minor is None and policy.options.release.version == f"1.{DEFAULT_MINOR}"
    at_34 = at_release(policy, 34)
    assert at_34.options.release.version == "1.34" and at_34.options.release.overrides == {"DRAConsumableCapacity": True}
    assert parse_policy({"kubeVersion": "1.35"}).pinned_minor == 35
    with pytest.raises(PolicyError, match="featureGates"):   # a gate 1.30 does not have yet
        at_release(policy, 30)


# --- organisation rules -------------------------------------------------------------------------

ORG = OrgPolicy(allowed_classes={"ml": ("gpu.example.com", "*.fpga.example.com"), "*": ("cpu.example.com",)},
                max_devices=4, admin_labels={"dra.example.com/admin": "true"})


def rules_of(obj: dict, namespace: str = "ml", labels: dict | None = None, policy: OrgPolicy = ORG) -> list[tuple]:
    return [(f.rule, f.field) for f in judge_org(obj, namespace, policy, labels)]


def test_allowed_classes_per_namespace_with_patterns():
    good = claim([{"name": "a", "exactly": exactly()}, {"name": "b", "exactly": exactly("x.fpga.example.com")}])
    assert rules_of(good) == []
    assert rules_of(good, namespace="web") == [("DRA950", "spec.devices.requests[0].exactly.deviceClassName"),
                                               ("DRA950", "spec.devices.requests[1].exactly.deviceClassName")]
    unrestricted = OrgPolicy(allowed_classes={"ml": ("gpu.example.com",)})
    assert rules_of(good, namespace="web", policy=unrestricted) == []


def test_flat_requests_of_v1beta1_use_the_users_paths():
    obj = claim([{"name": "a", **exactly("tpu.example.com", 5)}], version="v1beta1")
    assert rules_of(obj) == [("DRA950", "spec.devices.requests[0].deviceClassName"),
                             ("DRA951", "spec.devices.requests")]


def test_templates_and_first_available():
    obj = claim([{"name": "a", "firstAvailable": [{"name": "big", **exactly(count=8)},
                                                  {"name": "small", **exactly("nope", 1)}]}],
                kind="ResourceClaimTemplate")
    assert rules_of(obj) == [("DRA950", "spec.spec.devices.requests[0].firstAvailable[1].deviceClassName"),
                             ("DRA951", "spec.spec.devices.requests")]


@pytest.mark.parametrize("requests, over", [
    ([exactly(count=4)], False),
    ([exactly()], False),                          # no count: the API server's default of 1
    ([exactly(count=2), exactly(count=3)], True),   # 5 in all
    ([exactly(mode="All")], True),                  # unbounded
])
def test_device_count_per_claim(requests, over):
    obj = claim([{"name": f"r{i}", "exactly": r} for i, r in enumerate(requests)])
    assert (("DRA951", "spec.devices.requests") in rules_of(obj)) is over


def test_admin_access_needs_the_namespace_labels():
    obj = claim([{"name": "a", "exactly": exactly(admin=True)}])
    field = "spec.devices.requests[0].exactly.adminAccess"
    assert rules_of(obj, labels={"dra.example.com/admin": "true", "other": "x"}) == []
    assert rules_of(obj, labels={"dra.example.com/admin": "false"}) == [("DRA952", field)]
    assert rules_of(obj, labels=None) == [("DRA953", field)]
    assert judge_org(obj, "ml", ORG, None)[0].severity is Severity.WARNING


def test_other_kinds_and_odd_shapes_are_ignored():
    assert rules_of({"kind": "DeviceClass", "spec": {}}) == []
    assert rules_of({"kind": "ResourceClaim", "spec": "x"}) == []
    assert rules_of(claim(["x", {"name": "y"}])) == []


def test_org_rules_are_the_catalogs_best_practice_rules_reserved_for_policy():
    from dralint.catalog import load_catalog

    catalog = load_catalog()
    for rule_id in org.RULES:
        assert "DRA950" <= rule_id <= "DRA969"
        assert catalog.get(rule_id).category is Category.BEST_PRACTICE


# --- reloading ----------------------------------------------------------------------------------

def test_reloading_keeps_the_last_good_value(tmp_path):
    path = tmp_path / "value.txt"
    path.write_text("1")
    events: list[tuple] = []

    def load() -> int:
        return int(path.read_text())

    value = Reloading("value", (str(path),), load, interval=0, on_reload=lambda *e: events.append(e))
    assert value.current() == 1
    path.write_text("22")
    assert value.current() == 22
    path.write_text("not a number")
    assert value.current() == 22 and "invalid literal" in value.error
    assert value.current() == 22 and len(events) == 2   # a broken file is tried once, not on every request
    path.write_text("333")
    assert value.current() == 333 and value.error == ""
    assert [e[1] for e in events] == [True, False, True]


def test_reloading_waits_for_its_interval(tmp_path):
    path = tmp_path / "value.txt"
    path.write_text("1")
    value = Reloading("value", (str(path),), lambda: path.read_text(), interval=3600)
    path.write_text("2")
    assert value.current() == "1"


def test_a_folder_changes_when_a_file_in_it_does(tmp_path):
    (tmp_path / "a.yaml").write_text("1")
    value = Reloading("folder", (str(tmp_path),), lambda: sorted(p.read_text() for p in tmp_path.iterdir()),
                      interval=0)
    (tmp_path / "a.yaml").write_text("2")
    assert value.current() == ["2"]
    os.remove(tmp_path / "a.yaml")
    assert value.current() == []


def test_first_load_failure_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        Reloading("x", (str(tmp_path / "no"),), lambda: (tmp_path / "no").read_text())


def test_check_policy_command(tmp_path, capsys):
    from dralint_webhook.cli import main

    assert main(["check-policy", str(EXAMPLE_POLICY)]) == 0
    assert "ok (Kubernetes: the API server's release;" in capsys.readouterr().out
    pinned = tmp_path / "pinned.yaml"
    pinned.write_text('kubeVersion: "1.34"\n')
    assert main(["check-policy", str(pinned)]) == 0
    assert "ok (Kubernetes 1.34, pinned by kubeVersion)" in capsys.readouterr().out
    bad = tmp_path / "bad.yaml"
    bad.write_text("feasibility: maybe\n")
    assert main(["check-policy", str(bad)]) == 2
    assert "feasibility" in capsys.readouterr().err


def test_check_policy_accepts_a_token_for_every_rule_and_refuses_what_contradicts_it(tmp_path, capsys):
    from dralint_webhook.cli import main

    policy = tmp_path / "policy.yaml"
    policy.write_text("severities: {DRA: warning}\n")
    assert main(["check-policy", str(policy)]) == 0
    policy.write_text("severities: {DRA: warning}\nenforcement: {DRA7: deny}\n")
    assert main(["check-policy", str(policy)]) == 2
    assert "enforcement.DRA7: every rule it names reports warnings or info (severities.DRA)" in capsys.readouterr().err
