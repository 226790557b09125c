"""Where each YAML node sits in the text: character spans of every key, value and container.

The reader's position index knows where nodes start; editing the text a user wrote also needs
where they end and how their lines are laid out. This builds a small tree from libyaml's events
(the parser Kubernetes' goyaml.v2 ports, so it accepts the same texts) with character offsets,
and answers the layout questions the edits ask: a node's last line, an entry's lines, an indent.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import yaml
from yaml import events as ev

from ..fixes import line_starts
from ..source.composer import yaml_events  # the reader's own event stream: the same parser, the same texts


class LayoutError(ValueError):
    """A text that cannot be laid out (it does not parse as YAML)."""

    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        super().__init__(message)
        self.line = line        # 1-based; 0 when unknown
        self.column = column


@dataclass(eq=False)
class Node:
    """One node: ``kind`` is 'map', 'seq', 'scalar' or 'alias'; ``start``/``end`` are character offsets.

    ``end`` of a block container is the end of its last child (libyaml's end mark lies past the
    comments that follow); a scalar's ``end`` includes a block scalar's trailing line breaks.
    """

    kind: str
    start: int
    end: int
    line: int                   # 0-based line and column of ``start``
    column: int
    flow: bool = False
    style: str = ""             # a scalar's style: '' plain, "'", '"', '|', '>'
    value: str | None = None    # a scalar's text as parsed (for keys: the key)
    props: bool = False         # an anchor or a tag: text that moves with the node but is not its value
    anchor: str | None = None   # the anchor it defines (``&name``); for an alias, the one it names
    entries: list[tuple["Node", "Node"]] = field(default_factory=list)
    items: list["Node"] = field(default_factory=list)

    def entry(self, key: str) -> tuple["Node", "Node"] | None:
        """The (key, value) pair of mapping entry ``key`` (the last one when a key repeats)."""
        found = None
        for pair in self.entries:
            if pair[0].value == key and pair[0].kind == "scalar":
                found = pair
        return found

    def child(self, segment: str | int) -> "Node | None":
        if self.kind == "map" and isinstance(segment, str):
            pair = self.entry(segment)
            return pair[1] if pair else None
        if self.kind == "seq" and isinstance(segment, int) and 0 <= segment < len(self.items):
            return self.items[segment]
        return None

    def find(self, path: tuple) -> "Node | None":
        """The node at ``path`` (field names and list indexes) below this one."""
        node: Node | None = self
        for segment in path:
            node = node.child(segment) if node is not None else None
        return node

    def walk(self) -> Iterator["Node"]:
        """This node and every node below it (without recursion: documents may nest deeply)."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.items))
            for key, value in reversed(node.entries):
                stack += [value, key]


@dataclass
class Layout:
    """A text and the root node of each of its documents (None for an empty document)."""

    text: str
    roots: list[Node | None]
    line_starts: list[int]
    # Each alias with the anchored node it repeats, by document: (document, anchored, alias).
    aliases: list[tuple[int, Node, Node]] = field(default_factory=list)

    def line_of(self, offset: int) -> int:
        """0-based line of character ``offset``."""
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def line_start(self, offset: int) -> int:
        return self.line_starts[self.line_of(offset)]

    def line_end(self, offset: int) -> int:
        """Offset just past the line break of the line holding ``offset`` (or the end of the text)."""
        line = self.line_of(offset)
        return self.line_starts[line + 1] if line + 1 < len(self.line_starts) else len(self.text)

    def indent(self, offset: int) -> int:
        """Spaces at the start of the line holding ``offset``."""
        start = self.line_start(offset)
        i = start
        while i < len(self.text) and self.text[i] == " ":
            i += 1
        return i - start

    def starts_line(self, offset: int) -> bool:
        """Nothing but spaces before ``offset`` on its line."""
        return not self.text[self.line_start(offset):offset].strip(" ")

    def content_end(self, node: Node) -> int:
        """Where the node's own text ends: a block scalar without its trailing line breaks."""
        while node.kind in ("map", "seq") and not node.flow:
            last = node.entries[-1][1] if node.entries else (node.items[-1] if node.items else None)
            if last is None:
                return node.start
            node = last
        if node.kind == "scalar" and node.style in ("|", ">"):
            return node.start + len(self.text[node.start:node.end].rstrip(" \r\n"))
        return node.end

    def newline(self) -> str:
        """The text's line break (\\r\\n when its first line ends so), for inserted lines."""
        first = self.text.find("\n")
        return "\r\n" if first > 0 and self.text[first - 1] == "\r" else "\n"


def read_layout(text: str) -> Layout:
    """The layout of every document of ``text``; :class:`LayoutError` when it does not parse."""
    roots: list[Node | None] = []
    stack: list[Node] = []
    pending_key: list[Node | None] = []
    anchors: dict[str, Node] = {}
    aliases: list[tuple[int, Node, Node]] = []
    try:
        event: Any  # each kind of event has its own fields (anchor, tag, style...)
        for event in yaml_events(text):
            kind = type(event)
            if kind is ev.DocumentStartEvent:
                roots.append(None)
                anchors = {}
            elif kind is ev.ScalarEvent or kind is ev.AliasEvent:
                start, end = event.start_mark, event.end_mark
                props = kind is ev.ScalarEvent and (event.anchor is not None or event.tag is not None)
                node = Node("scalar" if kind is ev.ScalarEvent else "alias", start.index, end.index, start.line,
                            start.column, style=(getattr(event, "style", None) or ""),
                            value=getattr(event, "value", None), props=props, anchor=event.anchor)
                if kind is ev.AliasEvent and event.anchor in anchors:
                    aliases.append((len(roots) - 1, anchors[event.anchor], node))
                elif event.anchor is not None:
                    anchors[event.anchor] = node
                _place(node, stack, pending_key, roots)
            elif kind is ev.MappingStartEvent or kind is ev.SequenceStartEvent:
                mark = event.start_mark
                node = Node("map" if kind is ev.MappingStartEvent else "seq", mark.index, mark.index, mark.line,
                            mark.column, flow=bool(event.flow_style),
                            props=event.anchor is not None or event.tag is not None, anchor=event.anchor)
                if event.anchor is not None:
                    anchors[event.anchor] = node
                _place(node, stack, pending_key, roots)
                stack.append(node)
                pending_key.append(None)
            elif kind is ev.MappingEndEvent or kind is ev.SequenceEndEvent:
                node = stack.pop()
                pending_key.pop()
                if node.flow:
                    node.end = event.end_mark.index
                else:
                    last = node.entries[-1][1] if node.entries else (node.items[-1] if node.items else None)
                    node.end = last.end if last is not None else node.start
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        raise LayoutError(f"invalid YAML: {error.problem or error}", mark.line + 1 if mark else 0,
                          mark.column + 1 if mark else 0) from None
    except yaml.YAMLError as error:
        raise LayoutError(f"invalid YAML: {error}") from None
    return Layout(text, roots, line_starts(text), aliases)


def _place(node: Node, stack: list[Node], pending_key: list[Node | None], roots: list[Node | None]) -> None:
    if not stack:
        roots[-1] = node
        return
    parent = stack[-1]
    if parent.kind == "seq":
        parent.items.append(node)
        return
    key = pending_key[-1]
    if key is None:
        pending_key[-1] = node
    else:
        parent.entries.append((key, node))
        pending_key[-1] = None

