"""The schema stage: an object against the JSON Schema of its own version and release.

Reports what the API server's decoding rejects (unknown fields under strict field validation,
wrong types), leaving required fields, enums and formats of names to the semantic rules.
"""
from __future__ import annotations

from .problems import UNKNOWN_FIELD, WRONG_TYPE, SchemaProblem
from .required import missing_top_level
from .served import deprecation, group_kinds, known_releases, served_releases, serves, serving
from .stage import check
from .validator import validate

__all__ = ["SchemaProblem", "UNKNOWN_FIELD", "WRONG_TYPE", "check", "deprecation", "group_kinds", "known_releases",
           "missing_top_level", "served_releases", "serves", "serving", "validate"]
