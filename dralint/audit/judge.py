"""Each stored object judged as the webhook would judge its creation now.

The webhook's call (webhook/dralint_webhook/judge.py): :func:`dralint.engine.review` of a CREATE
against the cluster's index, with the organisation's rules, the policy's rules and severities, its
exempt namespaces and its ``feasibility: off``. A review per object costs a cluster of thousands of
objects tens of seconds, so the objects are judged in a few engine runs laid over the same index
(:func:`dralint.engine.lint_files` with the cluster as surroundings), grouped so that each finds
what its own review would: see :func:`judge`. What differs from an admission is what an audit knows
better: the object is stored, so

* claims and templates are judged ``as_stored`` (a field whose feature gate is off is kept and
  makes allocation fail, DRA704, instead of being dropped as a create would drop it);
* a claim already allocated, or a Pod already bound to a node, has had the scheduler's answer:
  feasibility (DRA7xx) is not asked again (the claim's own devices would count as taken).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..checks import org
from ..engine import Surroundings, cluster_object, lint_files, review
from ..findings import Finding
from ..gating import apply_gates
from ..index import Index
from ..kube.releases import Release
from ..options import Options
from ..policy_file import PolicySettings, cluster_rules
from ..source import SourceFile, document_from_value
from .listing import AuditState, StoredObject

if TYPE_CHECKING:
    from ..feasibility import Fleet

# Left out of an audit's findings: DRA217 is settled by the API server before any webhook is called
# (it refuses adminAccess in a namespace without the admin-access label itself; the webhook leaves it
# out too), and DRA265 (a status in a manifest is ignored on create) is about manifests: a stored
# claim's status is the scheduler's, not its author's.
LEFT_OUT = frozenset({"DRA217", "DRA265"})
FEASIBILITY_KINDS = frozenset({"ResourceClaim", "ResourceClaimTemplate", "Pod"})
_ALLOCATABLE = frozenset({"ResourceClaim", "ResourceClaimTemplate"})
# How messages name where the objects judged against come from.
CONTEXT = "the cluster"


@dataclass(frozen=True)
class Verdict:
    """One audited object and what the webhook would say of it now."""

    obj: StoredObject
    findings: tuple[Finding, ...] = ()
    exempt: bool = False     # in a namespace the policy exempts: the webhook admits it unjudged


def audit_options(base: Options, settings: PolicySettings | None, state: AuditState) -> Options:
    """The engine options of the audit: ``base`` (its release, its processes) with the policy's rules, severities and
    organisation rules, stored objects' semantics, and without the cluster-state rules when a
    resource they look objects up in could not be listed."""
    options = replace(base, as_stored=True, context=CONTEXT)
    if settings is not None:
        # The engine judges the organisation rules itself here (Options.org_policy), so the policy's
        # ignore and severities name them too (the webhook applies those to its own org findings).
        options = replace(settings.options, release=base.release, as_stored=True, context=CONTEXT,
                          max_seconds=base.max_seconds, jobs=base.jobs,
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
    """A :class:`Verdict` for each audited object of ``state``, in listing order.

    The findings are those of one webhook review per object, worked out in a few engine runs over
    many objects at once (see :func:`_together`); an object with a field its release's gates drop,
    and every object when the policy turns feasibility off, is reviewed on its own."""
    feasibility = settings is None or settings.feasibility != "off"
    cluster = state.index if feasibility else None   # the webhook's `feasibility: off` judges without state
    fleet = _fleet(state, options) if cluster is not None else None
    exempt = settings.exempt_namespaces if settings is not None else frozenset()
    # The organisation rules are judged apart, as the webhook judges them: their errors must not keep
    # the allocator from judging the claim (the engine leaves out objects with errors).
    engine = replace(options, org_policy=None)
    no_feasibility = replace(engine, ignore=engine.ignore + ("DRA7",))
    organisation = replace(options, select=org.RULES) if options.org_policy is not None else None
    judged = [obj for obj in state.audited if not (obj.namespace and obj.namespace in exempt)]
    judging = {id(obj) for obj in judged}
    found: dict[str, list[Finding]] = {obj.source: [] for obj in judged}
    # Without the cluster's state a review judges its object alone; a run of many would find the
    # others' objects instead.
    alone = judged if cluster is None else [obj for obj in judged if _gated(obj, state.index, options.release)]
    for obj in alone:
        found[obj.source] += review(obj.value, None, "CREATE", "", no_feasibility if settled(obj) else engine,
                                    cluster=cluster, name=obj.source,
                                    fleet=fleet if obj.kind in FEASIBILITY_KINDS else None)
        if organisation is not None and obj.kind in org.KINDS:
            found[obj.source] += review(obj.value, None, "CREATE", "", organisation, cluster=state.index,
                                        name=obj.source)
    apart = {id(obj) for obj in alone}
    rest = [obj for obj in judged if id(obj) not in apart]
    if cluster is not None:
        pending = [obj for obj in rest if not settled(obj)]
        # As in the reviews: the allocator's view for claims and Pods only, and Pods apart from
        # claims (in one run a Pod's claim would be judged as part of the Pod, not on its own; in
        # its review the Pod's claims are the cluster's).
        for objs, run_options, view in (([o for o in pending if o.kind not in FEASIBILITY_KINDS], engine, None),
                                        ([o for o in pending if o.kind in _ALLOCATABLE], engine, fleet),
                                        ([o for o in pending if o.kind == "Pod"], engine, fleet),
                                        ([o for o in rest if settled(o)], no_feasibility, None)):
            _add(found, _together(objs, run_options, cluster, view))
    if organisation is not None:
        _add(found, _together([o for o in rest if o.kind in org.KINDS], organisation, state.index, None))
    return [Verdict(obj, tuple(sorted((f for f in found[obj.source] if f.rule not in LEFT_OUT),
                                      key=Finding.sort_key)))
            if id(obj) in judging else Verdict(obj, exempt=True) for obj in state.audited]


def _together(objs: list[StoredObject], options: Options, cluster: Index, fleet: Fleet | None) -> list[Finding]:
    """The findings of ``objs`` judged in one engine run laid over ``cluster``: each object takes the
    place of its stored self there (judged against the others, not against itself twice), as a
    review lays its one object over the cluster; none of them is a duplicate (DRA605) of another,
    the cluster holding one object per name."""
    if not objs:
        return []
    files = [SourceFile(obj.source, [document_from_value(dict(obj.value), obj.source)], []) for obj in objs]
    run = lint_files(files, options, surroundings=Surroundings(cluster, cluster_given=True), fleet=fleet)
    return run.findings


def _add(found: dict[str, list[Finding]], findings: list[Finding]) -> None:
    """Each finding to the object it names by its file (every document of a run is one object's)."""
    for finding in findings:
        found.setdefault(finding.file, []).append(finding)


def _gated(obj: StoredObject, index: Index, release: Release) -> bool:
    """Whether ``obj`` has a field the gates of ``release`` drop on create. Its review sees it without
    the field and every other object as stored; a run of many would show the others without theirs."""
    canonical = next(iter(index.same.get((obj.kind, obj.namespace, obj.name), ())), None)
    if canonical is None or canonical.manifest.document.file != obj.source:
        canonical = cluster_object(obj.value, obj.source)
    return canonical is not None and bool(apply_gates(canonical, None, release)[1])


def _fleet(state: AuditState, options: Options) -> Fleet | None:
    """The allocator's view of the cluster, built once for every claim and Pod judged (as the webhook
    keeps one); None when no object needs it."""
    if not any(obj.kind in FEASIBILITY_KINDS and not settled(obj) for obj in state.audited):
        return None
    from ..feasibility import Fleet   # heavy (CEL, numpy): only when a claim is judged

    return Fleet.build(state.index, options.release, nodes_listed="nodes" in state.snapshot.listings)
