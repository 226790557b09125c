"""A fake kube-apiserver for the webhook's cluster watch: lists, watches, expiry, auth errors, faults.

Two ways to answer, both over real HTTP(S) on 127.0.0.1:

* **Live**: :class:`FakeCluster` holds objects and a change log with resourceVersions, as etcd
  and the watch cache do. Lists are paginated (``limit``/``continue``, the pages of one list all at
  the list's resourceVersion); a watch sends the logged changes after its resourceVersion, then
  new ones as they happen, BOOKMARK events when asked for, and ends after ``timeoutSeconds``. A
  watch (or a ``continue``) from before the last compaction gets what the real server sends:
  HTTP 200 and one ``ERROR`` event with Status 410 ``Expired`` (a list's expired ``continue``:
  HTTP 410). Bodies follow the shapes of ``../shared/fixtures/apiserver-1.36`` (kube-apiserver
  v1.36.2).
* **Replay**: the captured responses of that folder, served as they were recorded (list pages
  chained by their ``continue`` tokens, the recorded watch streams in order).

``/version`` answers as kube-apiserver v1.36.2 (:data:`VERSION_1_36`; ``server.version`` changes it,
None answers 404). Pods and Events are served too (``/api/v1``, with the collection of one namespace,
one object by name, and a ``fieldSelector`` of ``field=value`` terms: what ``kubectl describe pod``
reads). Discovery serves ``resource.k8s.io`` in v1, and DeviceTaintRules in v1alpha3 as 1.35 does with
their gate on. Faults on demand (:class:`Faults`): a bearer token other than the expected one
(401), resources the caller may not list (403, the real Status wording), a delay before each
answer, a watch stream cut in the middle of an event, and DeviceTaintRules not served (the gate
off: 404, not in discovery).

Hostile modes, beside the faithful one: a 410 storm (every watch, open ones included, answered
with the ``ERROR`` event 410 ``Expired``), watches that end at once without an event, watches that
stall (headers and a few bookmarks, then silence on an open connection), an outage (``down``:
every connection closed unanswered, open watches cut), and poisoned objects: :func:`raw` puts
JSON text into an object verbatim (parameters nested 5,000 deep, a lone surrogate escape, or
text that is not JSON even to Go's decoder). Every request is recorded, with its time, for
assertions. Tests stop the server they start.
"""
from __future__ import annotations

import base64
import copy
import itertools
import json
import re
import ssl
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

GROUP = "resource.k8s.io"
VERSION = "v1"
# DeviceTaintRules are served by 1.35 in v1alpha3 alone, and only with the DRADeviceTaintRules gate.
TAINT_RULES_VERSION = "v1alpha3"
KINDS = {"namespaces": ("", "Namespace"), "nodes": ("", "Node"), "deviceclasses": (GROUP, "DeviceClass"),
         "resourceslices": (GROUP, "ResourceSlice"), "resourceclaims": (GROUP, "ResourceClaim"),
         "resourceclaimtemplates": (GROUP, "ResourceClaimTemplate"), "devicetaintrules": (GROUP, "DeviceTaintRule"),
         "pods": ("", "Pod"), "events": ("", "Event")}
NAMESPACED = frozenset({"resourceclaims", "resourceclaimtemplates", "pods", "events"})
# A namespaced collection, or one object: /api/v1/namespaces/ml/pods[/train-0] (the group's paths alike).
_NAMESPACED_PATH = re.compile(r"^(/api/v1|/apis/[^/]+/[^/]+)/namespaces/([^/]+)/([^/]+)(?:/([^/]+))?$")
_OBJECT_PATH = re.compile(r"^(/api/v1|/apis/[^/]+/[^/]+)/([^/]+)/([^/]+)$")


# GET /version as kube-apiserver v1.36.2 (the fixtures' server) answers it, emulating its own release; the
# commit and build fields are placeholders (nothing reads them).
VERSION_1_36 = {"major": "1", "minor": "36", "emulationMajor": "1", "emulationMinor": "36",
                "minCompatibilityMajor": "1", "minCompatibilityMinor": "35", "gitVersion": "v1.36.2",
                "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                "buildDate": "2026-06-10T00:00:00Z", "goVersion": "go1.25.6", "compiler": "gc",
                "platform": "linux/amd64"}


def version_info(git_version: str) -> dict:
    """The ``/version`` body of a server of ``git_version`` (e.g. "v1.34.3"), emulating its own release."""
    minor = git_version.lstrip("v").split(".")[1]
    return {**VERSION_1_36, "minor": minor, "emulationMinor": minor, "minCompatibilityMinor": str(int(minor) - 1),
            "gitVersion": git_version}


def version_of(resource: str) -> str:
    """The version of its group a resource is served in."""
    return TAINT_RULES_VERSION if resource == "devicetaintrules" else VERSION


def api_version_of(resource: str) -> str:
    group = KINDS[resource][0]
    return f"{group}/{version_of(resource)}" if group else "v1"


def key_of(obj: dict) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


_RAW: dict[int, bytes] = {}
_RAW_IDS = itertools.count()
_RAW_MARKER = re.compile(rb'"\\u0000raw(\d+)\\u0000"')


def raw(text: bytes) -> str:
    """A value the server writes as ``text`` verbatim, wherever it is put in an object: JSON that
    Python's encoder would not write (5,000 levels deep, a lone surrogate escape) or no JSON at all."""
    ident = next(_RAW_IDS)
    _RAW[ident] = text
    return f"\x00raw{ident}\x00"


def encode(body: Any) -> bytes:
    """``body`` as JSON, each :func:`raw` value as its text."""
    return _RAW_MARKER.sub(lambda m: _RAW[int(m.group(1))], json.dumps(body).encode())


def status(code: int, reason: str, message: str, details: dict | None = None) -> dict:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}
    if details:
        body["details"] = details
    return body


class FakeCluster:
    """Objects by resource and key, a resourceVersion counter and the change log watches read."""

    def __init__(self, first_version: int = 100) -> None:
        self.cond = threading.Condition()
        self.version = first_version
        self.objects: dict[str, dict[str, dict]] = {r: {} for r in KINDS}
        self.log: list[tuple[int, str, str, dict]] = []
        self.compacted = 0
        self.uid = 0

    def _write(self, resource: str, event: str, obj: dict) -> dict:
        with self.cond:
            self.version += 1
            obj = copy.deepcopy(obj)
            obj.setdefault("apiVersion", api_version_of(resource))
            obj.setdefault("kind", KINDS[resource][1])
            meta = obj.setdefault("metadata", {})
            meta["resourceVersion"] = str(self.version)
            if "uid" not in meta:
                self.uid += 1
                meta["uid"] = f"00000000-0000-4000-8000-{self.uid:012d}"
            if event == "DELETED":
                self.objects[resource].pop(key_of(obj), None)
            else:
                self.objects[resource][key_of(obj)] = obj
            self.log.append((self.version, resource, event, obj))
            self.cond.notify_all()
            return obj

    def create(self, resource: str, obj: dict) -> dict:
        return self._write(resource, "ADDED", obj)

    def update(self, resource: str, obj: dict) -> dict:
        return self._write(resource, "MODIFIED", obj)

    def delete(self, resource: str, key: str) -> dict:
        with self.cond:
            obj = self.objects[resource][key]
        return self._write(resource, "DELETED", obj)

    def compact(self) -> None:
        """Forget the change log up to now, as etcd's compaction does: older positions expire."""
        with self.cond:
            self.compacted = self.version
            self.log = []

    def items(self, resource: str) -> tuple[int, list[dict]]:
        with self.cond:
            return self.version, [copy.deepcopy(o) for _, o in sorted(self.objects[resource].items())]


@dataclass
class Faults:
    token: str | None = None                                  # expected bearer token; others get 401
    forbidden: set[str] = field(default_factory=set)          # resources listed with 403
    delay: float = 0.0                                        # seconds before every answer
    cut_watches: int = 0                                      # this many next watch streams are cut mid-event
    bookmark_every: float = 0.2
    taint_rules_served: bool = True                           # the DRADeviceTaintRules gate (404 and no discovery)
    # Hostile modes (checked while a watch runs, so they reach open watches too).
    expire_watches: bool = False                              # a 410 storm: every watch gets ERROR 410 Expired
    close_watches: bool = False                               # every watch ends at once, without an event
    stall_watches: int | None = None                          # each watch sends this many bookmarks, then nothing
    down: bool = False                                        # an outage: connections closed unanswered


def write_kubeconfig(path: Path, url: str, *, name: str = "fake", user: dict[str, Any] | None = None,
                     cluster: dict[str, Any] | None = None, namespace: str | None = None) -> Path:
    """A kubeconfig with one context ``name`` for the API server at ``url``: ``user`` its credentials
    (a token by default), ``cluster`` more of the cluster entry (a CA, a TLS server name), ``namespace``
    the context's namespace."""
    context: dict[str, Any] = {"cluster": name, "user": name}
    if namespace is not None:
        context["namespace"] = namespace
    # YAML, as kubectl writes it: tests edit the text of a context.
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": name,
        "clusters": [{"name": name, "cluster": {"server": url, **(cluster or {})}}],
        "users": [{"name": name, "user": {"token": name} if user is None else user}],
        "contexts": [{"name": name, "context": context}]}))
    return path


class _Server(ThreadingHTTPServer):
    """The standard threading server, quiet about a client that hangs up in the middle of a request
    (a watch the client ends, a test of timeouts): its traceback on stderr told nothing. Any other
    exception of a handler is still printed."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):   # resets, broken pipes, TLS alerts, timeouts
            return
        super().handle_error(request, client_address)


class FakeApiServer:
    """The server: ``cluster`` (live) or ``replay`` (a fixture folder), with ``faults``."""

    def __init__(self, cluster: FakeCluster | None = None, *, replay: Path | None = None,
                 tls: tuple[str, str] | None = None) -> None:
        self.cluster = cluster or FakeCluster()
        self.replay = Replay(replay) if replay is not None else None
        self.faults = Faults()
        self.version: dict | None = dict(VERSION_1_36)                # the body of GET /version (None: 404)
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.times: list[float] = []                              # time.monotonic() of each request
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.httpd = _Server(("127.0.0.1", 0), _handler(self))
        self.scheme = "http"
        if tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(*tls)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
            self.scheme = "https"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> "FakeApiServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stopping.set()
        with self.cluster.cond:
            self.cluster.cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()

    def calls(self, resource: str, *, watch: bool | None = None) -> list[dict[str, str]]:
        with self.lock:
            return [params for path, params in self.requests if path.endswith("/" + resource)
                    and (watch is None or (params.get("watch") == "1") == watch)]

    def requests_between(self, start: float, end: float) -> int:
        """Requests of any kind received between two ``time.monotonic()`` instants."""
        with self.lock:
            return sum(1 for t in self.times if start <= t < end)


class Replay:
    """The captured responses of ``../shared/fixtures/apiserver-1.36``, served as recorded."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.watches: dict[str, list[str]] = {"resourceslices": ["watch-resourceslices.json",
                                                                 "watch-resourceslices-expired.json"]}

    def load(self, name: str) -> dict:
        return json.loads((self.folder / name).read_text())

    def page(self, resource: str, token: str | None) -> dict | None:
        """The recorded page of ``resource`` that follows ``token`` (the first page without one)."""
        n = 0
        while (self.folder / f"list-{resource}-page{n}.json").is_file():
            recorded = self.load(f"list-{resource}-page{n}.json")
            previous = self.load(f"list-{resource}-page{n - 1}.json") if n else None
            prev_token = previous["body"]["metadata"].get("continue") if previous else None
            if prev_token == token:
                return recorded
            n += 1
        if token is not None:
            return self.load("list-bad-continue.json")
        return None

    def next_watch(self, resource: str) -> dict | None:
        queue = self.watches.get(resource)
        return self.load(queue.pop(0)) if queue else None


def selected(obj: dict, namespace: str | None, field_selector: str) -> bool:
    """Whether ``obj`` is in ``namespace`` (None: any) and matches every ``path=value`` (or ``!=``) term."""
    if namespace is not None and obj["metadata"].get("namespace") != namespace:
        return False
    for term in filter(None, field_selector.split(",")):
        negated = "!=" in term
        path, value = term.split("!=" if negated else "=", 1)
        found: Any = obj
        for part in path.lstrip("=").split("."):
            found = found.get(part) if isinstance(found, dict) else None
        if (str(found if found is not None else "") == value.lstrip("=")) == negated:
            return False
    return True


def _handler(server: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            params = {k: v[-1] for k, v in parse_qs(url.query).items()}
            with server.lock:
                server.requests.append((url.path, params))
                server.times.append(time.monotonic())
            if server.faults.down:
                self.close_connection = True   # no answer at all: the client sees the connection dropped
                return
            if server.faults.delay:
                time.sleep(server.faults.delay)
            if server.faults.token is not None and \
                    self.headers.get("Authorization") != f"Bearer {server.faults.token}":
                if server.replay is not None:
                    recorded = server.replay.load("list-resourceslices-unauthorized.json")
                    return self.send_json(recorded["status"], recorded["body"])
                return self.send_json(401, status(401, "Unauthorized", "Unauthorized"))
            if url.path == "/version":
                if server.version is None:
                    return self.send_json(404, status(404, "NotFound", "the server could not find the requested "
                                                      "resource"))
                return self.send_json(200, server.version)
            served = {r: version_of(r) for r, (g, _) in KINDS.items()
                      if g == GROUP and (r != "devicetaintrules" or server.faults.taint_rules_served)}
            if url.path == f"/apis/{GROUP}":
                versions = sorted(set(served.values()), key=lambda v: v != VERSION)   # v1 first, as preferred
                return self.send_json(200, {"kind": "APIGroup", "apiVersion": "v1", "name": GROUP,
                                            "versions": [{"groupVersion": f"{GROUP}/{v}", "version": v}
                                                         for v in versions],
                                            "preferredVersion": {"groupVersion": f"{GROUP}/{VERSION}",
                                                                 "version": VERSION}})
            if url.path.startswith(f"/apis/{GROUP}/") and url.path.count("/") == 3:
                version = url.path.rsplit("/", 1)[-1]
                names = [r for r, v in served.items() if v == version]
                if not names:
                    return self.send_json(404, status(404, "NotFound", "the server could not find the requested "
                                                      "resource"))
                return self.send_json(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                            "groupVersion": f"{GROUP}/{version}",
                                            "resources": [{"name": r, "namespaced": r in ("resourceclaims",
                                                           "resourceclaimtemplates"), "kind": KINDS[r][1],
                                                           "verbs": ["get", "list", "watch"]} for r in names]
                                            + [{"name": f"{r}/status", "namespaced": False, "kind": KINDS[r][1],
                                                "verbs": ["get"]} for r in names]})
            path, namespace, name = url.path, None, None
            scoped = _NAMESPACED_PATH.match(path)
            if scoped and scoped.group(3) in NAMESPACED:
                path, namespace, name = f"{scoped.group(1)}/{scoped.group(3)}", scoped.group(2), scoped.group(4)
            else:
                single = _OBJECT_PATH.match(path)
                if single and single.group(2) in KINDS and single.group(2) not in NAMESPACED:
                    path, name = f"{single.group(1)}/{single.group(2)}", single.group(3)
            resource = path.rsplit("/", 1)[-1]
            group = KINDS.get(resource, ("?", ""))[0]
            expected = f"/apis/{GROUP}/{version_of(resource)}/{resource}" if group else f"/api/v1/{resource}"
            if resource not in KINDS or path != expected or (group and resource not in served):
                return self.send_json(404, status(404, "NotFound", "the server could not find the requested resource"))
            if resource in server.faults.forbidden and server.replay is not None:
                recorded = server.replay.load(f"list-{resource}-forbidden.json")
                return self.send_json(recorded["status"], recorded["body"])
            if resource in server.faults.forbidden:
                where = f'"{resource}" in API group "{group}"' if group else f'"{resource}" in API group ""'
                return self.send_json(403, status(
                    403, "Forbidden", f'{resource}{"." + group if group else ""} is forbidden: User '
                    f'"system:serviceaccount:dralint:dralint-webhook" cannot list resource {where} at the cluster '
                    "scope", {"group": group, "kind": resource}))
            if name is not None:
                return self.get_one(resource, f"{namespace}/{name}" if namespace else name)
            if params.get("watch") in ("1", "true"):
                return self.watch(resource, params)
            return self.list(resource, params, namespace)

        def get_one(self, resource: str, key: str) -> None:
            with server.cluster.cond:
                obj = copy.deepcopy(server.cluster.objects[resource].get(key))
            if obj is None:
                return self.send_json(404, status(404, "NotFound", f'{resource} "{key.rsplit("/", 1)[-1]}" not found',
                                                  {"name": key.rsplit("/", 1)[-1], "kind": resource}))
            return self.send_json(200, obj)

        # --- lists ---------------------------------------------------------------------------------

        def list(self, resource: str, params: dict[str, str], namespace: str | None = None) -> None:
            if server.replay is not None:
                recorded = server.replay.page(resource, params.get("continue"))
                if recorded is None:
                    return self.send_json(200, {"kind": f"{KINDS[resource][1]}List",
                                                "apiVersion": api_version_of(resource),
                                                "metadata": {"resourceVersion": "225"}, "items": []})
                return self.send_json(recorded["status"], recorded["body"])
            cluster = server.cluster
            limit = int(params.get("limit") or 0)
            token = params.get("continue")
            if token:
                try:
                    decoded = json.loads(base64.urlsafe_b64decode(token + "=="))
                    version, start = int(decoded["rv"]), str(decoded["start"])
                except (ValueError, KeyError, TypeError):
                    return self.send_json(400, status(400, "BadRequest", "invalid continue token"))
                if version <= cluster.compacted:
                    return self.send_json(410, status(410, "Expired", "The provided continue parameter is too old "
                                                      "to display a consistent list result."))
                items = server.pages[(resource, version, namespace, params.get("fieldSelector", ""))]
            else:
                version, items = cluster.items(resource)
                items = [i for i in items if selected(i, namespace, params.get("fieldSelector", ""))]
                with server.lock:
                    server.pages[(resource, version, namespace, params.get("fieldSelector", ""))] = items
                start = ""
            rest = [i for i in items if key_of(i) > start]
            page = rest[:limit] if limit else rest
            meta: dict[str, Any] = {"resourceVersion": str(version)}
            if limit and len(rest) > limit:
                meta["continue"] = base64.urlsafe_b64encode(json.dumps(
                    {"rv": version, "start": key_of(page[-1])}).encode()).decode().rstrip("=")
                meta["remainingItemCount"] = len(rest) - limit
            body = {"kind": f"{KINDS[resource][1]}List", "apiVersion": api_version_of(resource), "metadata": meta,
                    "items": [{k: v for k, v in i.items() if k not in ("apiVersion", "kind")} for i in page]}
            self.send_json(200, body)

        # --- watches -------------------------------------------------------------------------------

        def watch(self, resource: str, params: dict[str, str]) -> None:
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
            except OSError:   # the client left (a watcher stopping at the end of a test)
                self.close_connection = True
                return
            if server.replay is not None:
                recorded = server.replay.next_watch(resource)
                for event in (recorded or {}).get("events", []):
                    self.chunk(json.dumps(event).encode() + b"\n")
                if recorded is None:
                    self.wait_out(params)
                return self.chunk(b"")
            cluster = server.cluster
            faults = server.faults
            since = int(params.get("resourceVersion") or 0)
            deadline = time.monotonic() + float(params.get("timeoutSeconds") or 30)
            bookmarks = params.get("allowWatchBookmarks") == "true"
            sent = since
            last_bookmark = time.monotonic()
            bookmarks_sent = 0
            while not server.stopping.is_set():
                if faults.down:   # an outage: the stream cut, no closing chunk
                    self.close_connection = True
                    return
                if faults.expire_watches or (since and since < cluster.compacted):
                    self.chunk(json.dumps({"type": "ERROR", "object": status(
                        410, "Expired", "The resourceVersion for the provided watch is too old.")}).encode() + b"\n")
                    return self.chunk(b"")
                if faults.close_watches:
                    return self.chunk(b"")
                if faults.stall_watches is not None and bookmarks_sent >= faults.stall_watches:
                    return self.stall()
                with cluster.cond:
                    horizon = cluster.version   # every change up to here is in ``events``
                    events = [(v, e, o) for v, r, e, o in cluster.log if r == resource and v > sent]
                    if not events:
                        cluster.cond.wait(timeout=0.05)
                for version, event, obj in events:
                    line = encode({"type": event, "object": obj}) + b"\n"
                    if server.faults.cut_watches:
                        server.faults.cut_watches -= 1
                        self.chunk(line[: len(line) // 2])
                        self.wfile.flush()
                        self.close_connection = True
                        return   # no closing chunk: the stream ends in the middle of an event
                    self.chunk(line)
                    sent = version
                now = time.monotonic()
                if bookmarks and now - last_bookmark >= server.faults.bookmark_every:
                    position = max(sent, horizon)
                    bookmark = {"kind": KINDS[resource][1], "apiVersion": api_version_of(resource),
                                "metadata": {"resourceVersion": str(position)}}
                    self.chunk(json.dumps({"type": "BOOKMARK", "object": bookmark}).encode() + b"\n")
                    sent, last_bookmark = position, now
                    bookmarks_sent += 1
                if now >= deadline:
                    break
            self.chunk(b"")

        def stall(self) -> None:
            """Keep the connection open and send nothing, until the server stops or goes down."""
            while not server.stopping.is_set() and not server.faults.down:
                time.sleep(0.05)
            self.close_connection = True

        def wait_out(self, params: dict[str, str]) -> None:
            deadline = time.monotonic() + float(params.get("timeoutSeconds") or 30)
            while time.monotonic() < deadline and not server.stopping.is_set():
                time.sleep(0.05)

        def chunk(self, data: bytes) -> None:
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            except OSError:
                pass

        def send_json(self, code: int, body: Any) -> None:
            data = encode(body)
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:   # the client left (a watcher stopping at the end of a test)
                self.close_connection = True

    server.pages = {}  # type: ignore[attr-defined]
    return Handler
