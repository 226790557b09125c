"""ResourceClaim and ResourceClaimTemplate spec: requests, subrequests, constraints and config.

Mirrors the API server's ``validateDeviceClaim`` as it runs on CREATE, after the server's
defaulting (empty ``allocationMode`` → ``ExactCount``, ``count`` 0 → 1) and after the gate-based
dropping of ``dralint.gating``. On a claim's UPDATE the server only checks that the spec did not
change (see ``claim_status``), so nothing here runs then; a template's UPDATE is validated in full
as well. Template specs live at ``spec.spec``.

Over-long lists give one "too many" problem at the list and their items are not checked, as the
server does (it short-circuits for DoS protection). CEL expressions are compiled by
``cel_selectors``; here only the presence of ``cel`` is checked.
"""
from __future__ import annotations

import difflib
from typing import Any, Iterator

from ..findings import Severity
from ..kube.shapes import FLAT_VERSIONS, LEGACY_VERSIONS
from ..paths import FieldPath
from ..kube.quantity import Quantity, QuantityError
from . import derived
from .base import CheckContext, too_many_problem
from ..problems import Problem
from .fields import RequestNames, admin_access_problem, request_names, request_ref_problem, spec_path
from ..kube.validation import is_dns1123_label, is_dns1123_subdomain
from .formats import qualified_attribute_errors
from .opaque import check_opaque_config
from .tolerations import check_tolerations

KINDS: frozenset[str] = frozenset({"ResourceClaim", "ResourceClaimTemplate"})

ALLOCATION_MODES = ("All", "ExactCount")

R_REQUESTS_TOO_MANY = "DRA200"
R_COUNT_POSITIVE = "DRA201"
R_COUNT_WITH_ALL = "DRA202"
R_MODE_UNSUPPORTED = "DRA203"
R_REQUEST_DUPLICATE = "DRA204"
R_REQUEST_NAME = "DRA205"
R_EXACTLY_OR_FIRST = "DRA206"
R_CLASS_REQUIRED = "DRA207"
R_CLASS_INVALID = "DRA208"
R_SELECTORS_TOO_MANY = "DRA209"
R_CEL_REQUIRED = "DRA210"
R_SUBREQUESTS_TOO_MANY = "DRA211"
R_SUBREQUEST_DUPLICATE = "DRA212"
R_SUBREQUEST_NAME = "DRA213"
R_CAPACITY = "DRA218"
R_CONSTRAINTS_TOO_MANY = "DRA220"
R_REFS_TOO_MANY = "DRA221"
R_REF_DUPLICATE = "DRA222"
R_CONSTRAINT_UNKNOWN_REQUEST = "DRA223"
R_ATTRIBUTE_INVALID = "DRA224"
R_ATTRIBUTE_REQUIRED = "DRA225"
R_CONFIGS_TOO_MANY = "DRA226"
R_CONFIG_UNKNOWN_REQUEST = "DRA227"

# The rules above and those of the shared validators it calls (tolerations, admin access, opaque config,
# derived attributes).
RULES = ("DRA200", "DRA201", "DRA202", "DRA203", "DRA204", "DRA205", "DRA206", "DRA207", "DRA208", "DRA209",
         "DRA210", "DRA211", "DRA212", "DRA213", "DRA214", "DRA215", "DRA216", "DRA217", "DRA218", "DRA220",
         "DRA221", "DRA222", "DRA223", "DRA224", "DRA225", "DRA226", "DRA227", "DRA228", "DRA229", "DRA230",
         "DRA231", "DRA266")


def check(ctx: CheckContext) -> Iterator[Problem]:
    """Problems of the spec of a claim being created, or of a template being created or updated.

    The template strategy's ValidateUpdate still runs the full validation before the immutability
    check, so an unchanged template spec that the release now refuses fails its update too; so does
    a claim's up to 1.33.
    """
    obj = ctx.obj
    if obj.version in LEGACY_VERSIONS or ctx.subresource:
        return
    if ctx.operation != "CREATE" and obj.kind != "ResourceClaimTemplate" and not ctx.limits.claim_update_revalidates:
        return
    base = spec_path(obj.kind)
    devices = obj.get(*base, "devices")
    if not isinstance(devices, dict):
        return
    path = base.child("devices")
    requests = devices.get("requests")
    names = request_names(requests)
    if isinstance(requests, list):
        yield from _requests(ctx, requests, path.child("requests"))
    constraints = devices.get("constraints")
    if isinstance(constraints, list):
        yield from _constraints(ctx, constraints, path.child("constraints"), names)
    configs = devices.get("config")
    if isinstance(configs, list):
        yield from _configs(ctx, configs, path.child("config"), names)
    yield from derived.problems(ctx, devices, path)


# --- requests -------------------------------------------------------------------------------------

def _requests(ctx: CheckContext, requests: list, path: FieldPath) -> Iterator[Problem]:
    limit = ctx.limits.requests_per_claim
    if len(requests) > limit:
        yield too_many_problem(R_REQUESTS_TOO_MANY, path, len(requests), limit, "requests",
                        "split the devices over several claims, or use `count` / `allocationMode: All` "
                        "instead of one request per device")
        return
    admin_reported = False
    for i, request in enumerate(requests):
        if not isinstance(request, dict):
            continue
        rpath = path.child(i)
        yield from _request(ctx, request, rpath)
        exactly = request.get("exactly")
        if not admin_reported and isinstance(exactly, dict) and exactly.get("adminAccess") is True:
            # The server checks the namespace label once per object, at the first admin request.
            admin_reported = True
            yield from _admin_access(ctx, rpath.child("exactly", "adminAccess"))
    yield from _duplicates(requests, path, R_REQUEST_DUPLICATE, "request")


def _request(ctx: CheckContext, request: dict, path: FieldPath) -> Iterator[Problem]:
    name = request.get("name", "")
    if isinstance(name, str) and is_dns1123_label(name):
        yield from _name(name, path.child("name"), R_REQUEST_NAME, "request")
    first: Any = request.get("firstAvailable")   # as written: a list when has_first
    has_first = isinstance(first, list) and len(first) > 0
    exactly = request.get("exactly")
    if exactly is None and not has_first and ctx.release.stage("DRAPrioritizedList") is None:
        # Before 1.33 a request had its fields directly (no `exactly`): only the class is missing.
        exactly = {}
    if ctx.limits.flat_requests and isinstance(exactly, dict):
        yield from _flat_request(ctx, name, exactly, first if has_first else None, path)
        return
    has_exactly = exactly is not None
    if not has_exactly and not has_first:
        why = (" because the server drops its `firstAvailable` (feature gate DRAPrioritizedList is off, see the "
               "DRA802 warning)" if _was_dropped(ctx, path.child("firstAvailable")) else "")
        yield Problem(R_EXACTLY_OR_FIRST, path,
                      f"request {name!r} says neither what to allocate (`exactly`) nor which alternatives to try "
                      f"(`firstAvailable`){why}; exactly one of them is required, e.g. `exactly: {{deviceClassName: "
                      "gpu.example.com}` (API server: Required value, \"exactly one of `exactly` or "
                      "`firstAvailable` is required\")")
    elif has_exactly and has_first:
        yield Problem(R_EXACTLY_OR_FIRST, path,
                      f"request {name!r} sets both `exactly` and `firstAvailable`; exactly one of them is allowed: "
                      "move the `exactly` fields into one of the `firstAvailable` subrequests, or drop "
                      "`firstAvailable` (API server: Invalid value, \"exactly one of `exactly` or `firstAvailable` "
                      "is required, but multiple fields are set\")")
    elif has_first:
        yield from _first_available(ctx, first, path.child("firstAvailable"))
    elif isinstance(exactly, dict):
        yield from _exact(ctx, exactly, path.child("exactly"))


_FLAT_CONFLICTS = (("selectors", None), ("allocationMode", ""), ("count", 0), ("adminAccess", None))


def _flat_request(ctx: CheckContext, name: Any, exactly: dict, first: list | None,
                  path: FieldPath) -> Iterator[Problem]:
    """1.33: the request's own fields are flat, so `exactly` only counts with a class in it."""
    has_class = exactly.get("deviceClassName") not in (None, "")
    epath = path.child("exactly")
    if has_class and first is None:
        yield from _exact(ctx, exactly, epath)
        return
    if has_class:
        yield Problem(R_EXACTLY_OR_FIRST, path,
                      f"request {name!r} sets both `deviceClassName` and `firstAvailable`; exactly one of them is "
                      "allowed (API server of 1.33: Invalid value, \"exactly one of `deviceClassName` or "
                      "`firstAvailable` must be specified\")")
    elif first is None:
        yield Problem(R_EXACTLY_OR_FIRST, path,
                      f"request {name!r} has neither `deviceClassName` nor `firstAvailable`; exactly one of them is "
                      "required (API server of 1.33: Required value)")
    else:
        for field, zero in _FLAT_CONFLICTS:
            if field in exactly and exactly[field] != zero:
                yield Problem(R_EXACTLY_OR_FIRST, epath.child(field),
                              f"`{field}` must not be set on request {name!r}, which has `firstAvailable`: set it on "
                              "the subrequests instead (API server of 1.33: Invalid value, \"must not be specified "
                              "when firstAvailable is set\")")
        yield from _first_available(ctx, first, path.child("firstAvailable"))
    if isinstance(exactly.get("tolerations"), list):
        yield from check_tolerations(exactly["tolerations"], epath.child("tolerations"), ctx.release, ctx.limits)


def _exact(ctx: CheckContext, exactly: dict, path: FieldPath) -> Iterator[Problem]:
    class_name = exactly.get("deviceClassName", "")
    # v1beta1/v1alpha3 defaulting skips a request without a class (it was meant to have subrequests).
    defaulted = not (ctx.obj.version in FLAT_VERSIONS and not class_name
                     and ctx.release.stage("DRAPrioritizedList") is not None)
    yield from _device_fields(ctx, exactly, path, defaulted=defaulted)


def _first_available(ctx: CheckContext, subrequests: list, path: FieldPath) -> Iterator[Problem]:
    limit = ctx.limits.subrequests
    if len(subrequests) > limit:
        yield too_many_problem(R_SUBREQUESTS_TOO_MANY, path, len(subrequests), limit, "subrequests in `firstAvailable`",
                        "keep the alternatives you really want to fall back to, most preferred first")
        return
    for j, sub in enumerate(subrequests):
        if not isinstance(sub, dict):
            continue
        name = sub.get("name", "")
        if isinstance(name, str) and is_dns1123_label(name):
            yield from _name(name, path.child(j, "name"), R_SUBREQUEST_NAME, "subrequest")
        yield from _device_fields(ctx, sub, path.child(j), defaulted=True)
    yield from _duplicates(subrequests, path, R_SUBREQUEST_DUPLICATE, "subrequest")


def _device_fields(ctx: CheckContext, body: dict, path: FieldPath, *, defaulted: bool) -> Iterator[Problem]:
    """What an ``exactly`` request and a subrequest have in common."""
    class_name = body.get("deviceClassName", "")
    if class_name == "" or class_name is None:
        yield Problem(R_CLASS_REQUIRED, path.child("deviceClassName"),
                      "`deviceClassName` is required: name the DeviceClass whose devices may satisfy this request "
                      "(`kubectl get deviceclasses` lists them) (API server: Required value)")
    elif isinstance(class_name, str):
        for msg in is_dns1123_subdomain(class_name):
            yield Problem(R_CLASS_INVALID, path.child("deviceClassName"),
                          f"device class name {class_name!r} is not a valid DeviceClass name: {msg} "
                          "(API server: Invalid value)")
    # Paths are built only for the parts that are there: a large run has tens of thousands of requests.
    if isinstance(body.get("selectors"), list):
        yield from _selectors(ctx, body["selectors"], path.child("selectors"))
    yield from _allocation_mode(body, path, defaulted)
    if isinstance(body.get("tolerations"), list):
        yield from check_tolerations(body["tolerations"], path.child("tolerations"), ctx.release, ctx.limits)
    if isinstance(body.get("capacity"), dict):
        yield from _capacity(ctx, body["capacity"], path.child("capacity"))


def _selectors(ctx: CheckContext, selectors: Any, path: FieldPath) -> Iterator[Problem]:
    if not isinstance(selectors, list):
        return
    limit = ctx.limits.selectors
    if len(selectors) > limit:
        yield too_many_problem(R_SELECTORS_TOO_MANY, path, len(selectors), limit, "selectors",
                        "combine conditions into fewer CEL expressions with `&&`")
        return
    for j, selector in enumerate(selectors):
        if selector is None or (isinstance(selector, dict) and selector.get("cel") is None):
            yield Problem(R_CEL_REQUIRED, path.child(j, "cel"),
                          "a selector needs `cel: {expression: ...}` (CEL is the only kind of selector), e.g. "
                          "`cel: {expression: 'device.driver == \"gpu.example.com\"'}` (API server: Required value)")


def _allocation_mode(body: dict, path: FieldPath, defaulted: bool) -> Iterator[Problem]:
    mode = body.get("allocationMode") or ""
    count = body.get("count", 0)
    if not isinstance(count, int) or isinstance(count, bool):
        return  # a wrong type is the schema stage's finding
    if defaulted and mode == "":
        mode = "ExactCount"
    if mode == "All":
        if count != 0:
            yield Problem(R_COUNT_WITH_ALL, path.child("count"),
                          f"`count: {count}` must not be set when `allocationMode` is `All` (All allocates every "
                          "matching device); remove `count`, or use `allocationMode: ExactCount` "
                          "(API server: Invalid value)")
    elif mode == "ExactCount":
        # count 0 (or unset) is defaulted to 1 by the server, so only negative counts remain wrong.
        if count < 0:
            yield Problem(R_COUNT_POSITIVE, path.child("count"),
                          f"`count: {count}` must be greater than zero: it is the number of devices to allocate "
                          "(API server: Invalid value, \"must be greater than zero\")")
    elif isinstance(mode, str):
        close = difflib.get_close_matches(mode, ALLOCATION_MODES, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        yield Problem(R_MODE_UNSUPPORTED, path.child("allocationMode"),
                      f"allocationMode {mode!r} is not supported{hint}; use `ExactCount` (with `count`, the "
                      "default) or `All` (API server: Unsupported value, supported values: \"All\", \"ExactCount\")")


def _capacity(ctx: CheckContext, capacity: Any, path: FieldPath) -> Iterator[Problem]:
    """``capacity.requests``: the server decodes the quantities but checks nothing else (a warning then).

    Whether 1.38 checks the keys (kubernetes#141644 refuses names with several slashes "in
    resource.k8s.io objects") cannot be read yet: its validation.go is not available, 1.37's has no
    check of these keys. A name with several slashes is only warned about where devices cannot
    publish one (1.38), as any other bad name."""
    requests = capacity.get("requests") if isinstance(capacity, dict) else None
    if not isinstance(requests, dict):
        return
    rpath = path.child("requests")
    for key, value in requests.items():
        kpath = rpath.key(str(key))
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            try:
                qty = Quantity.parse(value)
            except QuantityError:
                continue  # the schema stage reports what the decoder refuses (DRA102)
            if qty.value <= 0:
                yield Problem(R_CAPACITY, kpath,
                              f"capacity request {value!r} for {key!r} is not positive; the API server accepts it "
                              "but it requests nothing: remove it or request a positive amount", severity=Severity.WARNING)
        errs = qualified_attribute_errors(str(key), multi_slash_ok=ctx.limits.multi_slash_names)
        if errs:
            yield Problem(R_CAPACITY, kpath,
                          f"capacity name {key!r} is not a valid capacity name ({errs[0][1]}); the API server does "
                          "not check it, but no device can publish such a capacity, so the request can never be "
                          "satisfied", severity=Severity.WARNING)


# --- constraints and config -----------------------------------------------------------------------

def _constraints(ctx: CheckContext, constraints: list, path: FieldPath, names: RequestNames) -> Iterator[Problem]:
    limit = ctx.limits.constraints_per_claim
    if len(constraints) > limit:
        yield too_many_problem(R_CONSTRAINTS_TOO_MANY, path, len(constraints), limit, "constraints",
                        "a constraint without `requests` applies to all requests at once")
        return
    for c, constraint in enumerate(constraints):
        if not isinstance(constraint, dict):
            continue
        cpath = path.child(c)
        yield from check_request_refs(ctx, constraint.get("requests"), cpath.child("requests"), names,
                                      R_CONSTRAINT_UNKNOWN_REQUEST)
        match, distinct = constraint.get("matchAttribute"), constraint.get("distinctAttribute")
        if match is not None:
            yield from _attribute(ctx, match, cpath.child("matchAttribute"))
        elif distinct is not None:
            yield from _attribute(ctx, distinct, cpath.child("distinctAttribute"))
        elif ctx.gate("DRAConsumableCapacity"):
            yield Problem(R_ATTRIBUTE_REQUIRED, cpath,
                          "a constraint needs `matchAttribute` (all devices share the attribute's value) or "
                          "`distinctAttribute` (all values differ), e.g. `matchAttribute: "
                          "resource.kubernetes.io/pcieRoot` (API server: Required value)")
        else:
            why = (" (its `distinctAttribute` is dropped by the server: feature gate DRAConsumableCapacity is off)"
                   if _was_dropped(ctx, cpath.child("distinctAttribute")) else "")
            yield Problem(R_ATTRIBUTE_REQUIRED, cpath.child("matchAttribute"),
                          f"a constraint needs `matchAttribute`{why}: the fully qualified attribute whose value all "
                          "devices must share, e.g. `resource.kubernetes.io/pcieRoot` (API server: Required value)")


def _attribute(ctx: CheckContext, value: Any, path: FieldPath) -> Iterator[Problem]:
    if not isinstance(value, str):
        return
    errs = qualified_attribute_errors(value, fully_qualified=True, multi_slash_ok=ctx.limits.multi_slash_names)
    for _, msg in errs[:1]:
        hint = (f"; prefix it with the driver's domain, e.g. `gpu.example.com/{value}`"
                if value and "/" not in value else "")
        yield Problem(R_ATTRIBUTE_INVALID, path,
                      f"attribute {value!r} is not a fully qualified attribute name: {msg}{hint} "
                      "(API server: Invalid value)")


def _configs(ctx: CheckContext, configs: list, path: FieldPath, names: RequestNames) -> Iterator[Problem]:
    limit = ctx.limits.configs_per_claim
    if len(configs) > limit:
        yield too_many_problem(R_CONFIGS_TOO_MANY, path, len(configs), limit, "config entries",
                        "one entry may apply to several requests (list them in its `requests`)")
        return
    for k, config in enumerate(configs):
        if not isinstance(config, dict):
            continue
        kpath = path.child(k)
        yield from check_request_refs(ctx, config.get("requests"), kpath.child("requests"), names,
                                      R_CONFIG_UNKNOWN_REQUEST)
        yield from check_opaque_config(config.get("opaque"), kpath.child("opaque"), ctx.limits)


# --- request references ---------------------------------------------------------------------------

def check_request_refs(ctx: CheckContext, refs: Any, path: FieldPath, names: RequestNames,
                       rule: str) -> Iterator[Problem]:
    """A ``requests`` list of a constraint or config entry: size, uniqueness, each entry a known request."""
    if not isinstance(refs, list):
        return
    limit = ctx.limits.requests_per_reference_list
    if len(refs) > limit:
        yield too_many_problem(R_REFS_TOO_MANY, path, len(refs), limit, "request references",
                        "an empty `requests` list applies to every request of the claim")
        return
    for r, ref in enumerate(refs):
        if isinstance(ref, str):
            problem = request_ref_problem(ref, path.child(r), names, rule)
            if problem:
                yield problem
    seen: set[str] = set()
    for r, ref in enumerate(refs):
        if not isinstance(ref, str):
            continue
        if ref in seen:
            yield Problem(R_REF_DUPLICATE, path.child(r),
                          f"request {ref!r} is listed more than once; remove the repeated entry "
                          "(API server: Duplicate value)")
        seen.add(ref)


def _admin_access(ctx: CheckContext, path: FieldPath) -> Iterator[Problem]:
    problem = admin_access_problem(ctx, path)
    if problem:
        yield problem


# --- helpers --------------------------------------------------------------------------------------

def _was_dropped(ctx: CheckContext, path: FieldPath) -> bool:
    """Whether the gating stage removed the field at ``path``."""
    return any(problem.path == path for problem in ctx.dropped)


def _name(name: str, path: FieldPath, rule: str, what: str) -> Iterator[Problem]:
    errs = is_dns1123_label(name)
    if not errs:
        return
    if not name:
        yield Problem(rule, path, f"the {what} needs a `name` (a DNS label such as `gpu`); containers and "
                                  "constraints refer to it by that name (API server: Invalid value)")
        return
    yield Problem(rule, path, f"{what} name {name!r} is not a DNS label: {errs[0]} (API server: Invalid value)")


def _duplicates(items: list, path: FieldPath, rule: str, what: str) -> Iterator[Problem]:
    seen: set[str] = set()
    for i, item in enumerate(items):
        name = item.get("name", "") if isinstance(item, dict) else None
        if not isinstance(name, str):
            continue
        if name in seen:
            yield Problem(rule, path.child(i),
                          f"{what} name {name!r} is used twice; {what} names must be unique so they can be "
                          "referred to (API server: Duplicate value)")
        seen.add(name)
