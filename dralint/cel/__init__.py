"""CEL for DRA device selectors: parse, type-check, cost-limit and evaluate as Kubernetes does.

Public API::

    from dralint.cel import CelEnv, CelIssue, Compiled, compile_selector, CelRuntimeError
    from dralint.cel import Device, device_from_api, lint_selector, env_for
"""
from __future__ import annotations

from .device import Device, device_from_api
from .env import CelEnv, env_for
from .errors import CelIssue, CelRuntimeError
from .lint import lint_selector
from .selector import DERIVED_CLAIM_MAX_COST, DERIVED_MAX_COST, MAX_COST, MAX_LENGTH, Compiled, compile_derived_attribute, compile_selector

__all__ = ["CelEnv", "CelIssue", "CelRuntimeError", "Compiled", "DERIVED_CLAIM_MAX_COST", "DERIVED_MAX_COST",
           "Device", "MAX_COST", "MAX_LENGTH", "compile_derived_attribute", "compile_selector", "device_from_api", "env_for", "lint_selector"]
