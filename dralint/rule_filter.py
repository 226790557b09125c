"""Which rules the user selected or ignored, and at which severity they report."""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable, Mapping

from .catalog import Catalog, Rule
from .findings import Severity


class UsageError(ValueError):
    """An option value the user must correct (exit code 2)."""


@dataclass(frozen=True)
class RuleFilter:
    selected_ids: frozenset[str] | None
    ignored_ids: frozenset[str]
    severities: Mapping[str, Severity]

    @classmethod
    def build(cls, catalog: Catalog, select: Iterable[str], ignore: Iterable[str],
              severities: Mapping[str, str]) -> "RuleFilter":
        """Resolve ids, names and id prefixes (``DRA2`` = every 2xx rule, ``DRA`` = every rule); unknown ones are
        usage errors."""
        select = [t for t in select if t.strip()]
        sel = frozenset().union(*(resolve(catalog, t, "--select") for t in select)) if select else None
        ign = frozenset().union(*(resolve(catalog, t, "--ignore") for t in ignore if t.strip()))
        sev: dict[str, Severity] = {}
        for token, value in severities.items():
            try:
                level = Severity(value)
            except ValueError:
                raise UsageError(f"severity for {token}: {value!r} is not error, warning or info") from None
            for rule_id in resolve(catalog, token, "severity"):
                sev[rule_id] = level
        return cls(sel, ign, sev)

    def selected(self, rule: Rule) -> bool:
        if rule.id in self.ignored_ids:
            return False
        return self.selected_ids is None or rule.id in self.selected_ids or rule.id == "DRA000"

    def severity(self, rule: Rule, reported: Severity | None) -> Severity:
        return self.severities.get(rule.id) or reported or rule.severity


def resolve(catalog: Catalog, token: str, option: str) -> frozenset[str]:
    """Rule ids named by ``token``: an id, a name or an id prefix (``DRA`` itself: every rule); a usage error
    otherwise."""
    token = token.strip()
    rule = catalog.resolve(token)
    if rule:
        return frozenset({rule.id})
    upper = token.upper()
    if upper.startswith("DRA") and (upper[3:].isdigit() or upper == "DRA") and len(upper) < 6:
        matched = frozenset(r for r in catalog.rules if r.startswith(upper))
        if matched:
            return matched
    names = [r.name for r in catalog] + list(catalog.rules)
    close = difflib.get_close_matches(token, names, n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    raise UsageError(f"{option}: unknown rule {token!r}{hint} (dralint --list-rules lists them)")
