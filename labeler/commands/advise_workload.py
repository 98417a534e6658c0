"""``advise -f FILE`` / ``advise --workload NS/NAME``: why is this Workload pending?

Reads the Workload (or the Job, JobSet or LeaderWorkerSet Kueue makes it from), the nodes
and pods, the admitted Workloads and the Kueue Topology and ResourceFlavor, then places
every PodSet as Kueue would (``labeler.tas.admit``) and prints the answer.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from labeler.base.errors import Exit, InputError, UsageError, yaml_problem
from labeler.commands._base import cluster, origin_of, parse_pairs, profile_of
from labeler.tas import kubeyaml
from labeler.tas.admit import add_usage, place_workload
from labeler.tas.cluster import Snapshot
from labeler.tas.dra import DraNote
from labeler.tas.tree import Tree, build_tree_for_levels
from labeler.tas.usage import admitted_usage, tas_flavor
from labeler.tas.workload import Workload, with_tolerations, workloads_from_object
from labeler.tas.workload_report import workload_dict, workload_text

WORKLOAD_KINDS = ("Workload", "Job", "JobSet", "LeaderWorkerSet")


def _objects(doc: Any) -> list[Mapping[str, Any]]:
    docs = doc if isinstance(doc, list) else [doc]
    out: list[Mapping[str, Any]] = []
    for d in docs:
        if isinstance(d, Mapping) and isinstance(d.get("items"), list):
            out += [i for i in d["items"] if isinstance(i, Mapping)]
        elif isinstance(d, Mapping):
            out.append(d)
    return out


def read_objects(path: str) -> list[Mapping[str, Any]]:
    """Every object of a manifest file (YAML stream or JSON; Lists unpacked)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
        doc = json.loads(text) if text.lstrip()[:1] in ("{", "[") else kubeyaml.load(text)
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read: {e}") from e
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        where = yaml_problem(path, e) if isinstance(e, yaml.YAMLError) else f"{path}: {e}"
        raise InputError(f"{where}; not valid YAML/JSON") from e
    return _objects(doc)


def read_manifest(path: str) -> list[Workload]:
    found = [o for o in read_objects(path) if o.get("kind") in WORKLOAD_KINDS]
    if not found:
        raise InputError(f"{path}: no {', '.join(WORKLOAD_KINDS)} in the file")
    out: list[Workload] = []
    for i, obj in enumerate(found):
        out += workloads_from_object(obj, f"{path}: object {i + 1}")
    return out


def _split(ref: str) -> tuple[str, str]:
    ns, slash, name = ref.partition("/")
    if not slash or not ns or not name:
        raise UsageError(f"--workload {ref!r}: expected NAMESPACE/NAME")
    return ns, name


def _workload_from(
    args: argparse.Namespace, objects: Sequence[Mapping[str, Any]]
) -> tuple[list[Workload], tuple[str, str] | None]:
    if args.file:
        return read_manifest(args.file), None
    ns, name = _split(args.workload)
    for obj in objects:
        meta = obj.get("metadata") or {}
        if obj.get("kind") == "Workload" and (meta.get("namespace"), meta.get("name")) == (
            ns,
            name,
        ):
            return workloads_from_object(obj, f"Workload {ns}/{name}"), (ns, name)
    if args.from_cluster:
        from labeler.kube.kueue import get_workload

        obj = get_workload(cluster(args), ns, name)
        return workloads_from_object(obj, f"Workload {ns}/{name}"), (ns, name)
    raise InputError(
        f"{args.from_snapshot}: no Workload {ns}/{name} "
        "(add 'kubectl get workloads -A -o yaml' to the snapshot)"
    )


def run(args: argparse.Namespace, snap: Snapshot, dra: DraNote | None = None) -> int:
    """Advise every PodSet; 0 when all fit, 2 when any does not. ``dra``: what to say
    about the nodes whose accelerators only DRA publishes."""
    objects = list(snap.kueue)
    workloads, self_ref = _workload_from(args, objects)
    origin = origin_of(args)
    flavor_name: str | None = None
    extra_tolerations: tuple[Any, ...] = ()
    if args.profile:
        profile = profile_of(args)
        tree: Tree = build_tree_for_levels(
            profile.topology.kueue_levels(),
            snap.nodes,
            flavor_labels=parse_pairs(args.flavor_node_label, "--flavor-node-label"),
            topology_name=args.topology_name or profile.name,
        )
    else:
        flavor = tas_flavor(objects, args.flavor, origin)
        flavor_name = flavor.name
        extra_tolerations = flavor.tolerations
        tree = build_tree_for_levels(
            flavor.levels,
            snap.nodes,
            flavor_labels=flavor.node_labels,
            topology_name=flavor.topology,
        )
    held = admitted_usage(
        [o for o in objects if o.get("kind") == "Workload"], flavor=flavor_name, skip=self_ref
    )
    # several Workloads (a LeaderWorkerSet's groups) are admitted one after another
    used = {k: dict(v) for k, v in held.by_leaf.items()}
    results = []
    for wl in workloads:
        wl = Workload(
            wl.name,
            tuple(with_tolerations(ps, extra_tolerations) for ps in wl.podsets),
            wl.namespace,
            wl.uid,
        )
        result = place_workload(tree, wl, used)
        results.append(result)
        for r in result.podsets:
            if r.outcome.fits:
                add_usage(used, tree, r.outcome.assignment, r.podset.shape.requests)
    if args.output == "json":
        doc = workload_dict(tree, results, flavor=flavor_name, held=held.workloads)
        if dra is not None:
            doc["dra"] = dra.to_json()
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(workload_text(tree, results, flavor=flavor_name, held=held.workloads))
        if dra is not None:
            print("\n".join(dra.lines()))
    return Exit.OK if all(r.fits for r in results) else Exit.INCOMPLETE
