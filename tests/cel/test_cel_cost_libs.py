"""Library cost estimates against the numbers the Go code's own tests assert, and by hand.

Three sources, each run through our coster exactly as the Go test builds its environment:

* Kubernetes ``staging/src/k8s.io/apiserver/pkg/cel/library/cost_test.go`` (read at
  kubernetes/kubernetes@008b3652; the estimator is ``library/cost.go`` @fbba6b47): every
  estimated ``(min, max)`` of TestListsCost, TestIndexOfCost, TestURLsCost, TestIPCost,
  TestIPIsCanonicalCost, TestCIDRCost, TestStringLibrary, TestQuantityCost, TestNameFormatCost,
  TestSetsCost, TestSemverCost and TestTwoVariableComprehensionCost that the DRA environment
  can express (the authorizer and jsonpatch cases cannot). Go's ``testCostEstimator`` sizes
  every string or bytes node it is asked about as ``0..12``; ``_TestSizes`` does the same.
* google/cel-go ``ext/lists_test.go`` TestListsCosts: the cases without variables (the
  lists extension alone, no size estimator).
* The DRA environment itself: costs derived by hand from the Go formulas, each with the lines
  that give it.
"""
from __future__ import annotations

import pytest

from dralint.cel import CelEnv, compile_selector
from dralint.cel.checker import check
from dralint.cel.cost import ONE, ZERO, AstNode, CallEstimate, Range, estimate_cost
from dralint.cel.cost_libs import KubernetesEstimator, overload_estimators
from dralint.cel.env import EnvModel, model
from dralint.cel.parser import parse

_STORED = model(CelEnv(37, stored=True))
MAXU = 2**64 - 1


class _TestSizes:
    """cost_test.go ``testCostEstimator``: strings and bytes are 0..12, nothing else is known."""

    def estimate_size(self, node: AstNode) -> Range | None:
        return (0, 12) if node.type.kind in ("string", "bytes") else None

    def estimate_call_cost(self, function: str, overload_id: str, target: AstNode | None,
                           args: list[AstNode]) -> CallEstimate | None:
        return None


class _NoSizes(_TestSizes):
    def estimate_size(self, node: AstNode) -> Range | None:
        return None


def _kubernetes_estimate(expr: str) -> Range:
    """``env.EstimateCost`` as cost_test.go's ``testCost`` sets it up (no ext.Lists there)."""
    parsed = parse(expr)
    checked = check(parsed.root, _STORED)
    assert not checked.errors, checked.errors
    libraries = _STORED.libraries - {"ext_lists"}
    return estimate_cost(parsed.root, checked, KubernetesEstimator(_TestSizes()), overload_estimators(libraries),
                         presence_test_cost=ZERO)


_INTS = "[1, 2, 3, 4, 5]"
_UINTS = "[uint(1), uint(2), uint(3), uint(4), uint(5)]"
_DOUBLES = "[1.0, 2.0, 3.0, 4.0, 5.0]"
_BOOLS = "[false, true, false, true, false]"
_STRINGS = "['012345678901', '012345678901', '012345678901', '012345678901', '012345678901']"
_BYTES = ("[bytes('012345678901'), bytes('012345678901'), bytes('012345678901'), bytes('012345678901'), "
          "bytes('012345678901')]")
_DURATIONS = "[duration('1s'), duration('2s'), duration('3s'), duration('4s'), duration('5s')]"
_TIMESTAMPS = ("[timestamp('2011-01-01T00:00:00.000+01:00'), timestamp('2011-01-02T00:00:00.000+01:00'), "
               "timestamp('2011-01-03T00:00:00.000+01:00'), timestamp('2011-01-04T00:00:00.000+01:00'), "
               "timestamp('2011-01-05T00:00:00.000+01:00')]")
_STRING = "'01234567890123456789012345678901234567890123456789'"


def _lists_cases() -> list[tuple[str, Range]]:
    out = [(lst + ".sum()", c) for lst, c in ((_INTS, (15, 15)), (_UINTS, (20, 20)), (_DOUBLES, (15, 15)),
                                              (_DURATIONS, (20, 20)))]
    comparable = ((_INTS, (15, 15)), (_UINTS, (20, 20)), (_DOUBLES, (15, 15)), (_BOOLS, (15, 15)),
                  (_STRINGS, (15, 25)), (_BYTES, (25, 35)), (_DURATIONS, (20, 20)), (_TIMESTAMPS, (20, 20)))
    out += [(lst + op, c) for op in (".isSorted()", ".max()", ".min()") for lst, c in comparable]
    index = ((_INTS, "3", (15, 15)), (_UINTS, "uint(3)", (21, 21)), (_DOUBLES, "3.0", (15, 15)),
             (_BOOLS, "true", (15, 15)), (_STRINGS, "'x'", (15, 25)), (_BYTES, "bytes('x')", (26, 36)),
             (_DURATIONS, "duration('3s')", (21, 21)),
             (_TIMESTAMPS, "timestamp('2011-01-03T00:00:00.000+01:00')", (21, 21)), (_STRING, "'123'", (5, 5)))
    out += [(f"{lst}.{op}({p})", c) for op in ("indexOf", "lastIndexOf") for lst, p, c in index]
    return out


def _network_cases() -> list[tuple[str, Range]]:
    url = "url('https:://kubernetes.io/')"
    out = [(url + op, (4, 4)) for op in (".getScheme()", ".getHostname()", ".getHost()", ".getPort()",
                                           ".getEscapedPath()", ".getQuery()")]
    out += [(url + " == url('https:://kubernetes.io/')", (7, 9)), (url + " == url('http://x.b')", (5, 5))]
    for ip, base in (("ip('192.168.0.1')", 2), ("ip('2001:db8:3333:4444:5555:6666:7777:8888')", 4)):
        out.append((ip, (base, base)))
        out += [(ip + op, (base + 1, base + 1)) for op in (".family()", ".isUnspecified()", ".isLoopback()",
                                                            ".isLinkLocalMulticast()", ".isLinkLocalUnicast()",
                                                            ".isGlobalUnicast()")]
        out.append((ip + " == ip('192.168.0.1')", (base + 3, base + 3)))
    out += [("ip.isCanonical('192.168.0.1')", (3, 3)),
            ("ip.isCanonical('2001:db8:3333:4444:5555:6666:7777:8888')", (8, 8)),
            ("ip.isCanonical('2001:db8::abcd')", (3, 3))]
    v4, v6 = "cidr('192.168.0.0/16')", "cidr('2001:db8::/32')"
    for c in (v4, v6):
        out.append((c, (2, 2)))
        out += [(c + op, (3, 3)) for op in (".ip()", ".prefixLength()", ".masked()")]
        out.append((c + " == cidr('2001:db8::/32')", (5, 5)))
    for op, lo, hi in ((".containsCIDR(cidr('192.0.0.0/30'))", 5, 9), (".containsCIDR(cidr('192.168.0.0/16'))", 5, 9),
                       (".containsCIDR('192.0.0.0/30')", 5, 9), (".containsCIDR('192.168.0.0/16')", 5, 9),
                       (".containsIP(ip('192.0.0.1'))", 2, 5), (".containsIP(ip('192.169.0.1'))", 3, 6),
                       (".containsIP(ip('192.169.169.250'))", 3, 6), (".containsIP('192.0.0.1')", 2, 5),
                       (".containsIP('192.169.0.1')", 3, 6)):
        out.append((v4 + op, (2 + lo, 2 + hi)))
    for op, lo, hi in ((".containsCIDR(cidr('2001:db8::/126'))", 5, 9), (".containsCIDR(cidr('2001:db8::/32'))", 5, 9),
                       (".containsCIDR('2001:db8::/126')", 5, 9), (".containsCIDR('2001:db8::/32')", 5, 9),
                       (".containsIP(ip('2001:db8:3333:4444:5555:6666:7777:8888'))", 5, 8),
                       (".containsIP(ip('2001:db8::1'))", 3, 6),
                       (".containsIP('2001:db8:3333:4444:5555:6666:7777:8888')", 5, 8),
                       (".containsIP('2001:db8::1')", 3, 6)):
        out.append((v6 + op, (2 + lo, 2 + hi)))
    return out


_STRINGS_LIB = [
    ("'ABCDEFGHIJ abcdefghij'.lowerAscii()", (3, 3)),
    ("'ABCDEFGHIJ abcdefghij'.lowerAscii() == 'abcdefghij ABCDEFGHIJ'.lowerAscii()", (7, 9)),
    ("'ABCDEFGHIJ abcdefghij'.upperAscii()", (3, 3)),
    ("'ABCDEFGHIJ abcdefghij'.upperAscii() == 'abcdefghij ABCDEFGHIJ'.upperAscii()", (7, 9)),
    ("strings.quote('ABCDEFGHIJ abcdefghij')", (3, 3)),
    ("strings.quote('ABCDEFGHIJ abcdefghij') == strings.quote('ABCDEFGHIJ abcdefghij')", (7, 11)),
    ("'abc 123 def 123'.replace('123', '456')", (3, 3)),
    ("'abc 123 def 123'.replace('', 'x')", (3, 3)),
    ("'abc 123 def 123'.replace('123', '')", (3, 3)),
    ("'abc 123 def 123'.replace('123', '456', 1)", (3, 3)),
    ("'abc 123 def 123'.split(' ')", (3, 3)),
    ("'abc 123 def 123'.split(' ', 1)", (3, 3)),
    ("'abc 123 def 123'.substring(5)", (2, 2)),
    ("'abc 123 def 123'.substring(5, 8)", (2, 2)),
    ("'  abc 123 def 123  '.trim()", (2, 2)),
    ("['aa', 'bb', 'cc', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join(' ')", (11, 23)),
    ("['aa', 'bb', 'cc', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join()", (10, 22)),
    ("'abc 123 def 123'.find('123')", (2, 2)),
    ("'abc 123 def 123'.findAll('123')", (2, 2)),
    ("'abc 123 def 123'.findAll('123', 1)", (2, 2)),
]

_QUANTITY_FORMAT_SEMVER = [
    ('quantity("12Mi")', (1, 1)), ('isQuantity("20")', (1, 1)), ('isQuantity("20M")', (1, 1)),
    ('quantity("200M") == quantity("200M")', (3, 3)),
    ('quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")', (3, 6)),
    ('quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M") && '
     'quantity("0.002G") == quantity("2000k")', (3, 9)),
    ('quantity("50M").isLessThan(quantity("50Mi"))', (3, 3)),
    ('quantity("50Mi").isGreaterThan(quantity("50M"))', (3, 3)),
    ('quantity("200M").compareTo(quantity("0.2G")) > 0', (4, 4)),
    ('quantity("50k").add(quantity("20")) == quantity("50.02k")', (5, 5)),
    ('quantity("50k").sub(quantity("20")) == quantity("49.98k")', (5, 5)),
    ('quantity("50k").sub(20) == quantity("49980")', (4, 4)),
    ('quantity("50k").add(20).sub(quantity("100k")).asInteger() > 0', (6, 6)),
    ('quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() > 0', (7, 7)),
    ('quantity("50k").asInteger() > 0', (3, 3)), ('quantity("50").isInteger()', (2, 2)),
    ('quantity("50.703k").asApproximateFloat() > 0.0', (3, 3)),
    ('format.named("dns1123subdomain")', (1, 1)),
    ('format.named("dns1123Subdomain").value().validate("my-name")', (34, 34)),
    ('format.named("dns1123Label").value().validate("my-name")', (34, 34)),
    ('format.named("dns1123Label").value() == format.named("dns1123Label").value()', (5, 11)),
    ('semver("1.0.0")', (1, 1)), ('semver("1234.56789012345.67890123456789")', (4, 4)),
    ('isSemver("1.0.0")', (1, 1)), ('isSemver("1234.56789012345.67890123456789")', (4, 4)),
    ('semver("1.2.3").major()', (2, 2)), ('semver("1.2.3").minor()', (2, 2)), ('semver("1.2.3").patch()', (2, 2)),
    ('semver("1.0.0").isLessThan(semver("1.1.0"))', (3, 3)),
    ('semver("1.1.0").isGreaterThan(semver("1.0.0"))', (3, 3)),
    ('semver("1.0.0").compareTo(semver("1.2.3"))', (3, 3)),
]

_SETS = [
    ("sets.contains([], [])", 21), ("sets.contains([1], [])", 21), ("sets.contains([1], [1])", 22),
    ("sets.contains([1], [1, 1])", 23), ("sets.contains([1, 1], [1])", 23), ("sets.contains([2, 1], [1])", 23),
    ("sets.contains([1, 2, 3, 4], [2, 3])", 29), ("sets.contains([1], [1.0, 1])", 23),
    ("sets.contains([1, 2], [2u, 2.0])", 25), ("sets.contains([1, 2u], [2, 2.0])", 25),
    ("sets.contains([1, 2.0, 3u], [1.0, 2u, 3])", 30), ("sets.contains([[1], [2, 3]], [[2, 3.0]])", 53),
    ("!sets.contains([1], [2])", 23), ("!sets.contains([1], [1, 2])", 24), ('!sets.contains([1], ["1", 1])', 24),
    ("!sets.contains([1], [1.1, 1u])", 24),
    ("sets.equivalent([], [])", 21), ("sets.equivalent([1], [1])", 23), ("sets.equivalent([1], [1, 1])", 25),
    ("sets.equivalent([1, 1], [1])", 25), ("sets.equivalent([1], [1u, 1.0])", 25),
    ("sets.equivalent([1, 2, 3], [3u, 2.0, 1])", 39), ("sets.equivalent([[1.0], [2, 3]], [[1], [2, 3.0]])", 69),
    ("!sets.equivalent([2, 1], [1])", 26), ("!sets.equivalent([1], [1, 2])", 26),
    ("!sets.equivalent([1, 2], [2u, 2, 2.0])", 34), ("!sets.equivalent([1, 2], [1u, 2, 2.3])", 34),
    ("sets.intersects([1], [1])", 22), ("sets.intersects([1], [1, 1])", 23), ("sets.intersects([1, 1], [1])", 23),
    ("sets.intersects([2, 1], [1])", 23), ("sets.intersects([1], [1, 2])", 23), ("sets.intersects([1], [1.0, 2])", 23),
    ("sets.intersects([1, 2], [2u, 2, 2.0])", 27), ("sets.intersects([1, 2], [1u, 2, 2.3])", 27),
    ("sets.intersects([[1], [2, 3]], [[1, 2], [2, 3.0]])", 65), ("!sets.intersects([], [])", 22),
    ("!sets.intersects([1], [])", 22), ("!sets.intersects([1], [2])", 23), ('!sets.intersects([1], ["1", 2])', 24),
    ("!sets.intersects([1], [1.1, 2u])", 24),
]

_TWO_VAR = [
    ("{'a': 1, 'b': 2}.all(k, v, v > 0)", (37, 41)), ("{'a': 1, 'b': 2}.exists(k, v, v > 0)", (39, 43)),
    ("{'a': 1, 'b': 2}.existsOne(k, v, v > 0)", (38, 40)), ("{'a': 1, 'b': 2}.transformMap(k, v, v + 1)", (71, 71)),
    ("{'a': 1, 'b': 2}.transformMap(k, v, v < 5, v + 1)", (67, 75)),
    ("{'a': 1, 'b': 2}.transformMapEntry(k, v, {k: v + 1})", (131, 131)),
    ("{'a': 1, 'b': 2}.transformMapEntry(k, v, v < 5, {k: v + 1})", (67, 135)),
    ("[1, 2].all(i, v, v > 0)", (17, 21)), ("[1, 2].exists(i, v, v > 0)", (19, 23)),
    ("[1, 2].existsOne(i, v, v > 0)", (18, 20)), ("[1, 2].transformList(i, v, v + 1)", (49, 49)),
    ("[1, 2].transformList(i, v, v < 5, v + 1)", (27, 53)),
]

KUBERNETES_COST_TEST = (_lists_cases() + _network_cases() + _STRINGS_LIB + _QUANTITY_FORMAT_SEMVER
                        + [(e, (c, c)) for e, c in _SETS] + _TWO_VAR)


@pytest.mark.parametrize("expr,expected", KUBERNETES_COST_TEST, ids=[e for e, _ in KUBERNETES_COST_TEST])
def test_kubernetes_cost_test_estimates(expr: str, expected: Range) -> None:
    assert _kubernetes_estimate(expr) == expected


# cel-go ext/lists_test.go TestListsCosts, the cases without variables: Lists() alone.
CEL_GO_LISTS = [
    ("lists.range(4) == [0, 1, 2, 3]", 26), ("lists.range(4 / 2) == [0, 1]", MAXU),
    ("[[1, 2], 3].flatten(1) == [1, 2, 3]", 44), ("[[1, 2], 3].flatten(2) == [1, 2, 3]", 46),
    ("[[1, 2], 3].flatten(3) == [1, 2, 3]", 48), ("[[1], 2, 3].flatten() == [1, 2, 3]", 45),
    ("[1, 2, 3].distinct() == [1, 2, 3]", 50), ("[1, 1, 1].distinct() == [1]", 50),
    ("[1, 2, 3].slice(1, 3) == [2, 3]", 34), ("[3, 2, 1].reverse() == [1, 2, 3]", 35),
    ("[2, 3, 1].sort() == [1, 2, 3]", 50), ("[{'x':4}, {'x':3}].sortBy(m, m['x']) == [{'x':3}, {'x':4}]", 211),
]


@pytest.mark.parametrize("expr,expected", CEL_GO_LISTS, ids=[e for e, _ in CEL_GO_LISTS])
def test_cel_go_lists_cost_test_estimates(expr: str, expected: int) -> None:
    lists_only = EnvModel(frozenset({"std", "ext_lists"}), _STORED.device_fields, _STORED.attribute_type)
    parsed = parse(expr)
    checked = check(parsed.root, lists_only)
    assert not checked.errors, checked.errors
    got = estimate_cost(parsed.root, checked, _NoSizes(), overload_estimators(lists_only.libraries),
                        presence_test_cost=ONE)
    assert got == (expected, expected)


STORED = CelEnv(37, stored=True)
A = 'device.attributes["d"]'   # 4: device 1, .attributes 1, index 1, .x on a map 1; its size is 0..64

# By hand in the DRA environment. "k8s" is library/cost.go @fbba6b47 EstimateCallCost,
# "cel-go" is checker/cost.go functionCost, "lists"/"sets" the ext estimators.
BY_HAND = [
    # k8s "url": 64 * 0.1 -> 7, + 4; getHost nominal 1; cel-go Equals: min(unknown, 1) * 0.1 -> 1
    (f'url({A}.u).getHost() == "x"', 13),
    # k8s "cidr": 10 * 0.1 -> 1; "containsIP": (4+4..16+16) * 0.1 -> 1..4, the string overload adds 64 * 0.1 -> 7
    # (the union over both overloads of an `any` argument keeps 11); + argument 4 + target 1
    (f'cidr("10.0.0.0/8").containsIP({A}.ip)', 16),
    # k8s "ip" (string_to_ip): 7 + 4; "isLoopback" nominal 1
    (f"ip({A}.ip).isLoopback()", 12),
    # k8s "ip.isCanonical": 64 * 0.2 -> 13, + 4
    (f"ip.isCanonical({A}.ip)", 17),
    # isURL is not in library/cost.go: cel-go's default, 1 + 4
    (f"isURL({A}.u)", 5),
    # format.dns1123Label() default 1; k8s "validate": ceil(64 * 0.1) = 7 times 128 * 0.25 = 224, + 4; hasValue 1
    (f"format.dns1123Label().validate({A}.name).hasValue()", 230),
    # charAt: default 1 + 4; Equals 1
    (f'{A}.name.charAt(0) == "a"', 6),
    # k8s "lowerAscii": 7 + 4, result size 0..64; cel-go ContainsString: ceil(6.4) * ceil(0.2) = 7
    (f'{A}.name.lowerAscii().contains("ab")', 18),
    # k8s "split": 64 * 0.2 -> 13 + 4; size 1; Equals of ints 1
    (f'{A}.name.split(",", 3).size() == 2', 19),
    # k8s "join" on a `dyn` target: no element node, 63 separators of size 1 -> 0..63, * 0.1 -> 7; + 4, size, > 0
    (f'{A}.names.join(",").size() > 0', 13),
    # k8s "sum" on a `dyn` target: no element node, so the string branch: 64 * 0.1 -> 7, + 4; > 0 is 1
    (f"{A}.names.sum() > 0", 12),
    # lists "lists_range": 3 * 1 + 1 + 10 = 14 and size 3; all(): 3 * (loop 2 + step 3) + result 1
    ("lists.range(3).all(i, i < 5)", 30),
    # lists "list_slice": literal bounds, 2 + 1 + 10 = 13, + 4; size 1; Equals 1
    (f"{A}.names.slice(0, 2).size() == 2", 19),
    # lists "list_reverse": 64 + 11 = 75, + 4; index 1; Equals with an unknown item and 1 -> 1
    (f"{A}.names.reverse()[0] == 1", 81),
    # lists "list_distinct": 64 * 64 * 2 + 11 = 8203, + 4; size 1; Equals 1
    (f"{A}.names.distinct().size() == 1", 8209),
    # sets "list_sets_equivalent_list": 64 * 2 * 2 + 1 = 257, + 4 + list literal 10
    (f"sets.equivalent({A}.names, [1, 2])", 271),
    # sortBy: bind 10 + 4 + keys' map() 908 + target 1 + sort over dyn keys 64 * 64 * 2.1 + 11 = 8613; index 1; Equals 1
    (f"{A}.names.sortBy(x, -x)[0] == 1", 9538),
    # k8s "upperAscii" keeps the size 0..64; cel-go AddString: (64 + 64) * 0.1 -> 13, + 11 + 4; Equals 1
    (f'{A}.s.upperAscii() + {A}.s == "A"', 29),
]


@pytest.mark.parametrize("expr,cost", BY_HAND, ids=[e for e, _ in BY_HAND])
def test_dra_environment_costs_by_hand(expr: str, cost: int) -> None:
    compiled = compile_selector(expr, STORED)
    assert compiled.ok
    assert compiled.cost == cost
