"""The webhook's policy file, as far as it says how to judge: the release, the rules and their
severities, the organisation's rules, the namespaces left alone.

The file is YAML (format in webhook/README.md). Two faces read it: the webhook, which adds what
only it does with a verdict (``enforcement``, ``onInternalError``: webhook/dralint_webhook/policy.py),
and ``dralint audit --policy``, which judges the objects a cluster stores as the webhook would.
It lives in the library so that the audit never imports the webhook. :func:`parse_settings` raises
:class:`PolicyError` naming the bad key.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import yaml

from .catalog import load_catalog
from .checks import org
from .config import Config, options as config_options
from .findings import Severity
from .kube.releases import KUBE_VERSION, ReleaseError
from .options import Options
from .org_policy import OrgPolicy
from .rule_filter import UsageError, resolve

# The keys this module reads, and those only the webhook reads (its answers, not its judging).
JUDGING_KEYS = frozenset({"kubeVersion", "featureGates", "strictFields", "ignore", "severities", "exemptNamespaces",
                          "feasibility", "namespaceLabels", "organization", "annotationSuppressions"})
WEBHOOK_KEYS = frozenset({"enforcement", "onInternalError"})
_ORG_KEYS = {"allowedDeviceClasses", "maxDevicesPerClaim", "adminAccessNamespaceLabels"}
# The cluster-state rules' enforcement when no `enforcement` entry names them, or off: not judged at all.
FEASIBILITY = ("deny", "warn", "dryrun", "off")
# Whether an object's own ``dralint.io/ignore`` annotation hides findings: never for rules the policy
# names (its severities and enforcement, and the cluster-state rules feasibility denies), for every
# rule, or not at all.
ANNOTATION_SUPPRESSIONS = ("exceptPolicyRules", "all", "none")


class PolicyError(ValueError):
    """A policy file that cannot be used; the message names the key."""


@dataclass(frozen=True)
class Named:
    """The rules a policy token names: the catalog's (by the CLI's own resolution) and the organisation's."""

    token: str
    engine: frozenset[str]
    org: frozenset[str]

    @property
    def ids(self) -> frozenset[str]:
        return self.engine | self.org


def named(token: str, where: str) -> Named:
    """What ``token`` (an id, a name or an id prefix; ``DRA``: every rule) names, in the engine and among the
    organisation rules (by the CLI's own resolution); a token naming neither is an error here, at load time,
    rather than a failing request later.
    """
    try:
        rules = resolve(load_catalog(), token, where)
    except UsageError as exc:
        raise PolicyError(str(exc)) from None
    return Named(token, rules - frozenset(org.RULES), rules & frozenset(org.RULES))


def cluster_rules() -> frozenset[str]:
    """The catalog's cluster-state rules: their findings depend on objects the request's author does not own."""
    return frozenset(rule.id for rule in load_catalog() if rule.cluster_state)


@dataclass(frozen=True)
class PolicySettings:
    """What the policy file says about judging; one immutable value per version of the file."""

    # The release, strictness, the engine rules' ignore and severities, suppressions; the organisation
    # rules are left to the caller (the webhook judges them apart: see ``engine_and_org``).
    options: Options
    org: OrgPolicy
    ignore: tuple[Named, ...] = ()
    severities: tuple[tuple[Named, Severity], ...] = ()
    exempt_namespaces: frozenset[str] = frozenset()
    feasibility: str = "warn"
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    annotations: str = "exceptPolicyRules"
    notes: tuple[str, ...] = ()                  # things worth logging once, e.g. gates that are not DRA gates
    pinned_minor: int | None = None              # the release ``kubeVersion`` pins; None: the API server's
    feature_gates: Mapping[str, bool] = field(default_factory=dict)   # as written

    @property
    def org_ignored(self) -> frozenset[str]:
        """The organisation rules ``ignore`` names."""
        return frozenset().union(*(n.org for n in self.ignore))

    @property
    def org_severities(self) -> dict[str, Severity]:
        """The organisation rules' configured severities (a later entry wins)."""
        return {rule: level for n, level in self.severities for rule in n.org}

    def severity(self, rule: str) -> Severity:
        """The severity ``rule`` reports at: the last severities entry naming it, else its default."""
        for entry, level in reversed(self.severities):
            if rule in entry.ids:
                return level
        return load_catalog().get(rule).severity

    def protected(self) -> frozenset[str]:
        """Engine rules no ``dralint.io/ignore`` annotation hides (``annotationSuppressions``):
        those with a configured severity and, when ``feasibility`` denies, the cluster-state
        rules that report errors. The webhook adds the rules its ``enforcement`` names."""
        if self.annotations != "exceptPolicyRules":
            return frozenset()
        protected = frozenset().union(*(n.engine for n, _ in self.severities))
        if self.feasibility in ("deny", "dryrun"):
            protected |= {rule for rule in cluster_rules() if self.severity(rule) is Severity.ERROR}
        return protected


def read_policy_file(path: str) -> tuple[Any, bytes]:
    """The parsed YAML of the policy file at ``path`` and its bytes; raises :class:`PolicyError`."""
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
    return raw, data


def parse_settings(raw: Any) -> PolicySettings:
    """The judging part of the parsed policy file; raises :class:`PolicyError`. The webhook's own keys
    are known (never refused as unknown) but not read here."""
    doc = mapping(raw, "the policy")
    known(doc, JUDGING_KEYS | WEBHOOK_KEYS, "")
    if isinstance(doc.get("kubeVersion"), float):
        raise PolicyError('kubeVersion: quote the version, e.g. "1.30" (YAML reads 1.30 as the number 1.3)')
    gates_raw = mapping(doc.get("featureGates", {}), "featureGates")
    for name, value in gates_raw.items():
        if not isinstance(value, bool):
            raise PolicyError(f"featureGates.{name}: expected true or false")
    version = str(doc["kubeVersion"]) if "kubeVersion" in doc else None
    try:
        options, notes = config_options(Config(kube_version=version, feature_gates=gates_raw))
    except ReleaseError as exc:
        raise PolicyError(release_error(exc)) from None

    ignore = [named(token, "ignore") for token in strings(doc.get("ignore", []), "ignore")]
    severities: list[tuple[Named, Severity]] = []
    for token, level in mapping(doc.get("severities", {}), "severities").items():
        if level not in [s.value for s in Severity]:
            raise PolicyError(f"severities.{token}: {level!r} is not error, warning or info")
        severities.append((named(str(token), f"severities.{token}"), Severity(level)))
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
    settings = PolicySettings(
        options=replace(options, strict=strict, ignore=tuple(n.token for n in ignore if n.engine),
                        severities={n.token: level.value for n, level in severities if n.engine},
                        suppressions=annotations != "none",
                        policy_rules={rule: load_catalog().get(rule).name for rule in org.RULES}),
        org=parse_org(doc.get("organization", {})),
        ignore=tuple(ignore), severities=tuple(severities),
        exempt_namespaces=frozenset(strings(doc.get("exemptNamespaces", []), "exemptNamespaces")),
        feasibility=feasibility,
        namespace_labels={ns: labels(v, f"namespaceLabels.{ns}")
                          for ns, v in mapping(doc.get("namespaceLabels", {}), "namespaceLabels").items()},
        annotations=annotations, notes=tuple(notes),
        pinned_minor=options.release.minor if version is not None else None, feature_gates=dict(gates_raw))
    return replace(settings, options=replace(settings.options, protected=settings.protected()))


def release_error(exc: ReleaseError) -> str:
    """The message of a bad release setting, named as the policy file spells it."""
    return exc.named("kubeVersion" if exc.setting == KUBE_VERSION else "featureGates")


def parse_org(raw: Any) -> OrgPolicy:
    """The ``organization`` section; raises :class:`PolicyError`."""
    doc = mapping(raw, "organization")
    known(doc, _ORG_KEYS, "organization.")
    classes = {str(ns): tuple(strings(v, f"organization.allowedDeviceClasses.{ns}"))
               for ns, v in mapping(doc.get("allowedDeviceClasses", {}), "organization.allowedDeviceClasses").items()}
    # A key written without a value (what a file cut after it leaves) is refused, not read as "no rule".
    maximum = doc.get("maxDevicesPerClaim")
    if "maxDevicesPerClaim" in doc and (not isinstance(maximum, int) or isinstance(maximum, bool) or maximum < 1):
        raise PolicyError("organization.maxDevicesPerClaim: expected a positive integer (leave the key out for no "
                          "limit)")
    admin = doc.get("adminAccessNamespaceLabels")
    admin_labels = labels(admin, "organization.adminAccessNamespaceLabels") if "adminAccessNamespaceLabels" in doc \
        else None
    if admin_labels == {}:
        raise PolicyError("organization.adminAccessNamespaceLabels: name at least one label")
    return OrgPolicy(allowed_classes=classes, max_devices=maximum, admin_labels=admin_labels)


def mapping(value: Any, where: str) -> dict:
    """``value`` if it is a mapping; raises :class:`PolicyError` naming ``where``."""
    if not isinstance(value, dict):
        raise PolicyError(f"{where}: expected a mapping")
    return value


def strings(value: Any, where: str) -> list[str]:
    """``value`` if it is a list of strings; raises :class:`PolicyError` naming ``where``."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PolicyError(f"{where}: expected a list of strings")
    return list(value)


def labels(value: Any, where: str) -> dict[str, str]:
    """``value`` if it is a mapping of label keys to string values; raises :class:`PolicyError`."""
    found = mapping(value, where)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in found.items()):
        raise PolicyError(f"{where}: label keys and values must be strings (quote \"true\")")
    return dict(found)


def known(doc: Mapping[str, Any], keys: set[str] | frozenset[str], prefix: str) -> None:
    """Refuse the first key of ``doc`` not in ``keys``, naming the known ones."""
    unknown = sorted(str(k) for k in doc if k not in keys)
    if unknown:
        raise PolicyError(f"{prefix}{unknown[0]}: unknown key (known: {', '.join(sorted(keys))})")
