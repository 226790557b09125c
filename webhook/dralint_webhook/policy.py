"""The webhook's policy file: what to judge with, beyond what the API server checks.

The file is YAML (mounted from a ConfigMap; format in webhook/README.md). :func:`parse_policy`
turns it into a :class:`Policy` or raises :class:`PolicyError` naming the bad key, so that a
broken edit of the ConfigMap is refused and the last good policy stays in force.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from dralint.findings import Finding, Severity
from dralint.kube.releases import Release, ReleaseError
from dralint.options import Options
from dralint.org_policy import OrgPolicy
from dralint.policy_file import (Named, PolicyError, PolicySettings, mapping, named, parse_settings, read_policy_file,
                                 release_error)

from .enforcement import INTERNAL_ERROR_RULE, Action, Enforcement, cluster_rules

ON_INTERNAL_ERROR = ("allow", "deny")
# The allocator's time budget per review: well inside the webhook's 5 s timeout, so that an
# undecidable claim gets "undecided" from dralint rather than a timed-out call from the API server.
FEASIBILITY_SECONDS = 1.0
ENFORCEMENT = tuple(a.value for a in Action)


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
        raise PolicyError(release_error(exc)) from None
    return replace(policy, options=replace(policy.options, release=release))


def load_policy(path: str) -> Policy:
    """Read and parse the policy file at ``path``."""
    raw, data = read_policy_file(path)
    return replace(parse_policy(raw), digest=hashlib.sha256(data).hexdigest())


def parse_policy(raw: Any) -> Policy:
    """A :class:`Policy` from the parsed YAML; raises :class:`PolicyError`.

    The judging keys are read by the library (:func:`dralint.policy_file.parse_settings`, which
    ``dralint audit`` shares); ``enforcement`` and ``onInternalError`` here."""
    settings = parse_settings(raw)
    doc = mapping(raw, "the policy")
    on_error = doc.get("onInternalError", "allow")
    if on_error not in ON_INTERNAL_ERROR:
        raise PolicyError(f"onInternalError: expected one of {', '.join(ON_INTERNAL_ERROR)}")
    rules = _Rules(settings)
    enforcement: list[tuple[Named, Action]] = []
    for token, value in mapping(doc.get("enforcement", {}), "enforcement").items():
        if value not in ENFORCEMENT:
            raise PolicyError(f"enforcement.{token}: expected one of {', '.join(ENFORCEMENT)}")
        entry = named(str(token), f"enforcement.{token}")
        rules.check_enforced(entry)
        enforcement.append((entry, Action(value)))
    protected = settings.options.protected
    if settings.annotations == "exceptPolicyRules":
        protected = protected.union(*(n.engine for n, _ in enforcement))
    feasibility = settings.feasibility
    return Policy(
        options=replace(settings.options, max_seconds=FEASIBILITY_SECONDS, protected=protected),
        org=settings.org,
        org_filter=OrgRuleFilter(settings.org_ignored, settings.org_severities),
        exempt_namespaces=settings.exempt_namespaces,
        on_internal_error=on_error,
        feasibility=feasibility,
        enforcement=Enforcement.build(None if feasibility == "off" else Action(feasibility),
                                      [(n.ids, action) for n, action in enforcement]),
        namespace_labels=settings.namespace_labels,
        notes=settings.notes,
        pinned_minor=settings.pinned_minor,
        feature_gates=settings.feature_gates,
    )


@dataclass(frozen=True)
class _Rules:
    """What ``ignore``, ``severities`` and ``feasibility`` make of each rule, to refuse the enforcement entries
    they leave without effect."""

    settings: PolicySettings

    def severity(self, rule: str) -> Severity:
        return self.settings.severity(rule)

    def check_enforced(self, named: Named) -> None:
        """Refuse an enforcement entry that can never act: every rule it names is never judged or never an error."""
        where = f"enforcement.{named.token}"
        if named.ids <= {INTERNAL_ERROR_RULE}:
            raise PolicyError(f"{where}: internal errors ({INTERNAL_ERROR_RULE}) follow onInternalError, not "
                              "enforcement")
        ignored = frozenset().union(*(n.ids for n in self.settings.ignore))
        judged = named.ids - ignored - {INTERNAL_ERROR_RULE}
        if self.settings.feasibility == "off":
            judged -= cluster_rules()
        if not judged:
            why = "they are all in `ignore`" if named.ids - {INTERNAL_ERROR_RULE} <= ignored else \
                "they are cluster-state rules, which `feasibility: off` does not judge" if not ignored & named.ids \
                else "`ignore` drops some, and `feasibility: off` does not judge the others (cluster-state rules)"
            raise PolicyError(f"{where}: none of the rules it names is judged ({why}); remove the entry or what "
                              "switches them off")
        if all(self.severity(rule) is not Severity.ERROR for rule in judged):
            set_by = [f"severities.{n.token}" for n, level in self.settings.severities
                      if level is not Severity.ERROR and n.ids & judged]
            source = ", ".join(set_by) if set_by else "their default severity"
            raise PolicyError(f"{where}: every rule it names reports warnings or info ({source}), which never deny "
                              f"(enforcement acts on errors): raise them with `severities: {{{named.token}: error}}` "
                              "or remove the entry")


def _with_severity(f: Finding, level: Severity) -> Finding:
    return replace(f, severity=level)
