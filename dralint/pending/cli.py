"""``dralint why-pending [-n NAMESPACE] POD`` and ``--all-pending``: its options, its run, its exit code.

Exit codes: 0 nothing wrong with the Pods' claims, 1 a claim cannot be allocated (or does not
exist), 2 usage, connection or permission errors (one line on stderr).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Sequence, TextIO

from ..cluster.api import Api, Unreachable
from ..cluster.command import read_cluster
from ..cluster.connect import ConnectError, connect
from ..cluster.state import unreachable
from ..kube.releases import Release, ReleaseError, parse_version
from ..options import Options
from ..rule_filter import UsageError
from . import render
from .diagnose import diagnose
from .gather import EVENTS_SHOWN, PendingError, gather, pending_pods, read_pod

EXIT_USAGE = 2
_SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def build_parser() -> argparse.ArgumentParser:
    """The options of ``dralint why-pending`` (docs/why-pending.md)."""
    parser = argparse.ArgumentParser(
        prog="dralint why-pending",
        description="Explain why a Pod waits for its ResourceClaims, from the live cluster: each claim's "
                    "allocation and reservation, the allocator's narrowest reason when one cannot be allocated, "
                    "and the Pod's recent events.",
        epilog="Exit codes: 0 nothing wrong with the claims, 1 a claim cannot be allocated, 2 usage or "
               "connection error. Needs pip install 'dralint[cluster]' and read-only RBAC (docs/why-pending.md).")
    parser.add_argument("pod", nargs="?", metavar="POD", help="the Pod's name")
    parser.add_argument("--namespace", "-n", metavar="NAMESPACE",
                        help="the Pod's namespace (default: the kubeconfig context's, else default)")
    parser.add_argument("--all-pending", action="store_true", help="every Pending Pod with claims in the namespace")
    parser.add_argument("--all-namespaces", "-A", action="store_true", help="with --all-pending: in every namespace")
    parser.add_argument("--output", "-o", choices=("text", "json"), default="text", help="output format (default: text)")
    parser.add_argument("--kubeconfig", metavar="FILE", help="the kubeconfig to use (default: KUBECONFIG, "
                        "~/.kube/config, inside a Pod its service account)")
    parser.add_argument("--context", metavar="NAME", help="the kubeconfig context to use")
    parser.add_argument("--kube-version", help="judge as this Kubernetes release (default: the server's)")
    parser.add_argument("--feature-gates", default="", metavar="NAME=BOOL,...",
                        help="feature gates of the cluster, Kubernetes spelling (the server does not publish them)")
    parser.add_argument("--events", type=int, default=EVENTS_SHOWN, metavar="N",
                        help=f"show the N newest events of each Pod (default {EVENTS_SHOWN})")
    parser.add_argument("--max-seconds", type=float, default=10.0,
                        help="the allocator's time budget for all the Pods, in seconds (default 10)")
    return parser


def main(argv: Sequence[str], out: TextIO, err: TextIO) -> int:
    """Run ``dralint why-pending``; returns the exit code."""
    args = build_parser().parse_args(list(argv))
    try:
        return _run(args, out, err)
    except (UsageError, PendingError, ConnectError) as exc:
        err.write(f"dralint: error: {exc}\n")
        return EXIT_USAGE


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.all_pending == bool(args.pod):
        raise UsageError("give a POD, or --all-pending (not both)")
    if args.all_namespaces and not args.all_pending:
        raise UsageError("-A/--all-namespaces goes with --all-pending")
    if args.events < 0 or not args.max_seconds > 0:
        raise UsageError("--events must be 0 or more, --max-seconds more than 0")
    try:
        hint = parse_version(args.kube_version) if args.kube_version else None
        release, notes = Release.parse(args.kube_version, args.feature_gates) if args.kube_version else (None, [])
        if release is None:   # the gates are checked now, the release they go with once the server says it
            Release.parse(None, args.feature_gates)
    except ReleaseError as exc:
        raise UsageError(exc.named(f"--{exc.setting}")) from None
    api = connect(args.kubeconfig, args.context)
    try:
        namespace = args.namespace or (None if args.all_namespaces else _default_namespace(args.kubeconfig,
                                                                                           args.context))
        return _explain(api, args, namespace, hint, release, notes, out, err)
    except Unreachable as exc:
        raise UsageError(unreachable(api, exc)) from None
    finally:
        api.close()


def _explain(api: Api, args: argparse.Namespace, namespace: str | None, hint: int | None, release: Release | None,
             notes: list[str], out: TextIO, err: TextIO) -> int:
    # The Pod first: a name mistyped is told before the whole cluster is listed.
    pods = pending_pods(api, namespace) if args.all_pending else [read_pod(api, namespace or "default", args.pod)]
    live = read_cluster(api, hint, err)
    if release is None:
        try:
            release, notes = Release.parse(live.kube_version, args.feature_gates)
        except ReleaseError as exc:
            raise UsageError(exc.named(f"--{exc.setting}")) from None
    rules = live.snapshot.listings.get("devicetaintrules")
    if rules is not None and rules.items and not release.gate("DRADeviceTaintRules"):
        notes = [*notes, f"the API server holds {len(rules.items)} DeviceTaintRule(s) but the DRADeviceTaintRules "
                 f"feature gate is off in {release.version} as judged: their taints are not applied; give --feature-gates "
                 "DRADeviceTaintRules=true if the cluster's scheduler has it on"]
    for note in notes:
        err.write(f"dralint: note: {note}\n")
    options = Options(release=release, max_seconds=args.max_seconds)
    diagnoses = diagnose(live.snapshot, [gather(api, live.snapshot, pod, args.events) for pod in pods], options)
    if args.output == "json":
        render.as_json(diagnoses, live.snapshot.server, release.version, out)
    elif diagnoses:
        render.text(diagnoses, out)
    else:
        where = f"namespace {namespace}" if namespace else "any namespace"
        out.write(f"no Pending Pod with ResourceClaims in {where}\n")
    return 1 if any(d.blocked for d in diagnoses) else 0


def _default_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The namespace kubectl would use: the context's, inside a Pod its own, else ``default``."""
    from kubernetes import config

    source = kubeconfig or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    try:
        contexts, current = config.list_kube_config_contexts(config_file=source)
        chosen = next((c for c in contexts or [] if c.get("name") == context), None) if context else current
        namespace = (chosen or {}).get("context", {}).get("namespace")
        if isinstance(namespace, str) and namespace:
            return namespace
    except (config.ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError):
        if _SERVICE_ACCOUNT_NAMESPACE.is_file():   # no kubeconfig: inside a Pod, as connect() found
            return _SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
    return "default"
