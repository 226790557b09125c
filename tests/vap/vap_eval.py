"""A ValidatingAdmissionPolicy evaluator for the tests, over dralint's CEL runtime.

It follows k8s.io/apiserver's admission/plugin/policy/validating: a binding applies its policy
when the policy's ``matchConstraints`` match the request (resource rules with their operations
and scope, ``excludeResourceRules``, the namespace and object selectors) and the binding's own
``matchResources`` do too; then every ``matchCondition`` must be true (an error follows
``failurePolicy``), with a budget of its own; then the validations run in order, reading
``variables`` lazily (each evaluated once, when first read, its cost charged once), all of them
within one budget per evaluation and each expression within the per-call limit. A failed validation
says its ``messageExpression``'s result, unless that fails, is not a string, is blank, has a line
break or is longer than 5 KiB: then its ``message``, else ``failed expression: <expression>``.

Not modelled, and refused rather than guessed: ``paramKind`` (params objects), ``auditAnnotations``,
the authorizer, and a request in a version the rules do not list (the API server would convert it
under ``matchPolicy: Equivalent``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from dralint.cel.declared import DeclaredProgram, Sizes, compile_declared
from dralint.cel.env import CelEnv
from dralint.cel.errors import CelRuntimeError
from dralint_webhook.vap.limits import (MATCH_CONDITIONS_BUDGET, MESSAGE_MAX_BYTES, PER_CALL_LIMIT, RUNTIME_BUDGET,
                                        declarations, variables_read)


@dataclass(frozen=True)
class Request:
    """One admission request: the object, its resource and the Namespace it is in."""

    obj: Mapping[str, Any]
    group: str
    version: str
    resource: str
    operation: str = "CREATE"
    namespace: str = ""
    namespace_obj: Mapping[str, Any] | None = None
    subresource: str = ""

    def variable(self) -> dict[str, Any]:
        """The ``request`` variable (admission.k8s.io/v1 AdmissionRequest's fields that policies read)."""
        kind = {"group": self.group, "version": self.version, "kind": self.obj.get("kind", "")}
        meta = self.obj.get("metadata") or {}
        return {"kind": kind, "resource": {"group": self.group, "version": self.version, "resource": self.resource},
                "subResource": self.subresource, "requestKind": kind,
                "requestResource": {"group": self.group, "version": self.version, "resource": self.resource},
                "name": meta.get("name", ""), "namespace": self.namespace, "operation": self.operation,
                "userInfo": {"username": "tester"}, "dryRun": False}


@dataclass(frozen=True)
class Decision:
    """A validation that failed (``error`` False) or could not be evaluated (``error`` True)."""

    policy: str
    binding: str
    actions: tuple[str, ...]
    message: str
    error: bool = False


@dataclass
class Costs:
    """The largest actual cost seen per expression (policy, field), to hold against the estimates."""

    seen: dict[tuple[str, str], int] = field(default_factory=dict)

    def note(self, policy: str, where: str, cost: int) -> None:
        key = (policy, where)
        self.seen[key] = max(self.seen.get(key, 0), cost)


class Evaluator:
    """The policies and bindings of one generated output, ready to judge requests."""

    def __init__(self, objects: list[dict[str, Any]], minor: int) -> None:
        self.policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"}
        self.bindings = [o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"]
        for policy in self.policies.values():
            if "paramKind" in policy["spec"] or "auditAnnotations" in policy["spec"]:
                raise NotImplementedError("paramKind and auditAnnotations are not modelled")
        self.env = CelEnv(kube_minor=minor)
        self.decls = declarations(Sizes())  # sizes only matter to the estimate
        self.programs: dict[str, DeclaredProgram] = {}
        self.costs = Costs()

    def program(self, expression: str) -> DeclaredProgram:
        if expression not in self.programs:
            compiled = compile_declared(expression, self.env, self.decls)
            assert compiled.ok, (expression, compiled.error_text())
            self.programs[expression] = compiled
        return self.programs[expression]

    def judge(self, request: Request) -> list[Decision]:
        """Every binding's decisions on ``request``, bindings in order."""
        out: list[Decision] = []
        for binding in self.bindings:
            policy = self.policies[binding["spec"]["policyName"]]
            if not matches(policy["spec"]["matchConstraints"], request):
                continue
            if "matchResources" in binding["spec"] and not matches(binding["spec"]["matchResources"], request):
                continue
            out += self._evaluate(policy, binding, request)
        return out

    def _evaluate(self, policy: dict[str, Any], binding: dict[str, Any], request: Request) -> list[Decision]:
        name, spec = policy["metadata"]["name"], policy["spec"]
        actions = tuple(binding["spec"]["validationActions"])
        fail = spec.get("failurePolicy", "Fail") == "Fail"
        bindings: dict[str, Any] = {"object": request.obj, "oldObject": None, "request": request.variable(),
                                    "namespaceObject": request.namespace_obj, "params": None}

        def failed(message: str) -> list[Decision]:
            return [Decision(name, binding["metadata"]["name"], actions, message, error=True)] if fail else []

        budget = MATCH_CONDITIONS_BUDGET
        for i, condition in enumerate(spec.get("matchConditions", [])):
            try:
                value, cost = self.program(condition["expression"]).evaluate(bindings, min(budget, PER_CALL_LIMIT))
            except CelRuntimeError as exc:
                return failed(f"matchCondition {condition['name']}: {exc}")
            self.costs.note(name, f"spec.matchConditions[{i}].expression", cost)
            budget -= cost
            if value is not True:
                if value is not False:
                    return failed(f"matchCondition {condition['name']}: not a bool")
                return []
        lazy = _Variables(self, name, spec.get("variables", []), bindings)
        budget = RUNTIME_BUDGET
        out: list[Decision] = []
        for i, validation in enumerate(spec["validations"]):
            where = f"spec.validations[{i}]"
            program = self.program(validation["expression"])
            try:
                budget = lazy.read(program.expression, budget)
                value, cost = program.evaluate(lazy.bound, min(budget, PER_CALL_LIMIT))
            except CelRuntimeError as exc:
                out += failed(f"{where}.expression: {exc}")
                continue
            self.costs.note(name, f"{where}.expression", cost)
            budget -= cost
            if value is True:
                continue
            if value is not False:
                out += failed(f"{where}.expression: not a bool")
                continue
            message, budget = self._message(name, where, validation, lazy, budget)
            out.append(Decision(name, binding["metadata"]["name"], actions, message))
        return out

    def _message(self, policy: str, where: str, validation: Mapping[str, Any], lazy: "_Variables",
                 budget: int) -> tuple[str, int]:
        fallback = validation.get("message") or f"failed expression: {validation['expression'].strip()}"
        if "messageExpression" not in validation:
            return fallback, budget
        program = self.program(validation["messageExpression"])
        try:
            budget = lazy.read(program.expression, budget)
            value, cost = program.evaluate(lazy.bound, min(budget, PER_CALL_LIMIT))
        except CelRuntimeError:
            return fallback, budget
        self.costs.note(policy, f"{where}.messageExpression", cost)
        budget -= cost
        if (not isinstance(value, str) or not value.strip() or "\n" in value or "\r" in value
                or len(value.encode("utf-8")) > MESSAGE_MAX_BYTES):
            return fallback, budget
        return value, budget


class _Variables:
    """``variables`` of one evaluation: each evaluated when an expression first reads it."""

    def __init__(self, evaluator: Evaluator, policy: str, variables: list[Mapping[str, str]],
                 bindings: dict[str, Any]) -> None:
        self.evaluator = evaluator
        self.policy = policy
        self.defined = {v["name"]: (i, v["expression"]) for i, v in enumerate(variables)}
        self.values: dict[str, Any] = {}
        self.bound = dict(bindings, variables=self.values)

    def read(self, expression: str, budget: int) -> int:
        """Evaluate the variables ``expression`` reads (and theirs) not yet evaluated; the budget left."""
        for name in sorted(variables_read(expression), key=lambda n: self.defined[n][0]):
            if name in self.values:
                continue
            index, text = self.defined[name]
            budget = self.read(text, budget)
            value, cost = self.evaluator.program(text).evaluate(self.bound, min(budget, PER_CALL_LIMIT))
            self.evaluator.costs.note(self.policy, f"spec.variables[{index}].expression", cost)
            budget -= cost
            self.values[name] = value
        return budget


def matches(constraints: Mapping[str, Any], request: Request) -> bool:
    """Whether ``request`` is in the scope of ``constraints`` (a MatchResources)."""
    rules = constraints.get("resourceRules", [])
    if not any(_rule_matches(rule, request) for rule in rules):
        versions = {v for rule in rules for v in rule.get("apiVersions", [])}
        if request.version not in versions and constraints.get("matchPolicy", "Equivalent") == "Equivalent" and any(
                _rule_matches({**rule, "apiVersions": ["*"]}, request) for rule in rules):
            raise NotImplementedError(f"{request.group}/{request.version} would be converted (matchPolicy Equivalent)")
        return False
    if any(_rule_matches(rule, request) for rule in constraints.get("excludeResourceRules", [])):
        return False
    if request.namespace:
        labels = ((request.namespace_obj or {}).get("metadata") or {}).get("labels") or {}
        if not selects(constraints.get("namespaceSelector", {}), labels):
            return False
    object_labels = (request.obj.get("metadata") or {}).get("labels") or {}
    return selects(constraints.get("objectSelector", {}), object_labels)


def _rule_matches(rule: Mapping[str, Any], request: Request) -> bool:
    def has(key: str, value: str) -> bool:
        values = rule.get(key, [])
        return "*" in values or value in values

    resource = request.resource + (f"/{request.subresource}" if request.subresource else "")
    scope = rule.get("scope", "*")
    in_scope = scope == "*" or (scope == "Namespaced") == bool(request.namespace)
    return (has("apiGroups", request.group) and has("apiVersions", request.version)
            and has("operations", request.operation) and has("resources", resource) and in_scope)


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector against ``labels`` (the empty selector selects everything)."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True
