"""``advise`` for Volcano: -f a Volcano Job or a PodGroup with its pods, or --podgroup NS/NAME.

Which scheduler an input means is read from its API group: a ``batch.volcano.sh`` Job, or a
``scheduling.volcano.sh`` PodGroup, is Volcano's (kube-scheduler's ``scheduling.k8s.io``
PodGroup and Kubernetes' ``batch`` Job are not). This module reads what the simulator needs
(the snapshot or the cluster: nodes, pods, HyperNodes, Queues, PodGroups, the scheduler's
ConfigMap) and prints the answer; the simulation is ``labeler.sim.volcano``. When the
cluster has no HyperNodes and a profile is given, it makes the ones ``generate`` would
(``labeler.emit.hypernodes``) and says so.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from labeler.base.errors import Exit, InputError, UsageError
from labeler.base.logs import logger
from labeler.base.prog import command
from labeler.commands._base import (
    cluster,
    namespaced_name,
    origin_of,
    print_report,
    profile_of,
)

if TYPE_CHECKING:
    from labeler.commands.advise.input import Manifest
    from labeler.core.profiles import Profile
    from labeler.kube.client import Api
    from labeler.sim.volcano.advice import Advice
    from labeler.sim.volcano.conf import SchedulerConf
    from labeler.sim.volcano.model import Gang
    from labeler.sim.volcano.snapshot import Objects

log = logger(__name__)


def add_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Volcano (a batch.volcano.sh Job or scheduling.volcano.sh PodGroup)")
    g.add_argument(
        "--podgroup",
        metavar="NS/NAME",
        help="a Volcano PodGroup pending in the cluster (--from-cluster) or the snapshot",
    )
    g.add_argument(
        "--scheduler-conf",
        metavar="FILE",
        help="volcano-scheduler.conf, or the ConfigMap holding it (default: the cluster's "
        "or the snapshot's volcano-scheduler-configmap, else Volcano's default)",
    )


def _read_cluster(args: argparse.Namespace) -> tuple[Objects, Api | None]:
    """The snapshot's or the cluster's objects, and the client they were read with (None
    for a snapshot)."""
    from labeler.sim.volcano.snapshot import from_parts, split

    if args.from_snapshot:
        from labeler.sim.common.cluster import items_of
        from labeler.sim.common.inputs import load_snapshot

        path = args.from_snapshot
        return split(items_of(load_snapshot(path), path), path), None
    from labeler.kube.volcano import get_configmap, list_volcano_objects
    from labeler.sim.common.inputs import read_cluster_objects
    from labeler.sim.volcano.conf import CONFIGMAP_NAME, CONFIGMAP_NAMESPACE

    api = cluster(args)
    snap, pods = read_cluster_objects(api)
    items = list_volcano_objects(api)
    if not args.scheduler_conf:
        cm = get_configmap(api, CONFIGMAP_NAMESPACE, CONFIGMAP_NAME)
        items += [cm] if cm is not None else []
    return from_parts(snap.nodes, pods, items, "the cluster"), api


def _named_gang(args: argparse.Namespace, objects: Objects, api: Api | None) -> Gang:
    """The gang of --podgroup NS/NAME, from the snapshot or the cluster."""
    from labeler.sim.volcano.model import gang_of, podgroup_from_object

    ns, name = namespaced_name("--podgroup", args.podgroup)
    found = objects.podgroups.get(f"{ns}/{name}")
    if found is None and api is not None:
        from labeler.kube.volcano import get_podgroup

        found = ("the cluster", get_podgroup(api, ns, name))
    if found is None:
        raise InputError(
            f"{args.from_snapshot}: no Volcano PodGroup {ns}/{name} (add "
            "'kubectl get podgroups.scheduling.volcano.sh -A -o yaml' to the snapshot)"
        )
    pg = podgroup_from_object(found[1], found[0])
    return gang_of(pg, objects.cluster.pods, "the snapshot")


def _file_gang(args: argparse.Namespace, manifest: Manifest, objects: Objects) -> Gang:
    """The gang of the -f file's one Volcano Job, or one PodGroup and its pods."""
    from dataclasses import replace

    from labeler.sim.volcano.jobs import expand_job
    from labeler.sim.volcano.model import gang_of, podgroup_from_object
    from labeler.sim.volcano.snapshot import is_volcano_job, is_volcano_podgroup

    items = manifest.objects
    jobs = [(manifest.where(i), o) for i, o in enumerate(items) if is_volcano_job(o)]
    groups = [(manifest.where(i), o) for i, o in enumerate(items) if is_volcano_podgroup(o)]
    if len(jobs) + len(groups) != 1:
        raise InputError(
            f"{manifest.path}: {len(jobs)} Volcano Job(s) and {len(groups)} PodGroup(s); advise "
            "one at a time (one Job, or one PodGroup with its pods)"
        )
    if jobs:
        return expand_job(jobs[0][1], jobs[0][0], args.volcano_version)
    pg = podgroup_from_object(groups[0][1], groups[0][0])
    given = gang_of(pg, [o for o in items if o.get("kind") == "Pod"], manifest.path)
    # Its members are the file's pods and the cluster's (kubectl gives the running ones
    # with the nodes); a pod in both is the file's, as it is the newer word.
    mine = {(t.namespace, t.name) for t in given.tasks}
    known = gang_of(pg, objects.cluster.pods, "the snapshot")
    rest = tuple(t for t in known.tasks if (t.namespace, t.name) not in mine)
    gang = replace(given, tasks=rest + given.tasks)
    if not gang.tasks:
        raise InputError(
            f"{manifest.path}: PodGroup {pg.ref} has no pods (pods join it with the annotation "
            "scheduling.k8s.io/group-name: <name>, in its namespace)"
        )
    return gang


def _conf(args: argparse.Namespace, objects: Objects) -> SchedulerConf:
    from labeler.base.files import read_text
    from labeler.sim.volcano.conf import CONF_KEY, conf_from_configmap, default_conf, read_conf_text

    if args.scheduler_conf:
        return read_conf_text(
            read_text(args.scheduler_conf, 1 << 20, what="scheduler configuration"),
            args.scheduler_conf,
        )
    for where, cm in objects.configmaps:
        if CONF_KEY in (cm.get("data") or {}):
            return conf_from_configmap(cm, where)
    return default_conf(args.volcano_version)


def _profile(args: argparse.Namespace) -> Profile | None:
    return profile_of(args) if args.profile else None


def _with_profile_hypernodes(
    args: argparse.Namespace, objects: Objects, profile: Profile | None
) -> Objects:
    """The profile's HyperNodes (what ``generate`` makes) when the cluster has none."""
    from dataclasses import replace

    from labeler.core.positions import select
    from labeler.emit.hypernodes import HyperNodeOptions, build_hypernodes, owner_value

    c = objects.cluster
    if c.hypernodes or profile is None:
        return objects
    topo = profile.topology
    pset = select(topo, "snapshot", ((n.name, dict(n.labels)) for n in c.nodes))
    opts = HyperNodeOptions(
        volcano_version=args.volcano_version, owner=owner_value(profile.name, topo.name)
    )
    docs = build_hypernodes(topo, pset.positions, opts)
    made = tuple((f"generated HyperNode {d['metadata']['name']}", d) for d in docs)
    generate = command(f"generate --profile {profile.name}")
    source = f"none in the cluster: the {len(docs)} that '{generate}' makes"
    return replace(objects, cluster=replace(c, hypernodes=made, hypernode_source=source))


def run(args: argparse.Namespace, manifest: Manifest | None) -> int:
    """Advise the Volcano Job or PodGroup of ``manifest`` (None: ``--podgroup``)."""
    from labeler.sim.volcano.advice import advise
    from labeler.sim.volcano.hypernodes import build_tree
    from labeler.sim.volcano.report import advice_dict, advice_text

    objects, api = _read_cluster(args)
    gang = _file_gang(args, manifest, objects) if manifest else _named_gang(args, objects, api)
    profile = _profile(args)
    objects = _with_profile_hypernodes(args, objects, profile)
    conf = _conf(args, objects)
    tree = build_tree(objects.cluster.hypernodes, objects.cluster.nodes)
    result = advise(gang, objects.cluster, conf, tree, args.volcano_version)
    if not objects.cluster.hypernodes:
        result.notes.append(
            "the cluster has no HyperNodes: every job is placed over the whole cluster "
            f"(give --profile to see the HyperNodes '{command('generate')}' would make)"
        )
    print_report(args, advice_text(result), advice_dict(result))
    if args.html:
        _html(args, result, objects, profile)
    return Exit.OK if result.fits else Exit.INCOMPLETE


def _html(
    args: argparse.Namespace, result: Advice, objects: Objects, profile: Profile | None
) -> None:
    from labeler.sim.volcano.overlay import tier_profile, volcano_overlay
    from labeler.topomap.advice import advice_map
    from labeler.topomap.render import write_html

    nodes = list(objects.cluster.nodes)
    if profile is None:
        by_tiers = tier_profile(result.tree, nodes)
        if by_tiers is None:
            raise UsageError(
                "--html draws the map by HyperNode tiers or a profile's levels: the cluster "
                "has no HyperNodes, add --profile"
            )
        profile, nodes = by_tiers
    overlay = volcano_overlay(profile.topology, result, nodes)
    requests = result.gang.tasks[0].requests if result.gang.tasks else {}
    page = advice_map(
        profile,
        nodes,
        requests,
        overlay,
        origin=origin_of(args),
        title=f"advise (Volcano): PodGroup {result.podgroup.ref}",
    )
    out = write_html(args.html, page)
    print(f"map with the placement written to {out}", file=sys.stderr)
