"""``dralint --kubeconfig``: the cluster state listed from a fake API server over TLS, instead of read from files.

Each test starts :mod:`fakeapi` with a certificate for the webhook's Service name (made once per
module) and writes a kubeconfig that trusts its CA, as a user's would.
"""
from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from dralint.cli import main
from dralint.cluster.api import ApiError, list_all
from dralint.cluster.connect import ConnectError, connect
from dralint.cluster.discovery import version_rank
from dralint.cluster.state import list_cluster
from fakeapi import KINDS, FakeApiServer, FakeCluster, version_info, write_kubeconfig
from test_webhook_server import HOSTNAME, make_certs

TOKEN = "s3cr3t-token"

CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: train, namespace: ml}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com, count: 2}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: typo, namespace: ml}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.exmaple.com}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: one, namespace: ml}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com, selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].model == "h100"'}}]}
"""


def slice_of(node: str, devices: int = 2) -> dict:
    return {"metadata": {"name": f"{node}-gpu"},
            "spec": {"driver": "gpu.example.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"}}}
                                 for i in range(devices)]}}


def held(node: str) -> dict:
    """A claim in the cluster holding both GPUs of ``node``."""
    return {"metadata": {"name": f"held-{node}", "namespace": "ml"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                                                                          "count": 2}}]}},
            "status": {"allocation": {
                "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": node,
                                         "device": f"gpu-{i}"} for i in range(2)]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}}


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def cluster() -> FakeCluster:
    c = FakeCluster()
    c.create("namespaces", {"metadata": {"name": "ml", "labels": {"resource.kubernetes.io/admin-access": "true"}}})
    c.create("namespaces", {"metadata": {"name": "default"}})
    for n in range(3):
        c.create("nodes", {"metadata": {"name": f"node-{n}", "labels": {"pool": "a"}}})
        c.create("resourceslices", slice_of(f"node-{n}"))
    c.create("deviceclasses", {"metadata": {"name": "gpu.example.com"},
                               "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}})
    for n in range(3):
        c.create("resourceclaims", held(f"node-{n}"))
    return c


@pytest.fixture
def server(cluster: FakeCluster, certs: Path) -> Iterator[FakeApiServer]:
    with FakeApiServer(cluster, tls=(str(certs / "tls.crt"), str(certs / "tls.key"))) as srv:
        srv.faults.token = TOKEN
        yield srv


def kubeconfig(path: Path, url: str, certs: Path, token: str = TOKEN, context: str = "fake") -> Path:
    return write_kubeconfig(path, url, name=context, user={"token": token},
                            cluster={"certificate-authority": str(certs / "ca.crt"), "tls-server-name": HOSTNAME})


def run(*argv: str, tty: bool = False) -> tuple[int, str, str]:
    out = io.StringIO()

    class Err(io.StringIO):
        def isatty(self) -> bool:
            return tty

    err = Err()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def config(tmp_path: Path, server: FakeApiServer, certs: Path) -> Path:
    return kubeconfig(tmp_path / "kubeconfig", server.url, certs)


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    folder = tmp_path / "manifests"
    folder.mkdir()
    (folder / "claims.yaml").write_text(CLAIM)
    return folder


def dump(cluster: FakeCluster, path: Path) -> Path:
    """What ``kubectl get ... -A -o yaml`` writes for the same objects: one List."""
    items = [obj for resource in KINDS for obj in cluster.items(resource)[1]]
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


# --- the command ------------------------------------------------------------------------------------

def dumped(cluster: FakeCluster, tmp_path: Path, *argv: str) -> tuple[int, str, str]:
    """The run with a dump of ``cluster`` as ``--cluster``; its findings name the dump as the file a
    cluster object came from, where live ones name none (as the webhook's): that alone is taken out."""
    path = dump(cluster, tmp_path / "dump.yaml")
    code, out, err = run("--cluster", str(path), *argv)
    return code, out.replace(f" in {path}", ""), err


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_live_findings_equal_those_of_a_dump_of_the_same_cluster(fmt, tmp_path, config, manifests, cluster):
    live = run("--kubeconfig", str(config), "--format", fmt, "--no-config", str(manifests))
    dump_run = dumped(cluster, tmp_path, "--kube-version", "1.36", "--format", fmt, "--no-config", str(manifests))
    assert live[1] == dump_run[1] and live[0] == dump_run[0] == 1
    assert live[2] == ""
    if fmt == "json":
        rules = {f["rule"] for f in json.loads(live[1])["findings"]}
        assert len(rules) >= 2   # the missing class and the allocation that cannot be made both show


def test_the_servers_release_is_used_unless_the_user_gives_one(tmp_path, server, certs, manifests, cluster):
    server.version = version_info("v1.34.3")
    config = kubeconfig(tmp_path / "kubeconfig", server.url, certs)
    for given, judged in ((), "1.34"), (("--kube-version", "1.36"), "1.36"):
        live = run("--kubeconfig", str(config), *given, "--format", "json", "--no-config", str(manifests))
        dump_run = dumped(cluster, tmp_path, "--kube-version", judged, "--format", "json", "--no-config",
                          str(manifests))
        assert live[1] == dump_run[1]


def test_a_progress_line_only_on_a_terminal(config, manifests):
    assert "listing resourceslices" in run("--kubeconfig", str(config), "--no-config", str(manifests), tty=True)[2]
    assert "listing" not in run("--kubeconfig", str(config), "--no-config", str(manifests))[2]


def test_kubeconfig_environment_variable_and_context(tmp_path, server, certs, manifests, monkeypatch):
    other = kubeconfig(tmp_path / "other", "https://127.0.0.1:9", certs, context="elsewhere")
    mine = kubeconfig(tmp_path / "mine", server.url, certs, context="fake")
    monkeypatch.setenv("KUBECONFIG", f"{other}:{mine}")
    code, _, err = run("--context", "fake", "--no-config", str(manifests))
    assert code == 1 and err == ""
    code, _, err = run("--context", "elsewhere", "--no-config", str(manifests))   # the first file's context
    assert code == 2 and "cannot reach the API server https://127.0.0.1:9" in err


def test_forbidden_optional_resource_is_reported_and_the_run_goes_on(server, config, manifests):
    server.faults.forbidden = {"resourceclaims"}
    code, out, err = run("--kubeconfig", str(config), "--no-config", str(manifests))
    assert code == 1 and out
    assert err.startswith("dralint: warning: forbidden: dralint needs `list resourceclaims.resource.k8s.io` "
                          "(cluster-wide)")
    assert "count as free" in err


def test_forbidden_essential_resource_ends_the_run(server, config, manifests):
    server.faults.forbidden = {"resourceslices"}
    code, out, err = run("--kubeconfig", str(config), "--no-config", str(manifests))
    assert code == 2 and out == ""
    assert err.startswith("dralint: error: forbidden: dralint needs `list resourceslices.resource.k8s.io` "
                          "(cluster-wide)") and err.count("\n") == 1


def test_unauthorized(tmp_path, server, certs, manifests):
    config = kubeconfig(tmp_path / "kubeconfig", server.url, certs, token="wrong")
    code, out, err = run("--kubeconfig", str(config), "--no-config", str(manifests))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "refused the credentials (401 Unauthorized)" in err


def test_unreachable(tmp_path, certs, manifests):
    config = kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:9", certs)
    code, out, err = run("--kubeconfig", str(config), "--no-config", str(manifests))
    assert code == 2 and err.startswith("dralint: error: cannot reach the API server https://127.0.0.1:9")
    assert err.count("\n") == 1


@pytest.mark.parametrize("argv, said", [
    (("--context", "nope"), "context 'nope' does not exist in kubeconfig"),
    (("--cluster", "x.yaml"), "--cluster and --kubeconfig/--context both give the cluster state"),
])
def test_usage_errors(config, manifests, argv, said):
    code, out, err = run("--kubeconfig", str(config), *argv, "--no-config", str(manifests))
    assert code == 2 and said in err and err.count("\n") == 1


def test_missing_kubeconfig(tmp_path, manifests):
    code, _, err = run("--kubeconfig", str(tmp_path / "absent"), "--no-config", str(manifests))
    assert code == 2 and err == f"dralint: error: --kubeconfig {tmp_path / 'absent'}: no such file\n"


def test_without_the_extra_the_message_says_what_to_install(config, manifests, monkeypatch):
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    code, _, err = run("--kubeconfig", str(config), "--no-config", str(manifests))
    assert code == 2 and "pip install 'dralint[cluster]'" in err


def test_in_cluster_config_when_no_kubeconfig_exists(tmp_path):
    env = {"HOME": str(tmp_path), "KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(ConnectError, match="service account"):   # no token file here: the Pod's config was tried
        connect(environ=env)
    with pytest.raises(ConnectError, match="no kubeconfig"):
        connect(environ={"HOME": str(tmp_path)})


# --- the library ------------------------------------------------------------------------------------

def test_list_all_follows_continue_tokens(server, config):
    api = connect(str(config))
    pages: list[tuple[int, int | None]] = []
    listing = list_all(api, "/api/v1/nodes", page_size=2, on_page=lambda n, left: pages.append((n, left)))
    assert [o["metadata"]["name"] for o in listing.items] == ["node-0", "node-1", "node-2"]
    assert all(o["kind"] == "Node" and o["apiVersion"] == "v1" for o in listing.items)
    assert pages == [(2, 1), (3, None)]
    calls = server.calls("nodes")
    assert "continue" not in calls[0] and calls[1]["continue"] and calls[1]["limit"] == "2"


def test_an_expired_continue_token_starts_the_list_over(server, cluster, config):
    api = connect(str(config))

    def compact(count: int, left: int | None) -> None:
        if len(server.calls("nodes")) == 1:   # after the first page: compaction overtakes the list
            cluster.compact()
            cluster.create("nodes", {"metadata": {"name": "node-3"}})

    listing = list_all(api, "/api/v1/nodes", page_size=2, on_page=compact)
    assert [o["metadata"]["name"] for o in listing.items] == ["node-0", "node-1", "node-2", "node-3"]
    assert listing.restarts == 1


def test_a_list_that_keeps_expiring_is_given_up(server, cluster, config):
    api = connect(str(config))

    def compact(count: int, left: int | None) -> None:
        cluster.compact()
        cluster.update("nodes", cluster.objects["nodes"]["node-0"])

    with pytest.raises(ApiError) as caught:
        list_all(api, "/api/v1/nodes", page_size=2, restarts=2, on_page=compact)
    assert caught.value.code == 410 and len(server.calls("nodes")) == 6


def test_snapshot_lists_each_kind_in_the_version_that_serves_it(server, config):
    snapshot = list_cluster(connect(str(config)))
    assert snapshot.minor == 36 and snapshot.git_version == "v1.36.2" and not snapshot.problems
    assert snapshot.listings["devicetaintrules"].api_version == "resource.k8s.io/v1alpha3"
    assert snapshot.listings["resourceslices"].api_version == "resource.k8s.io/v1"
    server.faults.taint_rules_served = False
    assert list_cluster(connect(str(config))).not_served == ("devicetaintrules",)


def test_versions_rank_as_kubernetes_orders_them():
    assert sorted(["v1alpha3", "v1", "v1beta1", "v2beta1", "v1beta2"], key=version_rank) == [
        "v1alpha3", "v1beta1", "v1beta2", "v2beta1", "v1"]


def test_pods_and_events_of_one_namespace(server, cluster, config):
    """What ``why-pending`` reads: one Pod by name, the events about it (a field selector), page by page."""
    cluster.create("pods", {"metadata": {"name": "train-0", "namespace": "ml"}, "spec": {"containers": []},
                            "status": {"phase": "Pending"}})
    for n in range(3):
        cluster.create("events", {"metadata": {"name": f"train-0.{n}", "namespace": "ml"}, "reason": "FailedScheduling",
                                  "involvedObject": {"kind": "Pod", "name": "train-0", "namespace": "ml"}})
    cluster.create("events", {"metadata": {"name": "other.0", "namespace": "ml"},
                              "involvedObject": {"kind": "Pod", "name": "other"}})
    api = connect(str(config))
    assert api.get("/api/v1/namespaces/ml/pods/train-0")["status"]["phase"] == "Pending"
    with pytest.raises(ApiError) as missing:
        api.get("/api/v1/namespaces/default/pods/train-0")
    assert missing.value.code == 404 and missing.value.message == 'pods "train-0" not found'
    events = list_all(api, "/api/v1/namespaces/ml/events", {"fieldSelector": "involvedObject.name=train-0"},
                      page_size=2)
    assert [e["metadata"]["name"] for e in events.items] == ["train-0.0", "train-0.1", "train-0.2"]
    assert events.items[0]["kind"] == "Event" and list_all(api, "/api/v1/namespaces/default/events").items == []


def test_the_documented_rbac_lets_every_resource_be_listed():
    role = yaml.safe_load((Path(__file__).resolve().parents[2] / "docs" / "rbac" / "dralint-reader.yaml").read_text())
    allowed = {f"{r}.{rule['apiGroups'][0]}".rstrip(".") for rule in role["rules"] if "list" in rule["verbs"]
               for r in rule.get("resources", [])}
    from dralint.cluster.state import RESOURCES

    # why-pending lists Pods and events too (tests/pending/test_rbac.py checks the whole role).
    assert allowed - {"pods", "events"} == {r.permission for r in RESOURCES}
