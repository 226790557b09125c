"""cel-go extension libraries: strings (v2; ``format`` is in :mod:`.strformat`), lists (v3), sets, optional
types, two-variable helpers."""
from __future__ import annotations

from typing import Any, Callable

from .errors import CelRuntimeError
from .runtime import DomainMap, compare, equal, err, lookup_key, no_overload
from .strformat import string_format
from .strings import need_int, need_str
from .values import Duration, Optional, Timestamp, Uint

# -- strings ---------------------------------------------------------------------------------


def char_at(s: Any, i: Any) -> str:
    need_str(s)
    need_int(i)
    if i < 0 or i > len(s):
        raise err(f"index out of range: {i}")
    return s[i] if i < len(s) else ""


def lower_ascii(s: Any) -> str:
    need_str(s)
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in s)


def upper_ascii(s: Any) -> str:
    need_str(s)
    return "".join(chr(ord(c) - 32) if "a" <= c <= "z" else c for c in s)


def replace(s: Any, old: Any, new: Any, n: Any = -1) -> str:
    need_str(s, old, new)
    need_int(n)
    if n == 0:
        return s
    if old == "":
        # Go's strings.Replace with an empty needle inserts before every rune and at the end.
        slots = len(s) + 1 if n < 0 else min(n, len(s) + 1)
        out = []
        for i in range(len(s) + 1):
            if i < slots:
                out.append(new)
            if i < len(s):
                out.append(s[i])
        return "".join(out)
    return s.replace(old, new, n if n > 0 else -1)


def split(s: Any, sep: Any, n: Any = -1) -> list[str]:
    need_str(s, sep)
    need_int(n)
    if n == 0:
        return []
    if sep == "":
        chars = list(s)
        if n > 0 and len(chars) > n:
            chars = chars[: n - 1] + ["".join(chars[n - 1:])]
        return chars
    if n < 0:
        return s.split(sep)
    return s.split(sep, n - 1)


def substring(s: Any, start: Any, end: Any = None) -> str:
    need_str(s)
    need_int(start)
    stop = len(s) if end is None else end
    need_int(stop)
    if start < 0 or start > len(s):
        raise err(f"index out of range: {start}")
    if stop < 0 or stop > len(s):
        raise err(f"index out of range: {stop}")
    if start > stop:
        raise err(f"invalid substring range. start: {start}, end: {stop}")
    return s[start:stop]


_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def trim(s: Any) -> str:
    need_str(s)
    return s.strip(_SPACE)


def join(items: Any, sep: Any = "") -> str:
    if type(items) not in (list, tuple):
        raise no_overload("join")
    need_str(sep, *items)
    return sep.join(items)


def quote(s: Any) -> str:
    need_str(s)
    out = ['"']
    for c in s:
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif c in "\a\b\f\n\r\t\v":
            out.append({"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}[c])
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


# -- lists -----------------------------------------------------------------------------------
def _list(v: Any) -> list | tuple:
    if type(v) not in (list, tuple):
        raise no_overload()
    return v


def lists_range(n: Any) -> list[int]:
    need_int(n)
    return list(range(max(n, 0)))


def list_slice(v: Any, start: Any, end: Any) -> list:
    items = _list(v)
    need_int(start, end)
    if start < 0 or end < 0:
        raise err(f"cannot slice({start}, {end}), negative indexes not supported")
    if start > end:
        raise err(f"cannot slice({start}, {end}), start index must be less than or equal to end index")
    if end > len(items):
        raise err(f"cannot slice({start}, {end}), list is length {len(items)}")
    return list(items[start:end])


def flatten(v: Any, depth: Any = 1) -> list:
    items = _list(v)
    need_int(depth)
    if depth < 0:
        raise err("level must be non-negative")
    out: list = []
    for x in items:
        if type(x) in (list, tuple) and depth > 0:
            out.extend(flatten(x, depth - 1))
        else:
            out.append(x)
    return out


def reverse(v: Any) -> list:
    return list(reversed(_list(v)))


def distinct(v: Any) -> list:
    out: list = []
    for x in _list(v):
        if not any(_safe_equal(x, y) for y in out):
            out.append(x)
    return out


def _safe_equal(a: Any, b: Any) -> bool:
    try:
        return equal(a, b)
    except CelRuntimeError:
        return False


_SORTABLE = (int, Uint, float, str, bytes, bool, Duration, Timestamp)


def sort_list(v: Any) -> list:
    items = list(_list(v))
    if not items:
        return items
    first = type(items[0])
    if first not in _SORTABLE or any(type(x) is not first for x in items):
        raise err("list elements must have the same type")
    import functools

    return sorted(items, key=functools.cmp_to_key(compare))


def sort_by_keys(v: Any, keys: Any) -> list:
    items = _list(v)
    ks = _list(keys)
    if len(items) != len(ks):
        raise err(f"@sortByAssociatedKeys() expected a list of the same size as the associated keys list, "
                  f"but got {len(items)} and {len(ks)} elements respectively.")
    if ks:
        first = type(ks[0])
        if first not in _SORTABLE or any(type(x) is not first for x in ks):
            raise err("list elements must have the same type")
    import functools

    def by_key(a: int, b: int) -> int:
        return compare(ks[a], ks[b])

    order = sorted(range(len(items)), key=functools.cmp_to_key(by_key))
    return [items[i] for i in order]


# -- sets ------------------------------------------------------------------------------------
def sets_contains(a: Any, b: Any) -> bool:
    x, y = _list(a), _list(b)
    return all(any(_safe_equal(e, f) for f in x) for e in y)


def sets_equivalent(a: Any, b: Any) -> bool:
    return sets_contains(a, b) and sets_contains(b, a)


def sets_intersects(a: Any, b: Any) -> bool:
    x, y = _list(a), _list(b)
    return any(any(_safe_equal(e, f) for f in x) for e in y)


# -- optional --------------------------------------------------------------------------------
def _opt(v: Any) -> Optional:
    if type(v) is not Optional:
        raise no_overload()
    return v


def of_non_zero(v: Any) -> Optional:
    zero = (v is None or v is False or (type(v) in (int, Uint, float) and v == 0) or
            (type(v) in (str, bytes, list, tuple, dict, DomainMap) and len(v) == 0) or
            (type(v) in (Duration, Timestamp) and v.nanos == 0))
    return Optional(False) if zero else Optional(True, v)


def opt_value(o: Any) -> Any:
    o = _opt(o)
    if not o.present:
        raise err("optional.none() dereference")
    return o.value


def opt_or_value(o: Any, default: Any) -> Any:
    o = _opt(o)
    return o.value if o.present else default


def opt_or(o: Any, other: Any) -> Optional:
    o = _opt(o)
    return o if o.present else _opt(other)


def unwrap(v: Any) -> list:
    return [_opt(x).value for x in _list(v) if _opt(x).present]


def first(v: Any) -> Optional:
    items = _list(v)
    return Optional(True, items[0]) if items else Optional(False)


def last(v: Any) -> Optional:
    items = _list(v)
    return Optional(True, items[-1]) if items else Optional(False)


def map_insert(m: Any, k: Any, v: Any = None) -> dict:
    if type(m) not in (dict, DomainMap):
        raise no_overload("cel.@mapInsert")
    out = dict(m)
    if v is None and type(k) in (dict, DomainMap):
        for kk, vv in k.items():
            if lookup_key(out, kk)[0]:
                raise err(f"insert failed: key {kk} already exists")
            out[kk] = vv
        return out
    if lookup_key(out, k)[0]:
        raise err(f"insert failed: key {k} already exists")
    out[k] = v
    return out


FUNCTIONS: dict[tuple[str, bool], Callable[..., Any]] = {
    ("charAt", True): char_at,
    ("lowerAscii", True): lower_ascii,
    ("upperAscii", True): upper_ascii,
    ("replace", True): replace,
    ("split", True): split,
    ("substring", True): substring,
    ("trim", True): trim,
    ("join", True): join,
    ("format", True): string_format,
    ("strings.quote", False): quote,
    ("lists.range", False): lists_range,
    ("slice", True): list_slice,
    ("flatten", True): flatten,
    ("reverse", True): reverse,
    ("distinct", True): distinct,
    ("sort", True): sort_list,
    ("@sortByAssociatedKeys", True): sort_by_keys,
    ("sets.contains", False): sets_contains,
    ("sets.equivalent", False): sets_equivalent,
    ("sets.intersects", False): sets_intersects,
    ("optional.of", False): lambda v: Optional(True, v),
    ("optional.ofNonZeroValue", False): of_non_zero,
    ("optional.none", False): lambda: Optional(False),
    ("hasValue", True): lambda o: _opt(o).present,
    ("value", True): opt_value,
    ("orValue", True): opt_or_value,
    ("or", True): opt_or,
    ("optional.unwrap", False): unwrap,
    ("unwrapOpt", True): unwrap,
    ("first", True): first,
    ("last", True): last,
    ("cel.@mapInsert", False): map_insert,
}
