"""Fixes of findings: the catalog and the fixers agree, every shown fix does what its example says."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dralint.catalog import load_catalog
from dralint.kube.releases import Release, parse_version
from dralint.engine import Options, lint_text
from dralint.fixers import FIXERS
from dralint.fixes import Safety, apply_edits, apply_fixes

CATALOG = load_catalog()
FIXED_EXAMPLES = [pytest.param(rule, ex, id=f"{rule.id}-{i}") for rule in CATALOG
                  for i, ex in enumerate(rule.examples) if ex.fixed is not None]


def _fixed(text: str, options: Options = Options(), unsafe: bool = False) -> tuple[str, list]:
    findings = lint_text(text, options if options.fixes else Options(**{**options.__dict__, "fixes": True}))
    fixes = [f.fix for f in findings if f.fix is not None and (unsafe or f.fix.safety is Safety.SAFE)]
    new, _, _ = apply_fixes(text, "manifest.yaml", fixes)
    return new, findings


def test_every_rule_with_a_fixer_declares_it_and_every_declared_fix_has_a_fixer():
    declared = {rule.id for rule in CATALOG if rule.autofix is not None}
    assert declared == set(FIXERS)


def test_every_fixable_rule_shows_a_fix_in_an_example():
    shown = {rule.id for rule in CATALOG for ex in rule.examples if ex.fixed is not None}
    # These fixes always come with another rule's finding, so no catalog example (which raises
    # its rule alone) can show them: DRA206's flat fields are also unknown fields (DRA101), and
    # DRA604's request in capitals is also not a DNS label (DRA247). Tests below show them.
    assert shown | {"DRA206", "DRA604"} == set(FIXERS)


@pytest.mark.parametrize(("rule", "example"), FIXED_EXAMPLES)
def test_the_fix_of_an_example_gives_its_fixed_text_which_is_clean(rule, example):
    options = Options(release=Release(parse_version(example.kube_version or Options().release.version),
                                      dict(example.feature_gates)), fixes=True, **dict(example.options))
    new, findings = _fixed(example.manifest, options)
    assert any(f.rule == rule.id and f.fix is not None for f in findings)
    assert new == example.fixed
    assert not lint_text(new, options, cluster_text=example.cluster)


V1_CLAIM_FLAT = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: c
  namespace: default
spec:
  devices:
    requests:
    - name: gpu   # the accelerator
      # which class
      deviceClassName: gpu.example.com
      count: 2 # two of them
"""


def test_a_v1beta1_shaped_request_in_a_v1_claim_moves_under_exactly():
    new, findings = _fixed(V1_CLAIM_FLAT)
    # The unknown fields (DRA101; one finding per request once the schema stage says where they go)
    # carry the fix, and so does DRA206 where it is still reported.
    assert "DRA101" in {f.rule for f in findings if f.fix} <= {"DRA206", "DRA101"}
    assert new == V1_CLAIM_FLAT.replace("""      # which class
      deviceClassName: gpu.example.com
      count: 2 # two of them
""", """      exactly:
        # which class
        deviceClassName: gpu.example.com
        count: 2 # two of them
""")
    assert not lint_text(new, Options())


def test_exactly_in_a_v1beta1_claim_moves_beside_the_name():
    text = V1_CLAIM_FLAT.replace("resource.k8s.io/v1", "resource.k8s.io/v1beta1").replace(
        "      # which class\n      deviceClassName: gpu.example.com\n      count: 2 # two of them\n",
        "      exactly:\n        deviceClassName: gpu.example.com\n        count: 2\n")
    new, findings = _fixed(text, Options(release=Release(34)))
    assert [f.fix.title for f in findings if f.fix][0].startswith("Move the fields of `exactly`")
    assert new.endswith("    - name: gpu   # the accelerator\n      deviceClassName: gpu.example.com\n      count: 2\n")
    assert not lint_text(new, Options(release=Release(34)))


def test_basic_in_a_v1_slice_is_unwrapped_and_flat_fields_in_v1beta1_are_wrapped():
    v1 = ("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: s\nspec:\n  driver: gpu.example.com\n"
          "  nodeName: n1\n  pool: {name: p, resourceSliceCount: 1, generation: 1}\n  devices:\n  - name: gpu-0\n"
          "    basic:\n      attributes:\n        model: {string: a100}\n")
    new, _ = _fixed(v1)
    assert new.endswith("  - name: gpu-0\n    attributes:\n      model: {string: a100}\n")
    assert not lint_text(new, Options())
    beta = new.replace("resource.k8s.io/v1", "resource.k8s.io/v1beta1")
    back, _ = _fixed(beta, Options(release=Release(34)))
    assert back == v1.replace("resource.k8s.io/v1", "resource.k8s.io/v1beta1")


def test_a_rename_whose_value_does_not_fit_the_field_is_unsafe_and_not_applied():
    text = V1_CLAIM_FLAT.replace("      # which class\n      deviceClassName: gpu.example.com\n      count: 2 # two of them\n",
                                 "      exactly:\n        deviceClassName: gpu.example.com\n"
                                 "        selector: {cel: {expression: 'true'}}\n")
    new, findings = _fixed(text)
    (finding,) = [f for f in findings if f.fix]
    assert finding.fix.safety is Safety.UNSAFE and "`selectors`" in finding.fix.title
    assert new == text
    assert "selectors: {cel" in apply_edits(text, finding.fix.edits)


def test_no_fix_when_the_suggested_field_is_already_there():
    text = V1_CLAIM_FLAT.replace("      # which class\n      deviceClassName: gpu.example.com\n      count: 2 # two of them\n",
                                 "      exactly:\n        deviceClassName: gpu.example.com\n        count: 1\n"
                                 "        cout: 2\n")
    findings = lint_text(text, Options(fixes=True))
    assert [f.rule for f in findings] == ["DRA101"] and findings[0].fix is None


def test_fixes_are_not_computed_unless_asked():
    assert all(f.fix is None for f in lint_text(V1_CLAIM_FLAT, Options()))


def test_a_fix_keeps_quoting_and_crlf_line_ends():
    text = V1_CLAIM_FLAT.replace("      # which class\n      deviceClassName: gpu.example.com\n      count: 2 # two of them\n",
                                 "      exactly:\n        \"deviceClasName\": gpu.example.com\n").replace("\n", "\r\n")
    new, _ = _fixed(text)
    assert '\r\n        "deviceClassName": gpu.example.com\r\n' in new
    flat = V1_CLAIM_FLAT.replace("\n", "\r\n")
    new, _ = _fixed(flat)
    assert "\r\n      exactly:\r\n        # which class\r\n" in new and "\n" not in new.replace("\r\n", "")


POD_AND_TEMPLATE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: gpu-template
  namespace: default
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
---
apiVersion: v1
kind: Pod
metadata:
  name: trainer
  namespace: default
spec:
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: gpu-template
  containers:
  - name: main
    image: registry.example.com/trainer:1.0
    resources:
      claims:
      - name: gpu
        request: 'GPU'
"""


def test_a_container_request_in_capitals_is_recased_to_the_templates_request():
    new, findings = _fixed(POD_AND_TEMPLATE)
    assert [f.fix.title for f in findings if f.fix] == ["Change `GPU` to `gpu` (request names are lower case)"]
    assert new == POD_AND_TEMPLATE.replace("request: 'GPU'", "request: 'gpu'")
    assert not lint_text(new, Options())



@st.composite
def _claims(draw):
    """Claims with the mistakes the fixes are for, in varied layouts, sometimes with junk inserted."""
    version = draw(st.sampled_from(["v1", "v1beta1", "v1beta2"]))
    pad = " " * draw(st.sampled_from([2, 4]))
    lines = [f"apiVersion: resource.k8s.io/{version}", "kind: ResourceClaim", "metadata:", f"{pad}name: c",
             f"{pad}namespace: default", "spec:", f"{pad}devices:", f"{pad * 2}requests:"]
    names = []
    for i in range(draw(st.integers(1, 3))):
        name = f"r{i}"
        names.append(name)
        fields = draw(st.lists(st.sampled_from(["deviceClassName: gpu.example.com", "count: 2", "cout: 2",
                                                "allocationMode: ExactCount", "# a comment"]), max_size=4))
        lines.append(f"{pad * 2}- name: {name}")
        if draw(st.booleans()):
            lines.append(f"{pad * 2}  exactly:")
            lines += [f"{pad * 2}  {pad}{f}" for f in fields + ["deviceClasName: gpu.example.com"][:draw(st.integers(0, 1))]]
        else:
            lines += [f"{pad * 2}  {f}" for f in fields]
    if draw(st.booleans()):
        refs = ", ".join(draw(st.sampled_from([n, n.upper()])) for n in names)
        lines += [f"{pad * 2}constraints:", f"{pad * 2}- requests: [{refs}]",
                  f"{pad * 2}  matchAttribute: gpu.example.com/model"]
    text = "\n".join(lines) + "\n"
    if draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(["\t", "{", ": ", "- ", "'", "\r\n", "#"])) + text[at:]
    return text


@settings(max_examples=200, deadline=None)
@given(_claims())
def test_fixes_of_any_claim_apply_cleanly_and_never_crash(text):
    for finding in lint_text(text, Options(fixes=True)):
        if finding.fix is not None:
            new = apply_edits(text, finding.fix.edits)
            assert new != text
            after = {(f.rule, f.field) for f in lint_text(new, Options())}
            if finding.fix.safety is Safety.SAFE:
                assert (finding.rule, finding.field) not in after, (finding.fix.title, new)


def test_without_strict_decoding_the_exactly_or_first_available_finding_carries_the_fix():
    new, findings = _fixed(V1_CLAIM_FLAT, Options(strict=False, fixes=True))
    assert [f.rule for f in findings if f.fix] == ["DRA206"]
    assert "      exactly:\n        # which class\n" in new


def test_an_unknown_key_that_spells_no_path_gets_no_fix_and_no_crash():
    # `[` in a key: its text spells no path back (found by tests/lsp/test_lsp_robustness.py when the
    # fixers re-read the path from the finding's text); no known field is near it, so no fix either.
    text = 'apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: x\nspec:\n  "a[": 1\n'
    findings = lint_text(text, Options(fixes=True))
    assert [(f.rule, f.field, f.fix) for f in findings] == [("DRA101", "spec.a[", None)]


def test_an_unknown_key_holding_a_dot_gets_its_rename():
    # The fixers work on the engine's own path: `count.` is one key, though its text reads as two.
    text = ('apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: c\nspec:\n  devices:\n'
            '    requests:\n    - name: r\n      exactly:\n        deviceClassName: gpu\n        "count.": 2\n')
    new, findings = _fixed(text, Options(fixes=True))
    assert [(f.rule, f.field, f.fix is not None) for f in findings] == [
        ("DRA101", "spec.devices.requests[0].exactly.count.", True)]
    assert '        "count": 2\n' in new


def test_a_document_with_a_duplicate_key_gets_no_fix():
    # Two `exactly:` in one request (found by the property test above): which one the server reads is
    # not what a text edit can be sure of, so the findings stay without a fix.
    text = ("apiVersion: resource.k8s.io/v1beta1\nkind: ResourceClaim\nmetadata:\n  name: c\n  namespace: default\n"
            "spec:\n  devices:\n    requests:\n    - name: r0\n      exactly:\n        count: 2\n"
            "        deviceClasName: gpu.example.com\n      exactly:\n        deviceClassName: gpu.example.com\n")
    findings = lint_text(text, Options(fixes=True))
    assert "DRA002" in {f.rule for f in findings}
    assert [f for f in findings if f.fix is not None] == []
