"""Every output of ``generate`` from one set of options: pure, so it is tested without I/O.

One :class:`Output` per kind, each named after the file it is written to with
``--output-dir``; ``-o -`` concatenates them into one YAML stream.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labeler.base.errors import UsageError
from labeler.core.check import shared_across_trees
from labeler.core.labels import dns_name
from labeler.core.model import NodePosition, Topology
from labeler.emit import hypernodes, kueue, volcano
from labeler.emit.kinds import ALL_KINDS as ALL_KINDS
from labeler.emit.kinds import DISCOVERY as DISCOVERY
from labeler.emit.kinds import HYPERNODES as HYPERNODES
from labeler.emit.kinds import KINDS as KINDS
from labeler.emit.kinds import KUEUE as KUEUE
from labeler.emit.kinds import SLURM as SLURM
from labeler.emit.kinds import VOLCANO as VOLCANO
from labeler.emit.yamlio import dump

SLURM_DIR = "slurm"  # under --output-dir: files for the Slurm controller, not for kubectl
HYPERNODES_FILE = "volcano-hypernodes.yaml"
DISCOVERY_FILE = "volcano-hypernode-discovery.yaml"
HYPERNODE_FILES = (
    HYPERNODES_FILE,
    DISCOVERY_FILE,
)  # outputs that make the scheduler see HyperNodes


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
class GenerateOptions:
    topology: Topology
    profile_name: str
    kinds: tuple[str, ...] = KINDS
    topology_name: str | None = None  # default: the profile name
    flavor_name: str | None = None  # default: the Kueue Topology name
    flavor_node_labels: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[kueue.Toleration, ...] = ()
    reserved_node: int | None = None
    hypernode: hypernodes.HyperNodeOptions = field(default_factory=hypernodes.HyperNodeOptions)
    discovery_name: str | None = None
    discovery_interval: str = "1h"
    slurm_topology_name: str | None = None  # default: the profile name

    @property
    def kueue_topology_name(self) -> str:
        """``--topology-name``, else the profile name made DNS-safe (``lab_fabric`` →
        ``lab-fabric``): a profile name is free text, an object name is not."""
        return self.topology_name or dns_name(self.profile_name)


def parse_kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in ALL_KINDS]
    if unknown or not kinds:
        raise UsageError(f"--emit {text!r}: choose from {', '.join(ALL_KINDS)} (comma-separated)")
    return kinds


def unusable(
    opts: GenerateOptions,
    positions: Sequence[NodePosition] | None,
    other_trees: Mapping[str, Sequence[NodePosition]] | None = None,
) -> dict[str, list[str]]:
    """Kinds asked for whose consumer could not use them, with the reasons."""
    out: dict[str, list[str]] = {}
    topo = opts.topology
    if VOLCANO in opts.kinds:
        why = volcano.ascend_tree_problem(topo)
        if why:
            out[VOLCANO] = [why]
    if DISCOVERY in opts.kinds:
        reasons = []
        why = volcano.discovery_problem(opts.hypernode.volcano_version)
        if why:
            reasons.append(why)
        if positions is not None and other_trees:
            shared = shared_across_trees(topo, positions, other_trees, max_nodes=3)
            if shared:
                reasons.append(
                    f"label discovery would merge trees ({len(shared)} level value(s) are "
                    f"used by several trees, e.g. {shared[0]})"
                )
        if reasons:
            out[DISCOVERY] = reasons
    return out


def build(opts: GenerateOptions, positions: Sequence[NodePosition] | None) -> list[Output]:
    """The outputs asked for; HyperNodes and Slurm files only when positions are known."""
    out: list[Output] = []
    if KUEUE in opts.kinds:
        out += _kueue_outputs(opts)
    if VOLCANO in opts.kinds:
        out.append(
            Output(
                "volcano-scheduler-init-params.yaml",
                "Volcano scheduler: merge into volcano-scheduler.conf (or use --merge-into)",
                (volcano.init_params_snippet(opts.topology, opts.reserved_node),),
                applicable=False,
            )
        )
    if HYPERNODES in opts.kinds and positions is not None:
        docs = hypernodes.build_hypernodes(opts.topology, positions, opts.hypernode)
        if docs:
            out.append(
                Output(
                    HYPERNODES_FILE,
                    f"Volcano HyperNodes ({len(docs)}): kubectl apply -f this file",
                    tuple(docs),
                    applicable=True,
                )
            )
    if DISCOVERY in opts.kinds:
        name = opts.discovery_name or volcano.default_discovery_name(
            opts.topology, opts.profile_name
        )
        out.append(
            Output(
                DISCOVERY_FILE,
                "Volcano controller: merge into volcano-controller.conf "
                "(label discovery; an alternative to static HyperNodes)",
                (volcano.discovery_config(opts.topology, name, opts.discovery_interval),),
                applicable=False,
            )
        )
    if SLURM in opts.kinds and positions is not None:
        out += _slurm_outputs(opts, positions)
    return out


def _kueue_outputs(opts: GenerateOptions) -> list[Output]:
    """The Topology, and its ResourceFlavor when nodeLabels say which nodes it covers."""
    name = opts.kueue_topology_name
    out = [
        Output(
            "kueue-topology.yaml",
            f"Kueue Topology {name}: kubectl apply -f this file",
            (kueue.topology_object(opts.topology, name),),
            applicable=True,
        )
    ]
    if opts.flavor_node_labels:
        flavor = opts.flavor_name or name
        out.append(
            Output(
                "kueue-resourceflavor.yaml",
                f"Kueue ResourceFlavor {flavor} (topologyName {name}): kubectl apply -f",
                (kueue.resource_flavor(flavor, name, opts.flavor_node_labels, opts.tolerations),),
                applicable=True,
            )
        )
    return out


def _slurm_outputs(opts: GenerateOptions, positions: Sequence[NodePosition]) -> list[Output]:
    """topology.conf and topology.yaml, for the Slurm controller's folder."""
    # Here: the hostlist library and Slinky's model (with the label planner under it) cost
    # start-up for every other output.
    from labeler.core.slinky import topology_names
    from labeler.emit import slurm

    names = topology_names(opts.topology, opts.slurm_topology_name or opts.profile_name)
    files = slurm.build(opts.topology, positions, names)
    return [
        Output(
            "topology.conf",
            "Slurm topology.conf (TopologyPlugin=topology/tree): next to slurm.conf",
            (),
            applicable=False,
            raw=files.conf,
            folder=SLURM_DIR,
        ),
        Output(
            "topology.yaml",
            f"Slurm topology.yaml (25.05+; topologies {names.tree}"
            + (f", {names.block}" if names.block else "")
            + "): next to slurm.conf, instead of topology.conf",
            (),
            applicable=False,
            raw=files.yaml,
            folder=SLURM_DIR,
        ),
    ]
