"""The webhook's judgement of one admission request, before it is written as an AdmissionReview."""
from __future__ import annotations

from dataclasses import dataclass, field

from dralint.findings import Finding, Severity

from .enforcement import DENY_EVERY_RULE, Enforcement, Withheld


@dataclass(frozen=True)
class Verdict:
    """Allowed or not, with the findings that decided it and the warnings to pass on.

    ``errors`` deny the request; ``warnings`` and ``notes`` (plain sentences that are not findings,
    such as "allowed because dralint failed") become the response's warnings. ``code``/``reason``
    are the Status of a denial: 422 Invalid for findings, 500 InternalError when policy says to deny
    on an internal error. ``withheld`` are the errors that would have denied but for their rule's
    enforcement (warn, dryrun): recorded, as a warn-only rollout reads them.
    """

    allowed: bool
    errors: tuple[Finding, ...] = ()
    warnings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()
    code: int = 422
    reason: str = "Invalid"
    message: str = ""
    internal_error: bool = False
    findings: tuple[Finding, ...] = field(default=(), compare=False)  # every finding, info included
    withheld: tuple[Withheld, ...] = field(default=(), compare=False)

    @property
    def rules(self) -> tuple[str, ...]:
        """Sorted rule ids of every finding (logs and metrics)."""
        return tuple(sorted({f.rule for f in self.findings}))


def from_findings(findings: list[Finding], notes: tuple[str, ...] = (), *,
                  enforcement: Enforcement = DENY_EVERY_RULE) -> Verdict:
    """Deny when any finding is an error its rule's ``enforcement`` denies; the other errors are answered as
    their enforcement says (warn: a warning, dryrun: info) and withheld; warnings pass on; info findings are
    only logged and counted."""
    answered, withheld = enforcement.apply(findings)
    errors = tuple(f for f in answered if f.severity is Severity.ERROR)
    warnings = tuple(f for f in answered if f.severity is Severity.WARNING)
    return Verdict(allowed=not errors, errors=errors, warnings=warnings, notes=notes, findings=tuple(answered),
                   withheld=tuple(withheld))


ALLOWED = Verdict(allowed=True)
