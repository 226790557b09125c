"""Suppressions: the findings a user has chosen to accept, written next to the manifest.

Three spellings, each naming rules by id or name (comma-separated), or none for every rule:

* ``# dralint: ignore=DRA201,request-count-positive reason...`` — a trailing comment covers its
  own line; a comment alone on its line covers the next line that holds YAML (comment lines in
  between are skipped, so several suppressions can stack above one line);
* ``# dralint: ignore-file=DRA201`` or ``# dralint: ignore-file`` anywhere — the whole file;
* the annotation ``dralint.io/ignore: "DRA201,DRA305"`` on an object — every finding of that
  object (this one also works in the webhook, where there are no comments).

Everything here is pure: parse suppressions from text and objects, then ``apply`` them to a
list of findings, optionally reporting the ones that matched nothing as DRA910 findings.
"""
from __future__ import annotations

import bisect
import dataclasses
import difflib
import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterable, Mapping, Sequence

from .catalog import Catalog
from .findings import Finding, Location, Position
from .paths import ROOT, FieldPath
from .rule_filter import RuleFilter

ANNOTATION = "dralint.io/ignore"
UNUSED_RULE = "DRA910"
_ANNOTATION_PATH = FieldPath(("metadata", "annotations", ANNOTATION))
_DIRECTIVE = re.compile(
    r"#[ \t]*dralint:[ \t]*(?P<kind>ignore-file|ignore)\b"
    r"(?:[ \t]*=[ \t]*(?P<rules>[\w.-]+(?:[ \t]*,[ \t]*[\w.-]+)*))?(?P<reason>[^\n]*)")


class Scope(str, Enum):
    LINE = "line"
    FILE = "file"
    OBJECT = "object"


@dataclass(frozen=True)
class Suppression:
    """One ``ignore`` directive: where it is written, what it covers and which rules it names."""

    file: str
    line: int
    column: int
    scope: Scope
    tokens: tuple[str, ...]        # rule ids or names as written; () means every rule
    covers: int = 0                # the line a LINE suppression covers
    object: str = ""               # the object an OBJECT suppression covers (``Finding.object``)
    reason: str = ""

    def covers_finding(self, finding: Finding) -> bool:
        """Whether the finding is in this suppression's reach (whatever its rule)."""
        if finding.file != self.file:
            return False
        if self.scope is Scope.FILE:
            return True
        if self.scope is Scope.LINE:
            return finding.line == self.covers
        return finding.object == self.object

    @property
    def spelling(self) -> str:
        """How the user wrote it, for messages."""
        if self.scope is Scope.OBJECT:
            return f'{ANNOTATION}: "{",".join(self.tokens)}"'
        kind = "ignore-file" if self.scope is Scope.FILE else "ignore"
        return f"# dralint: {kind}" + (f"={','.join(self.tokens)}" if self.tokens else "")


def parse_comments(text: str, file: str) -> list[Suppression]:
    """The ``# dralint: ignore...`` comments of one YAML file's text.

    A ``#`` counts only where YAML reads a comment: at the start of a line or after blank space,
    and outside any string (a block scalar holding ``# dralint:`` lines is content, not a comment).
    """
    if "dralint:" not in text:  # the common case costs one scan of the text
        return []
    lines = text.splitlines()
    strings = _string_spans(text)
    found: list[Suppression] = []
    for number, line in enumerate(lines, start=1):
        if "dralint:" not in line:
            continue
        for match in _DIRECTIVE.finditer(line):
            col = match.start()
            if (col > 0 and line[col - 1] not in " \t") or _inside(strings, number, col):
                continue
            own_line = not line[:col].strip()
            tokens = tuple(t.strip() for t in (match.group("rules") or "").split(",") if t.strip())
            scope = Scope.FILE if match.group("kind") == "ignore-file" else Scope.LINE
            covers = _next_content_line(lines, number) if own_line else number
            found.append(Suppression(file, number, col + 1, scope, tokens, covers=covers,
                                     reason=match.group("reason").strip()))
            break  # the rest of the line is this comment's reason
    return found


def from_object(value: Any, *, file: str, object: str, line: int = 0, column: int = 0) -> Suppression | None:
    """The ``dralint.io/ignore`` annotation of one object, if it has one."""
    meta = value.get("metadata") if isinstance(value, Mapping) else None
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    text = annotations.get(ANNOTATION) if isinstance(annotations, Mapping) else None
    if not isinstance(text, str):
        return None
    tokens = tuple(t.strip() for t in text.split(",") if t.strip())
    return Suppression(file, line, column, Scope.OBJECT, tokens, object=object)


def collect(files: Iterable[Any], manifests: Iterable[Any]) -> list[Suppression]:
    """Comment suppressions of loaded source files and annotation suppressions of their objects.

    ``files`` are ``source.SourceFile`` records (their documents keep the file's text);
    ``manifests`` are ``manifest.Manifest`` objects (the linted ones, not cluster state).
    """
    found: list[Suppression] = []
    for f in files:
        text = next((d.chunk.text for d in f.documents if d.chunk is not None), None)
        if text is not None:
            found.extend(parse_comments(text, f.name))
    for manifest in manifests:
        doc = manifest.document
        sup = from_object(manifest.value, file=doc.file, object=manifest.display)
        if sup is not None:
            # Positions cost a re-read of the document: only annotated objects pay for one.
            pos = doc.locate(FieldPath(tuple(manifest.base) + tuple(_ANNOTATION_PATH)))
            found.append(dataclasses.replace(sup, line=pos.line, column=pos.column))
    return found


@dataclass(frozen=True)
class Outcome:
    """The findings left after suppressions, and how many were suppressed."""

    findings: list[Finding]
    suppressed: int


def apply(findings: Sequence[Finding], suppressions: Sequence[Suppression], catalog: Catalog, rules: RuleFilter,
          *, report_unused: bool = False, policy_rules: Mapping[str, str] | None = None) -> Outcome:
    """The findings no suppression covers, plus a DRA910 finding for every rule named in a
    suppression that is no rule, and (with ``report_unused``) for every suppression, or rule named
    in one, that matched nothing. Order is kept; new findings are sorted in.

    ``policy_rules`` (id → name) are rules judged beside the catalog's that no suppression reaches:
    a suppression naming one is told so.
    """
    resolved = [_resolve(s, catalog, policy_rules or {}) for s in suppressions]
    used: set[tuple[int, str]] = set()
    kept: list[Finding] = []
    for finding in findings:
        hit = False
        for i, (sup, ids) in enumerate(zip(suppressions, resolved, strict=True)):
            if sup.covers_finding(finding) and (not sup.tokens or finding.rule in ids.values()):
                hit = True
                used.add((i, "*" if not sup.tokens else finding.rule))
        if not hit:
            kept.append(finding)
    suppressed = len(findings) - len(kept)
    if UNUSED_RULE not in catalog.rules or not rules.selected(catalog.get(UNUSED_RULE)):
        return Outcome(kept, suppressed)
    # A rule name that names no rule is a typo that never worked: reported on every run. Stale
    # suppressions of real rules only when asked (``--report-unused-ignores``).
    unused = [_unused(sup, token, rule_id, catalog, rules, policy_rules or {})
              for i, (sup, ids) in enumerate(zip(suppressions, resolved, strict=True))
              for token, rule_id in (ids.items() if sup.tokens else [("", "*")])
              if (i, rule_id) not in used and (report_unused or not rule_id)]
    if not unused:
        return Outcome(kept, suppressed)
    return Outcome(sorted(kept + [f for f in unused if f is not None], key=Finding.sort_key), suppressed)


def _resolve(sup: Suppression, catalog: Catalog, policy_rules: Mapping[str, str]) -> dict[str, str]:
    """Token as written → rule id ('' for a token that names no rule, or a policy rule: none it can reach)."""
    out: dict[str, str] = {}
    for token in sup.tokens:
        rule = None if _policy_rule(token, policy_rules) else catalog.resolve(token)
        out[token] = rule.id if rule else ""
    return out


def _unused(sup: Suppression, token: str, rule_id: str, catalog: Catalog, rules: RuleFilter,
            policy_rules: Mapping[str, str]) -> Finding | None:
    where = {Scope.LINE: f"line {sup.covers}", Scope.FILE: "this file", Scope.OBJECT: sup.object}[sup.scope]
    policy_rule = _policy_rule(token, policy_rules) if not rule_id else None
    if policy_rule is not None:
        message = (f"`{sup.spelling}` names {policy_rule[0]} ({policy_rule[1]}), an organisation rule of the "
                   "cluster's policy: an object cannot suppress it (the cluster's admins decide it in the policy)")
    elif not rule_id:
        # A letter O for a zero is the commonest slip in an id; else the closest id or name.
        zero = catalog.resolve(token.upper().replace("O", "0")) if token.upper().startswith("DRA") else None
        close = [zero.id] if zero else difflib.get_close_matches(token, list(catalog.rules) + [r.name for r in catalog], n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        message = f"`{sup.spelling}` names {token!r}, which is no dralint rule{hint}"
    elif rule_id != "*" and not rules.selected(catalog.get(rule_id)):
        return None  # the rule did not run, so the suppression could not match: not evidence it is stale
    elif rule_id == "*":
        message = f"`{sup.spelling}` matched no finding on {where}; remove it"
    else:
        message = f"`{sup.spelling}`: {rule_id} reported nothing on {where}; remove {token} from it"
    unused = catalog.get(UNUSED_RULE)
    return Finding(rule=unused.id, name=unused.name, severity=rules.severity(unused, None), category=unused.category,
                   message=message, object=sup.object,
                   location=Location(sup.file, Position(sup.line, sup.column),
                                     path=_ANNOTATION_PATH if sup.scope is Scope.OBJECT else ROOT))


def _policy_rule(token: str, policy_rules: Mapping[str, str]) -> tuple[str, str] | None:
    """(id, name) of the policy rule ``token`` names by id (any case) or name; None when it names none."""
    for rule_id, name in policy_rules.items():
        if token.upper() == rule_id or token == name:
            return rule_id, name
    return None


def _next_content_line(lines: Sequence[str], number: int) -> int:
    """The first line after ``number`` (1-based) that is neither blank nor only a comment."""
    for later in range(number, len(lines)):
        stripped = lines[later].strip()
        if stripped and not stripped.startswith("#"):
            return later + 1
    return number


def _string_spans(text: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) positions, 1-based line and 0-based column, of every YAML scalar in ``text``.

    Only quoted and block scalars can hold `` #`` (in a plain scalar it starts a comment); a text
    the scanner rejects yields the spans read before the error.
    """
    import yaml  # only for a file that holds a suppression comment

    spans: list[tuple[tuple[int, int], tuple[int, int]]] = []
    try:
        for token in yaml.scan(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if isinstance(token, yaml.ScalarToken) and not token.plain:
                spans.append(((token.start_mark.line + 1, token.start_mark.column),
                              (token.end_mark.line + 1, token.end_mark.column)))
    except yaml.YAMLError:
        pass
    return spans


def _inside(spans: Sequence[tuple[tuple[int, int], tuple[int, int]]], line: int, column: int) -> bool:
    point = (line, column)
    i = bisect.bisect_right(spans, (point, (10**9, 0))) - 1
    return i >= 0 and spans[i][0] <= point < spans[i][1]
