"""What every manifest test needs: render a kustomization offline, pick objects by kind,
validate them against the Kubernetes schema, and evaluate a ValidatingAdmissionPolicy's
CEL the way the API server does (variables in order, then every validation)."""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path
from typing import Any

import celpy
import kubernetes_validate
import pytest
import yaml
from celpy import celtypes

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"


def render(kustomization: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize <dir>` as a list of objects; skips the test without kubectl."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip(
            "kubectl is not installed (Debian package 'kubectl'); "
            f"cannot render {kustomization.relative_to(ROOT)}"
        )
    done = subprocess.run(
        [kubectl, "kustomize", str(kustomization)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """The one object of `kind`; fails when there is none or more than one."""
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def validate_all(docs: list[dict[str, Any]], version: str) -> None:
    """Every object is valid (strictly: no unknown fields) for Kubernetes `version`."""
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)


class Policy:
    """A ValidatingAdmissionPolicy's CEL, compiled once, evaluated on one node update.

    `user` is the username requests come from unless a call names another.
    """

    def __init__(self, doc: dict[str, Any], *, user: str) -> None:
        self.env = celpy.Environment()
        self.user = user
        spec = doc["spec"]
        self.conditions = [self._compile(m["expression"]) for m in spec["matchConditions"]]
        self.variables = [(v["name"], self._compile(v["expression"])) for v in spec["variables"]]
        self.validations = [
            (
                self._compile(v["expression"]),
                v.get("message"),
                self._compile(v["messageExpression"]) if "messageExpression" in v else None,
            )
            for v in spec["validations"]
        ]
        self.rules = spec["matchConstraints"]["resourceRules"]
        self.sub_resource = ""  # "status" to evaluate a request on nodes/status

    def _compile(self, expr: str) -> Any:
        return self.env.program(self.env.compile(expr))

    def _activation(
        self, old: dict[str, Any], new: dict[str, Any], user: str | None, node_name: str | None
    ) -> dict[str, Any]:
        extra = {"authentication.kubernetes.io/node-name": [node_name]} if node_name else {}
        request: dict[str, Any] = {
            "operation": "UPDATE",
            "userInfo": {"username": user or self.user, "extra": extra},
        }
        if self.sub_resource:
            request["subResource"] = self.sub_resource
        return {
            "object": celpy.json_to_cel(new),
            "oldObject": celpy.json_to_cel(old),
            "request": celpy.json_to_cel(request),
        }

    def _evaluate(self, act: dict[str, Any]) -> list[tuple[bool, str | None]]:
        """Variables in order (each sees the ones before), then (passed, message) per
        validation; an evaluation error fails its validation, as in the API server."""
        variables = celtypes.MapType({})
        act["variables"] = variables
        for name, program in self.variables:
            variables[celtypes.StringType(name)] = program.evaluate(act)
        outcomes: list[tuple[bool, str | None]] = []
        for program, message, message_expr in self.validations:
            result = program.evaluate(act)
            if isinstance(result, celpy.CELEvalError) or not bool(result):
                text = str(message_expr.evaluate(act)) if message_expr else message
                outcomes.append((False, text))
            else:
                outcomes.append((True, None))
        return outcomes

    def verdicts(
        self,
        old: dict[str, Any],
        new: dict[str, Any],
        *,
        user: str | None = None,
        node_name: str | None = "n1",
    ) -> list[bool]:
        """Whether each validation passes, evaluated even if matchConditions would not match."""
        act = self._activation(old, new, user, node_name)
        return [passed for passed, _ in self._evaluate(act)]

    def admit(
        self,
        old: dict[str, Any],
        new: dict[str, Any],
        *,
        user: str | None = None,
        node_name: str | None = "n1",
    ) -> list[str]:
        """The messages of failed validations; [] = allowed. Not matched → allowed."""
        act = self._activation(old, new, user, node_name)
        if not all(bool(c.evaluate(act)) for c in self.conditions):
            return []
        return [str(message) for passed, message in self._evaluate(act) if not passed]


# --- the readiness gate's writes, which every agent kustomization's policy must allow -------

GATE = {"key": "topology-labeler.io/not-ready", "effect": "NoSchedule"}
OTHER = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
SPEC_DENIED = (
    "the topology-labeler agent may not change a node's spec, except to remove its own "
    "startup taint"
)
STATUS_DENIED = (
    "on a node's status the topology-labeler agent may change only its TopologyLabeled condition"
)


def tainted(node: dict[str, Any], *taints: dict[str, str], **spec: Any) -> dict[str, Any]:
    """A copy of `node` with these taints and spec fields (its podCIDR unless given)."""
    n = copy.deepcopy(node)
    n["spec"] = {"podCIDR": node["spec"]["podCIDR"], **spec}
    if taints:
        n["spec"]["taints"] = list(taints)
    return n


# (old taints, new taints): agent --remove-taint removes the gate taint and nothing else.
GATE_REMOVALS = [((OTHER, GATE), (OTHER,)), ((GATE,), ())]
# (old taints, new taints, other new spec fields): every other spec write is denied.
OTHER_SPEC_CHANGES = [
    ((OTHER, GATE), (GATE,), {}),  # another taint removed
    ((OTHER, GATE), (), {}),  # the gate and another
    ((), (GATE,), {}),  # the gate added (never: it is only removed)
    ((OTHER,), ({**OTHER, "effect": "NoExecute"},), {}),  # another changed
    (({**GATE, "effect": "NoExecute"},), (), {}),  # gate key, other effect
    ((GATE,), (), {"unschedulable": True}),  # gate gone, but cordoned too
    ((GATE,), (), {"podCIDR": "y"}),
]


def with_status(
    node: dict[str, Any], *conditions: dict[str, str], cpu: str = "64"
) -> dict[str, Any]:
    """A copy of `node` with a status: these conditions and `cpu` as capacity."""
    n = copy.deepcopy(node)
    n["status"] = {"capacity": {"cpu": cpu}, "conditions": list(conditions)}
    return n


READY = {"type": "Ready", "status": "True"}
LABELED = {"type": "TopologyLabeled", "status": "True", "reason": "Labeled"}
# (old conditions, new conditions, new cpu capacity, allowed) on nodes/status: agent
# --set-condition may write its TopologyLabeled condition, never the kubelet's fields.
STATUS_WRITES = [
    ((READY,), (READY, LABELED), "64", True),
    ((READY, LABELED), (READY, {**LABELED, "status": "False"}), "64", True),
    ((READY,), ({**READY, "status": "False"},), "64", False),
    ((READY,), (READY,), "128", False),
    ((READY,), (), "64", False),
]


def status_policy(doc: dict[str, Any], *, user: str) -> Policy:
    """`doc` evaluated on requests to the nodes/status subresource."""
    policy = Policy(doc, user=user)
    policy.sub_resource = "status"
    return policy
