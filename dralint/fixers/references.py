"""Fixes of references to a request that differ from its name only by case (``GPU`` for ``gpu``).

Request names are DNS labels, lower case only, so such a reference can never match as written,
and the one name it matches case-blind is certainly the one meant.
"""
from __future__ import annotations

from typing import Any, Iterable

from ..checks.fields import request_names, spec_path
from ..convert import to_canonical
from ..fixes import Fix
from ..yamltext.edits import replace_scalar


def request_reference(target: Any) -> Fix | None:
    """A constraint's or config's ``requests`` entry (DRA223, DRA227) naming a request of its own claim."""
    canonical = to_canonical(target.manifest)
    names = request_names(canonical.get(*spec_path(canonical.kind), "devices", "requests"))
    known = [n for n in names if n] + [f"{n}/{s}" for n, subs in names.items() if subs for s in subs]
    return _recase(target, known)


def container_request(target: Any) -> Fix | None:
    """A container's ``claims[].request`` (DRA604) naming a request of the claim or template it uses."""
    details = target.finding.details or {}
    return _recase(target, details.get("requests") or ())


def _recase(target: Any, known: Iterable[str]) -> Fix | None:
    node = target.node()
    if node is None or node.kind != "scalar" or not isinstance(node.value, str):
        return None
    written = node.value
    matches = sorted({k for k in known if k.lower() == written.lower() and k != written})
    if len(matches) != 1:
        return None
    return target.fix(f"Change `{written}` to `{matches[0]}` (request names are lower case)",
                      [replace_scalar(node, matches[0])])
