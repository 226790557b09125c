"""``dralint migrate`` and ``--fix`` on hostile input: Unicode line breaks inside strings, a
byte-order mark on stdin, text shared through anchors, explicit keys, duplicate keys, empty
wrappers: each object migrated faithfully or refused with where and why, never a silent change."""
from __future__ import annotations

import io
import subprocess
import sys

from dralint.cli import main
from dralint.migrate.rewrite import MIGRATED, REFUSED, migrate_text
from dralint.source import load_text
from dralint.textfiles import unified_diff

# A LINE SEPARATOR, a NEL and a PARAGRAPH SEPARATOR inside quoted strings of fields that move.
CLAIM_WITH_BREAKS = (
    'apiVersion: resource.k8s.io/v1beta1\nkind: ResourceClaim\nmetadata:\n  name: c\nspec:\n  devices:\n'
    '    requests:\n    - name: gpu\n      deviceClassName: "gpu\u2028more.example.com"\n      selectors:\n'
    '      - cel:\n          expression: "device.driver == \\"a\x85b\\" \u2029"\n')


def _values(text: str) -> list:
    return [d.value for d in load_text(text, "x.yaml").documents]


def test_a_moved_string_with_unicode_line_breaks_keeps_its_characters():
    outcome = migrate_text(CLAIM_WITH_BREAKS, "c.yaml", "v1")
    assert outcome.objects[0].status == MIGRATED
    assert '        deviceClassName: "gpu\u2028more.example.com"\n' in outcome.new_text
    assert '            expression: "device.driver == \\"a\x85b\\" \u2029"\n' in outcome.new_text
    request = _values(outcome.new_text)[0]["spec"]["devices"]["requests"][0]
    assert request["exactly"] == {key: value for key, value in
                                  _values(CLAIM_WITH_BREAKS)[0]["spec"]["devices"]["requests"][0].items()
                                  if key != "name"}


def _patched(old: str, diff: str) -> str:
    """``old`` with a unified diff applied as ``patch`` reads it: every line of the diff ends at \\n."""
    old_lines = old.split("\n")
    out: list[str] = []
    done = 0
    lines = diff.split("\n")[2:-1]
    for line in lines:
        if line.startswith("@@"):
            start = int(line.split()[1].split(",")[0].lstrip("-")) - 1
            out += old_lines[done:start]
            done = start
        elif line[0] in " -":
            assert old_lines[done] == line[1:], f"context {line!r} does not match"
            done += 1
            if line[0] == " ":
                out.append(line[1:])
        else:
            assert line[0] == "+", f"a line no patch can read: {line!r}"
            out.append(line[1:])
    return "\n".join(out + old_lines[done:])


def test_the_diff_cuts_lines_where_patch_does():
    new = migrate_text(CLAIM_WITH_BREAKS, "c.yaml", "v1").new_text
    diff = unified_diff("c.yaml", CLAIM_WITH_BREAKS, new)
    assert "No newline at end of file" not in diff
    assert '-      deviceClassName: "gpu\u2028more.example.com"\n' in diff
    assert _patched(CLAIM_WITH_BREAKS, diff) == new


BOM = b"\xef\xbb\xbf"
CONFIG_MAP = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n"
CLASS_V1BETA1 = b"apiVersion: resource.k8s.io/v1beta1\nkind: DeviceClass\nmetadata: {name: gpu.example.com}\n"
CLAIM_TYPO = (b"apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: ml}\nspec:\n"
              b"  devices:\n    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu.example.com\n"
              b"        cout: 2\n")


def _stdin(argv: list[str], data: bytes) -> bytes:
    proc = subprocess.run([sys.executable, "-m", "dralint", *argv, "-"], input=data, capture_output=True)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.stdout


def test_migrate_of_stdin_keeps_the_byte_order_mark():
    assert _stdin(["migrate", "--to", "v1"], BOM + CONFIG_MAP) == BOM + CONFIG_MAP
    assert _stdin(["migrate", "--to", "v1"], BOM + CLASS_V1BETA1) == BOM + CLASS_V1BETA1.replace(b"v1beta1", b"v1")
    assert _stdin(["migrate", "--to", "v1"], CLASS_V1BETA1) == CLASS_V1BETA1.replace(b"v1beta1", b"v1")


def test_fix_of_stdin_keeps_the_byte_order_mark():
    assert _stdin(["--fix", "--no-config"], BOM + CONFIG_MAP) == BOM + CONFIG_MAP
    assert _stdin(["--fix", "--no-config"], BOM + CLAIM_TYPO) == BOM + CLAIM_TYPO.replace(b"cout", b"count")


def test_a_diff_of_a_file_with_a_byte_order_mark_shows_it_on_the_first_line(tmp_path):
    path = tmp_path / "class.yaml"
    path.write_bytes(BOM + CLASS_V1BETA1)
    out, err = io.StringIO(), io.StringIO()
    assert main(["migrate", "--to", "v1", "--diff", str(path)], out, err) == 0
    assert "-\ufeffapiVersion: resource.k8s.io/v1beta1\n+\ufeffapiVersion: resource.k8s.io/v1\n" in out.getvalue()


# -- anchors and aliases -------------------------------------------------------------------------

SHARED_SPEC = """\
apiVersion: v1
kind: List
items:
- apiVersion: resource.k8s.io/v1beta1
  kind: ResourceClaim
  metadata:
    name: c
  spec: &spec
    devices:
      requests:
      - name: gpu
        deviceClassName: gpu.example.com
- apiVersion: example.com/v1
  kind: Widget
  metadata:
    name: w
  spec: *spec
"""


def test_text_anchored_in_a_claim_and_repeated_by_a_custom_resource_is_left_alone():
    outcome = migrate_text(SHARED_SPEC, "l.yaml", "v1")
    assert outcome.new_text == SHARED_SPEC
    (claim,) = outcome.objects
    assert claim.status == REFUSED and claim.line == 4
    assert "anchored as `&spec` and repeated by `*spec` at line 17, outside the object" in claim.reason


def test_a_claim_repeating_text_anchored_elsewhere_is_refused_saying_where_it_comes_from():
    text = """\
apiVersion: v1
kind: List
items:
- apiVersion: example.com/v1
  kind: Widget
  metadata:
    name: w
  spec: &spec
    devices:
      requests:
      - name: gpu
        deviceClassName: gpu.example.com
- apiVersion: resource.k8s.io/v1beta1
  kind: ResourceClaim
  metadata:
    name: c
  spec: *spec
"""
    outcome = migrate_text(text, "l.yaml", "v1")
    assert outcome.new_text == text
    (claim,) = outcome.objects
    assert claim.status == REFUSED and claim.line == 13
    assert "`*spec`, a repeat of `&spec` at line 8 outside the object" in claim.reason


def test_an_anchor_used_only_inside_its_own_object_migrates():
    text = ("apiVersion: resource.k8s.io/v1beta1\nkind: ResourceClaim\nmetadata: {name: c}\nspec:\n  devices:\n"
            "    requests:\n    - name: a\n      deviceClassName: &class gpu.example.com\n"
            "    - name: b\n      deviceClassName: *class\n")
    outcome = migrate_text(text, "c.yaml", "v1")
    assert outcome.objects[0].status == MIGRATED
    requests = _values(outcome.new_text)[0]["spec"]["devices"]["requests"]
    assert [r["exactly"]["deviceClassName"] for r in requests] == ["gpu.example.com"] * 2


# -- keys written twice ----------------------------------------------------------------------------

def test_a_duplicate_key_in_an_unrelated_config_map_does_not_stop_the_migration():
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m}\ndata:\n  a: '1'\n  a: '2'\n---\n"
            + CLASS_V1BETA1.decode())
    outcome = migrate_text(text, "m.yaml", "v1")
    assert not outcome.error and [o.status for o in outcome.objects] == [MIGRATED]
    assert outcome.new_text == text.replace("resource.k8s.io/v1beta1", "resource.k8s.io/v1")


def test_in_a_list_only_the_item_holding_a_duplicate_key_is_refused():
    text = ("apiVersion: v1\nkind: List\nitems:\n- apiVersion: resource.k8s.io/v1beta1\n  kind: DeviceClass\n"
            "  metadata: {name: a}\n- apiVersion: resource.k8s.io/v1beta1\n  kind: DeviceClass\n"
            "  metadata: {name: b, name: c}\n")
    first, second = migrate_text(text, "l.yaml", "v1").objects
    assert first.status == MIGRATED
    assert second.status == REFUSED and second.reason.startswith('line 9: duplicate key "name"')


def test_a_merge_key_override_is_not_said_to_be_rejected_by_kubectl():
    text = "base: &b {name: x}\nobj:\n  <<: *b\n  name: y\n"
    (problem,) = load_text(text, "m.yaml").problems
    assert "overrides the value a merge key" in problem.message and "kubectl accepts this" in problem.message
    assert "Kubernetes rejects" not in problem.message


# -- what the release serves, and what it refuses ------------------------------------------------

TAINT_RULE = ("apiVersion: resource.k8s.io/v1alpha3\nkind: DeviceTaintRule\nmetadata:\n  name: r\nspec:\n"
              "  taint:\n    key: example.com/broken\n    effect: NoExecute\n")


def test_a_version_the_clusters_release_does_not_serve_is_refused_naming_one_it_does():
    outcome = migrate_text(TAINT_RULE, "r.yaml", "v1", release="1.36")
    assert outcome.new_text == TAINT_RULE
    assert outcome.objects[0].reason == (
        "Kubernetes 1.36 does not serve DeviceTaintRule as resource.k8s.io/v1 (served from 1.37); it serves "
        "DeviceTaintRule as v1beta2 (--to v1beta2); --kube-version names the cluster's release")
    assert migrate_text(TAINT_RULE, "r.yaml", "v1beta2", release="1.36").objects[0].status == MIGRATED
    assert migrate_text(TAINT_RULE, "r.yaml", "v1", release="1.37").objects[0].status == MIGRATED


def test_migrate_takes_the_release_from_the_command_line_or_the_configuration(tmp_path, monkeypatch):
    path = tmp_path / "rule.yaml"
    path.write_text(TAINT_RULE)
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    assert main(["migrate", "--to", "v1", "--diff", "--kube-version", "1.36", str(path)], out, err) == 1
    assert "not migrated: Kubernetes 1.36 does not serve DeviceTaintRule" in err.getvalue()
    assert "as Kubernetes 1.36 serves it" in err.getvalue() and out.getvalue() == ""
    (tmp_path / ".dralint.yaml").write_text("kube-version: '1.36'\n")
    err = io.StringIO()
    assert main(["migrate", "--to", "v1", "--diff", str(path)], io.StringIO(), err) == 1
    assert "Kubernetes 1.36 does not serve" in err.getvalue()
    out = io.StringIO()
    assert main(["migrate", "--to", "v1", "--diff", "--no-config", str(path)], out, io.StringIO()) == 0
    assert "+apiVersion: resource.k8s.io/v1\n" in out.getvalue()


def test_an_object_its_own_version_refuses_is_refused_with_the_error():
    # A pre-release `device:` wrapper: no release serving v1alpha3 knows it.
    text = ("apiVersion: resource.k8s.io/v1alpha3\nkind: ResourceClaimTemplate\nmetadata: {name: t}\nspec:\n"
            "  spec:\n    devices:\n      requests:\n      - name: gpu\n        device:\n"
            "          deviceClassName: gpu.example.com\n")
    outcome = migrate_text(text, "t.yaml", "v1")
    assert outcome.new_text == text
    assert outcome.objects[0].status == REFUSED
    assert ("every API server serving resource.k8s.io/v1alpha3 refuses it as written "
            "(`spec.spec.devices.requests[0].device`: unknown field `device`)") in outcome.objects[0].reason


# -- empty wrappers and explicit keys ------------------------------------------------------------

SLICE_EMPTY_BASIC = """\
apiVersion: resource.k8s.io/v1beta1
kind: ResourceSlice
metadata:
  name: s
spec:
  driver: gpu.example.com
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  nodeName: node-1
  devices:
  - name: a
    basic:
  - basic: ~
    name: b
  - {name: c, basic: }
  - name: d
    basic:
      attributes:
        model: {string: a100}
"""


def test_an_empty_basic_wrapper_is_removed():
    outcome = migrate_text(SLICE_EMPTY_BASIC, "s.yaml", "v1")
    assert outcome.objects[0].status == MIGRATED
    assert outcome.new_text.split("  devices:\n")[1] == (
        "  - name: a\n  - name: b\n  - {name: c}\n  - name: d\n    attributes:\n      model: {string: a100}\n")


def test_a_wrapper_that_cannot_be_removed_is_refused_naming_the_device_and_its_line():
    text = SLICE_EMPTY_BASIC.replace("  - name: d\n    basic:\n", "  - name: d\n    basic: &shared\n")
    reason = migrate_text(text, "s.yaml", "v1").objects[0].reason
    assert "device `d` at line 15: `basic` at line 16 is not a mapping" in reason


def test_a_request_written_with_explicit_keys_is_refused_before_any_edit():
    text = ("apiVersion: resource.k8s.io/v1beta1\nkind: ResourceClaim\nmetadata: {name: c}\nspec:\n  devices:\n"
            "    requests:\n    - ? name\n      : gpu\n      ? deviceClassName\n      : gpu.example.com\n")
    outcome = migrate_text(text, "c.yaml", "v1")
    assert outcome.new_text == text
    assert outcome.objects[0].reason == (
        "cannot be rewritten faithfully: request `gpu` at line 7: `name` at line 7 is an explicit key "
        "(`? name`); write it as `name: …`")
