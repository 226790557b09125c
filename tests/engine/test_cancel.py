"""Stopping a run at its next object (dralint.cancel) and counting how far it got."""
from __future__ import annotations

import pytest

from dralint.cancel import Cancelled, Token, cancellable, checkpoint
from dralint.engine import Options, lint_text
from lsp_support import CLASS, SLICE, claim


class CancelledAt(Token):
    """A token that another thread cancels once the run has passed ``at`` checkpoints."""

    def __init__(self, at: int) -> None:
        self.at = at
        super().__init__()

    @property
    def steps(self) -> int:
        return self._steps

    @steps.setter
    def steps(self, value: int) -> None:
        self._steps = value
        self.cancelled = value >= self.at


def test_a_checkpoint_outside_a_cancellable_run_costs_nothing() -> None:
    checkpoint()  # the command line and the webhook run without a token


def test_checkpoints_count_until_the_token_is_cancelled() -> None:
    with cancellable(Token()) as token:
        checkpoint()
        checkpoint()
        assert token.steps == 2
        token.cancel()
        with pytest.raises(Cancelled):
            checkpoint()
    checkpoint()  # the token is the run's only: outside it, nothing stops


def test_a_cancelled_run_stops_at_its_next_object() -> None:
    text = "---\n".join(claim(name=f"c-{i}").replace("count: 1", "cout: 1") for i in range(5))
    with cancellable(Token()) as token:
        assert len(lint_text(text, Options(), name="c.yaml")) == 5
    assert token.steps >= 5  # one checkpoint per object at least
    stopped = CancelledAt(3)
    with cancellable(stopped), pytest.raises(Cancelled):  # not turned into a finding by the error boundaries
        lint_text(text, Options(), name="c.yaml")
    assert stopped.steps == 3


def test_a_cancelled_run_stops_in_the_feasibility_stage_between_claims() -> None:
    """The allocator's stage passes a checkpoint before each claim it judges: an editor's run of an
    older text stops there, not once every claim is judged."""
    text = CLASS + "---\n" + SLICE + "".join("---\n" + claim(count=1 + i % 3, name=f"c-{i}") for i in range(6))
    with cancellable(Token()) as checks:
        lint_text(text, Options(ignore=("DRA7",)), name="c.yaml")
    with cancellable(Token()) as whole:
        assert any(f.rule == "DRA701" for f in lint_text(text, Options(), name="c.yaml"))   # 2 or 3 of one GPU: never
    assert whole.steps >= checks.steps + 6   # one more per claim judged
    stopped = CancelledAt(checks.steps + 2)
    with cancellable(stopped), pytest.raises(Cancelled):
        lint_text(text, Options(), name="c.yaml")
    assert stopped.steps == checks.steps + 2
