"""CEL device selectors: compiled, type-checked and cost-limited as the API server does.

Walks every selector in the canonical (v1-shaped) object — DeviceClass ``spec.selectors``,
claim and template requests (``exactly`` and each ``firstAvailable`` subrequest), and the CEL
``selectors`` of a 1.33–1.34 DeviceTaintRule — and compiles each expression in the
NewExpressions environment of the target release and gates (docs/cel.md §1.1). On UPDATE the
release decides (kubernetes/kubernetes ``pkg/apis/resource/validation``; the early return for
stored expressions came with derived attributes, PR 140029, 1.37): a DeviceClass whose selector
list is unchanged is compiled as *stored* (StoredExpressions, errors and cost only) up to 1.36
and not judged from 1.37; a claim's immutable spec is compiled as stored up to 1.33 and not
judged from 1.34; a template is judged as new (its strategy runs the full validation first).

Rules:

* DRA500 cel-expression-too-long: more than 10,240 UTF-8 bytes (API server: Too long).
* DRA501 cel-compile-error: syntax, type-check, validator or output-type error (Invalid).
* DRA502 cel-cost-exceeded: worst-case cost estimate over 1,000,000 (Forbidden).
* DRA503 cel-has-domain-always-true: ``has(device.attributes.dom)`` is always true.
* DRA504 cel-version-string-compare: a version attribute compared with a string fails at run time.
* DRA505 cel-unknown-device-name: an attribute / capacity name no ResourceSlice of the run publishes.
* DRA506 cel-unguarded-attribute: a read of a name that only some devices publish, with no guard.

Example that FAILS (DRA501)::

    selectors:
    - cel:
        expression: device.attributes["gpu.example.com"].memory > "40Gi"

Example that PASSES::

    selectors:
    - cel:
        expression: device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0
"""
from __future__ import annotations

import functools
from typing import Any, Iterable, Iterator

from ..kube.releases import Release
from ..paths import FieldPath, value_at
from .base import CheckContext, p
from ..problems import Problem

KINDS: frozenset[str] = frozenset({"DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "DeviceTaintRule"})

TOO_LONG = "DRA500"
COMPILE_ERROR = "DRA501"
COST_EXCEEDED = "DRA502"
HAS_DOMAIN = "DRA503"
VERSION_STRING = "DRA504"
UNKNOWN_NAME = "DRA505"
UNGUARDED = "DRA506"

RULES = ("DRA500", "DRA501", "DRA502", "DRA503", "DRA504", "DRA505", "DRA506")

_WARNING_RULES = {"has-domain-always-true": HAS_DOMAIN, "version-string-compare": VERSION_STRING,
                  "unknown-domain": UNKNOWN_NAME, "unknown-attribute": UNKNOWN_NAME, "unknown-capacity": UNKNOWN_NAME,
                  "unguarded-attribute": UNGUARDED}
_GATES = ("DRAConsumableCapacity", "DRAListTypeAttributes")
_TAINT_RULE_CEL_MINORS = (33, 34)


def check(ctx: CheckContext) -> Iterable[Problem]:
    """Problems of every CEL selector in one object, but the hints that depend on the run's
    ResourceSlices (DRA505, DRA506): those are :data:`HINTS`'."""
    return _walk(ctx, hints=False)


class _Hints:
    """DRA505 and DRA506, judged in the engine's second pass against the objects the API server
    accepts: a ResourceSlice it would refuse publishes no names and holds no devices."""

    __name__ = "dralint.checks.cel_selectors.hints"
    KINDS = KINDS

    @staticmethod
    def check(ctx: CheckContext) -> Iterable[Problem]:
        return _walk(ctx, hints=True)


HINTS = _Hints()
_HINT_RULES = frozenset({UNKNOWN_NAME, UNGUARDED})


def _walk(ctx: CheckContext, *, hints: bool) -> Iterator[Problem]:
    """The selectors' problems: those of the selectors themselves, or (``hints``) the hints."""
    lists = list(_selector_lists(ctx.obj.value, ctx.obj.kind, ctx.release.minor))
    if not lists:
        return
    env = _env(ctx.release, stored=False)
    if ctx.index is not None:
        known, everywhere = ctx.index.derived("cel-published-names", _published_names)
        # Many objects repeat the same expressions; the verdict depends only on the text, the env,
        # the run's published names and the devices the selectors before it leave. One entry per
        # distinct expression (and context) of the run.
        verdicts = ctx.index.derived("cel-verdicts", lambda _: {})
    else:
        known, everywhere, verdicts = None, None, {}
    refused_slices = _refused_slices(ctx)
    stored_env = None
    for path, selectors, class_name in lists:
        mode = _update_mode(ctx, path, selectors)
        if mode == "skip":
            continue  # the API server does not judge these selectors again
        if len(selectors) > ctx.limits.selectors:
            continue  # over the limit the server reports TooMany and validates none of the items
        if mode == "stored":
            if hints:
                continue  # a stored selector gets no teaching
            stored_env = stored_env or _env(ctx.release, stored=True)
            yield from _stored_problems(ctx, path, selectors, stored_env)
            continue
        class_selectors = before = _class_expressions(ctx, class_name)
        for j, entry in enumerate(selectors):
            expr = _expression(entry)
            if expr is None:
                continue
            verdict = verdicts.get((expr, env))
            if verdict is None:
                verdict = verdicts[(expr, env)] = tuple(_judge(expr, env, known, everywhere, None))
            domain = None
            if class_name and any(v[0] == COMPILE_ERROR for v in verdict):
                # a hint may name the domain the request's class points at
                domain = _context_domain(class_selectors, class_name)
                if domain is not None:
                    key = (expr, env, domain)
                    if key not in verdicts:
                        verdicts[key] = tuple(_judge(expr, env, known, everywhere, domain))
                    verdict = verdicts[key]
            if hints and before and any(v[0] == UNGUARDED for v in verdict):
                # The allocator evaluates the class's selectors and the earlier ones first: a read
                # is guarded when every device they leave publishes the name.
                left = _left_by(ctx, before, expr)
                if left is not None:
                    left_key = (expr, env, domain, before)
                    if left_key not in verdicts:
                        verdicts[left_key] = tuple(_judge(expr, env, known, left, domain))
                    verdict = verdicts[left_key]
            before = before + ((expr,) if expr not in before else ())
            if verdict:
                where = path.child(j, "cel", "expression")
                for rule, message, offset, details in verdict:
                    if (rule in _HINT_RULES) == hints:
                        if rule == UNKNOWN_NAME and refused_slices:
                            message = _accepted_only(message, refused_slices, ctx.release.version)
                        yield Problem(rule, where, message, scalar_offset=offset, details=details)


# Keyed by a release with its gates and the stored flag: a process judges with one or a few. Each
# value is the fixed declaration set of a release dralint ships (no user text), so 32 stay small.
@functools.lru_cache(maxsize=32)
def _env(release: Release, *, stored: bool) -> Any:
    """The CEL env of ``release``: the same for every object, where building it per object cost as
    much as the rest of this check's walk over an object whose verdicts are already known."""
    # Imported on first use: the CEL engine takes a fifth of a second to import, and a pre-commit run
    # over files without selectors should not pay for it.
    from ..cel import env_for

    return env_for(release.version, {g: release.gate(g) for g in _GATES}, stored=stored)


def _refused_slices(ctx: CheckContext) -> list[str]:
    """The names of the run's ResourceSlices the API server refuses: they publish nothing it keeps."""
    if ctx.index is None:
        return []
    return sorted(name for kind, _, name in ctx.index.refused if kind == "ResourceSlice")


def _accepted_only(message: str, refused: list[str], release: str) -> str:
    """A DRA505 message that says the names were looked up in the accepted slices only: a slice
    refused at the release may well publish the name, and "no ResourceSlice publishes" would be false."""
    shown = ", ".join(refused[:3]) + (f" and {len(refused) - 3} more" if len(refused) > 3 else "")
    return (message.replace("no ResourceSlice publishes", "no accepted ResourceSlice publishes", 1)
            + f" (ResourceSlice {shown}, refused at Kubernetes {release}, {'is' if len(refused) == 1 else 'are'}"
              " not counted)")


def _update_mode(ctx: CheckContext, path: FieldPath, selectors: list) -> str:
    """How the release's API server validates one selector list: "new", "stored" or "skip"."""
    if not ctx.is_update or ctx.old is None:
        return "new"
    kind, minor = ctx.obj.kind, ctx.release.minor
    if kind == "ResourceClaimTemplate":
        return "new"  # ValidateUpdate runs ValidateResourceClaimTemplate (new expressions) first
    if kind == "ResourceClaim":
        return "stored" if minor <= 33 else "skip"  # the spec is immutable: checked as stored, then not at all
    if value_at(ctx.old.value, path) != selectors:
        return "new"
    return "stored" if kind == "DeviceClass" and minor <= 36 else "skip"


_STORED_RULES = frozenset({TOO_LONG, COMPILE_ERROR, COST_EXCEEDED})


def _stored_problems(ctx: CheckContext, path: FieldPath, selectors: list, env: Any) -> Iterator[Problem]:
    """What the API server still refuses in selectors it compiles as stored expressions: the
    StoredExpressions environment accepts every library the binary has, so only what even that
    refuses (or its estimate puts over the limit) fails the update."""
    why = (f" — the selectors are unchanged, so the 1.{ctx.release.minor} API server compiles them as stored "
           "expressions (StoredExpressions) and still refuses this")
    for j, entry in enumerate(selectors):
        expr = _expression(entry)
        if expr is None:
            continue
        for rule, message, offset, details in _judge(expr, env, None, None, None):
            if rule in _STORED_RULES:
                yield Problem(rule, path.child(j, "cel", "expression"), message + why, scalar_offset=offset,
                              details=details)


def _expression(entry: Any) -> str | None:
    cel = entry.get("cel") if isinstance(entry, dict) else None
    # `cel: {}` decodes to an empty expression, which the server compiles (and refuses).
    expr = cel.get("expression", "") if isinstance(cel, dict) else None
    return expr if isinstance(expr, str) else None


def _class_expressions(ctx: CheckContext, class_name: str | None) -> tuple[str, ...]:
    """The selectors of the request's DeviceClass (in the run or the cluster state)."""
    if ctx.index is None or not class_name:
        return ()
    # Thousands of requests name the same few classes, in both passes: read once per class object.
    known: dict[str, tuple[Any, tuple[str, ...]]] = ctx.index.derived("cel-class-expressions", lambda _: {})
    klass = ctx.index.classes.get(class_name)
    entry = known.get(class_name)
    if entry is None or entry[0] is not klass:
        entry = known[class_name] = (klass, _class_selector_expressions(klass))
    return entry[1]


def _class_selector_expressions(klass: Any) -> tuple[str, ...]:
    if klass is None:
        return ()
    found = value_at(klass.value, ("spec", "selectors"))
    return tuple(e for e in map(_expression, found if isinstance(found, list) else []) if e is not None)


def _context_domain(class_selectors: tuple[str, ...], class_name: str | None) -> str | None:
    """The driver domain a request's class points at, for hints: the driver its selectors name,
    a domain they read, or a class named like a domain."""
    from ..cel.lint import selector_domain

    found = selector_domain(class_selectors)
    if found is None and class_name and "." in class_name:
        found = class_name
    return found


def _left_by(ctx: CheckContext, before: tuple[str, ...], expr: str) -> Any:
    """Per domain, the names every device publishes among the devices the ``before`` selectors
    select, as far as the names ``expr`` reads are concerned (None: not known).

    Only a device that publishes a domain ``expr`` reads but lacks one of the names it reads
    can make a read fail, so only those devices are evaluated.
    """
    from ..cel import CelRuntimeError, compile_selector
    from ..cel.lint import read_names

    assert ctx.index is not None
    reads = read_names(expr)
    cache = ctx.index.derived("cel-left-by", lambda _: {"evaluations": 0})
    key = (before, reads)
    if key in cache:
        return cache[key]
    devices = ctx.index.derived("cel-devices", _Devices.of)
    suspects = sorted(set().union(*(devices.lacking(kind, dom, ident) for kind, dom, ident in reads)))
    if not devices.records or cache["evaluations"] + len(suspects) * len(before) > _EVALUATION_BUDGET:
        cache[key] = None  # no devices, or a run too large to simulate: the plain verdict stands
        return None
    cache["evaluations"] += len(suspects) * len(before)
    # The scheduler evaluates stored selectors; one that does not compile restricts nothing here.
    stored = _env(ctx.release, stored=True)
    programs = [c for c in (compile_selector(e, stored) for e in before) if c.runnable]

    def selected(device: Any) -> bool:
        for program in programs:
            try:
                if program.evaluate(device) is not True:
                    return False
            except CelRuntimeError:
                return False  # the allocation fails on this device; it never reaches the later selector
        return True

    kept = [devices.records[i] for i in suspects if selected(devices.cel(i))]
    cache[key] = _names(kept)[1]
    return cache[key]


# Evaluations of earlier selectors on devices that one run may spend on DRA506 (a few seconds).
_EVALUATION_BUDGET = 1_000_000


class _Devices:
    """The distinct devices of the run's ResourceSlices, indexed by the domains they publish."""

    def __init__(self, records: list[tuple[str, dict]]) -> None:
        from ..cel.device import split_qualified_name

        self.records = records
        self.by_domain: dict[tuple[str, str], list[tuple[int, set[str]]]] = {}
        for i, (driver, dev) in enumerate(records):
            names: dict[tuple[str, str], set[str]] = {}
            for kind in ("attributes", "capacity"):
                published = dev.get(kind)
                for name in published if isinstance(published, dict) else ():
                    domain, ident = split_qualified_name(str(name), driver)
                    names.setdefault((kind, domain), set()).add(ident)
            for kd, ids in names.items():
                self.by_domain.setdefault(kd, []).append((i, ids))
        self._cel: dict[int, Any] = {}

    @classmethod
    def of(cls, index: Any) -> "_Devices":
        import json

        records, seen = [], set()
        for driver, dev in _slice_devices(index):
            shape = json.dumps([driver, dev.get("attributes"), dev.get("capacity"),
                                dev.get("allowMultipleAllocations")], sort_keys=True, default=str)
            if shape not in seen:
                seen.add(shape)
                records.append((driver, dev))
        return cls(records)

    def lacking(self, kind: str, domain: str, ident: str) -> list[int]:
        """The devices that publish the domain but not the name. Not remembered: this object lives
        as long as the webhook's cluster state, and the names come from callers' expressions."""
        return [i for i, ids in self.by_domain.get((kind, domain), ()) if ident not in ids]

    def cel(self, i: int) -> Any:
        """The CEL view of device ``i``, built on first use."""
        if i not in self._cel:
            from ..cel import device_from_api

            self._cel[i] = device_from_api(*self.records[i])
        return self._cel[i]


_Verdict = tuple[str, str, "int | None", "dict | None"]  # rule, message, offset in the scalar, details


def _judge(expr: str, env: Any, known: Any, everywhere: Any, domain: str | None) -> Iterator[_Verdict]:
    from ..cel import compile_selector, lint_selector
    from ..cel.errors import issue_text

    compiled = compile_selector(expr, env)
    issues = list(compiled.issues)
    if compiled.ok or all(i.code in ("cost",) for i in issues):
        issues = lint_selector(expr, env, known, everywhere)
    elif any(i.code == "check" for i in issues):
        issues = lint_selector(expr, env, known, None, domain)  # for the hints that need the names
        issues = [i for i in issues if i.severity == "error"]
    for issue in issues:
        if issue.code == "too-long":
            yield (TOO_LONG, f"{issue.message} (the expression has "
                             f"{len(expr.encode('utf-8', 'surrogatepass'))} bytes; API server: Too long)", None, None)
        elif issue.code in ("syntax", "check"):
            text = issue_text(expr, issue).split("\n", 1)[0]
            # the hint first, then cel-go's own text as the API server reports it
            hint = f"{issue.hint}: " if issue.hint else ""
            yield COMPILE_ERROR, f"{hint}compilation failed: {text} (API server: Invalid value)", issue.offset, None
        elif issue.code == "output-type":
            yield COMPILE_ERROR, f"{issue.message} (API server: Invalid value)", None, None
        elif issue.code == "program":
            yield COMPILE_ERROR, f"{issue.message} (API server: Internal error)", issue.offset, None
        elif issue.code == "panic":
            yield COMPILE_ERROR, issue.message, issue.offset, None
        elif issue.code == "cost":
            yield (COST_EXCEEDED, f"{issue.message}: the worst-case estimate is {compiled.cost:,} against a limit "
                                  "of 1,000,000 (API server: Forbidden)", None, {"cost": compiled.cost})
        elif issue.code in _WARNING_RULES:
            yield _WARNING_RULES[issue.code], issue.message, issue.offset, None


def _selector_lists(obj: Any, kind: str, minor: int) -> Iterator[tuple[FieldPath, list, str | None]]:
    """(path of a ``selectors`` list, the list, the DeviceClass a request names) for every
    selector list of the object."""
    if not isinstance(obj, dict):
        return
    if kind == "DeviceClass":
        yield from _list_at(obj, ("spec", "selectors"))
    elif kind == "DeviceTaintRule":
        if minor in _TAINT_RULE_CEL_MINORS:
            yield from _list_at(obj, ("spec", "deviceSelector", "selectors"))
    else:
        prefix = ("spec", "spec", "devices", "requests") if kind == "ResourceClaimTemplate" else ("spec", "devices", "requests")
        requests = value_at(obj, prefix)
        for i, req in enumerate(requests if isinstance(requests, list) else []):
            if not isinstance(req, dict):
                continue
            exactly = req.get("exactly")
            if isinstance(exactly, dict) and isinstance(exactly.get("selectors"), list):
                yield p(*prefix, i, "exactly", "selectors"), exactly["selectors"], _class_name(exactly)
            subs = req.get("firstAvailable")
            for k, sub in enumerate(subs if isinstance(subs, list) else []):
                if isinstance(sub, dict) and isinstance(sub.get("selectors"), list):
                    yield p(*prefix, i, "firstAvailable", k, "selectors"), sub["selectors"], _class_name(sub)


def _class_name(request: dict) -> str | None:
    name = request.get("deviceClassName")
    return name if isinstance(name, str) and name else None


def _list_at(obj: dict, segments: tuple) -> Iterator[tuple[FieldPath, list, str | None]]:
    value = value_at(obj, segments)
    if isinstance(value, list):
        yield p(*segments), value, None


def _published_names(index: Any) -> tuple[dict | None, dict | None]:
    """Names the run's ResourceSlices publish, and per domain those every publishing device has."""
    if not index.slices:
        return None, None
    return _names(_slice_devices(index))


def _slice_devices(index: Any) -> Iterator[tuple[str, dict]]:
    """(driver, device dict) for every device of the run's ResourceSlices."""
    for obj in index.slices:
        spec = obj.value.get("spec") if isinstance(obj.value, dict) else None
        if not isinstance(spec, dict):
            continue
        driver = given if isinstance(given := spec.get("driver"), str) else ""
        devices = spec.get("devices")
        for dev in devices if isinstance(devices, list) else []:
            if isinstance(dev, dict):
                yield driver, dev


def _names(devices: Iterable[tuple[str, dict]]) -> tuple[dict, dict]:
    """The names the devices publish, and per domain those every device publishing it has."""
    from ..cel.device import split_qualified_name

    known: dict[str, dict[str, set[str]]] = {"attributes": {}, "capacity": {}}
    everywhere: dict[str, dict[str, set[str]]] = {"attributes": {}, "capacity": {}}
    # Devices of one driver mostly publish the same names; a set seen before changes neither map.
    seen: set[tuple] = set()
    for driver, dev in devices:
        for kind in ("attributes", "capacity"):
            names = dev.get(kind)
            if not isinstance(names, dict):
                names = {}
            shape = (driver, kind, *names)
            if shape in seen:
                continue
            seen.add(shape)
            per_domain: dict[str, set[str]] = {}
            for name in names:
                domain, ident = split_qualified_name(str(name), driver)
                per_domain.setdefault(domain, set()).add(ident)
            for domain, ids in per_domain.items():
                known[kind].setdefault(domain, set()).update(ids)
                if domain in everywhere[kind]:
                    everywhere[kind][domain] &= ids
                else:
                    everywhere[kind][domain] = set(ids)
    return known, everywhere
