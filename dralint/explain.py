"""``--list-rules`` and ``--explain RULE``: the rule catalog, readable in a terminal."""
from __future__ import annotations

import difflib
import textwrap

from .catalog import Catalog, Rule
from .report.context import rule_url, unwrap

_HEADER = ("id", "name", "category", "severity", "summary")


class UnknownRule(LookupError):
    """``--explain`` was given something that names no rule."""


def rule_table(catalog: Catalog) -> str:
    """Every rule, one aligned row each: id, name, category, severity, summary."""
    rows = [(r.id, r.name, r.category.value, r.severity.value, r.summary) for r in catalog]
    widths = [max(len(row[i]) for row in rows + [_HEADER]) for i in range(4)]

    def fmt(row: tuple[str, ...]) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)) + "  " + row[4]

    lines = [fmt(_HEADER), "  ".join("-" * w for w in widths) + "  " + "-" * len(_HEADER[4])]
    return "\n".join(lines + [fmt(row) for row in rows]) + "\n"


def find_rule(catalog: Catalog, token: str) -> Rule:
    """The rule named by id (any case) or name; ``UnknownRule`` with a suggestion otherwise."""
    rule = catalog.resolve(token)
    if rule is None:
        close = difflib.get_close_matches(token, list(catalog.rules) + [r.name for r in catalog], n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise UnknownRule(f"--explain: unknown rule {token!r}{hint} (dralint --list-rules lists them)")
    return rule


def explain(rule: Rule) -> str:
    """A rule's documentation: summary, rationale, fix, the releases it concerns, and its examples."""
    out = [f"{rule.id} {rule.name} ({rule.category.value}, {rule.severity.value} by default)", "",
           _wrap(rule.summary), "", "Why", _wrap(rule.rationale, "  "), "", "Fix", _wrap(rule.fix, "  ")]
    if rule.api_server:
        out += ["", "API server", f"  {rule.api_server}"]
    if rule.kubernetes:
        out += ["", "Kubernetes", *(f"  {key}: {value}" for key, value in rule.kubernetes.items())]
    for example in rule.examples:
        flags = []
        if example.kube_version:
            flags.append(f"--kube-version {example.kube_version}")
        if example.feature_gates:
            gates = ",".join(f"{k}={str(v).lower()}" for k, v in example.feature_gates.items())
            flags.append(f"--feature-gates {gates}")
        verdict = "Fails" if example.verdict == "bad" else "Passes"
        out += ["", f"{verdict}: {example.title}" + (f" ({' '.join(flags)})" if flags else ""),
                textwrap.indent(example.manifest.rstrip("\n"), "    ")]
    out += ["", f"More: {rule_url(rule)}"]
    return "\n".join(out) + "\n"


def _wrap(text: str, indent: str = "") -> str:
    """Re-flow each paragraph to 100 columns (catalog text is written as wrapped YAML blocks)."""
    return "\n\n".join(textwrap.fill(p, width=100, initial_indent=indent, subsequent_indent=indent)
                       for p in unwrap(text).split("\n\n"))
