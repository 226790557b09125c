"""``dralint lsp``: dralint in the editor, as a Language Server (docs/editors.md).

A face over the engine, like the command line: ``server`` registers the features, ``workspace``
lints open documents in the context of the project, ``spans`` finds the text a finding covers,
``translate`` turns findings into LSP messages. Needs the ``lsp`` extra (pygls).
"""
from __future__ import annotations

from typing import Sequence, TextIO


def main(argv: Sequence[str], err: TextIO) -> int:
    """Run the server (``dralint lsp ...``); exit code 2 when the ``lsp`` extra is not installed."""
    try:
        from .server import main as serve
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] not in ("pygls", "lsprotocol"):
            raise  # not the missing extra: our bug, to be seen
        err.write(f"dralint: error: dralint lsp needs the lsp extra ({exc.name} is missing): "
                  "pip install 'dralint[lsp]'\n")
        return 2
    return serve(argv)
