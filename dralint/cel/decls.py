"""Function declarations (overloads) of every library the DRA environment can contain.

One row per overload: ``(library, function, overload id, signature)``. A signature is
``"arg, arg -> result"`` in :func:`dralint.cel.types.parse_type` shorthand; a leading ``.``
marks a member (receiver-style) overload whose first argument is the receiver. Overload ids
follow cel-go / Kubernetes where the cost estimator or the evaluator needs to recognise them.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from . import types as T


@dataclass(frozen=True)
class Overload:
    id: str
    function: str
    member: bool
    args: tuple[T.Type, ...]
    result: T.Type
    library: str

    @property
    def type_params(self) -> frozenset[str]:
        out: set[str] = set()
        stack = list(self.args) + [self.result]
        while stack:
            t = stack.pop()
            if t.kind == "typeparam":
                out.add(t.name)
            stack.extend(t.params)
        return frozenset(out)


_COMPARABLE = ("int", "uint", "double", "bool", "string", "bytes", "duration", "timestamp")
_NUM = ("int", "uint", "double")
_SUFFIX = {"int": "int64", "uint": "uint64", "double": "double", "bool": "bool", "string": "string",
           "bytes": "bytes", "duration": "duration", "timestamp": "timestamp"}


def _rows() -> list[tuple[str, str, str, str]]:
    r: list[tuple[str, str, str, str]] = []
    add = r.append
    # --- standard library -----------------------------------------------------------------
    for t in ("int", "uint", "double", "string", "bytes"):
        add(("std", "_+_", f"add_{_SUFFIX[t]}", f"{t}, {t} -> {t}"))
    add(("std", "_+_", "add_list", "list(A), list(A) -> list(A)"))
    add(("std", "_+_", "add_timestamp_duration", "timestamp, duration -> timestamp"))
    add(("std", "_+_", "add_duration_timestamp", "duration, timestamp -> timestamp"))
    add(("std", "_+_", "add_duration_duration", "duration, duration -> duration"))
    for t in _NUM:
        add(("std", "_-_", f"subtract_{_SUFFIX[t]}", f"{t}, {t} -> {t}"))
        add(("std", "_*_", f"multiply_{_SUFFIX[t]}", f"{t}, {t} -> {t}"))
        add(("std", "_/_", f"divide_{_SUFFIX[t]}", f"{t}, {t} -> {t}"))
    add(("std", "_-_", "subtract_timestamp_timestamp", "timestamp, timestamp -> duration"))
    add(("std", "_-_", "subtract_timestamp_duration", "timestamp, duration -> timestamp"))
    add(("std", "_-_", "subtract_duration_duration", "duration, duration -> duration"))
    add(("std", "_%_", "modulo_int64", "int, int -> int"))
    add(("std", "_%_", "modulo_uint64", "uint, uint -> uint"))
    add(("std", "-_", "negate_int64", "int -> int"))
    add(("std", "-_", "negate_double", "double -> double"))
    add(("std", "!_", "logical_not", "bool -> bool"))
    add(("std", "_&&_", "logical_and", "bool, bool -> bool"))
    add(("std", "_||_", "logical_or", "bool, bool -> bool"))
    add(("std", "@not_strictly_false", "not_strictly_false", "bool -> bool"))
    add(("std", "_?_:_", "conditional", "bool, A, A -> A"))
    add(("std", "_==_", "equals", "A, A -> bool"))
    add(("std", "_!=_", "not_equals", "A, A -> bool"))
    for op, name in (("_<_", "less"), ("_<=_", "less_equals"), ("_>_", "greater"), ("_>=_", "greater_equals")):
        for t in _COMPARABLE:
            add(("std", op, f"{name}_{_SUFFIX[t]}", f"{t}, {t} -> bool"))
        for a in _NUM:
            for b in _NUM:
                if a != b:
                    add(("cross_numeric", op, f"{name}_{_SUFFIX[a]}_{_SUFFIX[b]}", f"{a}, {b} -> bool"))
    add(("std", "@in", "in_list", "A, list(A) -> bool"))
    add(("std", "@in", "in_map", "A, map(A, B) -> bool"))
    add(("std", "_[_]", "index_list", "list(A), int -> A"))
    add(("std", "_[_]", "index_map", "map(A, B), A -> B"))
    for t, arg in (("string", "string"), ("bytes", "bytes"), ("list", "list(A)"), ("map", "map(A, B)")):
        add(("std", "size", f"size_{t}", f"{arg} -> int"))
        add(("std", "size", f"{t}_size", f".{arg} -> int"))
    add(("std", "contains", "contains_string", ".string, string -> bool"))
    add(("std", "startsWith", "starts_with_string", ".string, string -> bool"))
    add(("std", "endsWith", "ends_with_string", ".string, string -> bool"))
    add(("std", "matches", "matches", "string, string -> bool"))
    add(("std", "matches", "matches_string", ".string, string -> bool"))
    for src in ("int", "uint", "double", "string", "timestamp"):
        add(("std", "int", f"{_SUFFIX[src]}_to_int64" if src != "int" else "int64_to_int64", f"{src} -> int"))
    for src in ("int", "uint", "double", "string"):
        add(("std", "uint", f"{_SUFFIX[src]}_to_uint64", f"{src} -> uint"))
        add(("std", "double", f"{_SUFFIX[src]}_to_double", f"{src} -> double"))
    for src in ("int", "uint", "double", "string", "bytes", "bool", "timestamp", "duration"):
        add(("std", "string", f"{_SUFFIX[src]}_to_string", f"{src} -> string"))
    add(("std", "bytes", "bytes_to_bytes", "bytes -> bytes"))
    add(("std", "bytes", "string_to_bytes", "string -> bytes"))
    add(("std", "bool", "bool_to_bool", "bool -> bool"))
    add(("std", "bool", "string_to_bool", "string -> bool"))
    add(("std", "duration", "duration_to_duration", "duration -> duration"))
    add(("std", "duration", "string_to_duration", "string -> duration"))
    add(("std", "timestamp", "timestamp_to_timestamp", "timestamp -> timestamp"))
    add(("std", "timestamp", "string_to_timestamp", "string -> timestamp"))
    add(("std", "timestamp", "int64_to_timestamp", "int -> timestamp"))
    add(("std", "dyn", "to_dyn", "A -> dyn"))
    add(("std", "type", "type", "A -> type(A)"))
    for getter in ("getFullYear", "getMonth", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear",
                   "getHours", "getMinutes", "getSeconds", "getMilliseconds"):
        add(("std", getter, f"timestamp_to_{getter}", ".timestamp -> int"))
        add(("std", getter, f"timestamp_to_{getter}_with_tz", ".timestamp, string -> int"))
    for getter in ("getHours", "getMinutes", "getSeconds", "getMilliseconds"):
        add(("std", getter, f"duration_to_{getter}", ".duration -> int"))
    # --- optional types --------------------------------------------------------------------
    add(("optional", "optional.of", "optional_of", "A -> opt(A)"))
    add(("optional", "optional.ofNonZeroValue", "optional_ofNonZeroValue", "A -> opt(A)"))
    add(("optional", "optional.none", "optional_none", " -> opt(A)"))
    add(("optional", "hasValue", "optional_hasValue", ".opt(A) -> bool"))
    add(("optional", "value", "optional_value", ".opt(A) -> A"))
    add(("optional", "orValue", "optional_orValue_value", ".opt(A), A -> A"))
    add(("optional", "or", "optional_or_optional", ".opt(A), opt(A) -> opt(A)"))
    add(("optional", "_[?_]", "map_optindex_optional_value", "map(K, V), K -> opt(V)"))
    add(("optional", "_[?_]", "optional_map_optindex_optional_value", "opt(map(K, V)), K -> opt(V)"))
    add(("optional", "_[?_]", "list_optindex_optional_int", "list(V), int -> opt(V)"))
    add(("optional", "_[?_]", "optional_list_optindex_optional_int", "opt(list(V)), int -> opt(V)"))
    add(("optional", "_[_]", "optional_map_index_value", "opt(map(K, V)), K -> opt(V)"))
    add(("optional", "_[_]", "optional_list_index_int", "opt(list(V)), int -> opt(V)"))
    add(("optional", "optional.unwrap", "optional_unwrap", "list(opt(A)) -> list(A)"))
    add(("optional", "unwrapOpt", "optional_unwrapOpt", ".list(opt(A)) -> list(A)"))
    add(("optional", "first", "list_first", ".list(A) -> opt(A)"))
    add(("optional", "last", "list_last", ".list(A) -> opt(A)"))
    # --- Kubernetes quantity ---------------------------------------------------------------
    add(("quantity", "quantity", "string_to_quantity", "string -> Quantity"))
    add(("quantity", "isQuantity", "is_quantity_string", "string -> bool"))
    add(("quantity", "sign", "quantity_sign", "Quantity -> int"))
    add(("quantity", "isGreaterThan", "quantity_is_greater_than", ".Quantity, Quantity -> bool"))
    add(("quantity", "isLessThan", "quantity_is_less_than", ".Quantity, Quantity -> bool"))
    add(("quantity", "compareTo", "quantity_compare_to", ".Quantity, Quantity -> int"))
    add(("quantity", "add", "quantity_add", ".Quantity, Quantity -> Quantity"))
    add(("quantity", "add", "quantity_add_int", ".Quantity, int -> Quantity"))
    add(("quantity", "sub", "quantity_sub", ".Quantity, Quantity -> Quantity"))
    add(("quantity", "sub", "quantity_sub_int", ".Quantity, int -> Quantity"))
    add(("quantity", "asInteger", "quantity_get_integer", ".Quantity -> int"))
    add(("quantity", "isInteger", "quantity_is_integer", ".Quantity -> bool"))
    add(("quantity", "asApproximateFloat", "quantity_get_float", ".Quantity -> double"))
    # --- Kubernetes semver -----------------------------------------------------------------
    add(("semver", "semver", "string_to_semver", "string -> Semver"))
    add(("semver", "isSemver", "is_semver_string", "string -> bool"))
    add(("semver_normalize", "semver", "string_bool_to_semver", "string, bool -> Semver"))
    add(("semver_normalize", "isSemver", "is_semver_string_bool", "string, bool -> bool"))
    add(("semver", "isGreaterThan", "semver_is_greater_than", ".Semver, Semver -> bool"))
    add(("semver", "isLessThan", "semver_is_less_than", ".Semver, Semver -> bool"))
    add(("semver", "compareTo", "semver_compare_to", ".Semver, Semver -> int"))
    for part in ("major", "minor", "patch"):
        add(("semver", part, f"semver_{part}", ".Semver -> int"))
    # --- Kubernetes url / regex / lists ----------------------------------------------------
    add(("url", "url", "string_to_url", "string -> URL"))
    add(("url", "isURL", "is_url_string", "string -> bool"))
    for getter in ("getScheme", "getHost", "getHostname", "getPort", "getEscapedPath"):
        add(("url", getter, f"url_{getter}", ".URL -> string"))
    add(("url", "getQuery", "url_getQuery", ".URL -> map(string, list(string))"))
    add(("regex", "find", "string_find_string", ".string, string -> string"))
    add(("regex", "findAll", "string_find_all_string", ".string, string -> list(string)"))
    add(("regex", "findAll", "string_find_all_string_int", ".string, string, int -> list(string)"))
    for t in _COMPARABLE:
        add(("k8s_lists", "isSorted", f"list_{t}_is_sorted", f".list({t}) -> bool"))
        add(("k8s_lists", "min", f"list_{t}_min", f".list({t}) -> {t}"))
        add(("k8s_lists", "max", f"list_{t}_max", f".list({t}) -> {t}"))
    for t in ("int", "uint", "double", "duration"):
        add(("k8s_lists", "sum", f"list_{t}_sum", f".list({t}) -> {t}"))
    add(("k8s_lists", "indexOf", "list_a_index_of_int", ".list(A), A -> int"))
    add(("k8s_lists", "lastIndexOf", "list_a_last_index_of_int", ".list(A), A -> int"))
    add(("k8s_lists_includes", "includes", "list_includes", ".dyn, dyn -> bool"))
    add(("dra_includes", "includes", "dra_includes_dyn_dyn", ".dyn, dyn -> bool"))
    # --- cel-go extension: strings (v2) -----------------------------------------------------
    add(("strings", "charAt", "string_char_at_int", ".string, int -> string"))
    add(("strings", "indexOf", "string_index_of_string", ".string, string -> int"))
    add(("strings", "indexOf", "string_index_of_string_int", ".string, string, int -> int"))
    add(("strings", "lastIndexOf", "string_last_index_of_string", ".string, string -> int"))
    add(("strings", "lastIndexOf", "string_last_index_of_string_int", ".string, string, int -> int"))
    add(("strings", "lowerAscii", "string_lower_ascii", ".string -> string"))
    add(("strings", "upperAscii", "string_upper_ascii", ".string -> string"))
    add(("strings", "replace", "string_replace_string_string", ".string, string, string -> string"))
    add(("strings", "replace", "string_replace_string_string_int", ".string, string, string, int -> string"))
    add(("strings", "split", "string_split_string", ".string, string -> list(string)"))
    add(("strings", "split", "string_split_string_int", ".string, string, int -> list(string)"))
    add(("strings", "substring", "string_substring_int", ".string, int -> string"))
    add(("strings", "substring", "string_substring_int_int", ".string, int, int -> string"))
    add(("strings", "trim", "string_trim", ".string -> string"))
    add(("strings", "join", "list_join", ".list(string) -> string"))
    add(("strings", "join", "list_join_string", ".list(string), string -> string"))
    add(("strings", "format", "string_format", ".string, list(dyn) -> string"))
    add(("strings", "strings.quote", "strings_quote", "string -> string"))
    # --- cel-go extension: sets, lists (v3), two-variable comprehensions -------------------
    add(("sets", "sets.contains", "list_sets_contains_list", "list(A), list(A) -> bool"))
    add(("sets", "sets.equivalent", "list_sets_equivalent_list", "list(A), list(A) -> bool"))
    add(("sets", "sets.intersects", "list_sets_intersects_list", "list(A), list(A) -> bool"))
    add(("ext_lists", "lists.range", "lists_range", "int -> list(int)"))
    add(("ext_lists", "slice", "list_slice", ".list(A), int, int -> list(A)"))
    add(("ext_lists", "flatten", "list_flatten", ".list(list(A)) -> list(A)"))
    add(("ext_lists", "flatten", "list_flatten_int", ".list(dyn), int -> list(dyn)"))
    add(("ext_lists", "reverse", "list_reverse", ".list(A) -> list(A)"))
    add(("ext_lists", "distinct", "list_distinct", ".list(A) -> list(A)"))
    for t in _COMPARABLE:
        add(("ext_lists", "sort", f"list_{t}_sort", f".list({t}) -> list({t})"))
        # sortBy's key list: one overload per comparable key type, as cel-go declares them
        add(("ext_lists", "@sortByAssociatedKeys", f"list_{t}_sortByAssociatedKeys", f".list(A), list({t}) -> list(A)"))
    add(("two_var", "cel.@mapInsert", "@mapInsert_map_key_value", "map(K, V), K, V -> map(K, V)"))
    add(("two_var", "cel.@mapInsert", "@mapInsert_map_map", "map(K, V), map(K, V) -> map(K, V)"))
    # --- Kubernetes ip / cidr / format -------------------------------------------------------
    add(("ip", "ip", "string_to_ip", "string -> IP"))
    add(("ip", "isIP", "is_ip", "string -> bool"))
    add(("ip", "ip.isCanonical", "ip_is_canonical", "string -> bool"))
    add(("ip", "family", "ip_family", ".IP -> int"))
    for pred in ("isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast"):
        add(("ip", pred, f"ip_{pred}", ".IP -> bool"))
    add(("ip", "string", "ip_to_string", "IP -> string"))
    add(("cidr", "cidr", "string_to_cidr", "string -> CIDR"))
    add(("cidr", "isCIDR", "is_cidr", "string -> bool"))
    add(("cidr", "containsIP", "cidr_contains_ip_ip", ".CIDR, IP -> bool"))
    add(("cidr", "containsIP", "cidr_contains_ip_string", ".CIDR, string -> bool"))
    add(("cidr", "containsCIDR", "cidr_contains_cidr", ".CIDR, CIDR -> bool"))
    add(("cidr", "containsCIDR", "cidr_contains_cidr_string", ".CIDR, string -> bool"))
    add(("cidr", "ip", "cidr_ip", ".CIDR -> IP"))
    add(("cidr", "masked", "cidr_masked", ".CIDR -> CIDR"))
    add(("cidr", "prefixLength", "cidr_prefix_length", ".CIDR -> int"))
    add(("cidr", "string", "cidr_to_string", "CIDR -> string"))
    add(("format", "format.named", "format_named", "string -> opt(NamedFormat)"))
    for name in FORMAT_NAMES:
        add(("format", f"format.{name}", f"format_{name}", " -> NamedFormat"))
    add(("format", "validate", "format_validate", ".NamedFormat, string -> opt(list(string))"))
    return r


FORMAT_NAMES = ("dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName", "dns1123LabelPrefix",
                "dns1123SubdomainPrefix", "dns1035LabelPrefix", "labelValue", "uri", "uuid", "byte", "date",
                "datetime")


def _parse(row: tuple[str, str, str, str]) -> Overload:
    lib, fn, oid, sig = row
    args_s, result_s = sig.split("->")
    args_s = args_s.strip()
    member = args_s.startswith(".")
    args_s = args_s.lstrip(".")
    args = tuple(T.parse_type(a) for a in T.split_args(args_s)) if args_s else ()
    return Overload(oid, fn, member, args, T.parse_type(result_s), lib)


ALL_OVERLOADS: tuple[Overload, ...] = tuple(_parse(r) for r in _rows())
BY_ID: dict[str, Overload] = {o.id: o for o in ALL_OVERLOADS}


@lru_cache(maxsize=64)
def functions(libraries: frozenset[str]) -> dict[str, tuple[Overload, ...]]:
    """Function name -> its overloads available with ``libraries``."""
    out: dict[str, list[Overload]] = {}
    for o in ALL_OVERLOADS:
        if o.library in libraries:
            out.setdefault(o.function, []).append(o)
    return {k: tuple(v) for k, v in out.items()}
