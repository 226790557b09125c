"""DeviceClass (v1alpha3 of 1.31 onwards): the selectors and configuration a claim inherits.

The API server allows at most 32 selectors, each with a ``cel`` expression (compiling the
expression is cel_selectors.py's job), at most 32 config entries, each an opaque configuration
(validated by opaque.py; the 10 KiB size limit is not applied when an update leaves the config
list unchanged), an ``extendedResourceName`` that is a valid extended resource name, and in 1.31
a ``suitableNodes`` node selector. Nothing of a DeviceClass is immutable.

Rules: DRA300 class-too-many-selectors, DRA301 class-selector-cel-required, DRA302
class-too-many-configs, DRA303 class-extended-resource-name-invalid; opaque configuration via
opaque.py (DRA228–DRA231); ``suitableNodes`` via nodeselector.py (DRA405).
"""
from __future__ import annotations

from typing import Iterable, Iterator

from .base import CheckContext, p, too_many
from ..problems import Problem
from .formats import extended_resource_name_errors
from .nodeselector import node_selector_problems
from .opaque import check_opaque_config

KINDS: frozenset[str] = frozenset({"DeviceClass"})

TOO_MANY_SELECTORS = "DRA300"
CEL_REQUIRED = "DRA301"
TOO_MANY_CONFIGS = "DRA302"
EXTENDED_RESOURCE_NAME_INVALID = "DRA303"

# The rules above, opaque config's and node selectors'.
RULES = ("DRA228", "DRA229", "DRA230", "DRA231", "DRA300", "DRA301", "DRA302", "DRA303", "DRA405")


def check(ctx: CheckContext) -> Iterable[Problem]:
    """Problems of one DeviceClass spec (create, or update against ``ctx.old``)."""
    spec = ctx.obj.get("spec")
    if not isinstance(spec, dict):
        return
    yield from _selectors(ctx, spec.get("selectors"))
    yield from _config(ctx, spec)
    name = spec.get("extendedResourceName")
    if isinstance(name, str):
        for msg in extended_resource_name_errors(name):
            yield Problem(EXTENDED_RESOURCE_NAME_INVALID, p("spec", "extendedResourceName"),
                          f"{name!r} is not a valid extended resource name: {msg}; pods request it like "
                          "`resources.limits: {example.com/gpu: 1}` (API server: Invalid value)")
    if spec.get("suitableNodes") is not None:
        yield from node_selector_problems(spec["suitableNodes"], p("spec", "suitableNodes"), ctx.release)


def _selectors(ctx: CheckContext, selectors: object) -> Iterator[Problem]:
    if not isinstance(selectors, list):
        return
    path = p("spec", "selectors")
    problem = too_many(TOO_MANY_SELECTORS, selectors, ctx.limits.selectors, path, "selectors in a DeviceClass",
                       "combine conditions with && in fewer CEL expressions")
    if problem is not None:
        yield problem
        return
    for i, selector in enumerate(selectors):
        if isinstance(selector, dict) and selector.get("cel") is None:
            yield Problem(CEL_REQUIRED, path.child(i, "cel"),
                          "a selector needs `cel: {expression: ...}`, the only kind of selector there is, e.g. "
                          "`cel: {expression: 'device.driver == \"gpu.example.com\"'}` (API server: Required value)")


def _config(ctx: CheckContext, spec: dict) -> Iterator[Problem]:
    config = spec.get("config")
    if not isinstance(config, list):
        return
    path = p("spec", "config")
    problem = too_many(TOO_MANY_CONFIGS, config, ctx.limits.configs_per_claim, path, "config entries in a DeviceClass",
                       "merge the parameters of one driver into a single entry")
    if problem is not None:
        yield problem
        return
    # An update that leaves the list as it was counts as stored: the size limit is not re-applied.
    old_spec = ctx.old.get("spec") if ctx.is_update and ctx.old is not None else None
    stored = isinstance(old_spec, dict) and old_spec.get("config") == config
    for i, entry in enumerate(config):
        if isinstance(entry, dict):
            yield from check_opaque_config(entry.get("opaque"), path.child(i, "opaque"), ctx.limits,
                                           check_size=not stored)
