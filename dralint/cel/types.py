"""CEL types as the checker sees them, printed the way cel-go's ``FormatCELType`` prints them."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True, slots=True)
class Type:
    """``kind`` is one of: int uint double bool string bytes null duration timestamp list map dyn
    any error type typeparam opaque object."""

    kind: str
    name: str = ""
    params: tuple["Type", ...] = ()

    def __str__(self) -> str:
        return fmt(self)


_NAMES = {"null": "null_type", "duration": "google.protobuf.Duration", "timestamp": "google.protobuf.Timestamp",
          "error": "*error*"}


def fmt(t: Type) -> str:
    """cel-go's FormatCELType."""
    k = t.kind
    if k == "list":
        return f"list({fmt(t.params[0])})"
    if k == "map":
        return f"map({fmt(t.params[0])}, {fmt(t.params[1])})"
    if k == "type":
        return f"type({fmt(t.params[0])})" if t.params else "type"
    if k in ("opaque", "object", "typeparam"):
        if t.params:
            return f"{t.name}({', '.join(fmt(p) for p in t.params)})"
        return t.name
    return _NAMES.get(k, k)


def declared_name(t: Type) -> str:
    """cel-go's ``Type.String()``: as ``fmt`` but ``any`` is ``google.protobuf.Any``."""
    if t.kind == "any":
        return "google.protobuf.Any"
    if t.params and t.kind in ("list", "map", "type", "opaque", "object"):
        head = fmt(Type(t.kind, t.name)) if t.kind in ("opaque", "object") else t.kind
        return f"{head}({', '.join(declared_name(p) for p in t.params)})"
    return fmt(t)


INT = Type("int")
UINT = Type("uint")
DOUBLE = Type("double")
BOOL = Type("bool")
STRING = Type("string")
BYTES = Type("bytes")
NULL = Type("null")
DURATION = Type("duration")
TIMESTAMP = Type("timestamp")
DYN = Type("dyn")
ANY = Type("any")
ERROR = Type("error")
TYPE = Type("type")
QUANTITY = Type("opaque", "kubernetes.Quantity")
SEMVER = Type("opaque", "kubernetes.Semver")
URL = Type("opaque", "kubernetes.URL")
IP = Type("opaque", "net.IP")
CIDR = Type("opaque", "net.CIDR")
NAMED_FORMAT = Type("opaque", "kubernetes.NamedFormat")
DEVICE = Type("object", "kubernetes.DRADevice")


def list_of(t: Type) -> Type:
    return Type("list", "", (t,))


def map_of(k: Type, v: Type) -> Type:
    return Type("map", "", (k, v))


def optional_of(t: Type) -> Type:
    return Type("opaque", "optional_type", (t,))


def type_of(t: Type) -> Type:
    return Type("type", "", (t,))


def param(name: str) -> Type:
    return Type("typeparam", name)


def is_optional(t: Type) -> bool:
    return t.kind == "opaque" and t.name == "optional_type"


_SIMPLE = {"int": INT, "uint": UINT, "double": DOUBLE, "bool": BOOL, "string": STRING, "bytes": BYTES,
           "null": NULL, "duration": DURATION, "timestamp": TIMESTAMP, "dyn": DYN, "any": ANY,
           "Quantity": QUANTITY, "Semver": SEMVER, "URL": URL, "IP": IP, "CIDR": CIDR,
           "NamedFormat": NAMED_FORMAT, "type": TYPE}


@lru_cache(maxsize=512)
def parse_type(text: str) -> Type:
    """Declaration shorthand: ``int``, ``list(A)``, ``map(K, V)``, ``opt(T)``, ``type(A)``;
    single capital letters are type parameters."""
    text = text.strip()
    if "(" in text:
        head, inner = text.split("(", 1)
        args = split_args(inner[:-1])
        ps = tuple(parse_type(a) for a in args)
        if head == "list":
            return list_of(ps[0])
        if head == "map":
            return map_of(ps[0], ps[1])
        if head == "opt":
            return optional_of(ps[0])
        if head == "type":
            return type_of(ps[0])
        raise ValueError(f"bad type {text!r}")
    if len(text) == 1 and text.isupper():
        return param(text)
    return _SIMPLE[text]


def split_args(s: str) -> list[str]:
    """Split at top-level commas."""
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    out.append(cur)
    return out
