"""source: files, stdin and text into documents whose every value keeps its file:line:column.

Values are exactly what Kubernetes reads (sigs.k8s.io/yaml over goyaml.v2); see
docs/yaml-parsing.md for the rules and the parser choice. The exact reader over libyaml
(:mod:`.composer`: ``DocumentComposer``, ``yaml_events``) is imported where it is needed: a file
the fast reader takes whole never loads PyYAML.
"""
from .discover import Exclude, Plan, Reading, discover, plan
from .loader import document_from_value, load_file, load_text
from .records import SourceDocument, SourceFile, SourceProblem

__all__ = [
    "Exclude",
    "Plan",
    "Reading",
    "SourceDocument",
    "SourceFile",
    "SourceProblem",
    "discover",
    "document_from_value",
    "load_file",
    "load_text",
    "plan",
]
