"""Turn the paths a user names into the list of files to read."""
from __future__ import annotations

import os
from typing import Sequence

from dralint.source.records import SourceProblem

EXTENSIONS = (".yaml", ".yml", ".json")
STDIN = "-"


def discover(paths: Sequence[str]) -> tuple[list[str], list[SourceProblem]]:
    """Expand ``paths`` into files, in the order given, folders recursively and sorted.

    Folders contribute their ``*.yaml``, ``*.yml`` and ``*.json`` files, skipping hidden
    entries (``.git``, ``.cache``...); a file named explicitly is kept whatever its name;
    ``-`` stays ``-`` (stdin). A path that does not exist is an ``unreadable`` problem.
    A file reached twice is listed once.
    """
    files: list[str] = []
    problems: list[SourceProblem] = []
    seen: set[str] = set()

    def add(path: str) -> None:
        if path not in seen:
            seen.add(path)
            files.append(path)

    for path in paths:
        if path == STDIN:
            add(path)
        elif os.path.isdir(path):
            for found in _walk(path, problems):
                add(found)
        elif os.path.exists(path):
            add(path)
        else:
            problems.append(SourceProblem("unreadable", "no such file or directory", path, 0, 0))
    return files, problems


def _walk(root: str, problems: list[SourceProblem]) -> list[str]:
    found: list[str] = []

    def on_error(error: OSError) -> None:
        problems.append(
            SourceProblem("unreadable", f"cannot list folder: {error.strerror}", error.filename or root, 0, 0)
        )

    for folder, dirs, names in os.walk(root, onerror=on_error):
        # Pruning in place stops os.walk from descending into hidden folders.
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            if not name.startswith(".") and name.lower().endswith(EXTENSIONS):
                found.append(os.path.join(folder, name))
    # Sorted by path components, so a folder's files and subfolders interleave by name.
    return sorted(found, key=lambda path: path.split(os.sep))
