"""Field paths: rendered as the user reads them, parsed back to the same path."""
from __future__ import annotations

from dralint.paths import FieldPath, Key


def test_field_path_render_and_parse_round_trip():
    path = FieldPath(("spec", "devices", 0, "attributes", Key("gpu.example.com/model"), "string"))
    assert path.render() == "spec.devices[0].attributes[gpu.example.com/model].string"
    assert FieldPath.parse(path.render()) == path
