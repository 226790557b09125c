"""``dralint lsp`` and a large document, end to end: judged on a lane of its own, with progress,
stopped by a newer text, while the other documents' diagnostics stay live."""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

from dralint.lsp.lanes import LARGE, STOPPED  # noqa: E402
from lsp_support import claim, first, record_publications  # noqa: E402

pytestmark = [pytest.mark.asyncio(loop_scope="module"),
              pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")]

CLASS = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
"""
TYPO = claim(name="small").replace("count: 1", "cout: 1")
# Five times the size that gets a lane of its own: its run lasts long enough to be watched.
CLAIMS = 5 * LARGE // len(TYPO)


def large_text(typos: int = CLAIMS) -> str:
    """``CLAIMS`` claims, the first ``typos`` of them with a misspelt field (one DRA101 apiece)."""
    return "---\n".join(claim(name=f"claim-{i}").replace("count: 1", "cout: 1" if i < typos else "count: 1")
                        for i in range(CLAIMS))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("large")
    (root / ".git").mkdir()
    (root / "class.yaml").write_text(CLASS)
    return root


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=[sys.executable, "-m", "dralint", "lsp"]))
async def client(lsp_client: LanguageClient, project: Path):
    lsp_client.published = record_publications(lsp_client)  # type: ignore[attr-defined]

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:  # as VS Code does: accept
        return None

    capabilities = client_capabilities("visual-studio-code")
    assert capabilities.window is not None and capabilities.window.work_done_progress  # VS Code shows progress
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities, workspace_folders=[types.WorkspaceFolder(uri=project.as_uri(), name="large")]))
    yield
    await lsp_client.shutdown_session()


def open_document(client: LanguageClient, path: Path, text: str) -> str:
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
        uri=path.as_uri(), language_id="yaml", version=1, text=text)))
    return path.as_uri()


def change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


async def progress_begun(client: LanguageClient, seen: int, timeout: float = 60.0) -> list[object]:
    """The reports of the first progress begun after the ``seen`` ones there were (a run stopped
    before the client answered its progress's creation begins none)."""
    async def begun() -> list[object]:
        while not (reports := [r for r in list(client.progress_reports.values())[seen:] if r]):
            await asyncio.sleep(0.01)
        return reports[0]

    return await asyncio.wait_for(begun(), timeout)


async def progress_ended(reports: list[object], timeout: float = 120.0) -> types.WorkDoneProgressEnd:
    async def ended() -> types.WorkDoneProgressEnd:
        while not isinstance(reports[-1], types.WorkDoneProgressEnd):
            await asyncio.sleep(0.01)
        return reports[-1]

    return await asyncio.wait_for(ended(), timeout)


async def test_the_others_are_answered_while_a_large_document_is_judged(client: LanguageClient,
                                                                         project: Path) -> None:
    big = open_document(client, project / "large.yaml", large_text())
    reports = await progress_begun(client, 0)
    begin = reports[0]
    assert isinstance(begin, types.WorkDoneProgressBegin) and begin.title == "dralint: large.yaml"
    small = open_document(client, project / "small.yaml", TYPO)
    # The small document's answer comes from the shared lane, not after the large one's run.
    assert [d.code for d in await first(client.published, small, 1)] == ["DRA101"]
    assert not isinstance(reports[-1], types.WorkDoneProgressEnd)
    assert [p for p in client.published if p.uri == big] == []
    found = await first(client.published, big, 1, timeout=120)
    assert len(found) == CLAIMS and {d.code for d in found} == {"DRA101"}
    assert (await progress_ended(reports)).message == "done"


async def test_a_newer_text_stops_the_run_of_the_older(client: LanguageClient, project: Path) -> None:
    big = (project / "large.yaml").as_uri()
    seen = len(client.progress_reports)
    change(client, big, 2, large_text(typos=CLAIMS - 1))
    older = await progress_begun(client, seen)
    change(client, big, 3, large_text(typos=2))
    assert (await progress_ended(older)).message == STOPPED
    assert [d.code for d in await first(client.published, big, 3, timeout=120)] == ["DRA101", "DRA101"]
    assert [p for p in client.published if p.uri == big and p.version == 2] == []
    assert client.messages == []  # no error shown to the user on the way
