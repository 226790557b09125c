"""Errors that abort an allocation attempt outright (docs/allocator.md §14), as opposed to a node
simply not fitting. Each kind maps to its own rule in ``rules/DRA7*.yaml``."""
from __future__ import annotations

from ..convert import Canonical
from ..paths import FieldPath

# kind -> rule id
RULES = {
    "class-missing": "DRA703",   # reference: the DeviceClass does not exist
    "gate": "DRA704",            # version: a field whose feature gate is off in the scheduler
    "limit": "DRA705",           # semantic: more than 32 devices in one claim
    "malformed": "DRA706",       # semantic: input the allocator cannot interpret
    "cel": "DRA702",             # cel: a selector fails to compile or to evaluate on a device
    "all-constraint": "DRA707",  # feasibility: allocationMode All with devices a constraint rejects
    "all-pool": "DRA711",        # feasibility: allocationMode All seeing an unusable pool, up to 1.37
}


class FatalError(Exception):
    """The allocator gives up with an error instead of answering "cannot allocate"."""

    def __init__(self, kind: str, message: str, obj: Canonical | None = None, path: FieldPath | None = None, *,
                 fallback: tuple[Canonical, FieldPath] | None = None, compile_error: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.obj = obj                  # where the finding belongs: the claim, or the class owning a selector
        self.path = path if path is not None else FieldPath()
        self.fallback = fallback        # the claim and field to use when ``obj`` is not among the linted files
        self.compile_error = compile_error  # the CEL check reports these for linted objects already

    @property
    def rule(self) -> str:
        return RULES[self.kind]
