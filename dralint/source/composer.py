"""The exact reader: libyaml's event stream composed into Kubernetes values, with positions on demand.

goyaml.v2, which Kubernetes uses, is a Go port of libyaml, so libyaml's parser (through
PyYAML) accepts and rejects the same texts. On top of its events this module applies
goyaml.v2's decoding (scalars, anchors and aliases, merge keys, duplicate keys, alias limits)
and sigs.k8s.io/yaml's conversion to JSON, iteratively, so any nesting depth is safe.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any, Iterator, cast

import yaml
from yaml import events as ev

from ..fixes import line_starts
from ..paths import Steps
from . import scalars
from .limits import MAX_DEPTH, excessive_aliasing
from .positions import Chunk, NodeSpan, PositionIndex

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_C_PARSER = getattr(yaml, "CParser", None)
_MERGE_TAG = scalars.TAG_PREFIX + scalars.MERGE
# kubectl resolves merge keys while turning YAML into JSON (sigs.k8s.io/yaml, not strict), so it sends
# one value and `kubectl create` accepts the object; only YAML sent as is to a strict server
# (YAMLToJSONStrict: goyaml.v2's strict mode, go-yaml/yaml#410) is refused.
_MERGED = ("the last value is used (kubectl accepts this; an API server sent the YAML as is refuses it under "
           "strict field validation)")


@dataclass
class ComposedProblem:
    """A problem inside one chunk; lines and columns are 0-based and chunk-relative here."""

    kind: str
    message: str
    line: int
    column: int
    path: Steps | None = None


@dataclass
class ComposedDocument:
    """One document of a chunk: its value (None for an empty document) and where it starts."""

    value: Any
    line: int
    usable: bool
    problems: list[ComposedProblem] = field(default_factory=list)
    index: PositionIndex | None = None


@dataclass
class _Anchor:
    value: Any
    size: int
    height: int
    key: str | None
    """The node as a map key, when it is a scalar that makes a valid key."""
    key_error: str | None


class _Abort(Exception):
    """Stops composing one document (too deep, too many aliases); the stream goes on."""

    def __init__(self, problem: ComposedProblem) -> None:
        super().__init__(problem.message)
        self.problem = problem


@dataclass
class _Frame:
    is_map: bool
    container: Any
    path: Steps
    start_line: int
    start_column: int
    anchor: str | None
    size: int = 1
    height: int = 1
    # Mapping state: the pending key (its JSON string, or None when the key is invalid/merge).
    key: str | None = None
    key_mark: tuple[int, int] = (0, 0)
    has_key: bool = False
    merge: bool = False
    key_lines: dict[str, int] = field(default_factory=dict)


class DocumentComposer:
    """Builds the values of the documents in one chunk of YAML text."""

    def __init__(self, track_positions: bool = False) -> None:
        self.track_positions = track_positions

    def compose(self, text: str, line_offset: int = 0) -> tuple[list[ComposedDocument], ComposedProblem | None]:
        """All documents of ``text`` up to the first syntax error, and that error if any.

        ``line_offset`` is the 0-based file line where ``text`` starts; it only shows in
        messages that name another line.
        """
        documents, error = self._compose(text, line_offset)
        if error is None:
            return documents, None
        deep = self._too_deep_before(text, error, len(documents), line_offset)
        if deep is not None:
            return deep, None
        if isinstance(error, yaml.MarkedYAMLError):
            return documents, _syntax_problem(error)
        return documents, ComposedProblem("syntax", f"invalid YAML: {error}", 0, 0)

    def _compose(self, text: str, line_offset: int) -> tuple[list[ComposedDocument], yaml.YAMLError | None]:
        documents: list[ComposedDocument] = []
        events = yaml_events(text)
        try:
            for event in events:
                if isinstance(event, ev.DocumentStartEvent):
                    document, ended = self._document(events, line_offset)
                    documents.append(document)
                    if ended:
                        break
        except yaml.YAMLError as error:
            return documents, error
        return documents, None

    def _too_deep_before(self, text: str, error: yaml.YAMLError, count: int,
                         line_offset: int) -> list[ComposedDocument] | None:
        """The documents up to one that nests deeper than MAX_DEPTH before ``error``, or None.

        Depth is judged by our limit alone, whatever the parser's own: a parser may refuse deep
        nesting at its limit before handing over the nodes ours stops at (libyaml scans ahead, and
        PyYAML 6.0.4's libyaml stops at 1,000 levels). So the text before the error is composed
        again; when the document the error broke already nests too deep there, it is too deep,
        not broken. Only broken input pays for this.
        """
        mark = getattr(error, "problem_mark", None)
        if mark is None or not 0 < mark.index < len(text):
            return None
        documents, _ = self._compose(text[:mark.index], line_offset)
        if len(documents) > count and any(p.kind == "too-deep" for p in documents[count].problems):
            return documents[:count + 1]
        return None

    def _document(self, events: Iterator[ev.Event], line_offset: int) -> tuple[ComposedDocument, bool]:
        """One document, and whether the text ended in it: the rest of a dropped document is only
        skipped, and when skipping it meets broken YAML (or the parser's own nesting limit) the
        chunk ends there; the document already has its problem."""
        state = _DocumentState(self.track_positions, line_offset)
        try:
            for event in events:
                if isinstance(event, ev.DocumentEndEvent):
                    break
                state.feed(event)
        except _Abort as abort:
            state.problems.append(abort.problem)
            dropped = ComposedDocument(None, state.first_line, False, state.problems)
            try:
                for event in events:
                    if isinstance(event, ev.DocumentEndEvent):
                        break
            except yaml.YAMLError:
                return dropped, True
            return dropped, False
        return ComposedDocument(state.root, state.first_line, True, state.problems, state.index), False


def yaml_events(text: str) -> Iterator[ev.Event]:
    """libyaml's events for ``text`` (``yaml.parse`` without its per-event ``check_event``), their
    marks' lines and columns counted as editors, LSP and YAML 1.2 count them (see _remarked)."""
    if _UNICODE_BREAKS.search(text) is None:
        return _parsed(text)
    return _remarked(_parsed(text), text)


# libyaml (as goyaml.v2, which Kubernetes uses) follows YAML 1.1: NEL, LINE SEPARATOR and
# PARAGRAPH SEPARATOR break lines, inside quoted strings too (a NEL there folds to a space, the
# other two stay), and its marks count them as lines. Editors, LSP and YAML 1.2 break lines at
# \n, \r\n and \r only, and so does every position dralint reports: after one of these characters
# libyaml's line numbers would be off for the rest of the text.
_UNICODE_BREAKS = re.compile("[\x85\u2028\u2029]")


def _remarked(events: Iterator[ev.Event], text: str) -> Iterator[ev.Event]:
    """``events`` with each mark's line and column recomputed from its character offset."""
    starts = line_starts(text)

    def mark(old: Any) -> Any:
        if old is None:
            return None
        line = bisect.bisect_right(starts, old.index) - 1
        return yaml.error.Mark(old.name, old.index, line, old.index - starts[line], None, 0)

    try:
        for event in events:
            event.start_mark, event.end_mark = mark(event.start_mark), mark(event.end_mark)
            yield event
    except yaml.MarkedYAMLError as error:
        error.problem_mark, error.context_mark = mark(error.problem_mark), mark(error.context_mark)
        raise


def _parsed(text: str) -> Iterator[ev.Event]:
    parser = _LOADER(text)
    try:
        if _C_PARSER is not None and isinstance(parser, _C_PARSER):  # get_event() gives None at the end
            while (event := parser.get_event()) is not None:
                yield event
        else:
            while parser.check_event():
                yield parser.get_event()
    finally:
        parser.dispose()


def _syntax_problem(error: yaml.MarkedYAMLError) -> ComposedProblem:
    mark = error.problem_mark or error.context_mark
    problem = error.problem or "invalid YAML"
    message = f"invalid YAML: {problem}"
    if error.context:
        message += f" ({error.context})"
    line, column = (mark.line, mark.column) if mark is not None else (0, 0)
    return ComposedProblem("syntax", message, line, column)


class _DocumentState:
    """Composition of one document from its events (no recursion, bounded by the limits)."""

    def __init__(self, track_positions: bool, line_offset: int) -> None:
        self.line_offset = line_offset
        self.stack: list[_Frame] = []
        self.anchors: dict[str, _Anchor] = {}
        self.open_anchors: set[str] = set()
        self.problems: list[ComposedProblem] = []
        self.root: Any = None
        self.first_line = -1
        self.decoded = 0
        self.aliased = 0
        self.index = PositionIndex() if track_positions else None

    # -- events ---------------------------------------------------------------------------
    def feed(self, event: Any) -> None:
        # ``event`` is dispatched by its exact type (faster than isinstance on every event), which a
        # type checker does not narrow: each handler declares the event it takes.
        kind = type(event)
        if kind is ev.ScalarEvent:
            self._scalar(event)
        elif kind is ev.MappingStartEvent:
            self._start(event, True)
        elif kind is ev.SequenceStartEvent:
            self._start(event, False)
        elif kind is ev.MappingEndEvent or kind is ev.SequenceEndEvent:
            self._end()
        elif kind is ev.AliasEvent:
            self._alias(event)

    def _count(self, nodes: int, aliased: int, mark: Any) -> None:
        self.decoded += nodes
        self.aliased += aliased
        if aliased and excessive_aliasing(self.aliased, self.decoded):
            raise _Abort(ComposedProblem(
                "alias-limit",
                f"document contains excessive aliasing ({self.aliased:,} of {self.decoded:,} "
                "nodes come from aliases); Kubernetes refuses it",
                mark.line, mark.column))

    def _note_start(self, mark: Any) -> None:
        if self.first_line < 0:
            self.first_line = mark.line

    def _scalar(self, event: ev.ScalarEvent) -> None:
        if self.first_line < 0:
            self.first_line = event.start_mark.line  # type: ignore[union-attr]  # libyaml marks every event
        self.decoded += 1
        frame = self.stack[-1] if self.stack else None
        plain = event.style in ("", None)
        if frame is not None and frame.is_map and not frame.has_key:
            text = event.value
            if (plain and event.tag is None and event.anchor is None and text and text[0] not in scalars.HINTED
                    and text != "<<"):
                # The common key: a plain word that can only be a string.
                self._set_key(frame, text, None, event.start_mark, False)
                return
            is_merge = event.value == "<<" and ((event.tag is None and plain) or event.tag == _MERGE_TAG)
            key, key_error = self._key_of_scalar(event, plain)
            self._set_key(frame, key, key_error, event.start_mark, is_merge)
            if event.anchor is not None:
                try:
                    anchored = self._scalar_value(event, plain)
                except scalars.ScalarError:
                    anchored = event.value
                self.anchors[event.anchor] = _Anchor(anchored, 1, 0, key, key_error)
            return
        try:
            value = self._scalar_value(event, plain)
        except scalars.ScalarError as error:
            self._problem("syntax", str(error), event.start_mark, self._child_path(frame))
            value = event.value
        if event.anchor is not None:
            key, key_error = self._key_of_scalar(event, plain)
            self.anchors[event.anchor] = _Anchor(value, 1, 0, key, key_error)
        self._place(value, 1, 0, event.start_mark, event.end_mark, event.style or "", event.value)

    @staticmethod
    def _scalar_value(event: ev.ScalarEvent, plain: bool) -> Any:
        if event.tag is None:
            if not plain or (event.value and event.value[0] not in scalars.HINTED):
                return event.value
            return scalars.to_json_value(scalars.resolve_plain(event.value))
        if event.tag == "!":
            return event.value
        return scalars.to_json_value(scalars.resolve_tagged(event.tag, event.value))

    @staticmethod
    def _key_of_scalar(event: ev.ScalarEvent, plain: bool) -> tuple[str | None, str | None]:
        try:
            if event.tag is None:
                raw = scalars.resolve_plain(event.value) if plain else event.value
            elif event.tag == "!":
                raw = event.value
            else:
                raw = scalars.resolve_tagged(event.tag, event.value)
            return scalars.key_to_string(raw), None
        except scalars.ScalarError as error:
            return None, str(error)

    def _start(self, event: Any, is_map: bool) -> None:
        mark = event.start_mark
        self._note_start(mark)
        self.decoded += 1
        if len(self.stack) >= MAX_DEPTH:
            raise _Abort(ComposedProblem(
                "too-deep", f"document nests deeper than {MAX_DEPTH} levels; not read", mark.line, mark.column))
        parent = self.stack[-1] if self.stack else None
        if parent is not None and parent.is_map and not parent.has_key:
            self._problem("syntax", "invalid map key: a mapping or sequence cannot be a key", mark, parent.path)
            self._set_key(parent, None, "", mark, False)
        path = self._child_path(parent)
        self.stack.append(_Frame(is_map, {} if is_map else [], path, mark.line, mark.column, event.anchor))
        if event.anchor is not None:
            self.open_anchors.add(event.anchor)

    def _end(self) -> None:
        frame = self.stack.pop()
        if frame.anchor is not None:
            self.open_anchors.discard(frame.anchor)
            self.anchors[frame.anchor] = _Anchor(frame.container, frame.size, frame.height, None,
                                                 "invalid map key: a mapping or sequence cannot be a key")
        self._place_container(frame)

    def _alias(self, event: ev.AliasEvent) -> None:
        mark: Any = event.start_mark  # libyaml marks every event, and an alias always names its anchor
        self._note_start(mark)
        name = cast(str, event.anchor)
        frame = self.stack[-1] if self.stack else None
        if name in self.open_anchors:
            raise _Abort(ComposedProblem("syntax", f"anchor '{name}' value contains itself", mark.line, mark.column))
        anchor = self.anchors.get(name)
        if anchor is None:
            raise _Abort(ComposedProblem("syntax", f"unknown anchor '{name}' referenced", mark.line, mark.column))
        self._count(anchor.size, anchor.size, mark)
        if len(self.stack) + anchor.height > MAX_DEPTH:
            raise _Abort(ComposedProblem(
                "too-deep", f"document nests deeper than {MAX_DEPTH} levels through alias '{name}'; not read",
                mark.line, mark.column))
        if frame is not None and frame.is_map and not frame.has_key:
            self._set_key(frame, anchor.key, anchor.key_error, mark, False)
            return
        self._place(anchor.value, anchor.size, anchor.height, mark, event.end_mark, "*")

    # -- placing values -------------------------------------------------------------------
    def _set_key(self, frame: _Frame, key: str | None, key_error: str | None, mark: Any, is_merge: bool) -> None:
        frame.has_key = True
        frame.merge = is_merge
        frame.key = None if is_merge else key
        frame.key_mark = (mark.line, mark.column)
        if key_error and not is_merge:
            self._problem("syntax", key_error, mark, frame.path)

    def _child_path(self, parent: _Frame | None) -> Steps:
        if parent is None:
            return ()
        if parent.is_map:
            return parent.path + ((parent.key if parent.key is not None else "<<"),)
        return parent.path + (len(parent.container),)

    def _place_container(self, frame: _Frame) -> None:
        mark = _Mark(frame.start_line, frame.start_column)
        self._place(frame.container, frame.size, frame.height, mark, None, "")

    def _place(self, value: Any, size: int, height: int, start: Any, end: Any, style: str,
               text: str | None = None) -> None:
        if not self.stack:
            self.root = value
            self._index((), None, start, end, style, text)
            return
        parent = self.stack[-1]
        parent.size += size
        parent.height = max(parent.height, height + 1)
        if not parent.is_map:
            path = parent.path + (len(parent.container),)
            parent.container.append(value)
            self._index(path, None, start, end, style, text)
            return
        key, merge, key_mark = parent.key, parent.merge, parent.key_mark
        parent.has_key = False
        parent.merge = False
        if merge:
            self._merge(parent, value, start)
            return
        if key is None:
            return
        path = parent.path + (key,)
        if key in parent.container:
            first = parent.key_lines.get(key, -1)
            if first >= 0:
                message = (f'duplicate key "{key}" (first at line {first + self.line_offset + 1}); Kubernetes '
                           "rejects duplicate fields; the last value is used")
            else:
                message = f'key "{key}" overrides the value a merge key "<<" gave it; {_MERGED}'
            self.problems.append(ComposedProblem("duplicate-key", message, key_mark[0], key_mark[1], path))
            del parent.container[key]
        parent.container[key] = value
        parent.key_lines[key] = key_mark[0]
        self._index(path, key_mark, start, end, style, text)

    def _merge(self, frame: _Frame, value: Any, mark: Any) -> None:
        sources = [value] if isinstance(value, dict) else (list(reversed(value)) if isinstance(value, list) else None)
        if sources is None or not all(isinstance(source, dict) for source in sources):
            self._problem("syntax", "map merge requires map or sequence of maps as the value", mark, frame.path)
            return
        for source in sources:
            for key, item in source.items():
                if key in frame.container:
                    path = frame.path + (key,)
                    self._problem("duplicate-key", f'key "{key}" already set in map (merge key "<<" sets it '
                                  f"again); {_MERGED}", mark, path)
                    del frame.container[key]
                frame.container[key] = item

    def _index(self, path: Steps, key_mark: tuple[int, int] | None, start: Any, end: Any, style: str,
               text: str | None) -> None:
        if self.index is not None:
            self.index.add(path, NodeSpan(key_mark, start.line, start.column,
                                          end.index if end is not None else -1,
                                          getattr(start, "index", -1), style, text))

    def _problem(self, kind: str, message: str, mark: Any, path: Steps | None) -> None:
        self.problems.append(ComposedProblem(kind, message, mark.line, mark.column, path))


@dataclass(frozen=True)
class _Mark:
    line: int
    column: int
    index: int = -1


def index_chunk(chunk: Chunk) -> PositionIndex:
    """Re-read one chunk with positions on, and return the index of its document ``sub_index``."""
    documents, _ = DocumentComposer(track_positions=True).compose(chunk.body)
    usable = [d for d in documents if d.usable and d.value is not None]
    found = usable[chunk.sub_index].index if chunk.sub_index < len(usable) else None
    index = found if found is not None else PositionIndex()
    index.body = chunk.body
    index.line_offset = chunk.line_offset
    return index
