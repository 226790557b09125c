"""The finding record every stage produces and every reporter consumes."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum
from typing import Any, Mapping

from .fixes import Fix


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
class Finding:
    """One problem, located in the user's own file and field path."""

    rule: str
    name: str
    severity: Severity
    category: Category
    message: str
    file: str
    line: int
    column: int
    object: str = ""
    field: str = ""
    details: Mapping[str, Any] | None = dataclasses.field(default=None, compare=False)
    fix: Fix | None = dataclasses.field(default=None, compare=False)  # filled when asked (Options.fixes)

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

    def sort_key(self) -> tuple:
        return (self.file, self.line, self.column, self.rule, self.field, self.message)
