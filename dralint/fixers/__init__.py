"""Which findings get a fix, and the fix itself (see :mod:`dralint.fixes` for the record).

One function per rule that has a fix, registered in ``FIXERS``; each rule's catalog entry
declares it (``autofix: safe|unsafe``) and a test keeps the two in step. A fixer gets the
finding's :class:`Target` (the object, the user's path, the text's layout) and returns a
:class:`~dralint.fixes.Fix` or None when the fix would not be certain enough to offer.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Sequence

from ..catalog import Catalog
from ..engine.result import Subject
from ..findings import Finding
from ..fixes import Fix, Safety
from ..kube.releases import Release
from ..yamltext.edits import EditRefused
from . import fields, references, requests
from .target import Target, targets

Fixer = Callable[[Target], "Fix | None"]

FIXERS: Mapping[str, Fixer] = {
    "DRA101": fields.unknown_field,
    "DRA206": requests.flat_request,
    "DRA223": references.request_reference,
    "DRA227": references.request_reference,
    "DRA604": references.container_request,
}


def attach(findings: Sequence[Finding], subjects: Mapping[Finding, Subject], files: Sequence[Any], release: Release,
           catalog: Catalog) -> list[Finding]:
    """``findings`` with a ``fix`` on each one that has one: ``subjects`` are what the engine held
    when it made them (``RunResult.subjects``), ``files`` the run's ``SourceFile`` s."""
    wanted = [f for f in findings if f.rule in FIXERS and catalog.rules[f.rule].autofix is not None]
    if not wanted:
        return list(findings)
    fixes: dict[int, Fix] = {}
    for finding, target in targets(wanted, subjects, files, release):
        try:
            fix = FIXERS[finding.rule](target)
        except EditRefused:  # the layout does not allow a faithful edit: the finding stays, without a fix
            fix = None
        if fix is not None:
            declared = catalog.rules[finding.rule].autofix
            if declared is Safety.UNSAFE and fix.safety is Safety.SAFE:
                fix = dataclasses.replace(fix, safety=Safety.UNSAFE)
            fixes[id(finding)] = fix
    return [dataclasses.replace(f, fix=fixes[id(f)]) if id(f) in fixes else f for f in findings]
