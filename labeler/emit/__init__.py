"""Scheduler configuration made from a profile and the nodes' positions (``generate``).

Each output kind has an emitter, declared by its module: ``kueue`` (the Kueue Topology and
ResourceFlavor), ``volcano`` (the scheduler's init-params and the controller's label
discovery), ``hypernodes`` (static Volcano HyperNodes) and ``slurm`` (``topology.conf``
and ``topology.yaml``). An emitter owns its options: a frozen dataclass whose defaults are
the only defaults (``generate``'s flags and their ``--help`` read them), a builder of its
outputs from a ``Target`` and those options, and what would make its consumer unable to
use them. ``bundle`` is the registry and builds the kinds asked for; ``kinds`` names them
without loading any builder (the command line needs only the names). A new output kind is
one more module of that shape, added to ``bundle.EMITTERS``.

- ``configmap``: ``resource-level-config`` merged into a scheduler ConfigMap; ``yamlio``
  the YAML writer; all of the above pure.
- ``sync``: puts the objects into the cluster (ownership, prune).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from labeler.core.model import NodePosition, Topology
from labeler.emit.kinds import Kind
from labeler.emit.yamlio import dump


@dataclass(frozen=True)
class Output:
    filename: str
    title: str  # one line saying what it is and where it goes
    docs: tuple[dict[str, Any], ...]
    applicable: bool  # a Kubernetes object the API accepts as is (vs. a config snippet)
    raw: str | None = None  # a file in its own format (Slurm), written as is
    folder: str | None = None  # its folder under --output-dir, when not the default

    def text(self) -> str:
        if self.raw is not None:
            return self.raw
        return "".join(
            "---\n" + (f"# {self.title}\n" if i == 0 else "") + dump(d)
            for i, d in enumerate(self.docs)
        )


@dataclass(frozen=True)
class Target:
    """What every emitter reads: the profile's topology and name, and the nodes' positions
    (None when no source of positions was given) with those of the profile's other trees."""

    topology: Topology
    profile_name: str
    positions: Sequence[NodePosition] | None = None
    other_trees: Mapping[str, Sequence[NodePosition]] = field(default_factory=dict)


Opts = TypeVar("Opts")


def _always_usable(target: Target, options: Any) -> list[str]:
    return []


@dataclass(frozen=True)
class Emitter(Generic[Opts]):
    """One output kind. ``defaults``: its options when nothing sets them. ``build``: its
    outputs (none when it needs positions and there are none). ``unusable``: why its
    consumer could not use them ([] when it could)."""

    kind: Kind
    defaults: Opts
    build: Callable[[Target, Opts], list[Output]]
    unusable: Callable[[Target, Opts], list[str]] = _always_usable
