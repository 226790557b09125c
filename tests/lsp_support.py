"""Helpers of the language-server tests (and of others that judge small texts): every diagnostics
publication a test client receives, a GPU class, one node's slice of one GPU, claims for them."""
from __future__ import annotations

import asyncio
import textwrap
from typing import Any

from lsprotocol import types


def record_publications(client: Any) -> list[types.PublishDiagnosticsParams]:
    """A list that receives every publishDiagnostics of ``client``'s server, in order.

    pytest-lsp keeps only the latest diagnostics of each document, without their version; the
    server publishes twice per edit (at once, then whole once typing pauses), so the tests need
    each one with its version.
    """
    published: list[types.PublishDiagnosticsParams] = []
    handle = client.protocol._handle_notification

    def recording(method: str, params: Any) -> None:
        if method == types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS:
            published.append(params)
        handle(method, params)

    client.protocol._handle_notification = recording
    return published


async def settled(published: list[types.PublishDiagnosticsParams], uri: str, version: int | None,
                  timeout: float = 60.0) -> list[types.Diagnostic]:
    """The diagnostics of ``uri`` at ``version`` once the whole run (with feasibility) published them:
    the second publication of that version (the first is the run made at once, while typing)."""
    async def second() -> types.PublishDiagnosticsParams:
        while True:
            mine = [p for p in published if p.uri == uri and p.version == version]
            if len(mine) >= 2:
                return mine[1]
            await asyncio.sleep(0.01)

    return list((await asyncio.wait_for(second(), timeout)).diagnostics)


async def first(published: list[types.PublishDiagnosticsParams], uri: str, version: int | None,
                timeout: float = 60.0) -> list[types.Diagnostic]:
    """The diagnostics of ``uri`` at ``version`` as first published (the run made at once)."""
    async def one() -> types.PublishDiagnosticsParams:
        while not (mine := [p for p in published if p.uri == uri and p.version == version]):
            await asyncio.sleep(0.01)
        return mine[0]

    return list((await asyncio.wait_for(one(), timeout)).diagnostics)


def claim(count: int = 1, device_class: str = "gpu.example.com", name: str = "one-gpu") -> str:
    """A ResourceClaim asking for ``count`` devices of ``device_class``."""
    return textwrap.dedent(f"""\
        apiVersion: resource.k8s.io/v1
        kind: ResourceClaim
        metadata:
          name: {name}
          namespace: default
        spec:
          devices:
            requests:
            - name: gpu
              exactly:
                deviceClassName: {device_class}
                count: {count}
        """)


# The class every claim here asks for, and one node's slice of one GPU of it.
CLASS = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  selectors:
  - cel:
      expression: device.driver == "gpu.example.com"
"""
SLICE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-a-gpus
spec:
  driver: gpu.example.com
  nodeName: node-a
  pool:
    name: node-a
    generation: 1
    resourceSliceCount: 1
  devices:
  - name: gpu-0
"""
