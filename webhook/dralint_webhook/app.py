"""The Flask app: ``POST /validate``, ``/healthz``, ``/readyz``, and ``/metrics`` on the health port.

All state lives in one :class:`Webhook` object (policy, cluster state, certificate, metrics);
the app only routes HTTP to it. Build it with :func:`build_webhook` (which warms the engine)
and serve :func:`create_app` of it.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from dralint import gojson
from dralint.findings import Finding

from .admission import MAX_BODY_BYTES, AdmissionRequest, BadReview, parse_review
from .answers import denial_message, review_response
from .cluster import ClusterState, load_state
from .collector import Collector
from .fleet import FleetView
from .guard import Guard, ReviewAborted
from .judge import aborted, internal_error, judge, org_findings
from .kubeversion import ReleaseCheck, metric_lines, release_in_force
from .live import LiveCluster
from .logs import LOGGER, identify, log
from .manifests import TIMEOUT_SECONDS
from .metrics import Gauges, Metrics
from .policy import Policy, load_policy, parse_policy
from .relief import memory_guard
from .reloading import Reloading
from .timeouts import review_deadline
from .tls import ServingTLS
from .turns import turn
from .verdict import Verdict
from .warmup import KINDS as DRA_KINDS
from .warmup import warm, warm_state

_log = logging.getLogger(LOGGER)
# Metric labels come from a fixed set: a caller's invented kind is counted as "other".
METRIC_KINDS = frozenset(DRA_KINDS) | {"Pod"}
LARGE_BODY_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Settings:
    """What ``dralint-webhook serve`` was told (files and intervals; the policy is in its file)."""

    policy_file: str | None = None
    cluster_paths: tuple[str, ...] = ()
    cert_file: str | None = None
    key_file: str | None = None
    metrics_dir: str | None = None
    reload_interval: float = 1.0
    # --watch: the live cluster, published by the replica's watcher into this folder.
    state_dir: str | None = None
    max_rss: int = 0            # bytes of resident memory a worker may use while judging; 0: no ceiling
    # A file of the run folder the workers share: over the ceiling, one worker at a time retires (relief.py).
    retire_lock: str | None = None
    reload_lock: str | None = None   # workers re-read a large cluster state one at a time (turns.py)
    timeout_seconds: float = TIMEOUT_SECONDS     # the API server's timeout for a call that names none


@dataclass
class Webhook:
    """The running webhook's state: the only mutable state of the service, one per process."""

    settings: Settings
    metrics: Metrics
    policy_source: Reloading[Policy] | None = None
    cluster_source: Reloading[ClusterState] | None = None
    tls: ServingTLS | None = None
    live: LiveCluster | None = None
    warmed: bool = False
    # Without a policy file, what the file `{}` says.
    default_policy: Policy = field(default_factory=lambda: parse_policy({}))
    guard: Guard = field(default_factory=Guard)
    collector: Collector = field(default_factory=Collector)
    # Reviews of large bodies take memory in proportion: one at a time per worker.
    large_reviews: threading.BoundedSemaphore = field(default_factory=lambda: threading.BoundedSemaphore(1))
    # The policy file's value and the server's release it was put beside, with the outcome (release_in_force).
    _in_force: tuple[Policy, int | None, Policy, ReleaseCheck] | None = None

    def __post_init__(self) -> None:
        self.metrics.gauges = self.gauges

    def policy(self) -> Policy:
        """The policy in force (reloaded first if its file changed), judging as the release in force:
        its ``kubeVersion``, else the API server's with ``--watch`` (:mod:`.kubeversion`)."""
        return self._release_in_force()[0]

    def release_check(self) -> ReleaseCheck:
        """The release reviews are judged as, and whether the policy's pin differs from the server's."""
        return self._release_in_force()[1]

    def _release_in_force(self) -> tuple[Policy, ReleaseCheck]:
        base = self.policy_source.current() if self.policy_source else self.default_policy
        server = self.live.server_release() if self.live is not None else None
        held = self._in_force
        if held is not None and held[0] is base and held[1] == server:
            return held[2], held[3]
        policy, check = release_in_force(base, server)
        if check.message() and (held is None or held[3] != check):
            # Once per change (a policy edit, a server upgraded), not per review.
            log(_log, check.level(), f"kubeVersion: {check.message()}", in_force=f"1.{check.in_force}",
                server=f"1.{check.server}" if check.server is not None else "unknown")
        self._in_force = (base, server, policy, check)
        return policy, check

    def cluster(self) -> ClusterState | None:
        """The cluster state a review judges against (the live one with ``--watch``)."""
        if self.live is not None:
            return self.live.current()
        return self.cluster_source.current() if self.cluster_source else None

    def loaded_cluster(self) -> ClusterState | None:
        """The cluster state this worker holds now, without waiting for a newer one (None: none yet)."""
        if self.live is not None:
            return self.live.loaded()
        return self.cluster_source.loaded() if self.cluster_source else None

    def readiness(self) -> list[str]:
        """Why the webhook is not ready; empty when it is (rules, schemas, policy, certificate loaded,
        and with ``--watch`` the first full list of every watched resource)."""
        problems = []
        if not self.warmed:
            problems.append("engine not warmed (rules and schemas)")
        if self.settings.cert_file and self.tls is None:
            problems.append("certificate not loaded")
        if self.live is not None:
            problems += self.live.readiness()
        return problems

    def start_worker(self, slot: int = 0) -> None:
        """In each gunicorn worker after fork (``slot``: its place among the workers, for metrics and logs):
        its metrics snapshot and its view of the live state."""
        identify("worker", slot)
        self.metrics.bind_process("worker", slot)
        if self.live is not None:
            self.live.start()
        if self.cluster_source is not None:
            # Files are re-read in a thread of the worker: a large state takes seconds, never a review's.
            self.cluster_source.start(tend=self._tend_files)

    def _tend_files(self, state: ClusterState) -> None:
        """After a policy edit that changed the release (or turned feasibility off), the files' feasibility
        view follows, built beside the one in force."""
        if state.fleet is not None and state.fleet.behind():
            with self.collector.paused():
                state.fleet.update(state.index, [])

    def exposition(self) -> str:
        """``/metrics``: the reviews of every worker, what each running process serves and uses, the
        release in force beside the API server's, and the watch of the live cluster."""
        text = self.metrics.exposition() + "\n".join(metric_lines(self.release_check())) + "\n"
        if self.live is not None:
            text += "\n".join(self.live.metric_lines()) + "\n"
        return text

    def sources(self) -> list[Reloading[Any]]:
        """The files this webhook re-reads when they change: policy, cluster state, certificate."""
        return [s for s in (self.policy_source, self.cluster_source, self.tls.source if self.tls else None)
                if s is not None]

    def gauges(self) -> Gauges:
        """This worker's gauges (the gauge table of :mod:`.metrics`): the files in force as it sees them
        (each worker re-reads them on its own): whether the last attempt to re-read each succeeded and
        when, when the value in force was read, which policy that is (the sha256 of its file), and with
        ``--watch`` the generation of the cluster state it judges with."""
        sources = self.sources()
        policy = self.policy_source.loaded() if self.policy_source else self.default_policy
        out: Gauges = {"reload_success": {(s.what,): 0.0 if s.error else 1.0 for s in sources},
                       "reload_attempt": {(s.what,): round(s.attempted_at, 3) for s in sources},
                       "loaded": {(s.what,): round(s.loaded_at, 3) for s in sources},
                       "policy": {(policy.digest,): 1.0}}
        if self.live is not None:
            state = self.live.loaded()
            out["state_generation"] = {(): float(state.generation if state is not None else 0)}
        return out

    def on_reload(self, what: str, ok: bool, message: str) -> None:
        """Log and count a reload of the policy, cluster state or certificate."""
        self.metrics.count("reloads", what, "success" if ok else "failure")
        if ok and what == "policy" and self.policy_source is not None:
            log(_log, logging.INFO, "policy reloaded", what=what, sha256=self.policy_source.loaded().digest)
        elif ok:
            log(_log, logging.INFO, f"{what} reloaded", what=what)
        else:
            log(_log, logging.ERROR, f"{what} reload failed; keeping the previous one", what=what, error=message)


def build_webhook(settings: Settings) -> Webhook:
    """Load policy, cluster state and certificate (raising on any bad file) and warm the engine."""
    # Before any thread starts: what an API server sends may nest 10,000 levels deep (gojson).
    gojson.allow_deep_values()
    hook = Webhook(settings=settings, metrics=Metrics(settings.metrics_dir))
    hook.guard = memory_guard(settings.max_rss, settings.retire_lock, hook.loaded_cluster, hook.metrics)
    if settings.policy_file:
        path = settings.policy_file
        hook.policy_source = Reloading("policy", (path,), lambda: load_policy(path), interval=settings.reload_interval,
                                       settle=settings.reload_interval, on_reload=hook.on_reload)
    policy = hook.policy()
    log(_log, logging.INFO, "policy loaded", sha256=policy.digest or "(defaults)")
    for note in policy.notes:
        log(_log, logging.WARNING, f"policy: {note}")
    if settings.state_dir:
        hook.live = LiveCluster(settings.state_dir, release_of=lambda: _feasibility_release(hook.policy()),
                                warm=lambda index: warm_state(hook.policy().options, index), collector=hook.collector)
    elif settings.cluster_paths:
        paths = settings.cluster_paths
        # Loaded here (in the master: workers share it) and again in each worker's own thread after fork.
        # Millions of new objects: the reviews meanwhile must not wait for the collector's walks of them,
        # nor for the other workers' reloads (taken in turns).
        hook.cluster_source = Reloading("cluster", paths, lambda: _load_files(paths, hook),
                                        interval=settings.reload_interval, settle=settings.reload_interval,
                                        on_reload=hook.on_reload, around=lambda: _building(hook))
    if settings.cert_file and settings.key_file:
        hook.tls = ServingTLS(settings.cert_file, settings.key_file, interval=settings.reload_interval,
                              on_reload=hook.on_reload)
    state = hook.cluster()
    for finding in state.notes if state else ():
        log(_log, logging.WARNING, f"cluster state: {finding.message}", rule=finding.rule, file=finding.file,
            line=finding.line)
    # The cluster's feasibility has its own view, built and warmed with the state: the samples skip it.
    options = replace(policy.options, ignore=policy.options.ignore + ("DRA7",)) if state else policy.options
    for failure in warm(options, state.index if state else None):
        log(_log, logging.WARNING, "warm-up review failed; such requests get the internal-error policy",
            error=failure)
    hook.warmed = True
    return hook


def create_app(hook: Webhook) -> Flask:
    """The WSGI app serving ``hook``."""
    app = Flask("dralint_webhook")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES

    @app.post("/validate")
    def validate() -> Response:
        started = time.perf_counter()
        if request.environ.get("dralint.health"):
            return _error(404, "/validate is served on the webhook's TLS port, not the health port")
        # The worker sets it from the request's first byte; else (a test client) from now, by the same rule.
        deadline = request.environ.get("dralint.deadline") or \
            review_deadline(time.monotonic(), request.query_string.decode("latin-1"), hook.settings.timeout_seconds)
        policy = hook.policy()
        large = (request.content_length or 0) > LARGE_BODY_BYTES
        if large and not hook.large_reviews.acquire(timeout=max(0.0, deadline - time.monotonic())):
            return _error(503, "another large review is being judged; try again")
        review: AdmissionRequest | None = None
        org: list[Finding] = []
        try:
            # Parsing is bounded by the body's size, and without it there is no verdict at all (a 503
            # fails the API server's call): the deadline stops it, the memory ceiling does not.
            with hook.guard.review(deadline, memory=False):
                try:
                    review = parse_review(request.get_data(cache=False))
                except BadReview as exc:
                    hook.metrics.count("rejected", str(exc.status))
                    return _error(exc.status, str(exc))
            # Outside the guard: bounded work, and its denial must stand whatever the rest of the review meets.
            org = _org(hook, review, policy)
            with hook.guard.review(deadline):
                verdict = _judge(hook, review, policy, org, deadline)
        except ReviewAborted as exc:
            if review is None:
                hook.metrics.count("rejected", "503")
                return _error(503, f"request {exc.reason}")
            log(_log, logging.ERROR, "review aborted", reason=exc.reason, uid=review.uid, kind=review.kind.render())
            verdict = aborted(review, policy, exc.reason, org)
            hook.metrics.count("internal_errors", _action(verdict))
        finally:
            if large:
                hook.large_reviews.release()
        body = json.dumps(review_response(review, verdict))
        elapsed = time.perf_counter() - started
        kind = review.kind.kind if review.kind.kind in METRIC_KINDS else "other"
        hook.metrics.observe_review(elapsed, kind, review.operation, verdict.allowed,
                                    ((f.rule, f.severity.value) for f in verdict.findings))
        _record_withheld(hook, review, verdict)
        _log_review(review, verdict, elapsed)
        return Response(body, mimetype="application/json")

    @app.get("/healthz")
    def healthz() -> Response:
        return Response("ok\n", mimetype="text/plain")

    @app.get("/readyz")
    def readyz() -> Response:
        problems = hook.readiness()
        if problems:
            return Response("not ready: " + "; ".join(problems) + "\n", status=503, mimetype="text/plain")
        # A refused edit leaves the previous file in force: ready, and said, so that it is seen before a restart.
        kept = "".join(f"{s.what}: the last edit was refused ({_cut(s.error, 300)}); the one read at "
                       f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(s.loaded_at))} stays in force\n"
                       for s in hook.sources() if s.error)
        # A pinned release that is not the API server's: ready (the pin is honoured), and said.
        release = hook.release_check().message()
        kept += f"kubeVersion: {release}\n" if release else ""
        return Response("ok\n" + kept, mimetype="text/plain")

    @app.get("/metrics")
    def metrics() -> Response:
        # The port the API server reaches serves reviews and probes only: what the replica runs and how
        # is for the monitoring, over the plain health port the NetworkPolicy opens to it alone.
        if not request.environ.get("dralint.health"):
            return _error(404, "/metrics is served on the health port (--health-port), not the webhook's TLS port")
        return Response(hook.exposition(), mimetype="text/plain; version=0.0.4")

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        code = exc.code or 500
        if code == 413:
            hook.metrics.count("rejected", "413")
            return _error(413, f"request body is over the limit of {MAX_BODY_BYTES} bytes")
        return _error(code, exc.description or exc.name)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        log(_log, logging.ERROR, "unhandled error", exc_info=True, path=request.path)
        return _error(500, "internal error (logged by the webhook)")

    return app


@contextmanager
def _building(hook: Webhook) -> Iterator[None]:
    """A cluster state built and put in force: this worker's turn, with the collector paused."""
    with turn(hook.settings.reload_lock), hook.collector.paused():
        yield


def _load_files(paths: tuple[str, ...], hook: Webhook) -> ClusterState:
    """The cluster state of ``paths`` with its feasibility view and warmed facts, ready to serve.

    Read with the policy of the moment (a policy edit applies to the files from their next change;
    the feasibility view follows a new release at once, see :meth:`Webhook.start_worker`). Compared
    with the state in force, so that one that lost every slice is refused.
    """
    policy = hook.policy()
    previous = hook.cluster_source.loaded() if hook.cluster_source is not None else None
    state = load_state(paths, policy.options, previous)
    fleet = FleetView(lambda: _feasibility_release(hook.policy()))
    fleet.update(state.index, [])  # the allocator's view of every device: seconds at fleet scale, once
    warm_state(policy.options, state.index)
    return replace(state, fleet=fleet)


def _feasibility_release(policy: Policy) -> Any:
    """The release feasibility is judged with, or None when the policy turns feasibility off."""
    return policy.options.release if policy.feasibility != "off" else None


def _org(hook: Webhook, review: AdmissionRequest, policy: Policy) -> list[Finding]:
    """The organisation rules' findings, with namespace labels from the state the worker has loaded (never
    waiting for one: they need no cluster sync). A failure is logged and judged as no finding."""
    try:
        state = hook.loaded_cluster()
        return org_findings(review, policy, state.index if state is not None else None)
    except Exception:  # the engine's part still judges the request; the log keeps the traceback
        log(_log, logging.ERROR, "internal error while judging the organisation rules", exc_info=True,
            uid=review.uid, kind=review.kind.render())
        return []


def _judge(hook: Webhook, review: AdmissionRequest, policy: Policy, org: list[Finding], deadline: float) -> Verdict:
    """The verdict, with an exception in judging answered per the policy (logged, never shown)."""
    try:
        # Half of what is left for the allocator's search: the rest of the review needs time too.
        verdict = judge(review, policy, hook.cluster(), org, max_seconds=(deadline - time.monotonic()) / 2)
    except Exception:  # the policy decides, the log keeps the traceback, the client never sees it
        log(_log, logging.ERROR, "internal error while judging", exc_info=True, uid=review.uid,
            kind=review.kind.render())
        verdict = internal_error(review, policy, org)
    if verdict.internal_error:
        hook.metrics.count("internal_errors", _action(verdict))
    return verdict


def _action(verdict: Verdict) -> str:
    """What an internal error led to, for the metric: allow, deny (the policy) or deny_org (the organisation's rules)."""
    if verdict.allowed:
        return "allow"
    return "deny" if verdict.code == 500 else "deny_org"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _error(status: int, message: str) -> Response:
    return Response(json.dumps({"error": message}), status=status, mimetype="application/json")


def _record_withheld(hook: Webhook, review: AdmissionRequest, verdict: Verdict) -> None:
    """The denial a review would have met but for its rules' enforcement (warn, dryrun): counted once per
    rule and logged with what the request was and what it would have been told, for a warn-only rollout."""
    if not verdict.withheld:
        return
    actions = {w.finding.rule: w.action.value for w in verdict.withheld}
    for rule, action in sorted(actions.items()):
        hook.metrics.count("would_deny", rule, action)
    log(_log, logging.INFO, "would deny", uid=review.uid, kind=review.kind.render(), namespace=review.namespace,
        name=review.name, operation=review.operation, dry_run=review.dry_run,
        user={"username": review.user.username, "groups": list(review.user.groups)}, rules=sorted(actions),
        enforcement=actions, denial=denial_message(review, tuple(w.finding for w in verdict.withheld)))


def _log_review(review: AdmissionRequest, verdict: Verdict, elapsed: float) -> None:
    """One line per answered review: what (kind, namespace/name, operation), who (the API server's
    ``userInfo``), the verdict, and the rules that refused it (``denied_by``) among all that reported."""
    log(_log, logging.INFO, "review", uid=review.uid, kind=review.kind.render(), resource=review.resource,
        namespace=review.namespace, name=review.name, operation=review.operation, subresource=review.sub_resource,
        dry_run=review.dry_run, user={"username": review.user.username, "groups": list(review.user.groups)},
        allowed=verdict.allowed, duration_ms=round(elapsed * 1000, 3), rules=list(verdict.rules),
        denied_by=[] if verdict.allowed else sorted({f.rule for f in verdict.errors}),
        internal_error=verdict.internal_error)
