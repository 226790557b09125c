"""What a fixer looks at: the finding's object, its path in the user's document, and the text's layout."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

from ..engine.result import Subject
from ..findings import Finding
from ..fixes import Fix, Safety, line_starts
from ..manifest import Manifest
from ..paths import FieldPath
from ..kube.releases import Release
from ..yamltext.edits import Splice, indent_step, text_edits
from ..yamltext.layout import Layout, LayoutError, Node, read_layout


@dataclass(frozen=True)
class Target:
    """One finding located in its text: ``path`` is the user's path from the object's root."""

    finding: Finding
    manifest: Manifest
    path: FieldPath
    layout: Layout          # of the document's chunk (see ``offset``)
    root: Node              # the document's root node in that layout
    text: str               # the whole file
    offset: int             # where the chunk starts in ``text``
    release: Release
    starts: list[int]       # line_starts(text), counted once per file

    def node(self, path: Sequence[Any] | None = None) -> Node | None:
        """The node at ``path`` (default: the finding's) of the object."""
        return self.root.find(tuple(self.manifest.base) + tuple(self.path if path is None else path))

    def step(self) -> int:
        return indent_step(self.layout, self.root)

    def fix(self, title: str, splices: Sequence[Splice], safety: Safety = Safety.SAFE) -> Fix | None:
        """The fix made of ``splices`` (chunk offsets), located in the whole file; None when empty."""
        if not splices:
            return None
        moved = [Splice(s.start + self.offset, s.end + self.offset, s.new) for s in splices]
        whole = Layout(self.text, [], self.starts)
        return Fix(title, safety, text_edits(self.finding.file, whole, moved))


def targets(findings: Sequence[Finding], subjects: Mapping[Finding, Subject], files: Sequence[Any],
            release: Release) -> Iterator[tuple[Finding, Target]]:
    """Each finding that can be placed in its file's text, with its target.

    Whatever is worked out per file or per document (lines, layouts) is worked out once, so a
    file's findings are placed in time proportional to their number and the file's size.
    """
    by_name = {f.name: _File(f) for f in files}
    for finding in findings:
        subject = subjects.get(finding)
        if subject is None:
            continue
        document = subject.manifest.document
        file = by_name.get(document.file)
        if file is None or document.chunk is None or document.index in file.ambiguous:
            continue
        chunk = document.chunk
        layout = file.layout(chunk)
        root = _root(layout, document.line - chunk.line_offset - 1) if layout is not None else None
        if layout is None or root is None:
            continue
        yield finding, Target(finding, subject.manifest, subject.path, layout, root, chunk.text, chunk.start, release,
                              file.starts(chunk.text))


class _File:
    """One source file as the fixers look at it, each answer computed on first use and kept."""

    def __init__(self, source: Any) -> None:
        # A document with a duplicate key: the value read is one of several texts, so no edit of the
        # text is certain to fix it (found by the fixes' property test: two `exactly:` in one request).
        self.ambiguous = {p.document for p in source.problems if p.kind == "duplicate-key"}
        self._layouts: dict[tuple[int, int], Layout | None] = {}
        self._starts: dict[int, list[int]] = {}

    def layout(self, chunk: Any) -> Layout | None:
        key = id(chunk.text), chunk.start
        if key not in self._layouts:
            try:
                self._layouts[key] = read_layout(chunk.body)
            except LayoutError:
                self._layouts[key] = None
        return self._layouts[key]

    def starts(self, text: str) -> list[int]:
        if id(text) not in self._starts:
            self._starts[id(text)] = line_starts(text)
        return self._starts[id(text)]


def _root(layout: Layout, line: int) -> Node | None:
    """The root node starting on 0-based chunk line ``line``."""
    return next((r for r in layout.roots if r is not None and r.line == line), None)
