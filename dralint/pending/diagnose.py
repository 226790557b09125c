"""The allocator's verdict on a Pod's claims, against the cluster as it is listed now.

The Pod and its claims that are not allocated yet are handed to the engine as the objects a run
lints, the rest of the cluster as its cluster files (:meth:`ClusterSnapshot.source_files`), with
``as_stored``: the claims are stored ones, judged as written (a gated field the API server kept
makes allocation fail) and as not allocated, which they are not. The engine's feasibility stage
then does what it does for ``dralint --cluster``: the Pod's nodeName, nodeSelector, required node
affinity and tolerations, the devices other claims hold, device taints and DeviceTaintRules,
counters, capacity and constraints; each finding (DRA7xx) is its narrowest explanation.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from ..cluster.state import ClusterSnapshot
from ..engine import lint_files
from ..findings import Finding, Severity
from ..options import Options
from ..source import SourceDocument, SourceFile
from .gather import ClaimUse, PodCase

# The feasibility rules, and the one that says a Pod with nodeName never gets its claims allocated.
JUDGED_RULES = ("DRA7", "DRA249")
_REQUEST = re.compile(r"(?:^|\.)devices\.requests\[(\d+)\]")
# A claim as messages name one (namespace/name): the holders of taken devices.
_CLAIM_NAME = re.compile(r"[a-z0-9][a-z0-9.-]*/[a-z0-9][a-z0-9.-]*")

ALLOCATED = "allocated"            # status.allocation is set
UNALLOCATABLE = "unallocatable"    # the allocator finds no devices for it where the Pod may run
ALLOCATABLE = "allocatable"        # not allocated, but the allocator finds devices for it now
MISSING = "missing"                # the Pod names a claim (or template) the cluster does not hold
NOT_CREATED = "not-created"        # a template's claim the resourceclaim controller has not made yet
UNDECIDED = "undecided"            # the allocator's search ran out of its budget (DRA709)
_UNDECIDED_RULE = "DRA709"


@dataclass(frozen=True)
class Cause:
    """One explanation of the allocator's: the rule, the request it concerns ("" for the Pod's own) and why."""

    rule: str
    request: str
    message: str
    severity: str = "error"
    # The claims the message names as holding devices, each with the consumers it is reserved for.
    held_by: list[tuple[str, list[str]]] = field(default_factory=list)


@dataclass(frozen=True)
class ClaimVerdict:
    """One claim of the Pod and what the allocator says about it."""

    entry: str                 # the Pod's name for it (spec.resourceClaims[].name)
    claim: str                 # namespace/name of the ResourceClaim ("" when not made yet)
    template: str              # the template it comes from ("" when named directly)
    state: str                 # ALLOCATED, UNALLOCATABLE, ALLOCATABLE, UNDECIDED, MISSING or NOT_CREATED
    causes: list[Cause] = field(default_factory=list)
    reserved_for: list[str] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)   # allocated devices, driver/pool/device

    @property
    def blocking(self) -> bool:
        """Whether this claim keeps the Pod from being scheduled."""
        return self.state in (UNALLOCATABLE, MISSING) or any(c.severity == "error" for c in self.causes)


@dataclass(frozen=True)
class Diagnosis:
    """Why one Pod waits, as far as its claims are concerned."""

    case: PodCase
    claims: list[ClaimVerdict]
    pod_causes: list[Cause]    # the Pod's own: no node it may run on, nodeName bypassing the scheduler

    @property
    def blocked(self) -> bool:
        """Whether a claim cannot be allocated (the exit code 1)."""
        return any(c.blocking for c in self.claims) or any(c.severity == "error" for c in self.pod_causes)


def judged_options(options: Options) -> Options:
    """``options`` as why-pending judges with them: the feasibility rules only, the claims as stored."""
    return replace(options, select=JUDGED_RULES, ignore=(), as_stored=True, context="the cluster")


def diagnose(snapshot: ClusterSnapshot, cases: Sequence[PodCase], options: Options) -> list[Diagnosis]:
    """The allocator's verdict on each claim of each of ``cases`` against ``snapshot``, in one engine run
    (each Pod is judged on its own against the cluster, not beside the others). ``options``: the
    release, gates and search budget (see :func:`judged_options`)."""
    files: list[SourceFile] = []
    linted_keys: set[tuple[str, str]] = set()
    for case in cases:
        files.append(_file(f"cluster:pods/{case.namespace}/{case.name}", _pod_as_judged(case)))
        for use in case.claims:
            key = (case.namespace, use.claim_name)
            if use.claim is not None and use.allocation is None and key not in linted_keys:
                linted_keys.add(key)   # a claim two Pods share is judged once
                files.append(_file(f"cluster:resourceclaims/{case.namespace}/{use.claim_name}", use.claim))
            elif use.template_obj is not None and (case.namespace, "template/" + use.template) not in linted_keys:
                linted_keys.add((case.namespace, "template/" + use.template))
                files.append(_file(f"cluster:resourceclaimtemplates/{case.namespace}/{use.template}",
                                   use.template_obj))
    result = lint_files(files, judged_options(options), cluster_files=_cluster_without(snapshot, linted_keys))
    findings = [f for f in result.findings if f.severity is not Severity.INFO]
    holders = _allocated_claims(snapshot)
    out = []
    for case in cases:
        verdicts = [_verdict(case, use, findings, holders) for use in case.claims]
        pod_label = f"Pod {case.namespace}/{case.name}"
        pod_causes = [_cause(f, None, holders) for f in findings
                      if f.object == pod_label and not _points_elsewhere(f)]
        if any(c.rule == _UNDECIDED_RULE for c in pod_causes):   # the search for the Pod's claims together
            verdicts = [replace(v, state=UNDECIDED) if v.state in (ALLOCATABLE, NOT_CREATED) else v for v in verdicts]
        out.append(Diagnosis(case, verdicts, pod_causes))
    return out


def _allocated_claims(snapshot: ClusterSnapshot) -> dict[str, list[str]]:
    """Every allocated claim of the cluster, ``namespace/name`` → the consumers it is reserved for."""
    listing = snapshot.listings.get("resourceclaims")
    out = {}
    for obj in listing.items if listing is not None else []:
        meta, status = _dict(obj.get("metadata")), _dict(obj.get("status"))
        if isinstance(status.get("allocation"), dict):
            key = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
            out[key] = ClaimUse("", str(meta.get("name") or ""), claim=obj).reserved_for
    return out


def _pod_as_judged(case: PodCase) -> dict[str, Any]:
    """The Pod with each template entry naming the claim made from it, as the scheduler sees it."""
    pod = copy.deepcopy(dict(case.pod))
    made = {use.entry: use.claim_name for use in case.claims if use.template and use.claim_name}
    entries = pod.get("spec", {}).get("resourceClaims")
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("name") in made:
            entry.pop("resourceClaimTemplateName", None)
            entry["resourceClaimName"] = made[entry["name"]]
    return pod


def _verdict(case: PodCase, use: ClaimUse, findings: list[Finding], holders: Mapping[str, list[str]]) -> ClaimVerdict:
    claim = f"{case.namespace}/{use.claim_name}" if use.claim_name else ""
    if use.claim is None and use.template_obj is None:
        return ClaimVerdict(use.entry, claim, use.template, MISSING if use.claim_name or use.template else NOT_CREATED)
    if use.allocation is not None:
        return ClaimVerdict(use.entry, claim, use.template, ALLOCATED, reserved_for=use.reserved_for,
                            devices=_devices(use.allocation))
    label = f"ResourceClaim {claim}" if use.claim is not None else f"ResourceClaimTemplate {case.namespace}/{use.template}"
    obj = use.claim if use.claim is not None else _dict(_dict(use.template_obj).get("spec"))
    causes = [_cause(f, obj, holders) for f in findings if f.object == label]
    state = UNALLOCATABLE if any(c.severity == "error" for c in causes) else ALLOCATABLE
    if state == ALLOCATABLE and any(c.rule == _UNDECIDED_RULE for c in causes):
        state = UNDECIDED
    if use.claim is None:
        state = NOT_CREATED if state == ALLOCATABLE else state
    return ClaimVerdict(use.entry, claim, use.template, state, causes, reserved_for=use.reserved_for)


def _cause(finding: Finding, claim: Mapping[str, Any] | None, holders: Mapping[str, list[str]]) -> Cause:
    named = dict.fromkeys(m for m in _CLAIM_NAME.findall(finding.message) if m in holders)
    return Cause(finding.rule, _request(finding, claim), finding.message, finding.severity.value,
                 [(name, holders[name]) for name in named])


def _request(finding: Finding, claim: Mapping[str, Any] | None) -> str:
    """The name of the request a finding is about: from its field, else its details' only request."""
    if claim is None:
        return ""
    match = _REQUEST.search(finding.field)
    requests = _dict(_dict(claim.get("spec")).get("devices")).get("requests")
    if match and isinstance(requests, list) and int(match.group(1)) < len(requests):
        named = requests[int(match.group(1))]
        if isinstance(named, dict) and isinstance(named.get("name"), str):
            return named["name"]
    detailed = _dict(_dict(finding.details).get("requests"))
    return next(iter(detailed)) if len(detailed) == 1 else ""


def _points_elsewhere(finding: Finding) -> bool:
    """A Pod's finding that only points at its claim's ("see the finding on ResourceClaim ...")."""
    return bool(_dict(finding.details).get("see"))


def _devices(allocation: Mapping[str, Any]) -> list[str]:
    results = _dict(allocation.get("devices")).get("results")
    return [f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}" for r in results if isinstance(r, dict)] \
        if isinstance(results, list) else []


def _cluster_without(snapshot: ClusterSnapshot, keys: set[tuple[str, str]]) -> list[SourceFile]:
    """The cluster files without the claims being judged: each is judged once, as linted, unallocated."""
    files = snapshot.source_files()
    out = []
    for f in files:
        if f.name != "cluster:resourceclaims" or not keys:
            out.append(f)
            continue
        kept = [d for d in f.documents if _key(d.value) not in keys]
        out.append(SourceFile(f.name, kept, list(f.problems)))
    return out


def _key(obj: Any) -> tuple[str, str]:
    meta = _dict(_dict(obj).get("metadata"))
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _file(name: str, obj: Any) -> SourceFile:
    return SourceFile(name, [SourceDocument(file=name, index=0, line=0, value=obj)], [])


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}
