"""The ``device`` a selector sees, built from a ResourceSlice device as the scheduler builds it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..kube.quantity import Quantity, QuantityError
from .runtime import DomainMap
from .values import Semver, SemverError

_SCALAR_KEYS = ("int", "bool", "string", "version")
_LIST_KEYS = ("ints", "bools", "strings", "versions")


@dataclass(frozen=True)
class Device:
    """A device: attributes and capacity grouped by domain (``domain -> id -> value``).

    Attribute values are ``int``, ``bool``, ``str``, :class:`Semver` or lists of those (list-type
    attributes). ``error`` is a conversion failure Kubernetes would report on every evaluation
    (an attribute without a value, an unparsable version). ``list_attribute`` names the first
    list-valued attribute: environments without list-type attributes refuse such a device.
    """

    driver: str
    attributes: Mapping[str, Mapping[str, Any]]
    capacity: Mapping[str, Mapping[str, Quantity]]
    allow_multiple_allocations: bool = False
    error: str | None = None
    list_attribute: str | None = None
    view: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        attrs = DomainMap()
        list_name = self.list_attribute
        for domain, ids in self.attributes.items():
            inner: dict[str, Any] = {}
            for ident, value in ids.items():
                if isinstance(value, (list, tuple)):
                    value = tuple(value)
                    if list_name is None:
                        list_name = f"{domain}/{ident}"
                inner[ident] = value
            attrs[domain] = inner
        caps = DomainMap({d: dict(ids) for d, ids in self.capacity.items()})
        object.__setattr__(self, "list_attribute", list_name)
        # Built once: every selector evaluated on this device shares it.
        object.__setattr__(self, "view", {"driver": self.driver, "attributes": attrs, "capacity": caps,
                                          "allowMultipleAllocations": bool(self.allow_multiple_allocations)})


def split_qualified_name(name: str, driver: str) -> tuple[str, str]:
    """``domain/id`` -> (domain, id); a bare id belongs to the driver's domain."""
    if "/" in name:
        domain, ident = name.split("/", 1)
        return domain, ident
    return driver, name


def device_from_api(driver: str, device: Mapping[str, Any]) -> Device:
    """Build a :class:`Device` from a v1-shaped ResourceSlice device dict.

    Never raises: a conversion failure is kept in ``Device.error`` so every evaluation on the
    device fails the way the scheduler's does.
    """
    attrs: dict[str, dict[str, Any]] = {}
    caps: dict[str, dict[str, Quantity]] = {}
    errors: list[str] = []
    raw_attrs: Any = device.get("attributes") if isinstance(device, Mapping) else None
    for name in sorted(raw_attrs or {}) if isinstance(raw_attrs, Mapping) else ():
        value, problem = _attribute_value(raw_attrs[name])
        if problem is not None:
            errors.append(f"attribute {name}: {problem}")
            continue
        domain, ident = split_qualified_name(str(name), driver)
        attrs.setdefault(domain, {})[ident] = value
    raw_caps: Any = device.get("capacity") if isinstance(device, Mapping) else None
    for name in sorted(raw_caps or {}) if isinstance(raw_caps, Mapping) else ():
        spec = raw_caps[name]
        raw = spec.get("value") if isinstance(spec, Mapping) else None
        try:
            q = Quantity.parse(raw) if isinstance(raw, (str, int, float)) else None
        except QuantityError as exc:
            errors.append(f"capacity {name}: {exc}")
            continue
        if q is None:
            errors.append(f"capacity {name}: missing value")
            continue
        domain, ident = split_qualified_name(str(name), driver)
        caps.setdefault(domain, {})[ident] = q
    multi = device.get("allowMultipleAllocations") if isinstance(device, Mapping) else None
    return Device(driver, attrs, caps, bool(multi) if isinstance(multi, bool) else False,
                  errors[0] if errors else None)


def _attribute_value(attr: Any) -> tuple[Any, str | None]:
    if not isinstance(attr, Mapping):
        return None, "unsupported attribute value"
    for key in _SCALAR_KEYS:
        v = attr.get(key)
        if v is None:
            continue
        if key == "int" and type(v) is int:
            return v, None
        if key == "bool" and type(v) is bool:
            return v, None
        if key == "string" and isinstance(v, str):
            return v, None
        if key == "version" and isinstance(v, str):
            try:
                return Semver.parse(v), None
            except SemverError as exc:
                return None, f"parse semantic version: {exc}"
        return None, "unsupported attribute value"
    for key in _LIST_KEYS:
        v = attr.get(key)
        if v is None:
            continue
        if not isinstance(v, list):
            return None, "unsupported attribute value"
        if key == "versions":
            out = []
            for s in v:
                try:
                    out.append(Semver.parse(s if isinstance(s, str) else ""))
                except SemverError as exc:
                    return None, f"parse semantic version: {exc}"
            return tuple(out), None
        want = {"ints": int, "bools": bool, "strings": str}[key]
        if not all(type(x) is want for x in v):
            return None, "unsupported attribute value"
        return tuple(v), None
    return None, "unsupported attribute value"
