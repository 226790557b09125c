"""The webhook's policy file: what to judge with, beyond what the API server checks.

The file is YAML (mounted from a ConfigMap; format in webhook/README.md). :func:`parse_policy`
turns it into a :class:`Policy` or raises :class:`PolicyError` naming the bad key, so that a
broken edit of the ConfigMap is refused and the last good policy stays in force.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import yaml

from dralint.catalog import load_catalog
from dralint.engine import Options
from dralint.findings import Finding, Severity
from dralint.releases import DEFAULT_MINOR, GateError, parse_gates, parse_version
from dralint.rule_filter import RuleFilter, UsageError, resolve

from . import org_rules
from .org_rules import OrgPolicy

_KEYS = {"kubeVersion", "featureGates", "strictFields", "ignore", "severities", "exemptNamespaces",
         "onInternalError", "feasibility", "namespaceLabels", "organization", "annotationSuppressions"}
_ORG_KEYS = {"allowedDeviceClasses", "maxDevicesPerClaim", "adminAccessNamespaceLabels"}
ON_INTERNAL_ERROR = ("allow", "deny")
# The allocator's time budget per review: well inside the webhook's 5 s timeout, so that an
# undecidable claim gets "undecided" from dralint rather than a timed-out call from the API server.
FEASIBILITY_SECONDS = 1.0
FEASIBILITY = ("deny", "warn", "off")
# Whether an object's own ``dralint.io/ignore`` annotation hides findings: never for rules the policy
# names (its severities, and feasibility when it denies), for every rule, or not at all.
ANNOTATION_SUPPRESSIONS = ("exceptPolicyRules", "all", "none")


class PolicyError(ValueError):
    """A policy file that cannot be used; the message names the key."""


@dataclass(frozen=True)
class OrgRuleFilter:
    """The policy's ignore and severities, as they apply to the organisation rules."""

    ignored: frozenset[str] = frozenset()
    severities: Mapping[str, Severity] = field(default_factory=dict)

    def apply(self, findings: list[Finding]) -> list[Finding]:
        """Drop ignored organisation findings and set their configured severity."""
        out = []
        for f in findings:
            if f.rule in self.ignored:
                continue
            level = self.severities.get(f.rule)
            out.append(f if level is None else _with_severity(f, level))
        return out


@dataclass(frozen=True)
class Policy:
    """Everything the webhook judges with; one immutable value per version of the file."""

    options: Options = field(default_factory=Options)
    org: OrgPolicy = field(default_factory=lambda: OrgPolicy(allowed_classes={}))
    org_filter: OrgRuleFilter = field(default_factory=OrgRuleFilter)
    exempt_namespaces: frozenset[str] = frozenset()
    on_internal_error: str = "allow"
    feasibility: str = "warn"
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()        # things worth logging once, e.g. gates that are not DRA gates
    digest: str = ""                   # sha256 of the file it was read from: which edit is in force
    # The release the file pins (``kubeVersion``), None when it leaves it to the API server's; the options
    # judge with the pin, else with dralint's default until the server's release is known (at_release).
    pinned_minor: int | None = None
    gates_text: str = ""               # featureGates as "Name=true,...": read again for another release


def at_release(policy: Policy, minor: int) -> Policy:
    """``policy`` judging as Kubernetes ``1.<minor>`` (its feature gates read for that release).

    Raises :class:`PolicyError` when its gates do not fit that release (a gate turned on that it
    does not have)."""
    if policy.options.kube_version == f"1.{minor}":
        return policy
    try:
        gates, _ = parse_gates(policy.gates_text, minor)
    except GateError as exc:
        raise PolicyError(str(exc).replace("--feature-gates", "featureGates")) from None
    return replace(policy, options=replace(policy.options, kube_version=f"1.{minor}", feature_gates=gates))


def load_policy(path: str) -> Policy:
    """Read and parse the policy file at ``path``."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        raw = yaml.safe_load(data.decode("utf-8"))
    except OSError as exc:
        raise PolicyError(f"cannot read policy file {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise PolicyError(f"policy file {path} is not UTF-8: {exc}") from None
    except yaml.YAMLError as exc:
        raise PolicyError(f"policy file {path} is not valid YAML: {exc}") from None
    if raw is None:
        # An empty file is what a writer leaves between truncating and writing: it must not turn
        # the organisation's policy off. The defaults are one explicit `{}` away.
        raise PolicyError(f"policy file {path} is empty (write {{}} for the defaults)")
    return replace(parse_policy(raw), digest=hashlib.sha256(data).hexdigest())


def parse_policy(raw: Any) -> Policy:
    """A :class:`Policy` from the parsed YAML; raises :class:`PolicyError`."""
    doc = _mapping(raw, "the policy")
    _known(doc, _KEYS, "")
    if isinstance(doc.get("kubeVersion"), float):
        raise PolicyError('kubeVersion: quote the version, e.g. "1.30" (YAML reads 1.30 as the number 1.3)')
    try:
        pinned = parse_version(str(doc["kubeVersion"])) if "kubeVersion" in doc else None
    except ValueError as exc:
        raise PolicyError(f"kubeVersion: {exc}") from None
    minor = DEFAULT_MINOR if pinned is None else pinned
    gates_raw = _mapping(doc.get("featureGates", {}), "featureGates")
    for name, value in gates_raw.items():
        if not isinstance(value, bool):
            raise PolicyError(f"featureGates.{name}: expected true or false")
    gates_text = ",".join(f"{k}={str(v).lower()}" for k, v in gates_raw.items())
    try:
        gates, notes = parse_gates(gates_text, minor)
    except GateError as exc:
        raise PolicyError(str(exc).replace("--feature-gates", "featureGates")) from None

    ignore = _strings(doc.get("ignore", []), "ignore")
    severities_raw = _mapping(doc.get("severities", {}), "severities")
    engine_ignore, org_ignore = _split_tokens(ignore, "ignore")
    engine_sev: dict[str, str] = {}
    org_sev: dict[str, Severity] = {}
    for token, level in severities_raw.items():
        try:
            severity = Severity(level)
        except ValueError:
            raise PolicyError(f"severities.{token}: {level!r} is not error, warning or info") from None
        engine_tokens, org_ids = _split_tokens([str(token)], f"severities.{token}")
        engine_sev.update({t: severity.value for t in engine_tokens})
        org_sev.update({i: severity for i in org_ids})

    on_error = doc.get("onInternalError", "allow")
    if on_error not in ON_INTERNAL_ERROR:
        raise PolicyError(f"onInternalError: expected one of {', '.join(ON_INTERNAL_ERROR)}")
    feasibility = doc.get("feasibility", "warn")
    if feasibility is False:  # YAML 1.1 reads an unquoted `off` as false
        feasibility = "off"
    if feasibility not in FEASIBILITY:
        raise PolicyError(f"feasibility: expected one of {', '.join(FEASIBILITY)}")
    strict = doc.get("strictFields", True)
    if not isinstance(strict, bool):
        raise PolicyError("strictFields: expected true or false")
    annotations = doc.get("annotationSuppressions", "exceptPolicyRules")
    if annotations not in ANNOTATION_SUPPRESSIONS:
        raise PolicyError(f"annotationSuppressions: expected one of {', '.join(ANNOTATION_SUPPRESSIONS)}")
    protected: frozenset[str] = frozenset()
    if annotations == "exceptPolicyRules":
        catalog = load_catalog()
        protected = frozenset(i for token in engine_sev for i in resolve(catalog, token, "severities"))
        if feasibility == "deny":
            protected |= {rule for rule in catalog.rules if rule.startswith("DRA7")}

    return Policy(
        options=Options(kube_version=f"1.{minor}", feature_gates=gates, strict=strict, ignore=tuple(engine_ignore),
                        severities=engine_sev, max_seconds=FEASIBILITY_SECONDS,
                        suppressions=annotations != "none", protected=protected),
        org=_org(doc.get("organization", {})),
        org_filter=OrgRuleFilter(frozenset(org_ignore), org_sev),
        exempt_namespaces=frozenset(_strings(doc.get("exemptNamespaces", []), "exemptNamespaces")),
        on_internal_error=on_error,
        feasibility=feasibility,
        namespace_labels={ns: _labels(v, f"namespaceLabels.{ns}")
                          for ns, v in _mapping(doc.get("namespaceLabels", {}), "namespaceLabels").items()},
        notes=tuple(notes),
        pinned_minor=pinned,
        gates_text=gates_text,
    )


def _org(raw: Any) -> OrgPolicy:
    doc = _mapping(raw, "organization")
    _known(doc, _ORG_KEYS, "organization.")
    classes = {str(ns): tuple(_strings(v, f"organization.allowedDeviceClasses.{ns}"))
               for ns, v in _mapping(doc.get("allowedDeviceClasses", {}), "organization.allowedDeviceClasses").items()}
    # A key written without a value (what a file cut after it leaves) is refused, not read as "no rule".
    maximum = doc.get("maxDevicesPerClaim")
    if "maxDevicesPerClaim" in doc and (not isinstance(maximum, int) or isinstance(maximum, bool) or maximum < 1):
        raise PolicyError("organization.maxDevicesPerClaim: expected a positive integer (leave the key out for no "
                          "limit)")
    admin = doc.get("adminAccessNamespaceLabels")
    admin_labels = _labels(admin, "organization.adminAccessNamespaceLabels") if "adminAccessNamespaceLabels" in doc \
        else None
    if admin_labels == {}:
        raise PolicyError("organization.adminAccessNamespaceLabels: name at least one label")
    return OrgPolicy(allowed_classes=classes, max_devices=maximum, admin_labels=admin_labels)


def _split_tokens(tokens: list[str], where: str) -> tuple[list[str], list[str]]:
    """Engine tokens and organisation rule ids a list of rule tokens names (ids, names or id prefixes).

    A prefix such as ``DRA9`` may name rules of both; a token naming neither is an error here,
    at load time, rather than a failing request later.
    """
    catalog = load_catalog()
    engine: list[str] = []
    org: list[str] = []
    for token in tokens:
        matched = _org_matches(token)
        org.extend(matched)
        try:
            RuleFilter.build(catalog, (), [token], {})
            engine.append(token)
        except UsageError as exc:
            if not matched:
                raise PolicyError(f"{where}: {exc}".replace("--ignore: ", "")) from None
    return engine, org


def _org_matches(token: str) -> list[str]:
    token = token.strip()
    upper = token.upper()
    prefix = upper.startswith("DRA") and len(upper) < 6
    return [r.id for r in org_rules.RULES.values()
            if r.id == upper or r.name == token or (prefix and r.id.startswith(upper))]


def _with_severity(f: Finding, level: Severity) -> Finding:
    return replace(f, severity=level)


def _mapping(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise PolicyError(f"{where}: expected a mapping")
    return value


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PolicyError(f"{where}: expected a list of strings")
    return list(value)


def _labels(value: Any, where: str) -> dict[str, str]:
    labels = _mapping(value, where)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        raise PolicyError(f"{where}: label keys and values must be strings (quote \"true\")")
    return dict(labels)


def _known(doc: Mapping[str, Any], keys: set[str], prefix: str) -> None:
    unknown = sorted(str(k) for k in doc if k not in keys)
    if unknown:
        raise PolicyError(f"{prefix}{unknown[0]}: unknown key (known: {', '.join(sorted(keys))})")

