"""Go templates (Helm charts) are not YAML until rendered: recognised, so that they are skipped.

A chart's ``templates/`` hold text like ``{{- if .Values.gpu }}`` that YAML reads as nonsense
(every template would be an invalid-YAML error) or, quoted, as names no API server accepts. Such
a file is skipped; one note per run says to lint the rendered output instead:
``helm template RELEASE CHART | dralint -``.
"""
from __future__ import annotations

import functools
import os
import re

from .records import SourceFile

HELM_TEMPLATE = "helm-template"
_ACTION = re.compile(r"\{\{.*?\}\}")
_UNREADABLE_AS_YAML = frozenset({"syntax", "duplicate-key"})


def is_template(path: str, text: str, loaded: SourceFile) -> bool:
    """Whether ``text`` (read as ``loaded``) is a Go template: it holds template actions
    (``{{ … }}``) and either YAML cannot read it, or it sits in a Helm chart's ``templates/``."""
    if "{{" not in text or not _ACTION.search(text):
        return False
    if any(p.kind in _UNREADABLE_AS_YAML for p in loaded.problems):
        return True
    return path != "-" and in_chart_templates(os.path.dirname(os.path.abspath(path)))


@functools.lru_cache(maxsize=1024)  # the files of one folder ask about the same folders
def in_chart_templates(folder: str) -> bool:
    """``folder`` is a chart's ``templates/`` folder (beside a ``Chart.yaml``) or lies below one."""
    while True:
        parent = os.path.dirname(folder)
        if os.path.basename(folder) == "templates" and os.path.isfile(os.path.join(parent, "Chart.yaml")):
            return True
        if parent == folder:
            return False
        folder = parent
