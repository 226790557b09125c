"""Each stored object judged as the webhook would judge its creation now.

The webhook's call (webhook/dralint_webhook/judge.py): :func:`dralint.engine.review` of a CREATE
against the cluster's index, with the organisation's rules, the policy's rules and severities, its
exempt namespaces and its ``feasibility: off``. What differs is what an audit knows better than an
admission: the object is stored, so

* claims and templates are judged ``as_stored`` (a field whose feature gate is off is kept and
  makes allocation fail, DRA704, instead of being dropped as a create would drop it);
* a claim already allocated, or a Pod already bound to a node, has had the scheduler's answer:
  feasibility (DRA7xx) is not asked again (the claim's own devices would count as taken).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..checks import org
from ..engine import review
from ..findings import Finding
from ..options import Options
from ..policy_file import PolicySettings, cluster_rules
from .listing import AuditState, StoredObject

if TYPE_CHECKING:
    from ..feasibility import Fleet

# Left out of an audit's findings: DRA217 is settled by the API server before any webhook is called
# (it refuses adminAccess in a namespace without the admin-access label itself; the webhook leaves it
# out too), and DRA265 (a status in a manifest is ignored on create) is about manifests: a stored
# claim's status is the scheduler's, not its author's.
LEFT_OUT = frozenset({"DRA217", "DRA265"})
FEASIBILITY_KINDS = frozenset({"ResourceClaim", "ResourceClaimTemplate", "Pod"})
# How messages name where the objects judged against come from.
CONTEXT = "the cluster"


@dataclass(frozen=True)
class Verdict:
    """One audited object and what the webhook would say of it now."""

    obj: StoredObject
    findings: tuple[Finding, ...] = ()
    exempt: bool = False     # in a namespace the policy exempts: the webhook admits it unjudged


def audit_options(base: Options, settings: PolicySettings | None, state: AuditState) -> Options:
    """The engine options of the audit: ``base`` (its release) with the policy's rules, severities and
    organisation rules, stored objects' semantics, and without the cluster-state rules when a
    resource they look objects up in could not be listed."""
    options = replace(base, as_stored=True, context=CONTEXT)
    if settings is not None:
        # The engine judges the organisation rules itself here (Options.org_policy), so the policy's
        # ignore and severities name them too (the webhook applies those to its own org findings).
        options = replace(settings.options, release=base.release, as_stored=True, context=CONTEXT,
                          max_seconds=base.max_seconds,
                          ignore=tuple(n.token for n in settings.ignore),
                          severities={n.token: level.value for n, level in settings.severities},
                          org_policy=replace(settings.org, namespace_labels=settings.namespace_labels)
                          if settings.org.active else None)
    if state.missing_references:
        options = replace(options, ignore=options.ignore + tuple(sorted(cluster_rules())))
    return options


def settled(obj: StoredObject) -> bool:
    """Whether the scheduler has answered for ``obj``: a claim allocated, a Pod bound to a node."""
    value: Any = obj.value
    if obj.kind == "ResourceClaim":
        status = value.get("status")
        return isinstance(status, dict) and bool(status.get("allocation"))
    if obj.kind == "Pod":
        spec = value.get("spec")
        return isinstance(spec, dict) and bool(spec.get("nodeName"))
    return False


def judge(state: AuditState, options: Options, settings: PolicySettings | None) -> list[Verdict]:
    """A :class:`Verdict` for each audited object of ``state``, in listing order."""
    feasibility = settings is None or settings.feasibility != "off"
    cluster = state.index if feasibility else None   # the webhook's `feasibility: off` judges without state
    fleet = _fleet(state, options) if cluster is not None else None
    exempt = settings.exempt_namespaces if settings is not None else frozenset()
    # The organisation rules are judged apart, as the webhook judges them: their errors must not keep
    # the allocator from judging the claim (the engine leaves out objects with errors).
    engine = replace(options, org_policy=None)
    no_feasibility = replace(engine, ignore=engine.ignore + ("DRA7",))
    organisation = replace(options, select=org.RULES) if options.org_policy is not None else None
    verdicts = []
    for obj in state.audited:
        if obj.namespace and obj.namespace in exempt:
            verdicts.append(Verdict(obj, exempt=True))
            continue
        findings = review(obj.value, None, "CREATE", "", no_feasibility if settled(obj) else engine, cluster=cluster,
                          name=obj.source, fleet=fleet if obj.kind in FEASIBILITY_KINDS else None)
        if organisation is not None and obj.kind in org.KINDS:
            findings += review(obj.value, None, "CREATE", "", organisation, cluster=state.index, name=obj.source)
        verdicts.append(Verdict(obj, tuple(f for f in findings if f.rule not in LEFT_OUT)))
    return verdicts


def _fleet(state: AuditState, options: Options) -> Fleet | None:
    """The allocator's view of the cluster, built once for every claim and Pod judged (as the webhook
    keeps one); None when no object needs it."""
    if not any(obj.kind in FEASIBILITY_KINDS and not settled(obj) for obj in state.audited):
        return None
    from ..feasibility import Fleet   # heavy (CEL, numpy): only when a claim is judged

    return Fleet.build(state.index, options.release, nodes_listed="nodes" in state.snapshot.listings)
