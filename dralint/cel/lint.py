"""``lint_selector``: compile issues plus warnings that teach what Kubernetes would only show
at scheduling time (docs/cel.md §1.10).

Warning codes:

* ``has-domain-always-true``: ``has(device.attributes.dom)`` is true for every domain.
* ``version-string-compare``: ``attr == "1.2.3"`` fails at run time if ``attr`` is a version.
* ``unknown-domain`` / ``unknown-attribute`` / ``unknown-capacity``: a name no ResourceSlice
  publishes (given ``known``), with a "did you mean".
* ``unguarded-attribute``: an attribute or capacity read without ``has()``/``in``/``.?`` although
  not every device publishes it (given ``published_by_all``).
"""
from __future__ import annotations

import dataclasses
import difflib
import re
from dataclasses import dataclass
from typing import Any, Mapping

from ..bounded_cache import bounded_cache
from . import ast as A
from .env import CelEnv
from .errors import CelIssue
from .parser import ParseError, parse
from .selector import EXPRESSION_CACHE_BYTES, compile_selector, expression_bytes
from .values import Semver, SemverError

Names = Mapping[str, Mapping[str, set[str]]]


@dataclass(frozen=True)
class _Access:
    kind: str        # "attributes" | "capacity"
    domain: str
    ident: str | None
    offset: int
    guard: bool      # the access itself is a presence test (has / in / .?)


def lint_selector(expression: str, env: CelEnv, known: Names | None = None,
                  published_by_all: Names | None = None, domain: str | None = None) -> list[CelIssue]:
    """Compile issues (errors) followed by teaching warnings; never raises.

    ``known``: ``{"attributes": {domain: {ids}}, "capacity": {domain: {ids}}}`` from the
    ResourceSlices dralint has seen (None: unknown, no name checks). ``published_by_all``: the
    same shape, holding the names *every* candidate device publishes (None: no guard check).
    ``domain``: the driver domain the context suggests (a request's DeviceClass), used in hints.
    """
    compiled = compile_selector(expression, env)
    issues = list(compiled.issues)
    if compiled.issues and any(i.code in ("too-long", "syntax") for i in compiled.issues):
        return issues
    analysis = _analyse(expression)
    if analysis is None:
        return issues
    fixed, accesses, guarded, driver = analysis
    issues = [_keyed_by_domain(i, driver, accesses, known, domain) for i in issues]
    issues += fixed
    if known is not None:
        issues += _unknown_names(list(accesses), known)
    if published_by_all is not None:
        issues += _unguarded(list(accesses), guarded, published_by_all, known)
    return issues


@bounded_cache(EXPRESSION_CACHE_BYTES, expression_bytes)
def _analyse(expression: str) -> tuple[tuple[CelIssue, ...], tuple[_Access, ...], Any, str | None] | None:
    """What depends on the expression alone (parsed once, not once per object that uses it):
    the name-independent warnings, the device accesses, which accesses are guarded, and the
    driver a ``device.driver == "X"`` names."""
    try:
        root = parse(expression).root
    except (ParseError, RecursionError):
        return None
    nodes = A.walk(root)
    return (tuple(_has_domain(nodes) + _version_strings(nodes)), tuple(_accesses(nodes)), _guarded(root),
            _driver_literal(nodes))


def _keyed_by_domain(issue: CelIssue, driver: str | None, accesses: tuple[_Access, ...], known: Names | None,
                     domain: str | None) -> CelIssue:
    """A type error on ``device.attributes["productName"]`` (an attribute name where the domain goes)
    gets a hint naming the domain at hand."""
    if issue.code != "check" or issue.hint or "map(string, " not in issue.message:
        return issue
    wrong = [a for a in accesses if a.ident is None and "." not in a.domain]
    if not wrong:
        return issue
    a = wrong[0]
    at_hand = _domain_at_hand(driver, a, accesses, known, domain)
    ident = a.domain
    member = f".{ident}" if _IDENT.fullmatch(ident) else f'["{ident}"]'
    label = "attributes" if a.kind == "attributes" else "capacities"
    shown = f'"{at_hand}"' if at_hand else "<domain>"
    where = "" if at_hand else " (the domain of the driver that publishes it, e.g. gpu.example.com)"
    hint = (f"{label} are keyed by domain: write device.{a.kind}[{shown}]{member}{where}, "
            f'not device.{a.kind}["{ident}"]')
    return dataclasses.replace(issue, hint=hint)


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _domain_at_hand(driver: str | None, access: _Access, accesses: tuple[_Access, ...], known: Names | None,
                    domain: str | None) -> str | None:
    """The driver named in the expression, a domain it already uses, the domain that publishes
    the name, or the context's domain, in that order."""
    if driver:
        return driver
    for a in accesses:
        if "." in a.domain:
            return a.domain
    if known is not None:
        publishers = sorted(d for d, ids in known.get(access.kind, {}).items() if access.domain in ids)
        if publishers:
            return publishers[0]
    return domain


def read_names(expression: str) -> frozenset[tuple[str, str, str]]:
    """(kind, domain, name) of every attribute or capacity the expression reads or tests."""
    analysis = _analyse(expression)
    if analysis is None:
        return frozenset()
    return frozenset((a.kind, a.domain, a.ident) for a in analysis[1] if a.ident is not None)


def selector_domain(expressions: tuple[str, ...] | list[str]) -> str | None:
    """The driver domain selectors point at: the driver one names, else the first domain one reads."""
    analyses = [a for a in map(_analyse, expressions) if a is not None]
    for analysis in analyses:
        if analysis[3]:
            return analysis[3]
    for analysis in analyses:
        for a in analysis[1]:
            if "." in a.domain:
                return a.domain
    return None


def _driver_literal(nodes: list[A.Expr]) -> str | None:
    """X of a ``device.driver == "X"`` among the nodes."""
    for e in nodes:
        if isinstance(e, A.Call) and e.function == "_==_" and len(e.args) == 2:
            for lhs, rhs in (e.args, e.args[::-1]):
                if (A.qualified_name(lhs) == "device.driver" and isinstance(rhs, A.Literal)
                        and isinstance(rhs.value, str)):
                    return rhs.value
    return None


def _device_map(e: A.Expr) -> str | None:
    """'attributes'/'capacity' if ``e`` is ``device.attributes`` / ``device.capacity``."""
    if (isinstance(e, A.Select) and not e.test_only and e.field in ("attributes", "capacity")
            and isinstance(e.operand, A.Ident) and e.operand.name == "device"):
        return e.field
    return None


def _domain_of(e: A.Expr) -> tuple[str, str] | None:
    """(kind, domain) if ``e`` is ``device.attributes["dom"]`` (or ``.dom``)."""
    if isinstance(e, A.Call) and e.function == "_[_]" and len(e.args) == 2:
        kind = _device_map(e.args[0])
        key = e.args[1]
        if kind and isinstance(key, A.Literal) and isinstance(key.value, str):
            return kind, key.value
    if isinstance(e, A.Select) and not e.test_only:
        kind = _device_map(e.operand)
        if kind:
            return kind, e.field
    return None


def _accesses(nodes: list[A.Expr]) -> list[_Access]:
    out: list[_Access] = []
    for e in nodes:
        if isinstance(e, A.Select):
            dom = _domain_of(e.operand)
            if dom:
                out.append(_Access(dom[0], dom[1], e.field, e.offset, e.test_only))
            elif not e.test_only and _device_map(e.operand):
                out.append(_Access(_device_map(e.operand) or "", e.field, None, e.offset, False))
        elif isinstance(e, A.Call) and e.function in ("_[_]", "_[?_]", "_?._") and len(e.args) == 2:
            dom = _domain_of(e.args[0])
            key = e.args[1]
            if dom and isinstance(key, A.Literal) and isinstance(key.value, str):
                out.append(_Access(dom[0], dom[1], key.value, e.offset, e.function != "_[_]"))
            elif e.function == "_[_]" and _device_map(e.args[0]) and isinstance(key, A.Literal) \
                    and isinstance(key.value, str):
                out.append(_Access(_device_map(e.args[0]) or "", key.value, None, e.offset, False))
        elif isinstance(e, A.Call) and e.function == "@in" and len(e.args) == 2:
            key = e.args[0]
            if not (isinstance(key, A.Literal) and isinstance(key.value, str)):
                continue
            dom = _domain_of(e.args[1])
            if dom:
                out.append(_Access(dom[0], dom[1], key.value, e.offset, True))
            elif _device_map(e.args[1]):
                out.append(_Access(_device_map(e.args[1]) or "", key.value, None, e.offset, True))
    return out


def _has_domain(nodes: list[A.Expr]) -> list[CelIssue]:
    out = []
    for e in nodes:
        if isinstance(e, A.Select) and e.test_only:
            kind = _device_map(e.operand)
            if kind:
                out.append(CelIssue(
                    "has-domain-always-true", "warning",
                    f"has(device.{kind}.{e.field}) is always true: an unknown domain reads as an empty map; "
                    f"test the domain with '\"{e.field}\" in device.{kind}'", e.offset))
    return out


def _version_strings(nodes: list[A.Expr]) -> list[CelIssue]:
    out = []
    for e in nodes:
        if not (isinstance(e, A.Call) and e.function in ("_==_", "_!=_") and len(e.args) == 2):
            continue
        lhs, rhs = e.args
        if not (isinstance(rhs, A.Literal) and isinstance(rhs.value, str)):
            continue
        is_attr = (isinstance(lhs, A.Select) and _domain_of(lhs.operand) is not None) or (
            isinstance(lhs, A.Call) and lhs.function == "_[_]" and _domain_of(lhs.args[0]) is not None)
        if not is_attr:
            continue
        try:
            Semver.parse(rhs.value)
        except SemverError:
            continue
        out.append(CelIssue(
            "version-string-compare", "warning",
            f'if this attribute is a version, comparing it with the string "{rhs.value}" fails at run time '
            f'(no such overload) and blocks scheduling; compare with semver("{rhs.value}") instead', e.offset))
    return out


def _suggest(name: str, candidates: set[str] | list[str]) -> str:
    close = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def _unknown_names(accesses: list[_Access], known: Names) -> list[CelIssue]:
    out = []
    seen: set[tuple[str, str, str | None]] = set()
    for a in accesses:
        domains = known.get(a.kind, {})
        label = "attribute" if a.kind == "attributes" else "capacity"
        key = (a.kind, a.domain, a.ident if a.domain in domains else None)
        if key in seen:
            continue
        seen.add(key)
        if a.domain not in domains:
            owners = sorted(d for d, ids in domains.items() if a.domain in ids)
            hint = (f"; '{a.domain}' is the name of {'an attribute' if a.kind == 'attributes' else 'a capacity'} "
                    f"in domain '{owners[0]}': device.{a.kind}[\"{owners[0]}\"].{a.domain}"
                    if owners and _IDENT.fullmatch(a.domain) else _suggest(a.domain, set(domains)))
            out.append(CelIssue("unknown-domain", "warning",
                                f"no ResourceSlice publishes any {label} in domain '{a.domain}'{hint}", a.offset))
            continue
        if a.ident is not None and a.ident not in domains[a.domain]:
            code = "unknown-attribute" if a.kind == "attributes" else "unknown-capacity"
            out.append(CelIssue(code, "warning",
                                f"no ResourceSlice publishes the {label} '{a.domain}/{a.ident}'"
                                f"{_suggest(a.ident, domains[a.domain])}", a.offset))
    return out


def _presence(e: A.Expr, negated: bool = False) -> set[tuple[str, str, str]]:
    """Names that ``e`` proves present when it is true (or false, if ``negated``)."""
    if isinstance(e, A.Call) and e.function == "!_":
        return _presence(e.args[0], not negated)
    if isinstance(e, A.Call) and e.function == ("_||_" if negated else "_&&_"):
        return _presence(e.args[0], negated) | _presence(e.args[1], negated)
    if negated:
        return set()
    if isinstance(e, A.Select) and e.test_only:
        dom = _domain_of(e.operand)
        if dom:
            return {(dom[0], dom[1], e.field)}
    if isinstance(e, A.Call) and e.function == "@in" and isinstance(e.args[0], A.Literal):
        dom = _domain_of(e.args[1])
        if dom and isinstance(e.args[0].value, str):
            return {(dom[0], dom[1], e.args[0].value)}
    return set()


def _guarded(root: A.Expr) -> dict[int, set[tuple[str, str, str]]]:
    """For every node offset, the names guarded where it is evaluated."""
    out: dict[int, set[tuple[str, str, str]]] = {}
    stack: list[tuple[A.Expr, frozenset[tuple[str, str, str]]]] = [(root, frozenset())]
    while stack:
        e, g = stack.pop()
        out.setdefault(e.offset, set()).update(g)
        if isinstance(e, A.Call) and e.function == "_&&_":
            stack.append((e.args[0], g))
            stack.append((e.args[1], g | frozenset(_presence(e.args[0]))))
            continue
        if isinstance(e, A.Call) and e.function == "_||_":
            stack.append((e.args[0], g))
            stack.append((e.args[1], g | frozenset(_presence(e.args[0], negated=True))))
            continue
        if isinstance(e, A.Call) and e.function == "_?_:_":
            stack.append((e.args[0], g))
            stack.append((e.args[1], g | frozenset(_presence(e.args[0]))))
            stack.append((e.args[2], g | frozenset(_presence(e.args[0], negated=True))))
            continue
        stack.extend((c, g) for c in A.children(e))
    return out


def _unguarded(accesses: list[_Access], guarded: dict[int, set[tuple[str, str, str]]], everywhere: Names,
               known: Names | None) -> list[CelIssue]:
    out = []
    for a in accesses:
        if a.guard or a.ident is None:
            continue
        if (a.kind, a.domain, a.ident) in guarded.get(a.offset, set()):
            continue
        publishers = everywhere.get(a.kind, {})
        if a.domain not in publishers or a.ident in publishers[a.domain]:
            continue  # no candidate device publishes the domain, or every one has the name
        if known is not None and a.ident not in known.get(a.kind, {}).get(a.domain, set()):
            continue  # already reported as unknown
        out.append(CelIssue(
            "unguarded-attribute", "warning",
            f"not every device publishes '{a.domain}/{a.ident}': on such a device this read fails with "
            f"'no such key: {a.ident}' and blocks scheduling; guard it with "
            f"'\"{a.ident}\" in device.{a.kind}[\"{a.domain}\"] && ...' or use "
            f"'.?{a.ident}.orValue(...)'", a.offset))
    return out
