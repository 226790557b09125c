"""Every rule's catalog entry is well-formed, and every example does what it says."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from dralint.catalog import load_catalog
from dralint.engine import Options, lint_text
from dralint.kube.releases import Release, parse_version

from conftest import REPO

CATALOG = load_catalog()
# Rules whose bad case cannot be written as a manifest text.
NO_BAD_EXAMPLE = {"DRA000": "an internal error is a bug, not an input", "DRA004": "needs an unreadable file",
                  "DRA126": "needs 256 KiB of annotations (tests/checks/test_metadata.py builds one)"}

EXAMPLES = [pytest.param(rule, ex, id=f"{rule.id}-{ex.verdict}-{i}")
            for rule in CATALOG for i, ex in enumerate(rule.examples)]


def test_every_rule_has_good_and_bad_examples():
    for rule in CATALOG:
        verdicts = {ex.verdict for ex in rule.examples}
        assert "good" in verdicts, rule.id
        assert "bad" in verdicts or rule.id in NO_BAD_EXAMPLE, rule.id


@pytest.mark.parametrize(("rule", "example"), EXAMPLES)
def test_example(rule, example):
    options = Options(release=Release(parse_version(example.kube_version or Options().release.version),
                                      dict(example.feature_gates)), **dict(example.options))
    findings = lint_text(example.manifest, options, old_text=example.old, cluster_text=example.cluster)
    raised = {f.rule for f in findings}
    shown = "\n".join(f"{f.rule} {f.field}: {f.message}" for f in findings)
    if example.verdict == "bad":
        assert raised == {rule.id}, f"{example.title}: expected only {rule.id}, got:\n{shown}"
    else:
        assert not findings, f"{example.title}: expected no findings, got:\n{shown}"


# Rules whose bad example needs more than one object, but not as a state someone else owns: the
# run's own documents.
OF_THE_RUN = {"DRA003": "a document among the objects of one file", "DRA605": "two objects of one run"}


@pytest.mark.parametrize("rule", [r for r in CATALOG if any(ex.verdict == "bad" for ex in r.examples)],
                         ids=lambda r: r.id)
def test_cluster_state_marks_exactly_the_rules_that_need_other_objects(rule):
    """A rule is marked ``cluster_state`` iff its bad examples raise it only with the other objects:
    each object judged alone (no --cluster, no other document) never raises it."""
    alone = set()
    for example in (ex for ex in rule.examples if ex.verdict == "bad"):
        options = Options(release=Release(parse_version(example.kube_version or Options().release.version),
                                          dict(example.feature_gates)), **dict(example.options))
        for document in (d for d in re.split(r"(?m)^---[ \t]*$", example.manifest) if d.strip()):
            alone |= {f.rule for f in lint_text(document, options, old_text=example.old)}
    needs_others = rule.id not in alone and rule.id not in OF_THE_RUN
    assert rule.cluster_state is needs_others, f"{rule.id}: cluster_state should be {needs_others}"


def test_rule_docs_are_up_to_date():
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_rule_docs.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
