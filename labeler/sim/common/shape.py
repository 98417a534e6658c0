"""What one pod needs and tolerates, as every simulator reads it from a pod template.

Kueue, Volcano and kube-scheduler all start from the same pod spec: requests (in Kueue's
units, ``labeler.sim.common.cluster.pod_requests``), tolerations, nodeSelector and required
node affinity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labeler.base.errors import InputError
from labeler.core.quantity import PODS
from labeler.sim.common.affinity import NodeAffinity, parse_node_affinity
from labeler.sim.common.cluster import Toleration, pod_requests
from labeler.sim.common.fields import as_map


@dataclass(frozen=True)
class PodShape:
    """What one pod needs and tolerates: requests in Kueue units, tolerations, nodeSelector
    and required node affinity."""

    requests: Mapping[str, int]
    tolerations: tuple[Toleration, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: NodeAffinity | None = None

    def with_pod_slot(self) -> dict[str, int]:
        """The requests plus ``pods: 1`` (kueue adds ``OnePodRequest`` to every pod)."""
        out = dict(self.requests)
        out[PODS] = out.get(PODS, 0) + 1
        return out


def toleration_from_dict(raw: Any, where: str) -> Toleration:
    t = as_map(raw)
    op = t.get("operator") or "Equal"
    if op not in ("Equal", "Exists"):
        raise InputError(f"{where}: toleration operator {op!r} is not Equal or Exists")
    return Toleration(
        key=str(t.get("key") or ""),
        operator=op,
        value=str(t.get("value") or ""),
        effect=str(t.get("effect") or ""),
    )


def shape_of(template: Any, where: str, *, extra: Sequence[Toleration] = ()) -> PodShape:
    """A pod template's requests, tolerations, nodeSelector and required node affinity."""
    spec = as_map(as_map(template).get("spec"))
    tolerations = tuple(
        toleration_from_dict(t, f"{where}: tolerations[{i}]")
        for i, t in enumerate(spec.get("tolerations") or [])
    )
    selector = {str(k): str(v) for k, v in as_map(spec.get("nodeSelector")).items()}
    return PodShape(
        requests=pod_requests({"spec": spec}, where),
        tolerations=tolerations + tuple(extra),
        node_selector=selector,
        affinity=parse_node_affinity(spec.get("affinity"), where),
    )
