"""The generated policies held to what the API server accepts and will run: every expression
compiled and type-checked by dralint's CEL (the admission variables declared as the API server
declares them), its output type the one its field needs, and its worst-case cost within the
limits the API server enforces at run time.

The numbers are k8s.io/apiserver's ``pkg/apis/cel/config.go``: ``PerCallLimit`` (one expression's
evaluation), ``RuntimeCELCostBudget`` (everything one policy evaluates for one binding: its
variables, once each, its validations and their messageExpressions) and
``RuntimeCELCostBudgetMatchConditions`` (its matchConditions). The API server compiles admission
expressions with ``object`` and the other variables as ``dyn`` and checks no estimated cost when the
policy is written; it stops an evaluation that runs over these budgets, and ``failurePolicy: Fail``
then refuses the request. So the estimate here, with the sizes the API server's own validation
allows (32 requests per claim, 8 alternatives, 253-character names, ...), bounds every evaluation:
a policy that passes can never be stopped by its budget.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from dralint.cel import ast as A
from dralint.cel import types as T
from dralint.cel.declared import ANY_PREFIX, ANY_SEGMENT, Declarations, DeclaredProgram, Sizes, compile_declared
from dralint.cel.env import CelEnv
from dralint.cel.parser import ParseError, parse
from dralint.kube.limits import limits_for

PER_CALL_LIMIT = 1_000_000
RUNTIME_BUDGET = 10_000_000
MATCH_CONDITIONS_BUDGET = 2_500_000
MESSAGE_MAX_BYTES = 5 * 1024          # MaxEvaluatedMessageExpressionSizeBytes
VARIABLES = "variables"
# Kubernetes' name and label limits (apimachinery validation): what a string of the object can hold.
NAME_MAX = 253
NAMESPACE_MAX = 63
LABEL_VALUE_MAX = 63
LABEL_KEY_MAX = 253 + 1 + 63
INT_DIGITS = 20                        # an int64 written out
FIELD_MAX = 100                        # spec.spec.devices.requests[31].firstAvailable[7].deviceClassName
REQUEST_FIELDS = 16                    # a request's fields (v1 DeviceRequest has 3, a flat one 11)
WORDING_MAX = 200                      # the fixed words of a finding and its rule's id and name
LABELS_MAX = 64                        # not an API limit: the estimate's assumption, see _sizes


class VapLimitError(ValueError):
    """A generated expression the API server would refuse, or whose cost could exceed its budget."""


@dataclass(frozen=True)
class Cost:
    """The estimated worst-case cost of one expression of a policy."""

    field: str       # spec.validations[0].expression
    cost: int
    limit: int


@dataclass(frozen=True)
class PolicyCosts:
    """Every expression's cost and the policy's totals against the API server's budgets."""

    name: str
    expressions: tuple[Cost, ...]
    total: int                 # variables, validations and messageExpressions
    match_total: int           # matchConditions

    @property
    def budget(self) -> int:
        return RUNTIME_BUDGET

    @property
    def match_budget(self) -> int:
        return MATCH_CONDITIONS_BUDGET


def declarations(sizes: Sizes) -> Declarations:
    """The variables of an admission policy's expressions, typed as the API server compiles them."""
    return Declarations((("object", T.DYN), ("oldObject", T.DYN), ("namespaceObject", T.DYN), ("request", T.DYN),
                         ("params", T.DYN), (VARIABLES, T.map_of(T.STRING, T.DYN))), sizes)


def sizes_for(minor: int, longest_literal: int) -> Sizes:
    """The sizes the API server's validation allows for what the generated expressions read.

    ``longest_literal`` bounds the strings the policy writes into ``variables.classes`` (its regexes
    and the lists of patterns its messages quote).
    Namespace labels have no count limit in the API (only the object's size): 64 is assumed; the
    expressions only look labels up by key, which does not iterate them.
    """
    limits = limits_for(minor)
    requests, alternatives = limits.requests_per_claim, limits.subrequests
    # One finding's text: its field path, the class and namespace it names, the policy's text, the wording.
    finding = FIELD_MAX + NAME_MAX + NAMESPACE_MAX + longest_literal + WORDING_MAX
    findings = requests * alternatives * finding
    return Sizes({
        (VARIABLES, "reqs"): requests,
        (VARIABLES, "reqs", ANY_SEGMENT): REQUEST_FIELDS,     # a request: a map of its fields
        # [field path, body] per alternative: the path a string, the body a map of its fields.
        (VARIABLES, "alts"): requests * alternatives,
        (VARIABLES, "alts", ANY_SEGMENT): 2,
        (VARIABLES, "alts", ANY_SEGMENT, ANY_SEGMENT): max(FIELD_MAX, REQUEST_FIELDS),
        (VARIABLES, "devices"): requests,
        (VARIABLES, "devices", ANY_SEGMENT): INT_DIGITS,
        (VARIABLES, "dra950List"): requests * alternatives,
        (VARIABLES, "dra950List", ANY_SEGMENT): finding,
        (VARIABLES, "dra952List"): requests * alternatives,
        (VARIABLES, "dra952List", ANY_SEGMENT): finding,
        (VARIABLES, "dra950"): findings,
        (VARIABLES, "dra951"): finding,
        (VARIABLES, "dra952"): findings,
        (VARIABLES, "flat"): 1,
        (VARIABLES, "adminOk"): 1,
        (VARIABLES, "ns"): NAMESPACE_MAX,
        (VARIABLES, "base"): len("spec.spec.devices.requests"),
        (VARIABLES, "classes"): 2,
        (VARIABLES, "classes", ANY_SEGMENT): longest_literal,
        (ANY_PREFIX, "firstAvailable"): alternatives,
        (ANY_PREFIX, "firstAvailable", ANY_SEGMENT): REQUEST_FIELDS,
        (ANY_PREFIX, "deviceClassName"): NAME_MAX,
        (ANY_PREFIX, "allocationMode"): len("ExactCount"),
        (ANY_PREFIX, "count"): INT_DIGITS,
        (ANY_PREFIX, "adminAccess"): 1,
        ("request", "namespace"): NAMESPACE_MAX,
        ("namespaceObject", "metadata", "labels"): LABELS_MAX,
        ("namespaceObject", "metadata", "labels", ANY_SEGMENT): LABEL_VALUE_MAX,
        ("object", "kind"): NAME_MAX,
        ("object", "apiVersion"): NAME_MAX,
    })


def check_policy(policy: dict[str, Any], minor: int, sizes: Sizes) -> PolicyCosts:
    """Compile every expression of the ValidatingAdmissionPolicy ``policy`` as Kubernetes ``1.<minor>``
    would; raises :class:`VapLimitError` naming the expression that fails or costs too much."""
    name = policy["metadata"]["name"]
    env = CelEnv(kube_minor=minor)
    decls = declarations(sizes)
    spec = policy["spec"]
    costs: list[Cost] = []
    declared: set[str] = set()
    total = match_total = 0
    for i, variable in enumerate(spec.get("variables", [])):
        where = f"spec.variables[{i}].expression"
        program = _compiled(name, where, variable["expression"], env, decls, None)
        unknown = variables_read(variable["expression"]) - declared
        if unknown:
            raise VapLimitError(f"ValidatingAdmissionPolicy {name}: {where} reads variables declared after it or "
                                f"not at all: {', '.join(sorted(unknown))}")
        declared.add(variable["name"])
        total += _charged(name, where, program, costs)
    for i, condition in enumerate(spec.get("matchConditions", [])):
        where = f"spec.matchConditions[{i}].expression"
        match_total += _charged(name, where, _compiled(name, where, condition["expression"], env, decls, T.BOOL), costs)
    for i, validation in enumerate(spec.get("validations", [])):
        for key, output in (("expression", T.BOOL), ("messageExpression", T.STRING)):
            if key not in validation:
                continue
            where = f"spec.validations[{i}].{key}"
            unknown = variables_read(validation[key]) - declared
            if unknown:
                raise VapLimitError(f"ValidatingAdmissionPolicy {name}: {where} reads undeclared variables: "
                                    f"{', '.join(sorted(unknown))}")
            total += _charged(name, where, _compiled(name, where, validation[key], env, decls, output), costs)
    if total > RUNTIME_BUDGET:
        raise VapLimitError(f"ValidatingAdmissionPolicy {name}: its expressions may cost {total:,} together, over "
                            f"the API server's budget of {RUNTIME_BUDGET:,} per policy evaluation")
    if match_total > MATCH_CONDITIONS_BUDGET:
        raise VapLimitError(f"ValidatingAdmissionPolicy {name}: its matchConditions may cost {match_total:,}, over "
                            f"the API server's budget of {MATCH_CONDITIONS_BUDGET:,}")
    return PolicyCosts(name, tuple(costs), total, match_total)


def _compiled(policy: str, where: str, expression: str, env: CelEnv, decls: Declarations,
              output: T.Type | None) -> DeclaredProgram:
    program = compile_declared(expression, env, decls)
    if not program.ok:
        raise VapLimitError(f"ValidatingAdmissionPolicy {policy}: {where} does not compile: {program.error_text()}")
    if output is not None and program.output != output:
        raise VapLimitError(f"ValidatingAdmissionPolicy {policy}: {where} must evaluate to {T.fmt(output)}, not "
                            f"{T.fmt(program.output or T.DYN)}")
    return program


def _charged(policy: str, where: str, program: DeclaredProgram, costs: list[Cost]) -> int:
    cost = program.cost if program.cost is not None else PER_CALL_LIMIT + 1
    if cost > PER_CALL_LIMIT:
        raise VapLimitError(f"ValidatingAdmissionPolicy {policy}: {where} may cost {cost:,}, over the API server's "
                            f"limit of {PER_CALL_LIMIT:,} per expression")
    costs.append(Cost(where, cost, PER_CALL_LIMIT))
    return cost


def variables_read(expression: str) -> set[str]:
    """The names ``expression`` reads as ``variables.<name>``."""
    try:
        root = parse(expression).root
    except ParseError:
        return set()  # the compile reports it
    return {e.field for e in _walk(root) if isinstance(e, A.Select) and isinstance(e.operand, A.Ident)
            and e.operand.name == VARIABLES}


def _walk(root: A.Expr) -> Iterator[A.Expr]:
    stack = [root]
    while stack:
        e = stack.pop()
        yield e
        stack.extend(A.children(e))
