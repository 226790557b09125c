"""The engine: the one call behind the command line, the editor and the webhook (run.py), the
findings it makes of the stages' problems (emit.py), each object judged on its own (objects.py),
and judging shared by processes (split.py)."""
from __future__ import annotations

from ..options import Options
from .result import RunResult
from .run import (Surroundings, cluster_object, index_surroundings, lint_files, lint_paths, lint_text, load_cluster,
                  read_context, read_planned, review)
from .split import Split, judge_share

__all__ = ["Options", "RunResult", "Split", "Surroundings", "cluster_object", "index_surroundings", "judge_share",
           "lint_files", "lint_paths", "lint_text", "load_cluster", "read_context", "read_planned", "review"]
