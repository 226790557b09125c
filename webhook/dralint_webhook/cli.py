"""The ``dralint-webhook`` command: ``serve``, ``certs``, ``configuration``, ``check-policy`` and ``vap``."""
from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import NoReturn, Sequence

from .logs import LOGGER, identify, install, log

EXIT_USAGE = 2
_log = logging.getLogger(LOGGER)


class _JsonErrors(argparse.ArgumentParser):
    """argparse whose usage errors are a JSON log line, as everything ``serve`` writes to stderr."""

    def error(self, message: str) -> NoReturn:
        log(_log, logging.ERROR, f"{self.prog}: error: {message}", usage=self.format_usage().strip())
        self.exit(EXIT_USAGE)


def build_parser(json_errors: bool = False) -> argparse.ArgumentParser:
    """The command line; with ``json_errors``, usage errors are logged as JSON (subcommands included)."""
    parser = (_JsonErrors if json_errors else argparse.ArgumentParser)(
        prog="dralint-webhook", description="dralint's ValidatingAdmissionWebhook for DRA objects and Pods.")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve admission reviews over HTTPS (gunicorn)")
    serve.add_argument("--cert", required=True, metavar="FILE", help="serving certificate (PEM); re-read on change")
    serve.add_argument("--key", required=True, metavar="FILE", help="its private key (PEM); re-read on change")
    serve.add_argument("--port", type=int, default=8443, help="port (default: 8443)")
    serve.add_argument("--bind", default="0.0.0.0", metavar="ADDR", help="address (default: 0.0.0.0; :: for IPv6)")
    serve.add_argument("--config", metavar="FILE", help="policy file (YAML); re-read on change")
    serve.add_argument("--cluster", action="append", default=[], metavar="PATH",
                       help="cluster state for feasibility and references (files or folders; repeatable)")
    serve.add_argument("--watch", action="store_true",
                       help="judge against the live cluster: list and watch it through the API server (in the "
                            "cluster: the Pod's service account; outside: --kubeconfig)")
    serve.add_argument("--kubeconfig", metavar="FILE", help="with --watch: reach the API server with this kubeconfig")
    serve.add_argument("--context", metavar="NAME", help="with --kubeconfig: the context to use")
    serve.add_argument("--health-port", type=int, default=0, metavar="PORT",
                       help="serve /metrics, and /healthz and /readyz too, over plain HTTP on this port (0: off, and "
                            "no /metrics)")
    serve.add_argument("--max-worker-memory", type=int, default=0, metavar="MIB",
                       help="over this resident memory a worker drops its caches, then stops the reviews in flight "
                            "and retires if still over (0: off)")
    serve.add_argument("--max-watcher-memory", type=int, default=None, metavar="MIB",
                       help="with --watch: the cluster watcher exits (and is started again) when its resident memory "
                            "exceeds this; the workers keep the last state meanwhile (default: --max-worker-memory; "
                            "0: off)")
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
                       help="failurePolicy of the webhooks for claims, templates and Pods (default: Ignore); "
                            "DeviceClasses and DeviceTaintRules are always judged with Ignore")
    certs.add_argument("--judge-status-and-slices", action="store_true",
                       help="the configuration also judges claim status and ResourceSlices (always Ignore)")

    config = sub.add_parser("configuration",
                            help="write the ValidatingWebhookConfiguration again for the CA that `certs` made "
                                 "(upgrades, renewals)")
    config.add_argument("--ca", required=True, action="append", metavar="FILE",
                        help="CA certificate to trust, e.g. certs/ca.crt (repeatable: a renewal trusts both)")
    config.add_argument("--service", required=True, metavar="NAME", help="the webhook's Service name")
    config.add_argument("--namespace", required=True, metavar="NS", help="the Service's namespace")
    config.add_argument("--out", required=True, metavar="FILE", help="where to write it, e.g. certs/webhook.yaml")
    config.add_argument("--failure-policy", choices=["Ignore", "Fail"], default="Ignore",
                        help="failurePolicy of the webhooks for claims, templates and Pods (default: Ignore; give "
                             "the one the install used); DeviceClasses and DeviceTaintRules are always judged "
                             "with Ignore")
    config.add_argument("--judge-status-and-slices", action="store_true",
                        help="also judge claim status and ResourceSlices (always Ignore)")

    check = sub.add_parser("check-policy", help="check a policy file and exit (0 good, 2 bad)")
    check.add_argument("file", help="policy file (YAML)")

    vap = sub.add_parser("vap", help="write the organisation rules of a policy file as ValidatingAdmissionPolicies "
                                     "and bindings (YAML, for kubectl apply -f -)")
    vap.add_argument("--config", required=True, metavar="FILE", help="policy file (YAML), as the webhook reads it")
    vap.add_argument("--kube-version", metavar="1.N",
                     help="the cluster's release, 1.30 or newer (default: the policy's kubeVersion, else dralint's "
                          "newest released one)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # A server's stderr is read by a log collector: JSON from its first line, before the arguments are
    # even read. The other commands are run by people and write plain text.
    serving = argv[:1] == ["serve"]
    if serving:
        install()
        identify("master")
    args = build_parser(json_errors=serving).parse_args(argv)
    if args.command == "certs":
        return _certs(args)
    if args.command == "configuration":
        return _configuration(args)
    if args.command == "check-policy":
        return _check_policy(args.file)
    if args.command == "vap":
        from .vap.command import run

        return run(args.config, args.kube_version)
    return _serve(args)


def _certs(args: argparse.Namespace) -> int:
    from .certs import issue, write

    if args.days < 1:
        sys.stderr.write("dralint-webhook: error: --days must be at least 1\n")
        return EXIT_USAGE
    for path in write(Path(args.out), args.service, args.namespace, issue(args.service, args.namespace, args.days),
                      args.failure_policy, args.judge_status_and_slices):
        sys.stdout.write(f"wrote {path}\n")
    return 0


def _configuration(args: argparse.Namespace) -> int:
    from .certs import configuration_yaml, dropped_settings, read_ca_bundle

    out = Path(args.out)
    try:
        bundle = read_ca_bundle([Path(path) for path in args.ca])
        text = configuration_yaml(args.service, args.namespace, bundle, args.failure_policy,
                                  args.judge_status_and_slices)
        previous = out.read_text(encoding="utf-8") if out.is_file() else None
        out.write_text(text, encoding="utf-8")
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"dralint-webhook: error: {exc}\n")
        return EXIT_USAGE
    for note in dropped_settings(previous, text) if previous is not None else []:
        sys.stderr.write(f"dralint-webhook: note: {note}\n")
    sys.stdout.write(f"wrote {args.out}\n")
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
    release = (f"Kubernetes {policy.options.release.version}, pinned by kubeVersion" if policy.pinned_minor is not None
               else f"Kubernetes: the API server's release; {policy.options.release.version} until it is known")
    sys.stdout.write(f"{path}: ok ({release})\n")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from .app import Settings, build_webhook
    from .cluster import ClusterError
    from .gunicorn_conf import ServeOptions, WebhookServer
    from .policy import PolicyError
    from .watcher import WatchSettings

    install(args.log_level)
    if args.workers < 1 or args.threads < 1:
        log(_log, logging.ERROR, "dralint-webhook: error: --workers and --threads must be at least 1")
        return EXIT_USAGE
    problem = _watch_problem(args)
    if problem:
        log(_log, logging.ERROR, f"dralint-webhook: error: {problem}")
        return EXIT_USAGE
    # The workers' metrics snapshots and the watcher's state; /tmp is an emptyDir in the Pod (read-only root).
    run_dir = tempfile.mkdtemp(prefix="dralint-webhook-")
    master = os.getpid()
    try:
        metrics_dir, state_dir = os.path.join(run_dir, "metrics"), os.path.join(run_dir, "cluster")
        os.mkdir(metrics_dir)
        settings = Settings(policy_file=args.config, cluster_paths=tuple(args.cluster), cert_file=args.cert,
                            key_file=args.key, metrics_dir=metrics_dir, reload_interval=args.reload_interval,
                            state_dir=state_dir if args.watch else None, max_rss=args.max_worker_memory * 2**20,
                            retire_lock=os.path.join(run_dir, "retiring.lock"),
                            reload_lock=os.path.join(run_dir, "reloading.lock"))
        try:
            hook = build_webhook(settings)
        except (PolicyError, ClusterError, OSError, ValueError) as exc:
            log(_log, logging.ERROR, f"dralint-webhook: error: {exc}")
            return EXIT_USAGE
        options = ServeOptions(bind=args.bind, port=args.port, workers=args.workers, threads=args.threads,
                               log_level=args.log_level, health_port=args.health_port or None)
        watcher_memory = args.max_worker_memory if args.max_watcher_memory is None else args.max_watcher_memory
        watch = WatchSettings(folder=state_dir, kubeconfig=args.kubeconfig, context=args.context,
                              max_memory=watcher_memory * 2**20, metrics_dir=metrics_dir) if args.watch else None
        WebhookServer(hook, options, watch).run()
        return 0
    finally:
        # Workers and the watcher are forks of this process and leave through this frame too: only the
        # master removes the folder (a worker's exit used to delete every worker's metrics).
        if os.getpid() == master:
            shutil.rmtree(run_dir, ignore_errors=True)


def _watch_problem(args: argparse.Namespace) -> str:
    """Why ``--watch`` and its options cannot work as given ("" when they can)."""
    if not args.watch:
        return "--kubeconfig and --context need --watch" if args.kubeconfig or args.context else ""
    if args.cluster:
        return "--watch and --cluster are alternatives: the live cluster or files"
    if args.kubeconfig:
        return "" if os.path.isfile(args.kubeconfig) else f"--kubeconfig {args.kubeconfig}: no such file"
    if not os.environ.get("KUBERNETES_SERVICE_HOST"):
        return "--watch outside a cluster needs --kubeconfig (KUBERNETES_SERVICE_HOST is not set)"
    return ""
