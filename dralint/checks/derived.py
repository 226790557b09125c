"""``derivedAttributes`` of claim requests and subrequests (1.37 alpha, gate DRADerivedAttributes).

A derived attribute computes a value per device with a CEL expression, for a constraint to
compare. The API server (``validateDeviceDerivedAttributes`` in kubernetes/kubernetes
``pkg/apis/resource/validation/validation.go`` at 009801d930e2e3c8b3671a3ec28e31a2f64865ac, plus
the declarative tags of the type) wants at most 32 per request, each with a unique, fully
qualified ``name`` (``domain/name``) and a non-empty ``expression`` that compiles. Each name must
be used by a ``matchAttribute`` or ``distinctAttribute`` constraint that applies to the request:
one without ``requests`` (all of them), one naming the request, or, for a subrequest, one naming
it (``req/sub``) or its parent request.

Each expression is compiled as the server compiles it (``dralint.cel.compile_derived_attribute``:
a scalar or list output, its own cost limit), and the estimates of those that compile are summed
against the claim-wide budget (Forbidden at ``spec.devices`` when over).

Rule: DRA266 derived-attribute-invalid.
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping

from ..paths import FieldPath
from .base import CheckContext
from ..problems import Problem
from .formats import qualified_attribute_errors

RULE = "DRA266"

RULES = ("DRA266",)

MAX_DERIVED_ATTRIBUTES = 32
_CEL_GATES = ("DRAConsumableCapacity", "DRAListTypeAttributes")


def problems(ctx: CheckContext, devices: Mapping[str, Any], path: FieldPath) -> Iterator[Problem]:
    """The derived attributes of every request and subrequest of one claim spec's ``devices``."""
    requests = devices.get("requests")
    if not isinstance(requests, list):
        return
    used = _constraint_attributes(devices.get("constraints"))
    costs: list[int] = []   # the estimate of each expression that compiled, as the server sums them
    for i, request in enumerate(requests):
        if not isinstance(request, dict) or not isinstance(request.get("name"), str):
            continue
        name = request["name"]
        exactly = request.get("exactly")
        if isinstance(exactly, dict) and "derivedAttributes" in exactly:
            yield from _list(ctx, exactly["derivedAttributes"], path.child("requests", i, "exactly", "derivedAttributes"),
                             name, used, costs)
        subs = request.get("firstAvailable")
        for j, sub in enumerate(subs if isinstance(subs, list) else ()):
            if isinstance(sub, dict) and "derivedAttributes" in sub and isinstance(sub.get("name"), str):
                yield from _list(ctx, sub["derivedAttributes"],
                                 path.child("requests", i, "firstAvailable", j, "derivedAttributes"),
                                 f"{name}/{sub['name']}", used, costs)
    if not costs:   # no expression compiled: the CEL compiler stays unimported for most claims
        return
    from ..cel import DERIVED_CLAIM_MAX_COST

    total = sum(costs) % 2**64   # Go adds uint64 estimates: an unbounded pair wraps around
    if total > DERIVED_CLAIM_MAX_COST:
        parts = " + ".join(f"{c:,}" for c in costs)
        yield Problem(RULE, path, f"the derived-attribute expressions of this claim cost {parts} = {total:,} together by "
                                  f"Kubernetes' estimate, over the claim's budget of {DERIVED_CLAIM_MAX_COST:,}: simplify "
                                  "them or use fewer (API server: Forbidden, \"too complex, total cost of derived attribute "
                                  "CEL expressions in the claim exceeds cost limit\")")


def _constraint_attributes(constraints: Any) -> dict[str, set[str]]:
    """Request reference ("" for all, "req", "req/sub") → attribute names its constraints compare."""
    found: dict[str, set[str]] = {}
    for constraint in constraints if isinstance(constraints, list) else ():
        if not isinstance(constraint, dict):
            continue
        attribute = constraint.get("matchAttribute") or constraint.get("distinctAttribute")
        if not isinstance(attribute, str):
            continue
        targets = constraint.get("requests")
        for target in (targets if isinstance(targets, list) and targets else [""]):
            found.setdefault(str(target), set()).add(attribute)
    return found


def _is_used(attribute: str, request: str, used: Mapping[str, set[str]]) -> bool:
    parent = request.split("/", 1)[0]
    return any(attribute in used.get(key, ()) for key in {"", request, parent})


def _list(ctx: CheckContext, items: Any, path: FieldPath, request: str,
          used: Mapping[str, set[str]], costs: list[int]) -> Iterator[Problem]:
    if not isinstance(items, list):
        return
    if len(items) > MAX_DERIVED_ATTRIBUTES:
        yield Problem(RULE, path, f"{len(items)} derived attributes; at most {MAX_DERIVED_ATTRIBUTES} are allowed per "
                                  "request (API server: Too many)")
        return
    seen: set[str] = set()
    for k, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        name, expression = item.get("name", ""), item.get("expression", "")
        if isinstance(name, str):
            yield from _name(ctx, name, path.child(k, "name"), request, used, seen)
        if expression == "":
            yield Problem(RULE, path.child(k, "expression"),
                          "a derived attribute needs an `expression`: the CEL expression computing its value from "
                          "`device` (API server: Required value)")
        elif isinstance(expression, str):
            yield from _expression(ctx, expression, path.child(k, "expression"), costs)


def _name(ctx: CheckContext, name: str, path: FieldPath, request: str, used: Mapping[str, set[str]],
          seen: set[str]) -> Iterator[Problem]:
    if not name:
        yield Problem(RULE, path, "a derived attribute needs a `name`, fully qualified (`domain/name`) like the "
                                  "attribute a constraint compares (API server: Required value)")
        return
    errors = qualified_attribute_errors(name, fully_qualified=True, multi_slash_ok=ctx.limits.multi_slash_names)
    for _, msg in errors[:1]:
        yield Problem(RULE, path, f"derived attribute name {name!r} is not a fully qualified name: {msg} (API server: "
                                  "Invalid value)")
    if name in seen:
        yield Problem(RULE, path, f"derived attribute {name!r} is defined twice in this request (API server: Duplicate "
                                  "value)")
    seen.add(name)
    if not errors and not _is_used(name, request, used):
        yield Problem(RULE, path,
                      f"derived attribute {name!r} is not compared by any constraint of request {request!r}: add a "
                      f"constraint with `matchAttribute: {name}` (or `distinctAttribute`) for it, or remove it (API "
                      "server: Invalid value, \"must be referenced by at least one matchAttribute or "
                      "distinctAttribute constraint targeting this request\")")


def _expression(ctx: CheckContext, expression: str, path: FieldPath, costs: list[int]) -> Iterator[Problem]:
    from ..cel import DERIVED_MAX_COST, compile_derived_attribute, env_for
    from ..cel.errors import issue_text

    env = env_for(ctx.release.version, {g: ctx.gate(g) for g in _CEL_GATES}, stored=False)
    compiled = compile_derived_attribute(expression, env)
    if compiled.cost is not None:
        costs.append(compiled.cost)
    for issue in compiled.issues:
        if issue.code in ("syntax", "check", "too-long"):
            text = issue_text(expression, issue).split("\n", 1)[0]
            yield Problem(RULE, path, f"compilation failed: {text} (API server: Invalid value)",
                          scalar_offset=issue.offset)
        elif issue.code == "output-type":
            yield Problem(RULE, path, f"a derived attribute's expression {issue.message}: constraints compare "
                                      "scalars or lists of scalars (API server: Invalid value)")
        elif issue.code == "program":
            yield Problem(RULE, path, f"{issue.message} (API server: Internal error)", scalar_offset=issue.offset)
        elif issue.code == "cost":
            yield Problem(RULE, path, f"derived attribute expression too complex: Kubernetes estimates its worst case "
                                      f"at {compiled.cost:,}, over the limit of {DERIVED_MAX_COST:,} for one "
                                      "derived attribute (API server: Forbidden, \"too complex, exceeds cost limit\")")
