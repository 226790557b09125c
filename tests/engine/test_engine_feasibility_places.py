"""The feasibility stage's problems come with their place in their files, worked out in the process
that judged them (``emit.placed``), so the main process does not work them out after every group is
judged: the findings are those the emitter makes placing them itself, also when placing fails."""
from __future__ import annotations

from pathlib import Path

import pytest

from dralint.engine import Options, lint_paths
from dralint.engine import emit, run

SLICE = """apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: node-{n}}}
spec:
  driver: gpu.example.com
  nodeName: node-{n}
  pool: {{name: node-{n}, generation: 1, resourceSliceCount: 1}}
  devices:
  - name: gpu-0
    attributes:
      model: {{string: a100}}
  - name: gpu-1
    attributes:
      model: {{string: a100}}
"""
CLASS = """apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
"""
CLAIM = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: claim-{n}, namespace: default}}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu
        count: {count}
        selectors:
        - cel:
            expression: >-
              device.attributes["gpu.example.com"].model == "{model}"
"""


def _write(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text("---\n".join(SLICE.format(n=n) for n in range(3)) + "---\n" + CLASS)
    claims = [CLAIM.format(n=n, count=1 + n % 4, model="a100" if n % 3 else "h100") for n in range(12)]
    (tmp_path / "claims.yaml").write_text("---\n".join(claims))


def _findings(tmp_path: Path) -> list:
    return lint_paths([str(tmp_path)], Options()).findings


def test_placed_in_the_judging_process_as_the_emitter_places_them(tmp_path: Path, monkeypatch) -> None:
    _write(tmp_path)
    got = _findings(tmp_path)
    monkeypatch.setattr(run, "placed", lambda obj, problem: problem)     # the emitter places every one
    expected = _findings(tmp_path)
    assert got == expected
    assert sum(f.rule == "DRA701" and f.file == str(tmp_path / "claims.yaml") for f in got) == 8


def test_the_emitter_is_given_the_stage_s_problems_placed(tmp_path: Path, monkeypatch) -> None:
    _write(tmp_path)
    seen = []
    problem = emit.Emitter.problem
    monkeypatch.setattr(emit.Emitter, "problem", lambda self, target, p: seen.append(p) or problem(self, target, p))
    _findings(tmp_path)
    feasibility = [p for p in seen if p.rule.startswith("DRA7")]
    assert feasibility and all(p.place is not None for p in feasibility)


def test_a_place_that_cannot_be_worked_out_is_left_to_the_emitter(tmp_path: Path, monkeypatch) -> None:
    _write(tmp_path)
    expected = _findings(tmp_path)

    def fails(obj, problem):
        raise ValueError("no place")

    monkeypatch.setattr(run, "placed", fails)
    assert _findings(tmp_path) == expected


@pytest.mark.parametrize("offset", [None, 3])
def test_placed_equals_the_emitter_s_own_place(tmp_path: Path, offset) -> None:
    from dralint.problems import Problem
    from dralint.paths import FieldPath

    _write(tmp_path)
    result = lint_paths([str(tmp_path)], Options())
    claim = next(obj for obj in result.linted if obj.kind == "ResourceClaim")
    path = FieldPath(("spec", "devices", "requests", 0, "exactly", "selectors", 0, "cel", "expression"))
    problem = Problem("DRA701", path, "m", scalar_offset=offset)
    start, end = emit.placed(claim, problem).place
    assert start.line > 0 and end.line == start.line and (start.column, end.column) != (0, 0)
    assert (start, end) == emit._place(claim.manifest, claim.to_user(path), offset)
