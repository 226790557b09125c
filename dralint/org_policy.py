"""The organisation's policy: rules the API server does not have, set by a cluster's admins.

The webhook reads it from its policy file's ``organization`` section; the organisation rules
(DRA950-DRA953, ``checks/org.py``) judge claims and templates with it. It sits below the checks so
that the options, the checks and the webhook can all hold it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class OrgPolicy:
    """The organisation section of the policy file."""

    allowed_classes: Mapping[str, tuple[str, ...]]   # namespace (or "*") → DeviceClass name patterns
    max_devices: int | None = None
    admin_labels: Mapping[str, str] | None = None      # labels a namespace needs for adminAccess
    # Labels of namespaces the judged objects do not come with (the webhook passes the labels it knows
    # itself); a Namespace object among them wins.
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return bool(self.allowed_classes) or self.max_devices is not None or self.admin_labels is not None

    def allowed_patterns(self, namespace: str) -> tuple[str, ...] | None:
        """The DeviceClass patterns for ``namespace``; None when the namespace is not restricted."""
        if namespace in self.allowed_classes:
            return self.allowed_classes[namespace]
        return self.allowed_classes.get("*")

    @classmethod
    def from_fields(cls, raw: Mapping[str, Any]) -> OrgPolicy:
        """A policy from a mapping of its field names, as a rule example's ``options.org_policy`` writes it."""
        return cls(allowed_classes={str(ns): tuple(patterns) for ns, patterns in
                                    (raw.get("allowed_classes") or {}).items()},
                   max_devices=raw.get("max_devices"), admin_labels=raw.get("admin_labels"),
                   namespace_labels=raw.get("namespace_labels") or {})
