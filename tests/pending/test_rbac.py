"""The ClusterRole of docs/rbac/dralint-reader.yaml grants exactly what ``why-pending`` and
``--kubeconfig`` ask the API server for: the (verb, resource) pairs the fake server saw."""
from __future__ import annotations

import io
import re
from pathlib import Path

import yaml

from dralint.cli import main
from fakeapi import FakeApiServer
from test_why_pending import allocated, claim, cluster, config, event, pod, server  # noqa: F401 (fixtures)

ROLE = Path(__file__).resolve().parents[2] / "docs" / "rbac" / "dralint-reader.yaml"
_RESOURCE = re.compile(r"^/(?:api/v1|apis/(?P<group>[^/]+)/[^/]+)(?:/namespaces/[^/]+)?/(?P<resource>[^/]+)"
                       r"(?P<name>/[^/]+)?$")


def requested(server: FakeApiServer) -> tuple[set[tuple[str, str, str]], set[str]]:
    """What the server was asked: (API group, resource, verb) as RBAC spells them, and the other paths."""
    resources, others = set(), set()
    for path, params in server.requests:
        match = _RESOURCE.match(path)
        if match is None or (match.group("group") and path.count("/") == 3):   # /apis/GROUP/VERSION: discovery
            others.add(path)
            continue
        verb = "get" if match.group("name") else "watch" if params.get("watch") in ("1", "true") else "list"
        resources.add((match.group("group") or "", match.group("resource"), verb))
    return resources, others


def granted() -> tuple[set[tuple[str, str, str]], list[str]]:
    role = yaml.safe_load(ROLE.read_text())
    resources = {(group, resource, verb) for rule in role["rules"] for group in rule.get("apiGroups", [])
                 for resource in rule.get("resources", []) for verb in rule["verbs"]}
    urls = [url for rule in role["rules"] for url in rule.get("nonResourceURLs", [])]
    return resources, urls


def url_allowed(path: str, patterns: list[str]) -> bool:
    """RBAC's matching of a non-resource URL: exact, or a prefix ending in ``*``."""
    return any(path == p or (p.endswith("*") and path.startswith(p[:-1])) for p in patterns)


def test_the_reader_role_grants_exactly_what_why_pending_and_kubeconfig_request(cluster, server, config, tmp_path):
    cluster.create("resourceclaims", claim("big", count=4))
    cluster.create("resourceclaims", allocated("fine", "node-0", ["gpu-0"], "train"))
    cluster.create("resourceclaimtemplates", {"metadata": {"name": "tpl", "namespace": "ml"},
                                              "spec": {"spec": claim("x")["spec"]}})
    cluster.create("pods", pod("train", [{"name": "gpu", "resourceClaimName": "big"},
                                         {"name": "other", "resourceClaimName": "fine"},
                                         {"name": "new", "resourceClaimTemplateName": "tpl"}]))
    cluster.create("events", event("train", 0))
    manifest = tmp_path / "claim.yaml"
    manifest.write_text(yaml.safe_dump({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", **claim("c")}))
    for argv in (["why-pending", "-n", "ml", "train"], ["why-pending", "--all-pending", "-A"],
                 ["why-pending", "--all-pending", "-n", "ml"], ["--no-config", str(manifest)]):
        main([*argv, "--kubeconfig", str(config)], stdout=io.StringIO(), stderr=io.StringIO())
    resources, others = requested(server)
    role_resources, urls = granted()
    assert resources == role_resources
    assert others and all(url_allowed(path, urls) for path in others)
    assert all(any(url_allowed(path, [pattern]) for path in others) for pattern in urls)   # none granted unused


def test_a_verb_the_role_lacks_is_seen():
    """The comparison can fail: a request for a resource the role does not name shows as one."""
    server = FakeApiServer()
    server.requests.append(("/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/x", {}))
    server.requests.append(("/api/v1/namespaces/ml/pods", {"watch": "1"}))
    server.httpd.server_close()
    resources, _ = requested(server)
    assert resources == {("resource.k8s.io", "resourceclaims", "get"), ("", "pods", "watch")}
    assert not resources <= granted()[0]
