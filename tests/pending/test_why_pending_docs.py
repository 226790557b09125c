"""docs/why-pending.md shows what ``why-pending`` prints: its text example line for line, its JSON
example key for key."""
from __future__ import annotations

import json
from pathlib import Path

from fakeapi import FakeCluster
from test_why_pending import allocated, claim, cluster, config, event, pod, server, why  # noqa: F401 (fixtures)

DOC = (Path(__file__).resolve().parents[2] / "docs" / "why-pending.md").read_text()


def block(language: str, n: int = 0) -> str:
    return DOC.split(f"```{language}\n")[n + 1].split("```", 1)[0]


def documented_pod(cluster: FakeCluster) -> None:
    cluster.create("resourceclaims", claim("train-gpu-x7k2q", count=4))
    cluster.create("resourceclaims", allocated("nic", "node-0", ["gpu-1"], "other"))
    cluster.create("pods", pod("train", [{"name": "gpu", "resourceClaimTemplateName": "four-gpus"},
                                         {"name": "nic", "resourceClaimName": "nic"}],
                               resourceClaimStatuses=[{"name": "gpu", "resourceClaimName": "train-gpu-x7k2q"}]))
    for n in range(2):
        cluster.create("events", event("train", n))


def test_the_text_example_is_what_it_prints(cluster, config):
    documented_pod(cluster)
    command, *shown = block("text").splitlines()
    code, out, _ = why(config, *command.split()[3:])
    assert code == 1
    assert out.splitlines()[:len(shown)] == shown


def test_the_json_example_has_the_keys_it_prints(cluster, config):
    documented_pod(cluster)
    documented = json.loads(block("json"))
    printed = json.loads(why(config, "-n", "ml", "train", "-o", "json")[1])

    def keys(body: dict) -> list:
        p = body["pods"][0]
        return [set(body), set(p), set(p["claims"][0]), set(p["claims"][0]["causes"][0]), set(p["events"][0])]

    assert keys(documented) == keys(printed)
