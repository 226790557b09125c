"""The schema stage's findings on one object, as problems: DRA101 (unknown field), DRA102 (wrong
type) and DRA103 (a top-level field its schema requires is missing).

The stage runs before conversion, so each problem's path is the user's, under the manifest's base.
"""
from __future__ import annotations

from typing import Iterator, Sequence

from ..kube.releases import Release
from ..manifest import Manifest
from ..paths import FieldPath, value_at
from ..problems import Problem
from ..request_shape import Misplaced
from ..source.pitfalls import quote_hint
from .problems import UNKNOWN_FIELD
from .required import missing_top_level
from .validator import validate


def check(manifest: Manifest, release: Release, strict: bool,
          shapes: Sequence[Misplaced] = ()) -> Iterator[Problem]:
    """What the API server's decoding and the schema-based tools say of ``manifest`` at ``release``;
    fields written in the other version's shape (``shapes``) are one finding per request, at its
    first field, with the shape's hint."""
    doc = manifest.document
    for name in missing_top_level(manifest.value, release.version, manifest.api_version, manifest.kind):
        yield Problem("DRA103", FieldPath((name,)),
                      f"{manifest.kind} has no `{name}`, which its schema requires: schema-based tools and kubectl's "
                      f"client-side validation refuse it; the API server accepts it and stores an empty {name}",
                      at=FieldPath())
    reshaped = {path: shape for shape in shapes for path in shape.paths()}
    reported: set[int] = set()
    for problem in validate(manifest.value, release.version, manifest.api_version, manifest.kind, strict=strict):
        rule = "DRA101" if problem.kind == UNKNOWN_FIELD else "DRA102"
        message = problem.message
        shape = reshaped.get(problem.path) if rule == "DRA101" else None
        if shape is not None:
            if id(shape) in reported:
                continue
            reported.add(id(shape))
            message = shape.hint()
        if rule == "DRA102" and "string" in message.split(", found", 1)[0]:  # "expected string, found …"
            full = FieldPath(tuple(manifest.base) + tuple(problem.path))
            message += quote_hint(doc, full, value_at(manifest.value, problem.path))
        yield Problem(rule, problem.path, message)
