"""source: files, stdin and text into documents whose every value keeps its file:line:column.

Values are exactly what Kubernetes reads (sigs.k8s.io/yaml over goyaml.v2); see
docs/yaml-parsing.md for the rules and the parser choice.
"""
from .composer import DocumentComposer, yaml_events
from .discover import Exclude, Plan, Reading, discover, plan
from .loader import document_from_value, load_file, load_text
from .records import SourceDocument, SourceFile, SourceProblem

__all__ = [
    "DocumentComposer",
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
    "yaml_events",
]
