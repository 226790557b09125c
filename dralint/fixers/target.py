"""What a fixer looks at: the finding's object, its path in the user's document, and the text's layout."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from ..findings import Finding
from ..fixes import Fix, Safety, line_starts
from ..manifest import Manifest, identify
from ..paths import FieldPath
from ..releases import Release
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
        whole = Layout(self.text, [], line_starts(self.text))
        return Fix(title, safety, text_edits(self.finding.file, whole, moved))


def targets(findings: Sequence[Finding], files: Sequence[Any], release: Release) -> Iterator[tuple[Finding, Target]]:
    """Each finding that can be placed in its file's text, with its target."""
    by_name = {f.name: f for f in files}
    layouts: dict[int, Layout | None] = {}
    for finding in findings:
        source = by_name.get(finding.file)
        if source is None or not finding.object or finding.line < 1:
            continue
        document = _document(source, finding.line)
        if document is None or document.chunk is None or _ambiguous(source, document):
            continue
        manifest = next((m for m in identify(document) if isinstance(m, Manifest) and m.display == finding.object),
                        None)
        if manifest is None:
            continue
        chunk = document.chunk
        key = id(chunk.text), chunk.start
        if key not in layouts:
            try:
                layouts[key] = read_layout(chunk.body)
            except LayoutError:
                layouts[key] = None
        layout = layouts[key]
        root = _root(layout, document.line - chunk.line_offset - 1) if layout is not None else None
        if root is None:
            continue
        try:
            path = FieldPath.parse(finding.field)
        except ValueError:  # a key holding `[` spells no path back (found by the editor's random edits)
            continue
        yield finding, Target(finding, manifest, path, layout, root, chunk.text, chunk.start, release)


def _ambiguous(source: Any, document: Any) -> bool:
    """A document with a duplicate key: the value read is one of several texts, so no edit of the
    text is certain to fix it (found by the fixes' property test: two `exactly:` in one request)."""
    return any(p.kind == "duplicate-key" and p.document == document.index for p in source.problems)


def _document(source: Any, line: int) -> Any:
    """The document of ``source`` that holds file line ``line`` (the last one starting at or before it)."""
    found = None
    for document in source.documents:
        if document.line <= line:
            found = document
    return found


def _root(layout: Layout, line: int) -> Node | None:
    """The root node starting on 0-based chunk line ``line``."""
    return next((r for r in layout.roots if r is not None and r.line == line), None)
