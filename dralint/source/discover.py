"""Turn the paths a user names into the list of files to read, and say which of them are not manifests."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Sequence

from ..globs import glob_regex
from . import kustomize
from .limits import MAX_FILE_BYTES
from .records import SourceProblem

EXTENSIONS = (".yaml", ".yml", ".json")
STDIN = "-"
# Folders of other people's files, never walked into (hidden folders such as .git are skipped too);
# a file named explicitly is still read.
DEFAULT_EXCLUDED_FOLDERS = frozenset({"node_modules", "vendor", "third_party", "bower_components"})


@dataclass(frozen=True)
class Exclude:
    """A glob (``.gitignore`` style) of paths not to read, relative to ``root``."""

    pattern: str
    root: str

    def matches(self, path: str) -> bool:
        relative = os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/")
        return bool(glob_regex(self.pattern).fullmatch(relative))


@dataclass(frozen=True)
class Reading:
    """How the user's paths are read: what to leave out, and the largest file read."""

    exclude: tuple[Exclude, ...] = ()
    max_bytes: int = MAX_FILE_BYTES


@dataclass
class Plan:
    """The files to read, the paths that could not be found, and the files that are not manifests
    (file → why: ``kustomize-patch`` or ``kustomization``; read, but judged as nothing)."""

    files: list[str]
    problems: list[SourceProblem]
    skip: dict[str, str] = field(default_factory=dict)


def plan(paths: Sequence[str], reading: Reading = Reading()) -> Plan:
    """:func:`discover`, plus which files Kustomize uses as its configuration and as patches."""
    files, problems = discover(paths, reading)
    return Plan(files, problems, kustomize.non_manifests(files))


def discover(paths: Sequence[str], reading: Reading = Reading()) -> tuple[list[str], list[SourceProblem]]:
    """Expand ``paths`` into files, in the order given, folders recursively and sorted.

    Folders contribute their ``*.yaml``, ``*.yml`` and ``*.json`` files, skipping hidden entries
    (``.git``, ``.cache``...) and the folders of :data:`DEFAULT_EXCLUDED_FOLDERS`, and following
    symbolic links to folders (each folder is walked once, so a link back up the tree is no loop).
    A file named explicitly is kept whatever its name; ``reading.exclude`` leaves out any path.
    ``-`` stays ``-`` (stdin). A path that does not exist is an ``unreadable`` problem. A file
    reached twice (``a/`` and ``./a``, or a link to it) is listed once.
    """
    files: list[str] = []
    problems: list[SourceProblem] = []
    seen: set[str] = set()

    def add(path: str) -> None:
        key = path if path == STDIN else os.path.realpath(path)
        if key not in seen and not _excluded(path, reading):
            seen.add(key)
            files.append(path)

    for path in paths:
        if path == STDIN:
            add(path)
        elif os.path.isdir(path):
            for found in _walk(path, reading, problems):
                add(found)
        elif os.path.exists(path) or os.path.islink(path):
            add(path)
        else:
            problems.append(SourceProblem("unreadable", "no such file or directory", path, 1, 1))
    return files, problems


def _excluded(path: str, reading: Reading) -> bool:
    return path != STDIN and any(rule.matches(path) for rule in reading.exclude)


def _walk(root: str, reading: Reading, problems: list[SourceProblem]) -> list[str]:
    found: list[str] = []
    walked: set[str] = set()

    def on_error(error: OSError) -> None:
        problems.append(
            SourceProblem("unreadable", f"cannot list folder: {error.strerror}", error.filename or root, 1, 1)
        )

    for folder, dirs, names in os.walk(root, onerror=on_error, followlinks=True):
        real = os.path.realpath(folder)
        if real in walked:  # reached again through a symbolic link: walked already
            dirs[:] = []
            continue
        walked.add(real)
        # Pruning in place stops os.walk from descending into these folders.
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in DEFAULT_EXCLUDED_FOLDERS
                   and not _excluded(os.path.join(folder, d), reading)]
        # Real folders before links, so that a folder linked from a sibling keeps its own name.
        dirs.sort(key=lambda d: os.path.islink(os.path.join(folder, d)))
        for name in names:
            if not name.startswith(".") and name.lower().endswith(EXTENSIONS):
                found.append(os.path.join(folder, name))
    # Sorted by path components, so a folder's files and subfolders interleave by name.
    return sorted(found, key=lambda path: path.split(os.sep))
