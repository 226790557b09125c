"""``dralint audit``: the DRA objects a cluster stores, judged as the admission webhook would judge
them now (docs/audit.md).

A face over the engine and the live-cluster client (:mod:`dralint.cluster`): :mod:`.listing` lists
the cluster and builds the index, :mod:`.judge` judges each object as the webhook would,
:mod:`.report` writes the command line's formats and :mod:`.policy_report` the wgpolicyk8s.io
reports; :mod:`.command` is the command. Needs the ``cluster`` extra once a connection is made.
"""
from __future__ import annotations

from typing import Sequence, TextIO


def main(argv: Sequence[str], out: TextIO, err: TextIO) -> int:
    """Run ``dralint audit ARGS``; returns the exit code."""
    from .command import main as audit

    return audit(argv, out, err)
