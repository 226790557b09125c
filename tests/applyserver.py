"""A fake API server that the real ``kubectl apply`` and ``kubectl replace`` talk to, over HTTP on 127.0.0.1.

It serves what those commands ask for: ``/version``; discovery (``/api``, ``/apis`` and one
resource list per group version, in the plain format kubectl falls back to); for each kind
of :data:`KINDS` GET (an object, or a list narrowed by name: ``kubectl wait``), POST (create; 409
when the object exists), PUT (``kubectl replace``) and PATCH: a strategic merge patch for built-in
kinds, a JSON merge patch for custom resources (what kubectl sends for them), each applied as
``apply_model`` says the real server does; and a ServiceAccount's ``token`` subresource (``kubectl
create token``: a new token each time, for a ServiceAccount that exists; the protobuf request is
not read). Bodies are otherwise JSON only:
``kubectl create secret`` sends protobuf, so tests run it with ``--dry-run=client -o json`` and
create what it prints. No OpenAPI document: kubectl runs with ``--validate=false`` and
takes the patch strategy of built-in kinds from its own compiled-in types, as it does against a
server without one. Every PATCH body is recorded, for comparing kubectl's three-way patches with
the model's. Objects are plain dicts the test may also read and write (a controller's update).
Tests stop the server they start.
"""
from __future__ import annotations

import copy
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from apply_model import json_merge, strategic_merge

# kind: (group, version, resource, namespaced, custom)
KINDS: dict[str, tuple[str, str, str, bool, bool]] = {
    "Namespace": ("", "v1", "namespaces", False, False),
    "ServiceAccount": ("", "v1", "serviceaccounts", True, False),
    "ConfigMap": ("", "v1", "configmaps", True, False),
    "Secret": ("", "v1", "secrets", True, False),
    "Service": ("", "v1", "services", True, False),
    "ClusterRole": ("rbac.authorization.k8s.io", "v1", "clusterroles", False, False),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", False, False),
    "PriorityClass": ("scheduling.k8s.io", "v1", "priorityclasses", False, False),
    "NetworkPolicy": ("networking.k8s.io", "v1", "networkpolicies", True, False),
    "Deployment": ("apps", "v1", "deployments", True, False),
    "PodDisruptionBudget": ("policy", "v1", "poddisruptionbudgets", True, False),
    "ValidatingWebhookConfiguration": ("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                                       False, False),
    "Issuer": ("cert-manager.io", "v1", "issuers", True, True),
    "Certificate": ("cert-manager.io", "v1", "certificates", True, True),
}
_BY_RESOURCE = {(g, v, r): kind for kind, (g, v, r, _, _) in KINDS.items()}


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


class ApplyServer:
    """The server, its objects by (kind, namespace, name) and the PATCH requests it received."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.patches: list[dict[str, Any]] = []
        self.tokens: list[str] = []   # issued by ``kubectl create token``, in order
        self._lock = threading.Lock()
        self._version = 1
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def kubeconfig(self, path: Path) -> Path:
        """A kubeconfig for this server (no credentials: it asks for none)."""
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}]}))
        return path

    def __enter__(self) -> "ApplyServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def get(self, kind: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        with self._lock:
            obj = self.objects.get((kind, namespace, name))
            return copy.deepcopy(obj) if obj is not None else None

    def update(self, obj: dict[str, Any]) -> None:
        """A controller's write of the whole object (a PUT)."""
        with self._lock:
            self._store(obj)

    def _store(self, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        self._version += 1
        meta["resourceVersion"] = str(self._version)
        self.objects[(obj["kind"], meta.get("namespace", ""), meta["name"])] = copy.deepcopy(obj)
        return obj

    def handle(self, method: str, path: str, content_type: str, body: bytes) -> tuple[int, dict[str, Any]]:
        """One request: the status code and the JSON answer."""
        parts = [p for p in path.split("?")[0].split("/") if p]
        if parts == ["version"]:
            return 200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0", "platform": "linux/amd64"}
        if parts == ["api"]:
            return 200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if parts == ["apis"]:
            groups = sorted({(g, v) for g, v, _, _, _ in KINDS.values() if g})
            return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v}],
                 "preferredVersion": {"groupVersion": f"{g}/{v}", "version": v}} for g, v in groups]}
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:   # /openapi/v3 and v2 among them: kubectl then uses its compiled-in types
            return 404, _status(404, "NotFound", f"the server could not find the requested resource ({path})")
        if not rest:
            return 200, self._resource_list(group, version)
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        if (group, version, rest[0], rest[2:]) == ("", "v1", "serviceaccounts", ["token"]) and method == "POST":
            return self._token(namespace, rest[1])
        kind = _BY_RESOURCE.get((group, version, rest[0]))
        if kind is None or len(rest) > 2:
            return 404, _status(404, "NotFound", f"the server could not find the requested resource ({path})")
        with self._lock:
            if method == "POST" and len(rest) == 1:
                obj = json.loads(body)
                key = (kind, namespace, obj["metadata"]["name"])
                if key in self.objects:
                    return 409, _status(409, "AlreadyExists", f"{rest[0]} {key[2]!r} already exists")
                if namespace:
                    obj["metadata"]["namespace"] = namespace
                return 201, self._store(obj)
            if method == "GET" and len(rest) == 1:
                return self._list(kind, namespace, path)
            if len(rest) != 2:
                return 405, _status(405, "MethodNotAllowed", f"{method} {path}")
            live = self.objects.get((kind, namespace, rest[1]))
            if live is None:
                return 404, _status(404, "NotFound", f'{rest[0]} "{rest[1]}" not found')
            if method == "GET":
                return 200, copy.deepcopy(live)
            if method == "PUT":   # kubectl replace: the whole object, as sent
                obj = json.loads(body)
                obj["metadata"]["uid"] = live["metadata"]["uid"]
                return 200, self._store(obj)
            if method == "PATCH":
                patch = json.loads(body)
                self.patches.append({"kind": kind, "name": rest[1], "content_type": content_type, "patch": patch})
                if content_type == "application/strategic-merge-patch+json" and not KINDS[kind][4]:
                    return 200, self._store(strategic_merge(live, patch, kind))
                if content_type == "application/merge-patch+json":
                    return 200, self._store(json_merge(live, patch))
                return 415, _status(415, "UnsupportedMediaType", f"{content_type} for {kind}")
        return 405, _status(405, "MethodNotAllowed", f"{method} {path}")

    def _list(self, kind: str, namespace: str, path: str) -> tuple[int, dict[str, Any]]:
        """A list of ``kind`` in ``namespace``, narrowed by a ``metadata.name`` field selector, for
        ``kubectl wait``'s informer. Its watch is refused (400), as any other query is: a condition met
        on the list ends the wait, one that is not times kubectl out (30 s) and fails the test."""
        query = parse_qs(urlsplit(path).query)
        selectors = [s.split("=", 1) for q in query.get("fieldSelector", []) for s in q.split(",")]
        if any(key != "metadata.name" for key, _ in selectors) or set(query) - {"fieldSelector", "limit", "resourceVersion"}:
            return 400, _status(400, "BadRequest", f"not served: {path}")
        items = [copy.deepcopy(obj) for (k, ns, name), obj in self.objects.items()
                 if k == kind and ns == namespace and all(name == value for _, value in selectors)]
        group, version = KINDS[kind][:2]
        return 200, {"kind": f"{kind}List", "apiVersion": f"{group}/{version}".lstrip("/"),
                     "metadata": {"resourceVersion": str(self._version)}, "items": items}

    def _token(self, namespace: str, account: str) -> tuple[int, dict[str, Any]]:
        """A TokenRequest's answer: a new token for the ServiceAccount ``namespace/account``."""
        with self._lock:
            if ("ServiceAccount", namespace, account) not in self.objects:
                return 404, _status(404, "NotFound", f'serviceaccounts "{account}" not found')
            self.tokens.append(f"token-{len(self.tokens) + 1}-for-{namespace}-{account}")
            return 201, {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                         "metadata": {"name": account, "namespace": namespace}, "spec": {"audiences": []},
                         "status": {"token": self.tokens[-1], "expirationTimestamp": "2026-01-02T00:00:00Z"}}

    @staticmethod
    def _resource_list(group: str, version: str) -> dict[str, Any]:
        resources = [{"name": r, "singularName": kind.lower(), "namespaced": namespaced, "kind": kind,
                      "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}
                     for kind, (g, v, r, namespaced, _) in KINDS.items() if (g, v) == (group, version)]
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}".lstrip("/"),
                "resources": resources}


def _handler(server: ApplyServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body are two writes: without this, Nagle and delayed ACKs add 40 ms to each answer.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test reads ``server.patches``, not a log."""

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            code, answer = server.handle(self.command, self.path, self.headers.get("Content-Type", ""), body)
            data = json.dumps(answer).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = _answer

    return Handler
