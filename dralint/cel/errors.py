"""The two ways a CEL expression can fail: an issue found before evaluation, or a runtime error."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CelIssue:
    """A problem found while compiling or linting a selector.

    ``code`` is ``too-long``, ``syntax``, ``check``, ``panic`` (the release's cel-go crashes on
    the expression), ``output-type``, ``program`` (cel-go cannot plan the checked expression),
    ``cost`` (errors) or one of the warning codes of
    :mod:`dralint.cel.lint`. ``message`` uses cel-go's wording where cel-go
    has one; ``offset`` is the 0-based character offset in the expression (None: whole expression);
    ``hint`` teaches the fix where cel-go's text does not (shown before it).
    """

    code: str
    severity: str
    message: str
    offset: int | None
    hint: str = ""


class CelRuntimeError(Exception):
    """Evaluation failed; the message is worded as Kubernetes reports it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class CostLimitExceeded(CelRuntimeError):
    """The run-time cost budget ran out (cel-go: actual cost limit exceeded)."""

    def __init__(self) -> None:
        super().__init__("operation cancelled: actual cost limit exceeded")


def issue_text(expression: str, issue: CelIssue) -> str:
    """cel-go's one-issue report: ``ERROR: <input>:L:C: msg`` plus the source line and a caret."""
    if issue.offset is None or issue.offset < 0:
        return f"ERROR: <input>:-1:0: {issue.message}"
    before = expression[: issue.offset]
    line = before.count("\n") + 1
    col = issue.offset - (before.rfind("\n") + 1)
    src = expression.split("\n")[line - 1] if expression else ""
    # cel-go draws the caret under the column with '.' padding (a wide char counts as one column).
    return f"ERROR: <input>:{line}:{col + 1}: {issue.message}\n | {src}\n | {'.' * col}^"
