"""The DRA7xx catalog examples, judged by the feasibility stage alone (the catalog test runs them
through the whole engine): a bad example raises its rule and no other feasibility rule, a good
one raises none."""
from __future__ import annotations

import pytest

from dralint import source
from dralint.catalog import load_catalog
from dralint.convert import to_canonical
from dralint.feasibility import FeasibilityOptions, judge
from dralint.index import Index
from dralint.manifest import NotAnObject, identify
from dralint.kube.releases import DEFAULT_MINOR, Release, parse_version


EXAMPLES = [pytest.param(rule, ex, id=f"{rule.id}-{ex.verdict}-{i}")
            for rule in load_catalog() if rule.id.startswith("DRA7") for i, ex in enumerate(rule.examples)]


def _objects(text: str, name: str, cluster: bool) -> list:
    out = []
    for doc in source.load_text(text, name).documents:
        for item in identify(doc, from_cluster=cluster):
            if not isinstance(item, NotAnObject) and item.api_version:
                out.append(to_canonical(item))
    return out


def feasibility_rules(example) -> list[str]:
    linted = _objects(example.manifest, "manifest.yaml", False)
    cluster = _objects(example.cluster, "cluster.yaml", True) if example.cluster else []
    ids = {id(o) for o in linted}
    minor = parse_version(example.kube_version) if example.kube_version else DEFAULT_MINOR
    options = FeasibilityOptions(max_steps=example.options.get("max_steps", 1_000_000))
    report = judge(Index.build(linted + cluster), Release(minor, dict(example.feature_gates)), options,
                   lambda o: id(o) in ids)
    return sorted({p.rule for _, p in report.problems})


@pytest.mark.parametrize(("rule", "example"), EXAMPLES)
def test_example(rule, example):
    raised = feasibility_rules(example)
    assert raised == ([rule.id] if example.verdict == "bad" else []), example.title


def test_every_feasibility_rule_has_examples():
    assert len(EXAMPLES) >= 18
