"""One bad document never takes ``dralint lsp`` down: random edits sent to a running server.

A real client (pytest-lsp's, which also checks every message against the LSP specification)
drives one server process for the whole module. Each example opens a realistic manifest, sends
a burst of random edits (YAML punctuation, CEL, broken quotes, astral characters,
CR line breaks, NUL) with hover requests in between, and then requires: the diagnostics of the
final version arrive, every range lies inside the document in UTF-16 units, every code is a
rule of the catalog, the server reported no failure of its own, and the process is alive.
"""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any, Coroutine, Iterator, TypeVar

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from lsprotocol import types  # noqa: E402

from dralint.catalog import load_catalog  # noqa: E402

from conftest import REPO  # noqa: E402
from lsp_support import first, record_publications, settled  # noqa: E402

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

SEEDS = [p.read_text() for p in sorted((REPO / "examples").rglob("*.yaml"))] + [
    '{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "x"},'
    ' "spec": {"selectors": [{"cel": {"expression": "device.drvier == 1"}}]}}\n',
    "",
]
FRAGMENTS = ["\n", "  ", "- ", ": ", ":", "count: ", "-1", "0", "expression: ", 'device.attributes["d"].x',
             "device.", "== ", '"', "'", "\\", "{", "}", "[", "]", ",", "# c", "&a ", "*a", "!!str ", "\t",
             "\r\n", "\r", "\U0001F600", "é", "---\n", "...\n", "|\n  ", ">-\n  ", "kind: ResourceClaim\n",
             "apiVersion: resource.k8s.io/v1\n", "deviceClassName: ", "\x00", "\ufeff", "\u2028"]
CATALOG = load_catalog()
T = TypeVar("T")


class Session:
    """One client connected to one server process, on an event loop of its own."""

    def __init__(self, root: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.client = pytest_lsp.make_test_lsp_client()
        self.root = root
        self.count = 0
        # Every publication is kept, with its version: one may arrive while a hover is awaited.
        self.published = record_publications(self.client)
        self.run(self.client.start_io(sys.executable, "-m", "dralint", "lsp"))
        result = self.run(self.client.initialize_session(types.InitializeParams(
            capabilities=pytest_lsp.client_capabilities("neovim"),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="fuzz")])))
        # Neovim offers UTF-8 positions first; the server takes them, and so must this test's checks.
        assert result.capabilities.position_encoding == types.PositionEncodingKind.Utf8
        assert result.capabilities.text_document_sync.change == types.TextDocumentSyncKind.Full

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(asyncio.wait_for(coroutine, timeout=60))

    def close(self) -> None:
        self.run(self.client.shutdown_session())
        self.loop.close()


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    root = tmp_path_factory.mktemp("fuzz")
    (root / "class.yaml").write_text((REPO / "examples" / "driver" / "deviceclass.yaml").read_text())
    started = Session(root)
    yield started
    started.close()


def units(text: str) -> int:
    """Length in the negotiated position encoding, UTF-8 code units."""
    return len(text.encode("utf-8", "surrogatepass"))


def position(text: str, offset: int) -> types.Position:
    """The LSP position of character ``offset`` (lines split as LSP does: \\n, \\r\\n, \\r)."""
    before = text[:offset].replace("\r\n", "\n").replace("\r", "\n")
    line = before.count("\n")
    return types.Position(line, units(before[before.rfind("\n") + 1:]))


def lsp_lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def inside(text: str, rng: types.Range) -> bool:
    lines = lsp_lines(text)

    def ok(pos: types.Position) -> bool:
        return pos.line < len(lines) and pos.character <= units(lines[pos.line])

    return ok(rng.start) and ok(rng.end) and (rng.start.line, rng.start.character) <= (rng.end.line, rng.end.character)


Edit = tuple[float, int, list[str], bool]  # where (fraction of the text), characters removed, inserted, hover?
edits = st.lists(st.tuples(st.floats(0, 1), st.integers(0, 12), st.lists(st.sampled_from(FRAGMENTS), max_size=4),
                           st.booleans()), min_size=1, max_size=8)


async def scenario(session: Session, seed: str, changes: list[Edit]) -> None:
    client = session.client
    session.count += 1
    uri = (session.root / f"doc-{session.count}.yaml").as_uri()
    text, version = seed, 1
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="yaml", version=version, text=text)))
    try:
        for where, removed, inserted, ask_hover in changes:
            start = int(where * len(text))
            text = text[:start] + "".join(inserted) + text[start + removed:]
            version += 1
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [types.TextDocumentContentChangeWholeDocument(text=text)]))  # the server syncs whole documents
            if ask_hover:
                hover = await client.text_document_hover_async(types.HoverParams(
                    text_document=types.TextDocumentIdentifier(uri=uri), position=position(text, start)))
                assert hover is None or (hover.range is None or isinstance(hover.range, types.Range))
        quick = await first(session.published, uri, version)
        whole = await settled(session.published, uri, version)
        for diagnostic in quick + whole:
            assert inside(text, diagnostic.range), (diagnostic, text)
            assert diagnostic.code in CATALOG.rules
            assert "language server" not in diagnostic.message, (diagnostic.message, text)
    finally:  # a failing example leaves no document open to fail the next ones
        client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))


def check(session: Session, seed: str, changes: list[Edit]) -> None:
    session.run(scenario(session, seed, changes))
    assert session.client.error is None
    assert session.client._server is not None and session.client._server.returncode is None
    assert not [m for m in session.client.log_messages if m.type == types.MessageType.Error]


@settings(max_examples=20, deadline=None)
@given(seed=st.sampled_from(SEEDS), changes=edits)
def test_random_edits_never_break_the_server(session: Session, seed: str, changes: list[Edit]) -> None:
    check(session, seed, changes)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(seed=st.sampled_from(SEEDS), changes=edits)
def test_random_edits_never_break_the_server_long(session: Session, seed: str, changes: list[Edit]) -> None:
    check(session, seed, changes)
