"""``dralint audit``: the options, the listing, the judging, the reports, the exit code.

Exit codes: 0 no error finding (warnings allowed), 1 some stored object has an error finding,
2 usage errors, an unreadable policy file, a cluster that cannot be reached or listed.
"""
from __future__ import annotations

import argparse
import os
import time
from typing import Callable, Sequence, TextIO

from ..cluster.command import is_terminal, ProgressLine
from ..cluster.connect import ConnectError, connect
from ..cluster.state import ClusterError, ClusterSnapshot, list_cluster
from ..findings import Severity
from ..kube.releases import Release, ReleaseError, parse_version
from ..options import Options
from ..policy_file import PolicyError, PolicySettings, parse_settings, read_policy_file
from .judge import audit_options, judge
from .listing import AUDITED, audit_state
from . import policy_report
from .report import FORMAT_NAMES, render

EXIT_USAGE = 2
# The allocator's processes, as the command line's -j counts them (dralint.parallel, a face this one
# does not import): one per CPU by default, never more than this.
MAX_JOBS = 4


class AuditUsageError(Exception):
    """A usage or connection problem: one line on stderr, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    """The options of ``dralint audit`` (docs/audit.md)."""
    parser = argparse.ArgumentParser(
        prog="dralint audit",
        description="Judge every DRA object the cluster stores (DeviceClasses, ResourceSlices, ResourceClaims, "
                    "ResourceClaimTemplates, DeviceTaintRules, and Pods with claims) as the admission webhook "
                    "would judge its creation now: what was admitted while the webhook was down or failing open.",
        epilog="Exit codes: 0 no error finding, 1 error findings, 2 usage, policy or connection errors. "
               "Needs pip install 'dralint[cluster]'; see docs/audit.md.")
    parser.add_argument("--kubeconfig", metavar="FILE", help="the kubeconfig to use (default: KUBECONFIG, "
                        "~/.kube/config, else the Pod's service account, as kubectl finds it)")
    parser.add_argument("--context", metavar="NAME", help="the kubeconfig context to use")
    parser.add_argument("--namespace", "-n", metavar="NAMESPACE",
                        help="audit the objects of this namespace only (default: every namespace and the "
                             "cluster-scoped objects); the cluster is still listed whole to judge against")
    parser.add_argument("--kube-version", metavar="VERSION",
                        help="judge as this Kubernetes release (default: the policy's kubeVersion, else the server's)")
    parser.add_argument("--feature-gates", default=None, metavar="NAME=BOOL,...",
                        help="feature gates of the cluster, Kubernetes spelling (default: the policy's featureGates)")
    parser.add_argument("--policy", metavar="FILE",
                        help="the webhook's policy file: its organisation rules, ignore, severities, exempt namespaces "
                             "and feasibility (its enforcement and onInternalError do not change findings)")
    parser.add_argument("--format", "-f", default="text", choices=FORMAT_NAMES, help="output format (default: text)")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--jobs", "-j", type=int, default=0, metavar="N",
                        help="judge the claims and Pods for feasibility in up to N processes (default 0: one per CPU, "
                             "at most 4); the output does not change")
    parser.add_argument("--policy-report", metavar="FILE",
                        help="also write the findings as PolicyReport / ClusterPolicyReport objects "
                             "(wgpolicyk8s.io/v1alpha2) to FILE, YAML for kubectl apply -f")
    return parser


def main(argv: Sequence[str], out: TextIO, err: TextIO) -> int:
    """Run ``dralint audit``; returns the exit code."""
    args = build_parser().parse_args(list(argv))
    try:
        return _audit(args, out, err)
    except AuditUsageError as exc:
        err.write(f"dralint audit: error: {exc}\n")
        return EXIT_USAGE


def _audit(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.jobs < 0:
        raise AuditUsageError("--jobs: N must be 0 (one per CPU) or more")
    settings = _settings(args.policy)
    pinned = args.kube_version or (f"1.{settings.pinned_minor}" if settings and settings.pinned_minor else None)
    try:
        hint = parse_version(pinned) if pinned else None
    except ReleaseError as exc:
        raise AuditUsageError(exc.named("--kube-version")) from None
    snapshot = _list(args, hint, err)
    for problem in snapshot.problems:
        err.write(f"dralint audit: warning: {problem.message}\n")
    minor = hint if hint is not None else snapshot.judged_minor()
    if minor is None:
        err.write(f"dralint audit: note: the release of the API server {snapshot.server} is unknown "
                  f"({snapshot.version_problem}): judging as dralint's default; give --kube-version\n")
    elif hint is None and minor != snapshot.minor:
        err.write(f"dralint audit: note: the API server {snapshot.server} runs {snapshot.git_version}: judging as "
                  f"1.{minor}, the nearest release dralint knows\n")
    release = _release(minor, args.feature_gates, settings, err)
    state = audit_state(snapshot, args.namespace)
    if state.missing_references:
        err.write(f"dralint audit: warning: {', '.join(state.missing_references)} could not be listed: the rules that "
                  "judge against the cluster's state (references, feasibility) are not judged\n")
    jobs = min(args.jobs or os.cpu_count() or 1, MAX_JOBS)
    options = audit_options(Options(release=release, jobs=jobs), settings, state)
    started = time.time()
    verdicts = judge(state, options, settings)
    code = 1 if any(f.severity is Severity.ERROR for v in verdicts for f in v.findings) else 0
    if args.policy_report:
        _write(args.policy_report, "--policy-report",
               lambda stream: policy_report.write(policy_report.reports(verdicts, int(started)), stream))
    if args.output:
        _write(args.output, "--output", lambda stream: render(args.format, verdicts, snapshot, code, stream))
    else:
        render(args.format, verdicts, snapshot, code, out)
    return code


def _settings(path: str | None) -> PolicySettings | None:
    if path is None:
        return None
    try:
        raw, _ = read_policy_file(path)
        return parse_settings(raw)
    except PolicyError as exc:
        raise AuditUsageError(f"--policy {path}: {exc}") from None


def _list(args: argparse.Namespace, hint: int | None, err: TextIO) -> ClusterSnapshot:
    try:
        api = connect(args.kubeconfig, args.context)
    except ConnectError as exc:
        raise AuditUsageError(str(exc)) from None
    line = ProgressLine(err) if is_terminal(err) else None
    try:
        return list_cluster(api, hint, resources=AUDITED, progress=line.show if line else None)
    except ClusterError as exc:
        raise AuditUsageError(str(exc)) from None
    finally:
        if line:
            line.clear()
        api.close()


def _release(minor: int | None, gates: str | None, settings: PolicySettings | None, err: TextIO) -> Release:
    """The release judged with: ``minor`` (None: dralint's default) with the command line's gates, else the policy's."""
    chosen = gates if gates is not None else (settings.feature_gates if settings is not None else "")
    try:
        release, notes = Release.parse(None if minor is None else f"1.{minor}", chosen)
    except ReleaseError as exc:
        raise AuditUsageError(exc.named("--feature-gates" if gates is not None else "featureGates")) from None
    for note in notes:
        err.write(f"dralint audit: note: {note}\n")
    return release


def _write(path: str, option: str, write: Callable[[TextIO], None]) -> None:
    try:
        with open(path, "w", encoding="utf-8") as stream:
            write(stream)
    except OSError as exc:
        raise AuditUsageError(f"{option}: cannot write {path}: {exc.strerror or exc}") from None

