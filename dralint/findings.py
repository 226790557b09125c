"""The finding record every stage produces and every reporter consumes."""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from enum import Enum
from typing import Any, Mapping

from .fixes import Fix
from .paths import ROOT, FieldPath


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 2, "warning": 1, "info": 0}[self.value]


class Category(str, Enum):
    INPUT = "input"
    SCHEMA = "schema"
    SEMANTIC = "semantic"
    CEL = "cel"
    REFERENCE = "reference"
    FEASIBILITY = "feasibility"
    VERSION = "version"
    BEST_PRACTICE = "best-practice"


@dataclass(frozen=True)
class Position:
    """1-based line and column in a file; 0 means unknown (objects that came without a file)."""

    line: int = 0
    column: int = 0


@dataclass(frozen=True)
class Location:
    """Where a finding is: its file, the region it covers there, and the field path in its object.

    ``end`` is exclusive: the position just after the key, scalar or line at ``start`` (what an
    editor underlines, SARIF's end). Unknown (0, 0) when the engine held no text to measure it in
    (input errors, objects without a file). ``path`` is the user's path from the object's root.
    """

    file: str
    start: Position = Position()
    end: Position = Position()
    path: FieldPath = ROOT


@dataclass(frozen=True)
class Finding:
    """One problem, located in the user's own file and field path."""

    rule: str
    name: str
    severity: Severity
    category: Category
    message: str
    location: Location
    object: str = ""
    details: Mapping[str, Any] | None = dataclasses.field(default=None, compare=False)
    fix: Fix | None = dataclasses.field(default=None, compare=False)  # filled when asked (Options.fixes)

    @property
    def file(self) -> str:
        return self.location.file

    @property
    def line(self) -> int:
        """The start's line (1-based; 0 when unknown)."""
        return self.location.start.line

    @property
    def column(self) -> int:
        """The start's column (1-based; 0 when unknown)."""
        return self.location.start.column

    @functools.cached_property
    def field(self) -> str:
        """The field path as Kubernetes spells it: only what the reporters print (kept once made, as
        sorting and every reporter ask for it)."""
        return self.location.path.render()

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of a finding (``--format json`` and the conformance runners rely on it)."""
        out: dict[str, Any] = {
            "rule": self.rule,
            "name": self.name,
            "severity": self.severity.value,
            "category": self.category.value,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "object": self.object,
            "field": self.field,
        }
        if self.details:
            out["details"] = dict(self.details)
        if self.fix is not None:
            out["fix"] = self.fix.to_dict()
        return out

    def sort_key(self) -> tuple[str, int, int, str, str, str]:
        """Findings in file order, then by rule, field and message (a stable, readable report)."""
        return (self.file, self.line, self.column, self.rule, self.field, self.message)
