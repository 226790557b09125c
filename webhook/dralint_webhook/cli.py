"""The ``dralint-webhook`` command: ``serve``, ``certs`` and ``check-policy``."""
from __future__ import annotations

import argparse
import logging.config
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Sequence

from .logs import logconfig_dict

EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dralint-webhook",
                                     description="dralint's ValidatingAdmissionWebhook for DRA objects and Pods.")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve admission reviews over HTTPS (gunicorn)")
    serve.add_argument("--cert", required=True, metavar="FILE", help="serving certificate (PEM); re-read on change")
    serve.add_argument("--key", required=True, metavar="FILE", help="its private key (PEM); re-read on change")
    serve.add_argument("--port", type=int, default=8443, help="port (default: 8443)")
    serve.add_argument("--bind", default="0.0.0.0", metavar="ADDR", help="address (default: 0.0.0.0; :: for IPv6)")
    serve.add_argument("--config", metavar="FILE", help="policy file (YAML); re-read on change")
    serve.add_argument("--cluster", action="append", default=[], metavar="PATH",
                       help="cluster state for feasibility and references (files or folders; repeatable)")
    serve.add_argument("--workers", type=int, default=2, metavar="N", help="worker processes (default: 2)")
    serve.add_argument("--threads", type=int, default=8, metavar="N", help="threads per worker (default: 8)")
    serve.add_argument("--reload-interval", type=float, default=1.0, metavar="SECONDS",
                       help="how often changed files are looked for (default: 1)")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])

    certs = sub.add_parser("certs", help="make a CA, a serving certificate and the ValidatingWebhookConfiguration")
    certs.add_argument("--service", required=True, metavar="NAME", help="the webhook's Service name")
    certs.add_argument("--namespace", required=True, metavar="NS", help="the Service's namespace")
    certs.add_argument("--out", required=True, metavar="DIR", help="folder for ca.crt, tls.crt, tls.key, webhook.yaml")
    certs.add_argument("--days", type=int, default=365, help="validity in days (default: 365)")
    certs.add_argument("--failure-policy", choices=["Ignore", "Fail"], default="Ignore",
                       help="failurePolicy of the written configuration (default: Ignore)")

    check = sub.add_parser("check-policy", help="check a policy file and exit (0 good, 2 bad)")
    check.add_argument("file", help="policy file (YAML)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point."""
    args = build_parser().parse_args(argv)
    if args.command == "certs":
        return _certs(args)
    if args.command == "check-policy":
        return _check_policy(args.file)
    return _serve(args)


def _certs(args: argparse.Namespace) -> int:
    from .certs import issue, write

    if args.days < 1:
        sys.stderr.write("dralint-webhook: error: --days must be at least 1\n")
        return EXIT_USAGE
    for path in write(Path(args.out), args.service, args.namespace, issue(args.service, args.namespace, args.days),
                      args.failure_policy):
        sys.stdout.write(f"wrote {path}\n")
    return 0


def _check_policy(path: str) -> int:
    from .policy import PolicyError, load_policy

    try:
        policy = load_policy(path)
    except PolicyError as exc:
        sys.stderr.write(f"dralint-webhook: {exc}\n")
        return EXIT_USAGE
    for note in policy.notes:
        sys.stderr.write(f"dralint-webhook: note: {note}\n")
    sys.stdout.write(f"{path}: ok (Kubernetes {policy.options.kube_version})\n")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from .app import Settings, build_webhook
    from .cluster import ClusterError
    from .gunicorn_conf import ServeOptions, WebhookServer
    from .policy import PolicyError

    logging.config.dictConfig(logconfig_dict(args.log_level))
    if args.workers < 1 or args.threads < 1:
        sys.stderr.write("dralint-webhook: error: --workers and --threads must be at least 1\n")
        return EXIT_USAGE
    # Each worker writes its metrics snapshot here; /tmp is an emptyDir in the Pod (read-only root).
    metrics_dir = tempfile.mkdtemp(prefix="dralint-webhook-metrics-")
    try:
        settings = Settings(policy_file=args.config, cluster_paths=tuple(args.cluster), cert_file=args.cert,
                            key_file=args.key, metrics_dir=metrics_dir, reload_interval=args.reload_interval)
        try:
            hook = build_webhook(settings)
        except (PolicyError, ClusterError, OSError, ValueError) as exc:
            sys.stderr.write(f"dralint-webhook: error: {exc}\n")
            return EXIT_USAGE
        options = ServeOptions(bind=args.bind, port=args.port, workers=args.workers, threads=args.threads,
                               log_level=args.log_level)
        WebhookServer(hook, options).run()
        return 0
    finally:
        shutil.rmtree(metrics_dir, ignore_errors=True)
