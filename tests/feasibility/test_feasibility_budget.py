"""The feasibility budget: by default the search's steps bound it, so a verdict never depends on how
busy the machine is; a wall-clock limit applies only when one is given (``--max-seconds``, the
webhook's request deadline)."""
from __future__ import annotations

import importlib
import itertools
from dataclasses import replace
from pathlib import Path

import pytest

from dralint import engine
from dralint.feasibility import judgement, picks
from dralint.options import Options

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# The package exports the function ``judge``, which hides its module of the same name.
judge_module = importlib.import_module("dralint.feasibility.judge")
FILES = ("driver/deviceclass.yaml", "driver/resourceslice.yaml", "gpu-inference/inference.yaml",
         "gpu-inference/training-claim.yaml")


class _BusyClock:
    """``time`` as a process on a very busy machine sees it: an hour passes between two looks."""

    def __init__(self) -> None:
        self._hours = itertools.count()

    def monotonic(self) -> float:
        return next(self._hours) * 3600.0


def _verdicts(options: Options) -> list[tuple[str, str, str]]:
    text = "\n---\n".join((EXAMPLES / name).read_text() for name in FILES)
    return sorted((f.rule, f.object, f.message) for f in engine.lint_text(text, options)
                  if f.rule.startswith("DRA7"))


@pytest.fixture
def busy_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (judge_module, judgement, picks):
        monkeypatch.setattr(module, "time", _BusyClock())


def test_default_budget_ignores_the_clock(busy_clock: None) -> None:
    options = replace(Options(), show_allocation=True)
    assert options.max_seconds is None
    assert not any(rule == "DRA709" for rule, _, _ in _verdicts(options))


def test_default_verdicts_equal_those_on_an_idle_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    idle = _verdicts(Options())
    for module in (judge_module, judgement, picks):
        monkeypatch.setattr(module, "time", _BusyClock())
    assert _verdicts(Options()) == idle


def test_explicit_wall_budget_still_stops_the_search(busy_clock: None) -> None:
    undecided = [v for v in _verdicts(replace(Options(), max_seconds=1.0)) if v[0] == "DRA709"]
    assert any("--max-seconds" in message for _, _, message in undecided)


def test_max_seconds_is_opt_in_on_the_command_line() -> None:
    from dralint.cli import build_parser

    assert build_parser().parse_args(["x.yaml"]).max_seconds is None
    assert build_parser().parse_args(["--max-seconds", "2", "x.yaml"]).max_seconds == 2.0
