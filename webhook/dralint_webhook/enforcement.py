"""What the webhook does with a finding that would deny: deny, warn or dryrun, rule by rule.

The model (webhook/README.md, "Enforcement"): a rule's ``severities`` entry says what its findings
*are*, as the CLI's ``--severity`` does; an error is a would-be denial. Enforcement says what the
webhook *does* with a rule's errors: ``deny`` refuses the request, ``warn`` admits it with the finding
as a warning, ``dryrun`` admits it silently (the finding answered as info: logged and counted only).
Under ``warn`` and ``dryrun`` the would-be denial is recorded (a metric and a log line), which is what
a warn-only rollout reads. A rule that no ``enforcement`` entry names follows ``feasibility`` when
it is a cluster-state rule (the catalog's ``cluster_state``), and is denied otherwise. Internal
errors (DRA000) follow ``onInternalError``, never enforcement.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Iterable, Mapping, NamedTuple

from dralint.findings import Finding, Severity
from dralint.policy_file import cluster_rules

INTERNAL_ERROR_RULE = "DRA000"


class Action(str, Enum):
    DENY = "deny"
    WARN = "warn"
    DRYRUN = "dryrun"


# How a rule's error is answered under each action.
ANSWERED_AS = {Action.DENY: Severity.ERROR, Action.WARN: Severity.WARNING, Action.DRYRUN: Severity.INFO}


class Withheld(NamedTuple):
    """An error finding that did not deny because its rule is enforced as ``warn`` or ``dryrun``."""

    finding: Finding     # as the rule reported it (an error)
    action: Action


@dataclass(frozen=True)
class Enforcement:
    """Each rule's action, resolved once when the policy is read; a rule absent here is denied."""

    actions: Mapping[str, Action] = field(default_factory=dict)

    @classmethod
    def build(cls, feasibility: Action | None, entries: Iterable[tuple[Iterable[str], Action]]) -> "Enforcement":
        """``feasibility``'s action for the cluster-state rules (None: they are not judged), then each
        entry's action for the rules it names, a later entry overriding an earlier one."""
        actions: dict[str, Action] = dict.fromkeys(cluster_rules(), feasibility) if feasibility else {}
        for rules, action in entries:
            actions.update((rule, action) for rule in rules if rule != INTERNAL_ERROR_RULE)
        return cls(actions)

    def action(self, rule: str) -> Action:
        """What a finding of ``rule`` at error severity does."""
        return self.actions.get(rule, Action.DENY)

    def apply(self, findings: Iterable[Finding]) -> tuple[list[Finding], list[Withheld]]:
        """``findings`` as answered (errors of rules not enforced as deny lowered), and the errors so withheld."""
        answered: list[Finding] = []
        withheld: list[Withheld] = []
        for f in findings:
            action = self.action(f.rule) if f.severity is Severity.ERROR else Action.DENY
            if action is Action.DENY:
                answered.append(f)
                continue
            withheld.append(Withheld(f, action))
            answered.append(replace(f, severity=ANSWERED_AS[action]))
        return answered, withheld


DENY_EVERY_RULE = Enforcement()
