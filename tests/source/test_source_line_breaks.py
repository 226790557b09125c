"""Lines are counted at \\n, \\r\\n and \\r only, as editors, LSP and YAML 1.2 count them.

libyaml (and goyaml.v2) follow YAML 1.1, where NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR also
break lines, even inside a quoted string; their marks then count one line too many for each.
"""
from __future__ import annotations

import pytest

from dralint.engine import Options, lint_text
from dralint.yamltext.layout import read_layout

CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: c
  annotations:
    note: {note}
    other: "x"
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        cout: 2
  bogus: {{a: 1}}
"""

BREAKS = ['"one\u2028two"', "'one\u2029two'", '"one\x85two"', '"a\u2028b\x85c\u2029d"',
          '{k: "v\u2028w"}', '["v\u2028w"]']


@pytest.mark.parametrize("note", BREAKS)
def test_findings_after_a_unicode_line_break_keep_their_line_and_column(note):
    text = CLAIM.format(note=note)
    lines = text.split("\n")
    found = {f.field: (f.line, f.column) for f in lint_text(text, Options()) if f.rule == "DRA101"}
    assert found["spec.devices.requests[0].exactly.cout"] == (lines.index("        cout: 2") + 1, 9)
    assert found["spec.bogus"] == (lines.index("  bogus: {a: 1}") + 1, 3)


def test_a_syntax_error_after_one_is_placed_on_its_own_line():
    text = 'a: "x\u2028y"\nb: [\n'
    (finding,) = [f for f in lint_text(text, Options()) if f.rule == "DRA001"]
    assert finding.line == 3


def test_the_layout_places_nodes_on_the_lines_the_text_has():
    text = CLAIM.format(note='"one\u2028two"')
    layout = read_layout(text)
    node = layout.roots[0].find(("spec", "bogus"))
    assert node is not None and node.line == 14 and node.line == layout.line_of(node.start)
    assert node.column == node.start - layout.line_start(node.start)
