"""What the user asked for, as one record every face builds and every stage reads."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from .kube.releases import DEFAULT_MINOR, Release
from .org_policy import OrgPolicy
from .source import Reading


@dataclass(frozen=True)
class Options:
    """What the user asked for; every face builds one of these."""

    # The target release and its gate settings, built once from the settings (Release.parse).
    release: Release = field(default_factory=lambda: Release(DEFAULT_MINOR))
    strict: bool = True
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severities: Mapping[str, str] = field(default_factory=dict)
    cluster: tuple[str, ...] = ()
    old: str | None = None
    node: str | None = None
    trace: tuple[str, ...] = ()
    show_allocation: bool = False
    together: bool = False   # feasibility: the run's claims and pods one beside the other (--together)
    as_stored: bool = False  # feasibility: the linted claims are stored ones, gated fields kept (--as-stored)
    max_steps: int = 1_000_000
    # Wall-clock budget of the feasibility stage: opt-in (--max-seconds, the webhook's deadline), so that
    # by default a verdict depends on the search's steps alone, never on how busy the machine is.
    max_seconds: float | None = None
    jobs: int = 1            # processes the run may use (the CLI's -j); the feasibility stage forks them
    report_unused_ignores: bool = False  # report suppressions that hid nothing (DRA910)
    reading: Reading = field(default_factory=Reading)  # excludes, the size limit
    # Where the objects judged against come from, as messages name it: the CLI's files are "this run";
    # the webhook's are the cluster it watches.
    context: str = "this run"
    # Suppressions (comments, the dralint.io/ignore annotation): read at all, and rules they cannot hide
    # (the webhook's policy outranks an object's own annotation).
    suppressions: bool = True
    protected: frozenset[str] = frozenset()
    # Rules the caller judges beside the catalog's, id → name (the webhook's organisation rules): no
    # suppression reaches them, and one that names them is told so rather than "no such rule".
    policy_rules: Mapping[str, str] = field(default_factory=dict)
    # The organisation's policy the organisation rules judge with (DRA950-DRA953); None: they do not judge.
    org_policy: OrgPolicy | None = None
    fixes: bool = False  # attach a Fix to each finding that has one (dralint.fixers; --fix, the language server)
