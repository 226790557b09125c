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
from dralint.checks import org
from dralint.config import Config, options as config_options
from dralint.options import Options
from dralint.findings import Finding, Severity
from dralint.kube.releases import KUBE_VERSION, Release, ReleaseError
from dralint.org_policy import OrgPolicy
from dralint.rule_filter import UsageError, resolve

from .enforcement import INTERNAL_ERROR_RULE, Action, Enforcement, cluster_rules

_KEYS = {"kubeVersion", "featureGates", "strictFields", "ignore", "severities", "enforcement", "exemptNamespaces",
         "onInternalError", "feasibility", "namespaceLabels", "organization", "annotationSuppressions"}
_ORG_KEYS = {"allowedDeviceClasses", "maxDevicesPerClaim", "adminAccessNamespaceLabels"}
ON_INTERNAL_ERROR = ("allow", "deny")
# The allocator's time budget per review: well inside the webhook's 5 s timeout, so that an
# undecidable claim gets "undecided" from dralint rather than a timed-out call from the API server.
FEASIBILITY_SECONDS = 1.0
# The cluster-state rules' enforcement when no `enforcement` entry names them, or off: not judged at all.
FEASIBILITY = ("deny", "warn", "dryrun", "off")
ENFORCEMENT = tuple(a.value for a in Action)
# Whether an object's own ``dralint.io/ignore`` annotation hides findings: never for rules the policy
# names (its severities and enforcement, and the cluster-state rules feasibility denies), for every
# rule, or not at all.
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
    enforcement: Enforcement = field(default_factory=lambda: Enforcement.build(Action.WARN, ()))
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()        # things worth logging once, e.g. gates that are not DRA gates
    digest: str = ""                   # sha256 of the file it was read from: which edit is in force
    # The release the file pins (``kubeVersion``), None when it leaves it to the API server's; the options
    # judge with the pin, else with dralint's default until the server's release is known (at_release).
    pinned_minor: int | None = None
    feature_gates: Mapping[str, bool] = field(default_factory=dict)  # as written: read again for another release


def at_release(policy: Policy, minor: int) -> Policy:
    """``policy`` judging as Kubernetes ``1.<minor>`` (its feature gates read for that release).

    Raises :class:`PolicyError` when its gates do not fit that release (a gate turned on that it
    does not have)."""
    if policy.options.release.minor == minor:
        return policy
    try:
        release, _ = Release(minor).with_gates(policy.feature_gates)
    except ReleaseError as exc:
        raise PolicyError(_policy_error(exc)) from None
    return replace(policy, options=replace(policy.options, release=release))


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
    gates_raw = _mapping(doc.get("featureGates", {}), "featureGates")
    for name, value in gates_raw.items():
        if not isinstance(value, bool):
            raise PolicyError(f"featureGates.{name}: expected true or false")
    version = str(doc["kubeVersion"]) if "kubeVersion" in doc else None
    settings = Config(kube_version=version, feature_gates=gates_raw)
    try:
        options, notes = config_options(settings)
    except ReleaseError as exc:
        raise PolicyError(_policy_error(exc)) from None

    ignore = [_named(token, "ignore") for token in _strings(doc.get("ignore", []), "ignore")]
    severities: list[tuple[_Named, Severity]] = []
    for token, level in _mapping(doc.get("severities", {}), "severities").items():
        if level not in [s.value for s in Severity]:
            raise PolicyError(f"severities.{token}: {level!r} is not error, warning or info")
        severities.append((_named(str(token), f"severities.{token}"), Severity(level)))

    on_error = doc.get("onInternalError", "allow")
    if on_error not in ON_INTERNAL_ERROR:
        raise PolicyError(f"onInternalError: expected one of {', '.join(ON_INTERNAL_ERROR)}")
    feasibility = doc.get("feasibility", "warn")
    if feasibility is False:  # YAML 1.1 reads an unquoted `off` as false
        feasibility = "off"
    if feasibility not in FEASIBILITY:
        raise PolicyError(f"feasibility: expected one of {', '.join(FEASIBILITY)}")
    rules = _Rules(ignore, severities, feasibility)
    enforcement: list[tuple[_Named, Action]] = []
    for token, value in _mapping(doc.get("enforcement", {}), "enforcement").items():
        if value not in ENFORCEMENT:
            raise PolicyError(f"enforcement.{token}: expected one of {', '.join(ENFORCEMENT)}")
        named = _named(str(token), f"enforcement.{token}")
        rules.check_enforced(named)
        enforcement.append((named, Action(value)))
    strict = doc.get("strictFields", True)
    if not isinstance(strict, bool):
        raise PolicyError("strictFields: expected true or false")
    annotations = doc.get("annotationSuppressions", "exceptPolicyRules")
    if annotations not in ANNOTATION_SUPPRESSIONS:
        raise PolicyError(f"annotationSuppressions: expected one of {', '.join(ANNOTATION_SUPPRESSIONS)}")
    protected: frozenset[str] = frozenset()
    if annotations == "exceptPolicyRules":
        protected = frozenset().union(*(n.engine for n, _ in severities), *(n.engine for n, _ in enforcement))
        if feasibility in ("deny", "dryrun"):
            protected |= {rule for rule in cluster_rules() if rules.severity(rule) is Severity.ERROR}

    return Policy(
        options=replace(options, strict=strict, ignore=tuple(n.token for n in ignore if n.engine),
                        severities={n.token: level.value for n, level in severities if n.engine},
                        max_seconds=FEASIBILITY_SECONDS, suppressions=annotations != "none", protected=protected,
                        policy_rules={rule: load_catalog().get(rule).name for rule in org.RULES}),
        org=_org(doc.get("organization", {})),
        org_filter=OrgRuleFilter(frozenset().union(*(n.org for n in ignore)),
                                 {rule: level for n, level in severities for rule in n.org}),
        exempt_namespaces=frozenset(_strings(doc.get("exemptNamespaces", []), "exemptNamespaces")),
        on_internal_error=on_error,
        feasibility=feasibility,
        enforcement=Enforcement.build(None if feasibility == "off" else Action(feasibility),
                                      [(n.ids, action) for n, action in enforcement]),
        namespace_labels={ns: _labels(v, f"namespaceLabels.{ns}")
                          for ns, v in _mapping(doc.get("namespaceLabels", {}), "namespaceLabels").items()},
        notes=tuple(notes),
        pinned_minor=options.release.minor if version is not None else None,
        feature_gates=dict(gates_raw),
    )


def _policy_error(exc: ReleaseError) -> str:
    """The message of a bad release setting, named as the policy file spells it."""
    return exc.named("kubeVersion" if exc.setting == KUBE_VERSION else "featureGates")


@dataclass(frozen=True)
class _Named:
    """The rules a policy token names: the catalog's (by the CLI's own resolution) and the organisation's."""

    token: str
    engine: frozenset[str]
    org: frozenset[str]

    @property
    def ids(self) -> frozenset[str]:
        return self.engine | self.org


def _named(token: str, where: str) -> _Named:
    """What ``token`` (an id, a name or an id prefix; ``DRA``: every rule) names, in the engine and among the
    organisation rules (by the CLI's own resolution); a token naming neither is an error here, at load time,
    rather than a failing request later.
    """
    try:
        named = resolve(load_catalog(), token, where)
    except UsageError as exc:
        raise PolicyError(str(exc)) from None
    return _Named(token, named - frozenset(org.RULES), named & frozenset(org.RULES))


@dataclass(frozen=True)
class _Rules:
    """What ``ignore``, ``severities`` and ``feasibility`` make of each rule, to refuse the enforcement entries
    they leave without effect."""

    ignore: list[_Named]
    severities: list[tuple[_Named, Severity]]
    feasibility: str

    def severity(self, rule: str) -> Severity:
        """The severity ``rule`` reports at: the last severities entry naming it, else its default."""
        for named, level in reversed(self.severities):
            if rule in named.ids:
                return level
        return load_catalog().get(rule).severity

    def check_enforced(self, named: _Named) -> None:
        """Refuse an enforcement entry that can never act: every rule it names is never judged or never an error."""
        where = f"enforcement.{named.token}"
        if named.ids <= {INTERNAL_ERROR_RULE}:
            raise PolicyError(f"{where}: internal errors ({INTERNAL_ERROR_RULE}) follow onInternalError, not "
                              "enforcement")
        ignored = frozenset().union(*(n.ids for n in self.ignore))
        judged = named.ids - ignored - {INTERNAL_ERROR_RULE}
        if self.feasibility == "off":
            judged -= cluster_rules()
        if not judged:
            why = "they are all in `ignore`" if named.ids - {INTERNAL_ERROR_RULE} <= ignored else \
                "they are cluster-state rules, which `feasibility: off` does not judge" if not ignored & named.ids \
                else "`ignore` drops some, and `feasibility: off` does not judge the others (cluster-state rules)"
            raise PolicyError(f"{where}: none of the rules it names is judged ({why}); remove the entry or what "
                              "switches them off")
        if all(self.severity(rule) is not Severity.ERROR for rule in judged):
            set_by = [f"severities.{n.token}" for n, level in self.severities
                      if level is not Severity.ERROR and n.ids & judged]
            source = ", ".join(set_by) if set_by else "their default severity"
            raise PolicyError(f"{where}: every rule it names reports warnings or info ({source}), which never deny "
                              f"(enforcement acts on errors): raise them with `severities: {{{named.token}: error}}` "
                              "or remove the entry")


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

