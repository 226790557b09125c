"""What a reporter needs beside the findings: the catalog, the files, the verdict, the terminal."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..catalog import Catalog, Rule
from ..findings import Severity
from ..project import rule_doc_url


@dataclass(frozen=True)
class ReportContext:
    """Everything but the ``RunResult`` that a format may show."""

    catalog: Catalog
    exit_code: int
    files: tuple[str, ...] = ()          # every linted file, in order (clean ones too)
    colour: bool = False
    fail_on: Severity = Severity.ERROR   # the least severity that fails the run
    suppressed: int = 0                  # findings hidden by suppressions and per-path ignores
    base: Path = field(default_factory=Path.cwd)

    def relative(self, file: str) -> str:
        """``file`` relative to the working folder when it lies below it, with ``/`` separators."""
        if not file or file.startswith("<"):
            return file
        path = Path(file)
        if path.is_absolute():
            try:
                path = path.relative_to(self.base)
            except ValueError:
                return path.as_posix()
        return path.as_posix().removeprefix("./")


def rule_url(rule: Rule) -> str:
    """The rule's section of docs/rules.md in the project's repository (see project.py)."""
    return rule_doc_url(rule.id)


def unwrap(text: str) -> str:
    """Catalog prose without its hard line breaks (paragraphs stay apart)."""
    return "\n\n".join(" ".join(p.split()) for p in text.split("\n\n") if p.strip())


def file_uri(path: str) -> str:
    """A relative URI reference for a file path (``<stdin>`` and spaces percent-encoded)."""
    return quote(path.replace(os.sep, "/"), safe="/-._~")


# How the summaries call the files that are no manifests (source: discover.Plan.skip, templates.py).
SKIPPED_NAMES = {"helm-template": "Helm template", "kustomize-patch": "kustomize patch",
                 "kustomization": "kustomization"}


def counts_line(result: Any) -> str:
    """``10 file(s), 11 object(s)``, then what was read but not judged: files that are no
    manifests and documents that are no Kubernetes objects."""
    parts = [f"{result.files} file(s), {result.objects} object(s)"]
    skipped = getattr(result, "skipped", {}) or {}
    parts += [f"{len(files)} {SKIPPED_NAMES.get(why, why)} file(s) skipped" for why, files in skipped.items()]
    if getattr(result, "foreign", 0):
        parts.append(f"{result.foreign} document(s) not Kubernetes objects")
    unread = getattr(result, "unread", {}) or {}
    if unread:
        parts.append(f"{sum(unread.values())} object(s) of unknown workload kinds not read")
    return ", ".join(parts)
