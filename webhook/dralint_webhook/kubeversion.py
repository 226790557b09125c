"""Which Kubernetes release reviews are judged as: the policy's pin, else the API server's own.

The watcher reads the API server's ``/version`` when it starts and again every
``Timing.rediscover`` (a control plane upgraded under a running replica), and writes the release
into its heartbeat; each worker puts it beside the policy (:func:`release_in_force`). A policy
without ``kubeVersion`` follows the server. A pin is honoured (an admin may judge ahead for an
upgrade, or hold an older release on purpose) but never silently: a pin that differs from the
server's release is logged (an ERROR when the pin is older: fields and features the server has are
refused, or said to be dropped; a WARNING when it is newer), shown by the gauge
``dralint_webhook_kube_version_mismatch`` and written under ``/readyz``'s "ok". Without a watch
(cluster files, or no cluster) the server is unknown: the pin, else dralint's default release.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from dralint.kube.releases import NEWEST_MINOR, OLDEST_MINOR

from .policy import Policy, PolicyError, at_release


@dataclass(frozen=True)
class ReleaseCheck:
    """The release reviews are judged as, and where it comes from."""

    in_force: int                  # the minor reviews judge with
    pinned: int | None = None      # the policy's kubeVersion (None: not pinned)
    server: int | None = None      # the API server's release (None: not known)
    problem: str = ""              # why the server's release could not be followed as it is

    @property
    def mismatch(self) -> bool:
        """A pin that differs from the API server's release."""
        return self.pinned is not None and self.server is not None and self.pinned != self.server

    def level(self) -> int:
        """How loudly to log it: a pin older than the server makes false findings on valid objects."""
        if self.mismatch and self.pinned is not None and self.server is not None and self.pinned < self.server:
            return logging.ERROR
        return logging.WARNING

    def message(self) -> str:
        """What to say about it ("" when there is nothing to say)."""
        if self.mismatch:
            older = self.pinned is not None and self.server is not None and self.pinned < self.server
            effect = ("fields and features the server has are refused or reported as dropped (false findings on "
                      "valid objects)" if older else
                      "fields and features the server does not have yet are accepted without a finding")
            return (f"the policy pins kubeVersion 1.{self.pinned} but the API server is 1.{self.server}: reviews are "
                    f"judged as 1.{self.pinned}, so {effect}; remove kubeVersion from the policy to follow the "
                    "server")
        return self.problem


def release_in_force(policy: Policy, server: int | None) -> tuple[Policy, ReleaseCheck]:
    """``policy`` as reviews judge with it, given the API server's release (None: unknown), and the check."""
    if policy.pinned_minor is not None or server is None:
        minor = policy.pinned_minor if policy.pinned_minor is not None else policy.options.release.minor
        return policy, ReleaseCheck(minor, policy.pinned_minor, server)
    # dralint judges the releases it knows: a newer server is judged as the newest of them.
    minor = min(max(server, OLDEST_MINOR), NEWEST_MINOR)
    problem = "" if minor == server else (
        f"the API server is 1.{server}, which dralint does not know: reviews are judged as 1.{minor}")
    try:
        return at_release(policy, minor), ReleaseCheck(minor, None, server, problem)
    except PolicyError as exc:
        kept = policy.options.release.minor
        return policy, ReleaseCheck(kept, None, server, f"the policy's featureGates do not fit the API server's "
                                                        f"release 1.{server} ({exc}): reviews are judged as 1.{kept}")


def metric_lines(check: ReleaseCheck) -> list[str]:
    """The gauge of the check, in the Prometheus text format."""
    pinned = f"1.{check.pinned}" if check.pinned is not None else ""
    server = f"1.{check.server}" if check.server is not None else ""
    labels = f'policy="{pinned}",server="{server}",in_force="1.{check.in_force}"'
    return ["# HELP dralint_webhook_kube_version_mismatch 1 while the policy's kubeVersion differs from the API "
            "server's release (labels: the pin, empty when none; the server's, empty when unknown; the release "
            "reviews are judged as).",
            "# TYPE dralint_webhook_kube_version_mismatch gauge",
            f"dralint_webhook_kube_version_mismatch{{{labels}}} {1 if check.mismatch else 0}"]
