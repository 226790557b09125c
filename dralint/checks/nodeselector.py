"""Core node-selector validation (``v1.NodeSelector``), reusable wherever DRA objects carry one.

The API server validates every DRA node selector with core's ``ValidateNodeSelector`` (labels
values included): ResourceSlice ``spec.nodeSelector`` and per-device ``nodeSelector``, claim
``status.allocation.nodeSelector``, the 1.31 DeviceClass ``suitableNodes`` and the v1alpha2
``suitableNodes`` / ``availableOnNodes``. A selector needs at least one term; each
``matchExpressions`` requirement needs a label key and values that fit its operator; each
``matchFields`` requirement may only use ``metadata.name`` with ``In``/``NotIn`` and one node name.

Rules: DRA405 node-selector-invalid, DRA406 slice-node-selector-one-term (only when asked for).
This module has no ``check``: it is not in the registry, other check modules call it.
"""
from __future__ import annotations

from typing import Any

from ..paths import FieldPath
from ..kube.releases import Release
from ..problems import Problem
from ..kube.validation import is_dns1123_subdomain, is_qualified_name, is_valid_label_value

NODE_SELECTOR_INVALID = "DRA405"
ONE_TERM = "DRA406"

RULES = ("DRA405", "DRA406")

# Requirement values are checked as label values since Kubernetes 1.32 (kubernetes#128212);
# older servers accepted any string there.
_VALUES_CHECKED_SINCE = 32

_SET_OPERATORS = ("In", "NotIn")
_EXISTS_OPERATORS = ("Exists", "DoesNotExist")
_COMPARE_OPERATORS = ("Gt", "Lt")
_OPERATORS = _SET_OPERATORS + _EXISTS_OPERATORS + _COMPARE_OPERATORS
_NODE_NAME_FIELD = "metadata.name"


def node_selector_problems(selector: Any, path: FieldPath, release: Release, *, rule: str = NODE_SELECTOR_INVALID,
                           one_term_rule: str | None = None) -> list[Problem]:
    """Problems of one node selector, as core ``ValidateNodeSelector`` reports them.

    ``selector`` is the value at canonical ``path`` (the ``nodeSelector`` field itself). A value
    that is not a mapping is left to the schema stage (nothing is reported). ``rule`` is the rule
    id for the core rules (default DRA405 node-selector-invalid; callers may pass their own).
    With ``one_term_rule`` set, more than one term is reported under that rule as Invalid at
    ``<path>.nodeSelectorTerms`` ("must have exactly one node selector term"), the extra rule
    ResourceSlice ``spec.nodeSelector`` has. ``release`` decides whether requirement values are
    checked as label values (1.32+).
    """
    if not isinstance(selector, dict):
        return []
    terms_path = path.child("nodeSelectorTerms")
    terms = selector.get("nodeSelectorTerms")
    if terms is None or terms == []:
        return [Problem(rule, terms_path,
                        "a node selector must have at least one node selector term; add a term with "
                        "`matchExpressions` or `matchFields` (API server: Required value)")]
    if not isinstance(terms, list):
        return []
    problems: list[Problem] = []
    check_values = release.at_least(_VALUES_CHECKED_SINCE)
    for i, term in enumerate(terms):
        if not isinstance(term, dict):
            continue
        term_path = terms_path.child(i)
        for j, req in enumerate(_list(term.get("matchExpressions"))):
            if isinstance(req, dict):
                problems += _expression(req, term_path.child("matchExpressions", j), rule, check_values)
        for j, req in enumerate(_list(term.get("matchFields"))):
            if isinstance(req, dict):
                problems += _field(req, term_path.child("matchFields", j), rule)
    if one_term_rule is not None and len(terms) > 1:
        problems.append(Problem(one_term_rule, terms_path,
                                f"{len(terms)} node selector terms; a ResourceSlice node selector must have exactly "
                                "one term (terms are ORed, which the scheduler cannot merge across slices): combine "
                                "the requirements into one term, or publish one slice per term (API server: "
                                "Invalid value)"))
    return problems


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _expression(req: dict, path: FieldPath, rule: str, check_values: bool) -> list[Problem]:
    problems: list[Problem] = []
    op = req.get("operator")
    values = _list(req.get("values"))
    if op in _SET_OPERATORS and not values:
        problems.append(Problem(rule, path.child("values"),
                                f"operator {op} needs at least one value; list the label values to match, or use "
                                "Exists (API server: Required value)"))
    elif op in _EXISTS_OPERATORS and values:
        problems.append(Problem(rule, path.child("values"),
                                f"operator {op} takes no values, found {len(values)}; remove `values` (API server: "
                                "Forbidden)"))
    elif op in _COMPARE_OPERATORS and len(values) != 1:
        problems.append(Problem(rule, path.child("values"),
                                f"operator {op} takes exactly one value (an integer), found {len(values)} (API server: "
                                "Required value)"))
    elif op not in _OPERATORS:
        problems.append(Problem(rule, path.child("operator"),
                                f"{op!r} is not a valid selector operator; use one of {', '.join(_OPERATORS)} "
                                "(API server: Invalid value)"))
    key = req.get("key", "")
    if isinstance(key, str):
        for msg in is_qualified_name(key):
            problems.append(Problem(rule, path.child("key"),
                                    f"key {key!r} is not a valid label key: {msg} (API server: Invalid value)"))
    if check_values:
        for k, value in enumerate(values):
            if isinstance(value, str):
                for msg in is_valid_label_value(value):
                    problems.append(Problem(rule, path.child("values", k),
                                            f"value {value!r} is not a valid label value: {msg}; node labels can "
                                            "never have it (API server: Invalid value)"))
    return problems


def _field(req: dict, path: FieldPath, rule: str) -> list[Problem]:
    problems: list[Problem] = []
    op = req.get("operator")
    values = _list(req.get("values"))
    if op in _SET_OPERATORS:
        if len(values) != 1:
            problems.append(Problem(rule, path.child("values"),
                                    f"a node field selector with operator {op} takes exactly one value (a node name), "
                                    f"found {len(values)}; use one term per node (API server: Required value)"))
    else:
        problems.append(Problem(rule, path.child("operator"),
                                f"{op!r} is not a valid operator for `matchFields`; only In and NotIn are supported "
                                "(API server: Invalid value)"))
    key = req.get("key")
    if key != _NODE_NAME_FIELD:
        problems.append(Problem(rule, path.child("key"),
                                f"{key!r} is not a valid field selector key; `matchFields` only supports "
                                f"{_NODE_NAME_FIELD} (use `matchExpressions` for labels) (API server: Invalid value)"))
        return problems
    for k, value in enumerate(values):
        if isinstance(value, str):
            for msg in is_dns1123_subdomain(value):
                problems.append(Problem(rule, path.child("values", k),
                                        f"{value!r} is not a valid node name: {msg} (API server: Invalid value)"))
    return problems
