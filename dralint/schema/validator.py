"""Validate one object against the schema of its own version, as served by one release."""
from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Mapping

from .compiler import Compiled, compile_schema
from .problems import UNKNOWN_FIELD, SchemaProblem
from .served import schema_file

# 12 releases x at most 16 kinds each; enough for every schema we ship.
_CACHE_SIZE = 256


@lru_cache(maxsize=_CACHE_SIZE)
def compiled(release: str, api_version: str, kind: str) -> Compiled | None:
    """The compiled checker of a served kind (built once), or None when it is not served."""
    path = schema_file(release, api_version, kind)
    if path is None:
        return None
    return compile_schema(json.loads(path.read_text(encoding="utf-8")))


def validate(obj: Mapping[str, Any], release: str, api_version: str, kind: str, *,
             strict: bool = True) -> list[SchemaProblem]:
    """What the API server of ``release`` would refuse while decoding ``obj``.

    Reports wrong types everywhere and, when ``strict`` (``fieldValidation=Strict``), unknown
    fields; paths are the user's own. An object whose version or kind the release does not
    serve gives no problems here: ask :func:`serves` first.
    """
    if not all(isinstance(arg, str) for arg in (release, api_version, kind)):
        return []
    checker = compiled(release, api_version, kind)
    if checker is None:
        return []
    if checker.valid(obj):
        return []
    problems: list[SchemaProblem] = []
    checker.check(obj, (), problems)
    if not strict:
        problems = [problem for problem in problems if problem.kind != UNKNOWN_FIELD]
    return problems
