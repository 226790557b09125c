"""Opaque device configuration (``opaque: {driver, parameters}``), shared by claims, classes and allocations.

The API server validates an opaque configuration the same way wherever it appears
(``validateOpaqueConfiguration``): the driver is a driver name, and ``parameters`` must be a
non-empty JSON *object*; on create (or when the configuration is new) the raw JSON may be at most
10 KiB. The size is measured on the JSON the client sends, which for a YAML manifest is the
compact re-serialisation kubectl makes, so we measure that.

Rules: DRA228 config-opaque-required, DRA229 opaque-driver-invalid, DRA230 config-parameters-invalid,
DRA231 config-parameters-too-large.
"""
from __future__ import annotations

import json
from typing import Any, Iterator

from ..kube.limits import Limits
from ..paths import FieldPath
from ..problems import Problem
from .fields import ERROR_WORDS
from .formats import driver_name_errors

OPAQUE_REQUIRED = "DRA228"
DRIVER_INVALID = "DRA229"
PARAMETERS_INVALID = "DRA230"
PARAMETERS_TOO_LARGE = "DRA231"

RULES = ("DRA228", "DRA229", "DRA230", "DRA231")

# Go's encoding/json escapes these inside strings as \u00XX / \u20XX (6 bytes instead of 1-3).
_GO_ESCAPED = {"<": 5, ">": 5, "&": 5, "\u2028": 3, "\u2029": 3}


def check_opaque_config(opaque: Any, path: FieldPath, limits: Limits, *, check_size: bool = True) -> Iterator[Problem]:
    """Problems of one opaque configuration.

    ``opaque`` is the value found at ``path`` (the ``…config[k].opaque`` field itself, canonical),
    or None when the field is absent: that is reported as Required at ``path``. ``check_size``
    is False when the API server treats the configuration as already stored (a DeviceClass
    update whose ``config`` list is unchanged), so the 10 KiB limit is not applied. Values of a
    wrong type are left to the schema stage.
    """
    if opaque is None:
        yield Problem(OPAQUE_REQUIRED, path,
                      "an `opaque` configuration is required in every config entry (the only kind of device "
                      "configuration there is); add `opaque: {driver: <driver name>, parameters: {...}}` "
                      "(API server: Required value)")
        return
    if not isinstance(opaque, dict):
        return
    driver = opaque.get("driver", "")
    if isinstance(driver, str):
        for kind, msg in driver_name_errors(driver):
            yield Problem(DRIVER_INVALID, path.child("driver"),
                          f"driver {driver!r} is not a valid driver name: {msg}; use the DNS subdomain name the "
                          f"driver registers (e.g. gpu.example.com) (API server: {ERROR_WORDS[kind]})")
    yield from _check_parameters(opaque, path.child("parameters"), limits, check_size)


def _check_parameters(opaque: dict, path: FieldPath, limits: Limits, check_size: bool) -> Iterator[Problem]:
    if "parameters" not in opaque or opaque["parameters"] is None:
        yield Problem(PARAMETERS_INVALID, path,
                      "`parameters` is required: the driver's configuration as a JSON object (e.g. "
                      "`parameters: {apiVersion: gpu.example.com/v1, kind: GpuConfig}`) (API server: Required value)")
        return
    params = opaque["parameters"]
    size = json_size(params)
    if check_size and size > limits.opaque_parameters_bytes:
        yield Problem(PARAMETERS_TOO_LARGE, path,
                      f"`parameters` is {size} bytes as JSON; at most {limits.opaque_parameters_bytes} bytes are "
                      "allowed: keep large data elsewhere (a ConfigMap the driver reads) and reference it "
                      "(API server: Too long)", details={"size": size, "limit": limits.opaque_parameters_bytes})
        return
    if not isinstance(params, dict):
        yield Problem(PARAMETERS_INVALID, path,
                      f"`parameters` must be a JSON object, found {_json_kind(params)}; wrap the value in a mapping "
                      "such as `{apiVersion: …, kind: …, …}` (API server: Invalid value, \"must be a valid JSON "
                      "object\")")


def json_size(value: Any) -> int:
    """Bytes of ``value`` as compact JSON the way Go's encoding/json writes it (sorted keys, HTML escaping)."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True, default=str)
    except TypeError:  # YAML allows keys of mixed types, which cannot be sorted; the size is the same
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    extra = sum(text.count(ch) * n for ch, n in _GO_ESCAPED.items())
    return len(text.encode("utf-8")) + extra


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__
