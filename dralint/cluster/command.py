"""``--kubeconfig`` / ``--context`` on the command line: the cluster state listed live, for one run.

The CLI calls :func:`live_cluster` once, before it settles its options: the server's release
becomes the run's unless ``--kube-version`` (or the configuration's ``kube-version``) says
otherwise, and the listed objects are the run's cluster files in place of ``--cluster``'s. Other
subcommands that judge a live cluster (``why-pending``, ``audit``) use :func:`read_cluster` with
their own connection (:func:`dralint.cluster.connect.connect`).
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from ..kube.releases import parse_version
from ..rule_filter import UsageError
from .api import Api
from .connect import ConnectError, connect
from .state import ClusterError, ClusterSnapshot, list_cluster

if TYPE_CHECKING:
    from ..config import Config
    from ..source import SourceFile


@dataclass(frozen=True)
class LiveCluster:
    """One listing of the cluster, as a run takes it."""

    snapshot: ClusterSnapshot
    files: list["SourceFile"]        # the objects as cluster files, for the engine
    kube_version: str | None         # the server's release ("1.36"); None when unknown


def live_cluster(args: argparse.Namespace, config: "Config", err: TextIO) -> LiveCluster | None:
    """The cluster named by ``--kubeconfig``/``--context`` (None when neither is given), listed now.

    Sets ``args.kube_version`` to the server's release unless the user chose one. Problems that
    leave a run possible are written to ``err``; the others raise :class:`UsageError` (exit 2).
    """
    if args.kubeconfig is None and args.context is None:
        return None
    if args.cluster:
        raise UsageError("--cluster and --kubeconfig/--context both give the cluster state: use one of them")
    if args.fix:
        raise UsageError("--fix reads the cluster state from --cluster files only: drop --kubeconfig/--context")
    chosen = args.kube_version or config.kube_version
    hint = parse_version(chosen) if chosen else None
    try:
        api = connect(args.kubeconfig, args.context)
    except ConnectError as exc:
        raise UsageError(str(exc)) from None
    try:
        live = read_cluster(api, hint, err)
    finally:
        api.close()
    if chosen is None and live.kube_version is not None:
        args.kube_version = live.kube_version
    return live


def read_cluster(api: Api, release_hint: int | None, err: TextIO) -> LiveCluster:
    """List the cluster behind ``api``, with a progress line when ``err`` is a terminal; notes on
    ``err`` for what the run will lack. ``release_hint``: the minor the user chose (None: the
    server's). Raises :class:`UsageError` when the cluster cannot be judged against."""
    line = ProgressLine(err) if is_terminal(err) else None
    try:
        snapshot = list_cluster(api, release_hint, progress=line.show if line else None)
    except ClusterError as exc:
        raise UsageError(str(exc)) from None
    finally:
        if line:
            line.clear()
    for problem in snapshot.problems:
        err.write(f"dralint: warning: {problem.message}\n")
    release = snapshot.judged_minor()
    if release_hint is None:
        if release is None:
            err.write(f"dralint: note: the release of the API server {snapshot.server} is unknown "
                      f"({snapshot.version_problem}): judging as dralint's default; give --kube-version\n")
        elif release != snapshot.minor:
            err.write(f"dralint: note: the API server {snapshot.server} runs {snapshot.git_version}: judging as "
                      f"1.{release}, the nearest release dralint knows\n")
    return LiveCluster(snapshot, snapshot.source_files(), f"1.{release}" if release is not None else None)


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal (a progress line there, never in a pipe or a file)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class ProgressLine:
    """``listing resourceslices: 1,500 (3,500 left)``, rewritten in place on a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.width = 0

    def show(self, resource: str, count: int, left: int | None) -> None:
        text = f"dralint: listing {resource}: {count:,}" + (f" ({left:,} left)" if left is not None else "")
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.width = len(text)

    def clear(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
