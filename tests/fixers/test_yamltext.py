"""Text edits of YAML that move a few entries and keep every other character."""
from __future__ import annotations

import pytest
import yaml

from dralint.yamltext.edits import (EditRefused, apply_splices, delete_entry, hoist_entry, indent_step, replace_scalar,
                                    scalar_text, wrap_entries, wrap_value)
from dralint.yamltext.layout import LayoutError, read_layout


def _edit(text: str, op, *path, **kw) -> str:
    layout = read_layout(text)
    node = layout.roots[0].find(path)
    return apply_splices(text, op(layout, node, **kw))


def test_layout_spans_are_character_offsets_and_block_ends_are_their_last_child():
    text = "a: \u00e9t\u00e9  # x\nb:\n  - k: v\n    l: |\n      foo\n\n  # trailing\nc: 'q'\n"
    layout = read_layout(text)
    root = layout.roots[0]
    a = root.find(("a",))
    assert text[a.start:a.end] == "\u00e9t\u00e9"
    item = root.find(("b", 0))
    assert text[layout.content_end(item) - 3:layout.content_end(item)] == "foo"
    assert text[root.find(("c",)).start:root.find(("c",)).end] == "'q'"


def test_layout_refuses_broken_yaml_with_its_line():
    with pytest.raises(LayoutError) as caught:
        read_layout("a: 1\nb: [\n")
    assert caught.value.line >= 2


REQUEST = """\
requests:
- name: gpu   # the gpu
  # which class
  deviceClassName: gpu.example.com
  selectors:
  - cel:
      expression: |
        device.driver == "x"

  count: 2 # two
- deviceClassName: b
  name: b
  adminAccess: true
"""


def test_wrap_moves_entries_with_their_comments_and_blank_lines():
    layout = read_layout(REQUEST)
    splices = []
    for request in layout.roots[0].find(("requests",)).items:
        splices += wrap_entries(layout, request, ["deviceClassName", "selectors", "count", "adminAccess"], "exactly", 2)
    assert apply_splices(REQUEST, splices) == """\
requests:
- name: gpu   # the gpu
  exactly:
    # which class
    deviceClassName: gpu.example.com
    selectors:
    - cel:
        expression: |
          device.driver == "x"

    count: 2 # two
- exactly:
    deviceClassName: b
    adminAccess: true
  name: b
"""


def test_wrap_then_hoist_gives_the_same_values():
    layout = read_layout(REQUEST)
    splices = []
    for request in layout.roots[0].find(("requests",)).items:
        splices += wrap_entries(layout, request, ["deviceClassName", "selectors", "count", "adminAccess"], "exactly", 2)
    wrapped = apply_splices(REQUEST, splices)
    layout = read_layout(wrapped)
    splices = []
    for request in layout.roots[0].find(("requests",)).items:
        splices += hoist_entry(layout, request, "exactly")
    back = apply_splices(wrapped, splices)
    assert yaml.safe_load(back) == yaml.safe_load(REQUEST)
    assert back.startswith(REQUEST.split("- deviceClassName")[0])


def test_hoist_keeps_a_comment_of_the_removed_key_and_works_on_a_dash_line():
    text = "devices:\n- name: a\n  basic:   # wrapper\n    attributes: {}\n- basic:\n    capacity: {}\n  name: b\n"
    layout = read_layout(text)
    devices = layout.roots[0].find(("devices",)).items
    splices = hoist_entry(layout, devices[0], "basic") + hoist_entry(layout, devices[1], "basic")
    assert apply_splices(text, splices) == "devices:\n- name: a\n  # wrapper\n  attributes: {}\n- capacity: {}\n  name: b\n"


def test_flow_mappings_on_one_line_are_edited_and_across_lines_refused():
    text = "d: {name: c, basic: {attributes: {}, capacity: {m: 1}}}\n"
    assert _edit(text, hoist_entry, "d", key_name="basic") == "d: {name: c, attributes: {}, capacity: {m: 1}}\n"
    assert _edit('r: {"name": "a", "count": 1}\n', wrap_entries, "r", keys=["count"], wrapper="exactly", step=2) == \
        'r: {"name": "a", "exactly": {"count": 1}}\n'
    with pytest.raises(EditRefused, match="across lines"):
        _edit('{"r": {"name": "a",\n  "count": 1}}\n', wrap_entries, "r", keys=["count"], wrapper="exactly", step=2)


def test_hoist_refuses_a_key_that_is_also_beside_it():
    with pytest.raises(EditRefused, match="also set beside it"):
        _edit("d:\n  name: a\n  basic:\n    name: b\n", hoist_entry, "d", key_name="basic")


def test_crlf_and_a_missing_final_line_break_are_kept():
    text = "r:\r\n  name: a\r\n  count: 1"
    assert _edit(text, wrap_entries, "r", keys=["count"], wrapper="exactly", step=2) == \
        "r:\r\n  name: a\r\n  exactly:\r\n    count: 1"


def test_wrap_value_and_delete_entry():
    text = "capacity:\n  memory: 80Gi  # HBM\n  cores: 8\n"
    assert _edit(text, wrap_value, "capacity", key_name="memory", inner_key="value", step=2) == \
        "capacity:\n  memory:\n    value: 80Gi  # HBM\n  cores: 8\n"
    assert _edit(text, delete_entry, "capacity", key_name="memory") == "capacity:\n  cores: 8\n"
    assert _edit("- a: 1\n  b: 2\n", delete_entry, 0, key_name="a") == "- b: 2\n"


def test_scalars_keep_their_quoting():
    text = "a: 'x'\nb: \"y\"\nc: z\n"
    layout = read_layout(text)
    root = layout.roots[0]
    splices = [replace_scalar(root.find((k,)), "v1") for k in "abc"]
    assert apply_splices(text, splices) == "a: 'v1'\nb: \"v1\"\nc: v1\n"
    assert scalar_text("true", "") == '"true"' and scalar_text("it's", "'") == "'it''s'"


def test_indent_step_is_the_documents_own():
    assert indent_step(read_layout("a:\n    b:\n        c: 1\n"), read_layout("a:\n    b:\n        c: 1\n").roots[0]) == 4
    layout = read_layout("a: 1\n")
    assert indent_step(layout, layout.roots[0]) == 2


def test_overlapping_splices_are_refused():
    layout = read_layout("a: 1\n")
    node = layout.roots[0].find(("a",))
    with pytest.raises(EditRefused):
        apply_splices("a: 1\n", [replace_scalar(node, "x"), replace_scalar(node, "y")])
