"""``dralint migrate``: each object rewritten in place, proven equal, or refused with the reason."""
from __future__ import annotations

import io
import os
import stat
import subprocess
import sys

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dralint.cli import main
from dralint.kube.releases import Release
from dralint.engine import Options, lint_text
from dralint.migrate.rewrite import MIGRATED, REFUSED, migrate_text

CLAIM_V1BETA1 = """\
# Claims of the trainer.
apiVersion: resource.k8s.io/v1beta1   # GA in 1.34
kind: ResourceClaimTemplate
metadata:
  name: gpus
  namespace: ml
spec:
  spec:
    devices:
      requests:
        - name: gpu
          # the class of big GPUs
          deviceClassName: 'big.gpu.example.com'
          selectors:
            - cel:
                expression: >-
                  device.capacity["gpu.example.com"].memory
                  .compareTo(quantity("40Gi")) >= 0
          allocationMode: ExactCount
          count: 2
        - name: any
          firstAvailable:
            - name: big
              deviceClassName: big.gpu.example.com
            - name: small
              deviceClassName: gpu.example.com
              count: 2
"""

CLAIM_V1 = CLAIM_V1BETA1.replace("resource.k8s.io/v1beta1", "resource.k8s.io/v1").replace("""\
          # the class of big GPUs
          deviceClassName: 'big.gpu.example.com'
          selectors:
            - cel:
                expression: >-
                  device.capacity["gpu.example.com"].memory
                  .compareTo(quantity("40Gi")) >= 0
          allocationMode: ExactCount
          count: 2
""", """\
          exactly:
            # the class of big GPUs
            deviceClassName: 'big.gpu.example.com'
            selectors:
              - cel:
                  expression: >-
                    device.capacity["gpu.example.com"].memory
                    .compareTo(quantity("40Gi")) >= 0
            allocationMode: ExactCount
            count: 2
""")

POD = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: trainer
spec:
  selector: {matchLabels: {app: t}}
  template:
    metadata: {labels: {app: t}}
    spec:
      containers:
      - name: main
        image: registry.example.com/t:1
        resources:
          claims:
          - name: gpus
      resourceClaims:
      - name: gpus
        source:   # 1.30 and older
          resourceClaimTemplateName: gpus
"""


def test_a_v1beta1_template_becomes_v1_keeping_comments_quotes_and_indentation():
    outcome = migrate_text(CLAIM_V1BETA1, "t.yaml", "v1")
    assert [o.status for o in outcome.objects] == [MIGRATED]
    assert outcome.new_text == CLAIM_V1


def test_and_back_to_v1beta1_gives_the_original_text():
    assert migrate_text(CLAIM_V1, "t.yaml", "v1beta1").new_text == CLAIM_V1BETA1


def test_v1beta2_is_the_v1_shape_under_another_name():
    v1beta2 = migrate_text(CLAIM_V1BETA1, "t.yaml", "v1beta2").new_text
    assert v1beta2 == CLAIM_V1.replace("resource.k8s.io/v1 ", "resource.k8s.io/v1beta2 ")
    assert not lint_text(v1beta2, Options(release=Release(34)))


def test_pods_of_1_30_get_their_claim_fields_moved_up():
    outcome = migrate_text(POD, "d.yaml", "v1")
    assert [(o.ref.kind, o.status) for o in outcome.objects] == [("Deployment", MIGRATED)]
    assert outcome.new_text.endswith("      - name: gpus\n        # 1.30 and older\n"
                                     "        resourceClaimTemplateName: gpus\n")


def test_documents_without_changes_are_kept_byte_for_byte():
    other = "# a config map\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  k:   'v'   # odd spacing\n"
    text = other + "---\n" + CLAIM_V1BETA1 + "...\n---\n" + other
    new = migrate_text(text, "m.yaml", "v1").new_text
    assert new.startswith(other + "---\n") and new.endswith("...\n---\n" + other)
    assert new == other + "---\n" + CLAIM_V1 + "...\n---\n" + other


SLICE_V1ALPHA3 = """\
apiVersion: resource.k8s.io/v1alpha3
kind: ResourceSlice
metadata:
  name: node-1-gpus
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    basic:
      attributes:
        model: {string: a100}
      capacity:
        memory: 80Gi   # HBM
"""


def test_a_1_31_slice_loses_basic_and_its_bare_capacities_get_value():
    outcome = migrate_text(SLICE_V1ALPHA3, "s.yaml", "v1")
    assert outcome.new_text == SLICE_V1ALPHA3.replace("v1alpha3", "v1").replace("""\
    basic:
      attributes:
        model: {string: a100}
      capacity:
        memory: 80Gi   # HBM
""", """\
    attributes:
      model: {string: a100}
    capacity:
      memory:
        value: 80Gi   # HBM
""")
    assert not lint_text(outcome.new_text, Options())


def test_classic_dra_is_refused_with_the_reason_and_left_as_written():
    text = "apiVersion: resource.k8s.io/v1alpha2\nkind: ResourceClass\nmetadata: {name: c}\ndriverName: d.example.com\n"
    outcome = migrate_text(text, "c.yaml", "v1")
    assert outcome.new_text == text
    (refused,) = outcome.objects
    assert refused.status == REFUSED and "classic DRA" in refused.reason and refused.line == 1


def test_a_kind_the_target_lacks_is_refused():
    text = ("apiVersion: resource.k8s.io/v1alpha3\nkind: DeviceTaintRule\nmetadata: {name: r}\nspec:\n"
            "  taint: {key: k, effect: NoSchedule}\n")
    (refused,) = migrate_text(text, "r.yaml", "v1beta1").objects
    assert "has no resource.k8s.io/v1beta1 form" in refused.reason and "v1beta2" in refused.reason


CLASS_V1ALPHA3 = """\
apiVersion: resource.k8s.io/v1alpha3
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  selectors:
  - cel:
      expression: device.driver == "gpu.example.com"
  # only the labelled nodes
  suitableNodes:
    nodeSelectorTerms:
    - matchExpressions:
      - {key: gpu, operator: Exists}
"""


def test_a_field_without_equivalent_refuses_the_object_unless_forced():
    outcome = migrate_text(CLASS_V1ALPHA3, "c.yaml", "v1")
    assert outcome.new_text == CLASS_V1ALPHA3
    assert "`spec.suitableNodes` has no equivalent in resource.k8s.io/v1" in outcome.objects[0].reason
    forced = migrate_text(CLASS_V1ALPHA3, "c.yaml", "v1", force=True)
    assert forced.objects[0].status == MIGRATED and forced.objects[0].lost == ("spec.suitableNodes",)
    assert forced.new_text == CLASS_V1ALPHA3.replace("v1alpha3", "v1").split("  # only")[0]
    assert not lint_text(forced.new_text, Options())


def test_a_rewrite_that_would_not_round_trip_is_refused():
    # A merge key brings flat fields from an anchor: moving the written ones alone would change the meaning.
    text = ("apiVersion: resource.k8s.io/v1beta1\nkind: ResourceClaim\nmetadata: {name: c}\nspec:\n  devices:\n"
            "    requests:\n    - <<: {deviceClassName: x}\n      name: b\n")
    outcome = migrate_text(text, "c.yaml", "v1")
    assert outcome.new_text == text
    assert outcome.objects[0].status == REFUSED and "would not round-trip" in outcome.objects[0].reason


def test_a_text_that_cannot_be_read_exactly_is_left_alone():
    text = "apiVersion: resource.k8s.io/v1beta1\nkind: [\n"
    outcome = migrate_text(text, "x.yaml", "v1")
    assert outcome.new_text == text and "invalid YAML" in outcome.error and outcome.error_line > 0


def test_an_object_with_a_key_written_twice_is_refused_naming_the_line():
    text = "apiVersion: resource.k8s.io/v1beta1\nkind: DeviceClass\nmetadata: {name: a}\nmetadata: {name: b}\n"
    outcome = migrate_text(text, "x.yaml", "v1")
    assert outcome.new_text == text and not outcome.error
    assert outcome.objects[0].status == REFUSED and outcome.objects[0].reason.startswith('line 4: duplicate key')


def test_a_text_without_dra_objects_or_claim_sources_is_not_even_parsed():
    assert migrate_text("a: [\n", "x.yaml", "v1").error == ""


def test_lists_are_migrated_item_by_item():
    text = ("apiVersion: v1\nkind: List\nitems:\n- apiVersion: resource.k8s.io/v1beta1\n  kind: DeviceClass\n"
            "  metadata: {name: a}\n- apiVersion: resource.k8s.io/v1beta2\n  kind: DeviceClass\n  metadata: {name: b}\n")
    outcome = migrate_text(text, "l.yaml", "v1")
    assert outcome.new_text == text.replace("v1beta1", "v1").replace("v1beta2", "v1")
    assert len(outcome.objects) == 2


# -- the command -----------------------------------------------------------------------------------

def _run(*argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["migrate", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def test_the_command_rewrites_in_place_keeping_permissions_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + CLAIM_V1BETA1.replace("\n", "\r\n").encode())
    path.chmod(0o640)
    code, out, err = _run("--to", "v1", str(tmp_path))
    assert code == 0 and out == ""
    assert path.read_bytes() == b"\xef\xbb\xbf" + CLAIM_V1.replace("\n", "\r\n").encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert os.listdir(tmp_path) == ["t.yaml"]
    assert "1 migrated (1 object(s) to v1, as Kubernetes 1.37 serves it)" in err


def test_a_symlink_keeps_pointing_at_the_rewritten_file(tmp_path):
    real = tmp_path / "real.yaml"
    real.write_text(CLAIM_V1BETA1)
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    assert _run("--to", "v1", str(link))[0] == 0
    assert link.is_symlink() and real.read_text() == CLAIM_V1


def test_diff_prints_and_writes_nothing(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(CLAIM_V1BETA1)
    code, out, err = _run("--to", "v1", "--diff", str(path))
    assert code == 0 and path.read_text() == CLAIM_V1BETA1
    assert out.startswith(f"--- {path}\n+++ {path}\n@@") and "+          exactly:\n" in out
    patched = tmp_path / "patched"
    patched.mkdir()
    (patched / "t.yaml").write_text(CLAIM_V1BETA1)
    proc = subprocess.run(["patch", "-s", "-p0", "-d", "/"], input=out.replace(str(path), str(patched / "t.yaml")),
                          text=True, capture_output=True)
    if proc.returncode == 0:  # `patch` is optional on the test machine
        assert (patched / "t.yaml").read_text() == CLAIM_V1


def test_refusals_and_unparseable_files_exit_1_and_name_file_and_line(tmp_path):
    (tmp_path / "ok.yaml").write_text(CLAIM_V1BETA1)
    (tmp_path / "class.yaml").write_text(CLASS_V1ALPHA3)
    (tmp_path / "chart.yaml").write_text("apiVersion: resource.k8s.io/v1beta1\nkind: DeviceClass\n"
                                         "metadata:\n  name: {{ .Values.name }}\n")
    code, _, err = _run("--to", "v1", str(tmp_path))
    assert code == 1
    assert f"{tmp_path / 'class.yaml'}:1: DeviceClass gpu.example.com (resource.k8s.io/v1alpha3) not migrated" in err
    assert f"{tmp_path / 'chart.yaml'}:4:" in err and "helm template" in err
    assert (tmp_path / "ok.yaml").read_text() == CLAIM_V1
    assert (tmp_path / "class.yaml").read_text() == CLASS_V1ALPHA3


def test_missing_paths_and_bad_targets_are_usage_errors(tmp_path):
    assert _run("--to", "v1", str(tmp_path / "nope.yaml"))[0] == 2
    with pytest.raises(SystemExit) as caught:
        _run("--to", "v2", str(tmp_path))
    assert caught.value.code == 2


def test_stdin_to_stdout():
    proc = subprocess.run([sys.executable, "-m", "dralint", "migrate", "--to", "v1", "-"], input=CLAIM_V1BETA1,
                          text=True, capture_output=True)
    assert proc.returncode == 0 and proc.stdout == CLAIM_V1, proc.stderr


# -- property: any layout of these objects migrates and comes back with the same values -------------

# Words that stay strings when written plain (YAML 1.1 reads `n`, `no`, `on`... as booleans, which a
# server refuses in a string field: such an object is not migrated).
_WORD = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True).filter(
    lambda w: w not in {"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


@st.composite
def _layouts(draw):
    """A v1beta1 claim and slice written in a random but ordinary style."""
    step = draw(st.sampled_from([2, 4]))
    dash_in = draw(st.booleans())
    comments = draw(st.booleans())

    def scalar(value):
        if isinstance(value, bool) or isinstance(value, int):
            return str(value).lower()
        style = draw(st.sampled_from(["", "'", '"']))
        return f"{style}{value}{style}"

    def block(value, indent):
        lines = []
        items = list(value.items())
        for key, item in items:
            pad = " " * indent
            if comments and draw(st.booleans()):
                lines.append(f"{pad}# about {key}")
            if isinstance(item, dict) and item:
                lines.append(f"{pad}{key}:")
                lines += block(item, indent + step)
            elif isinstance(item, list):
                lines.append(f"{pad}{key}:")
                dash = indent + (step if dash_in else 0)
                for element in item:
                    inner = block(element, dash + 2)
                    lines.append(" " * dash + "- " + inner[0].lstrip(" ") if not inner[0].lstrip().startswith("#")
                                 else " " * dash + "-")
                    lines += inner[1:] if not inner[0].lstrip().startswith("#") else inner
            else:
                tail = f"  # {key}!" if comments and draw(st.booleans()) else ""
                lines.append(f"{pad}{key}: {scalar(item) if item != {} else '{}'}{tail}")
        return lines

    requests = []
    for i in range(draw(st.integers(1, 3))):
        request = {"name": f"r{i}"}
        for field in draw(st.permutations(["deviceClassName", "count", "allocationMode", "adminAccess"])):
            if draw(st.booleans()):
                request[field] = {"deviceClassName": "gpu.example.com", "count": draw(st.integers(1, 4)),
                                  "allocationMode": "ExactCount", "adminAccess": False}[field]
        if draw(st.booleans()):
            request["selectors"] = [{"cel": {"expression": "size(device.attributes) > 0"}}]
        if draw(st.booleans()):
            keys = list(request)
            request = {k: request[k] for k in draw(st.permutations(keys))}
        requests.append(request)
    claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": {"name": draw(_WORD)},
             "spec": {"devices": {"requests": requests}}}
    devices = [{"name": f"d{i}", "basic": {"attributes": {"model": {"string": draw(_WORD)}},
                                            "capacity": {"memory": {"value": "1Gi"}}}}
               for i in range(draw(st.integers(1, 2)))]
    slice_ = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
              "spec": {"driver": "gpu.example.com", "nodeName": "node-1", "devices": devices}}
    return "\n".join(block(claim, 0)) + "\n---\n" + "\n".join(block(slice_, 0)) + "\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_layouts())
def test_any_ordinary_layout_migrates_and_comes_back(text):
    original = list(yaml.safe_load_all(text))
    there = migrate_text(text, "p.yaml", "v1")
    assert not there.error and all(o.status == MIGRATED for o in there.objects), there.objects
    back = migrate_text(there.new_text, "p.yaml", "v1beta1")
    assert all(o.status == MIGRATED for o in back.objects), back.objects
    assert list(yaml.safe_load_all(back.new_text)) == original


_PIECES = ["apiVersion: resource.k8s.io/v1beta1\n", "kind: ResourceClaim\n", "kind: ResourceSlice\n",
           "metadata: {name: x}\n", "spec:\n", "  devices:\n", "    requests:\n", "    - name: a\n",
           "      count: 1\n", "      deviceClassName: c\n", "  - name: d\n", "    basic:\n", "      attributes: {}\n",
           "---\n", "# note\n", "  ", "- ", "{", "}", "[", "]", ": ", "'", '"', "&a ", "*a", "<<: ", "|\n", "\t", "\r\n"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30).map("".join))
def test_any_text_is_migrated_or_left_alone_never_a_crash(text):
    outcome = migrate_text(text, "x.yaml", "v1")
    if outcome.error or not any(o.status == MIGRATED for o in outcome.objects):
        assert outcome.new_text == text
    else:
        assert migrate_text(outcome.new_text, "x.yaml", "v1").new_text == outcome.new_text  # nothing left to do
