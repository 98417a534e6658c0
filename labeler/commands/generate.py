"""``generate`` and ``check``: scheduler configuration that matches the labels.

Parsing and printing only; the objects come from :mod:`labeler.emit`, the verdict from
:mod:`labeler.core.check`, positions from :mod:`labeler.core.positions`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labeler.base.errors import Exit, InputError, UsageError
from labeler.base.files import read_text, write_atomic
from labeler.base.flags import enum_flag
from labeler.base.prog import command
from labeler.commands._base import (
    add_command,
    add_profile,
    add_report_format,
    add_scope,
    add_source,
    add_volcano_version,
    checked,
    cluster,
    flag_value,
    node_scope,
    parse_pairs,
    profile_of,
    scoped_nodes,
)

if TYPE_CHECKING:
    from labeler.core.check import CheckReport
    from labeler.core.positions import PositionSet
    from labeler.core.profiles import Profile
    from labeler.emit import Output, Target, bundle


SNIPPETS_DIR = "config-snippets"  # under --output-dir: fragments to merge, not objects
# The command's formatter keeps line breaks as written (its epilog is a table).
SLURM_HELP = (
    "Both files hold the tree: one switch per domain of every level. Mark one\n"
    "level of a profile file 'block: true' (the built-in nvlink profiles mark the\n"
    "NVLink clique) and topology.yaml (Slurm >= 25.05) also gets the block topology\n"
    "'<name>-block': one block per domain of that level, block_sizes from the\n"
    "smallest block's node count. topology.conf does not change. See docs/profiles.md."
)


_CHECK_EXITS = {
    Exit.OK: "every node checked is fully labeled, values nest and are valid",
    Exit.INCOMPLETE: "checked: some node lacks a level label, or values do not "
    "nest or are invalid (the report lists them), or no node was in scope",
}


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    g = add_command(
        sub, common, "generate", exits={Exit.OK: "generated (and applied or merged, if asked)"}
    )
    _source_options(g, required=False)
    _output_options(g)
    _kueue_options(g)
    _volcano_options(g)
    s = g.add_argument_group("Slurm (--emit slurm: topology.conf, topology.yaml)", SLURM_HELP)
    s.add_argument(
        "--slurm-topology-name",
        help="topology.yaml name of the tree topology; the block topology adds '-block' "
        "(default: the profile name); must match the agent's and apply's",
    )
    g.set_defaults(handler=run_generate)

    c = add_command(sub, common, "check", exits=_CHECK_EXITS)
    _source_options(c, required=True)
    add_report_format(c, "text", "--format")
    c.add_argument(
        "--max-nodes", type=int, default=10, help="nodes listed per problem (%(default)s)"
    )
    c.add_argument(
        "--affinity-config",
        metavar="level1=N1,...",
        help="also check an Ascend job's huawei.com/affinity-config (with --replicas); "
        "exit 2 naming the rule it breaks",
    )
    c.add_argument("--replicas", type=int, help="the job's replica count, for --affinity-config")
    c.set_defaults(handler=run_check)


def _output_options(g: argparse.ArgumentParser) -> None:
    from labeler.emit.kinds import DEFAULT_KINDS, Kind

    out = g.add_argument_group("output")
    out.add_argument("--output-dir", metavar="D", help="write one file per kind into D")
    out.add_argument("-o", "--output", metavar="FILE", help="one YAML stream; '-' = stdout")
    out.add_argument(
        "--emit",
        default=",".join(DEFAULT_KINDS),
        help=f"what to emit, comma-separated, from {','.join(Kind)} "
        "(default: %(default)s); hypernodes and slurm need --from-csv or "
        "--from-cluster, slurm also --output-dir",
    )
    out.add_argument(
        "--merge-into",
        metavar="CONFIGMAP.yaml",
        help="set resource-level-config in this Volcano scheduler ConfigMap file, in place; "
        "alone, this is the only thing generate does",
    )
    out.add_argument(
        "--apply",
        action="store_true",
        help="create or update the Kueue objects and HyperNodes in the cluster",
    )
    out.add_argument("--dry-run", action="store_true", help="with --apply: only say what changes")
    out.add_argument(
        "--prune",
        action="store_true",
        help="with --apply: delete this topology's HyperNodes that are no longer generated",
    )
    out.add_argument(
        "--force", action="store_true", help="generate even when the check finds errors"
    )


def _kueue_options(g: argparse.ArgumentParser) -> None:
    from labeler.core.labels import dns1123_subdomain_problems
    from labeler.emit import kueue

    k = g.add_argument_group("Kueue")
    k.add_argument(
        "--topology-name",
        type=checked(dns1123_subdomain_problems),
        help="Kueue Topology name (default: the profile name)",
    )
    k.add_argument(
        "--flavor-name",
        type=checked(dns1123_subdomain_problems),
        help="ResourceFlavor name (default: the Topology name)",
    )
    k.add_argument(
        "--flavor-node-label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="ResourceFlavor nodeLabels (1 to 8); without it no ResourceFlavor is emitted",
    )
    k.add_argument(
        "--flavor-toleration",
        action="append",
        type=flag_value(kueue.parse_toleration),
        default=[],
        metavar="KEY[=VALUE][:EFFECT]",
        help="ResourceFlavor tolerations (up to 8)",
    )


def _volcano_options(g: argparse.ArgumentParser) -> None:
    from labeler.emit import hypernodes
    from labeler.emit.volcano import DiscoveryOptions, discovery_name_problems

    v = g.add_argument_group("Volcano")
    v.add_argument(
        "--reserved-node",
        type=int,
        metavar="N",
        help="resource-level-config level1 reservedNode (default: the profile's)",
    )
    add_volcano_version(v, "target Volcano version; before 1.14 HyperNodes carry no tierName")
    v.add_argument(
        "--hypernode-prefix",
        type=checked(hypernodes.prefix_problems),
        default=hypernodes.HyperNodeOptions.prefix,
        help="prefix of every HyperNode name",
    )
    v.add_argument(
        "--node-members",
        **enum_flag(hypernodes.NodeMembers),
        default=hypernodes.HyperNodeOptions.node_members,
        help="tier-1 members: each node by name, or one labelMatch on the narrowest label "
        "(picks up new nodes by itself); default: %(default)s",
    )
    v.add_argument(
        "--discovery-name",
        type=checked(discovery_name_problems),
        help="networkTopologyTypes name (≤ 20 characters)",
    )
    v.add_argument(
        "--discovery-interval",
        default=DiscoveryOptions.interval,
        help="label discovery interval, a Go duration (default %(default)s)",
    )


def _source_options(p: argparse.ArgumentParser, *, required: bool) -> None:
    add_profile(p)
    add_source(p, required=required, csv=True)
    add_scope(p, when="with --from-cluster")


def _positions(args: argparse.Namespace, profile: Profile) -> PositionSet | None:
    from labeler.core.positions import read_csv, select

    if not args.from_cluster and (args.node_selector is not None or args.resource):
        raise UsageError("--node-selector and --resource choose cluster nodes: add --from-cluster")
    if args.from_csv:
        return read_csv(args.from_csv, profile.topology)
    if args.from_cluster:
        scope = node_scope(args)
        nodes, left_out = scoped_nodes(args, scope)
        pset = select(profile.topology, "cluster", ((n.name, n.labels) for n in nodes))
        if not nodes:
            print(f"warning: no node in scope ({scope.describe()})", file=sys.stderr)
        return dataclasses.replace(pset, scope=scope.describe(), not_in_scope=left_out)
    return None


def _check(pset: PositionSet, profile: Profile) -> CheckReport:
    from labeler.core.check import check_positions

    return check_positions(profile.topology, pset.positions, pset.tree_labels, pset.other_trees)


def run_check(args: argparse.Namespace) -> int:
    from labeler.core.check import render_text, to_json

    profile = profile_of(args)
    if (args.affinity_config is None) != (args.replicas is None):
        raise UsageError("--affinity-config and --replicas go together")
    if args.affinity_config is not None:
        from labeler.sim.kueue.multilevel import check_affinity_flag  # the simulator's rules

        check_affinity_flag(args.affinity_config, args.replicas, profile.topology, profile.name)
    pset = _positions(args, profile)
    assert pset is not None  # the source group is required
    report = _check(pset, profile)
    if args.output == "json":
        doc = to_json(
            report,
            pset.positions,
            origin=pset.origin,
            scope=pset.scope,
            not_in_scope=pset.not_in_scope,
        )
        print(json.dumps(doc, indent=2))
    else:
        for line in render_text(
            report, pset.positions, origin=pset.origin, max_nodes=args.max_nodes
        ):
            print(line)
        if pset.out_of_scope:
            print(f"({pset.out_of_scope} node(s) of other trees not checked)")
        if pset.scope is not None:
            print(f"(scope: {pset.scope}; {pset.not_in_scope} other node(s) not checked)")
    if not pset.positions:  # a gate that checked nothing must not pass
        where = f"scope: {pset.scope}" if pset.scope is not None else pset.origin
        print(
            f"warning: no node to check ({where}); check the selector or the file", file=sys.stderr
        )
        return Exit.INCOMPLETE
    return Exit.OK if report.ok else Exit.INCOMPLETE


def _options(args: argparse.Namespace, profile: Profile) -> bundle.GenerateOptions:
    """Each emitter's options from its flags."""
    from labeler.emit import bundle, hypernodes, kueue, slurm, volcano

    labels = parse_pairs(args.flavor_node_label, "--flavor-node-label")
    if args.reserved_node is not None and args.reserved_node < 0:
        raise UsageError("--reserved-node must be 0 or more")
    volcano.parse_discovery_interval(args.discovery_interval)
    return bundle.GenerateOptions(
        kinds=bundle.parse_kinds(args.emit),
        options=(
            kueue.KueueOptions(
                topology_name=args.topology_name,
                flavor_name=args.flavor_name,
                flavor_node_labels=labels,
                tolerations=tuple(args.flavor_toleration),
            ),
            volcano.VolcanoOptions(reserved_node=args.reserved_node),
            hypernodes.HyperNodeOptions(
                prefix=args.hypernode_prefix,
                volcano_version=args.volcano_version,
                node_members=args.node_members,
                owner=hypernodes.owner_value(profile.name, profile.topology.name),
            ),
            volcano.DiscoveryOptions(
                name=args.discovery_name,
                interval=args.discovery_interval,
                volcano_version=args.volcano_version,
            ),
            slurm.SlurmOptions(topology_name=args.slurm_topology_name),
        ),
    )


def _merge(args: argparse.Namespace, profile: Profile, *, network_topology: bool = False) -> None:
    from labeler.emit.configmap import merge_resource_level_config

    path = Path(args.merge_into)
    # A scheduler ConfigMap is a few KB.
    text = read_text(path, 16 << 20, what="the --merge-into ConfigMap")
    result = merge_resource_level_config(
        text,
        profile.topology,
        origin=str(path),
        reserved_node=args.reserved_node,
        network_topology=network_topology,
    )
    for note in result.notes:
        print(note if note.startswith("warning:") else f"note: {note}", file=sys.stderr)
    if not result.changed:
        print(f"{path}: resource-level-config unchanged")
        return
    write_atomic(path, result.text)
    before = result.previous if result.previous is not None else "(absent)"
    print(f"{path}: resource-level-config updated\n  before: {before}\n  after:  {result.value}")


def run_generate(args: argparse.Namespace) -> int:
    from labeler.emit import Target, bundle, hypernodes

    profile = profile_of(args)
    opts = _generate_options(args, profile)  # validate every flag before reading anything
    wants_objects = bool(args.output_dir or args.output or args.apply)
    if args.merge_into and not wants_objects:
        _merge(args, profile)
        return Exit.OK
    pset = _checked_positions(args, profile, opts)
    target = Target(profile.topology, profile.name)
    if pset is not None:
        target = Target(profile.topology, profile.name, pset.positions, pset.other_trees)
    opts = _drop_unusable(args, opts, target)
    outputs = bundle.build(target, opts)
    if args.merge_into:
        hn = any(o.filename in bundle.HYPERNODE_FILES for o in outputs)
        _merge(args, profile, network_topology=hn)
    if args.output_dir:
        _write_dir(Path(args.output_dir), outputs)
    elif args.output and args.output != "-":
        write_atomic(Path(args.output), "".join(o.text() for o in outputs))
        print(f"wrote {args.output}")
    elif args.output == "-" or not wants_objects:
        sys.stdout.write("".join(o.text() for o in outputs))
    if args.apply:
        from labeler.emit.sync import sync

        sync(
            cluster(args),
            outputs,
            opts.of(hypernodes.EMITTER).owner,
            dry_run=args.dry_run,
            prune=args.prune,
            report=print,
        )
    return Exit.OK


def _generate_options(args: argparse.Namespace, profile: Profile) -> bundle.GenerateOptions:
    """The options of ``generate``, once the flags are known to go together."""
    from labeler.emit import bundle
    from labeler.emit.kinds import Kind

    if (args.dry_run or args.prune) and not args.apply:
        raise UsageError("--dry-run and --prune go with --apply")
    if args.prune and Kind.HYPERNODES not in bundle.parse_kinds(args.emit):
        raise UsageError("--prune deletes stale HyperNodes: keep hypernodes in --emit")
    if args.output_dir and args.output:
        raise UsageError("give either --output-dir or -o, not both")
    opts = _options(args, profile)
    if Kind.SLURM in opts.kinds and not (args.output_dir and (args.from_csv or args.from_cluster)):
        raise UsageError(
            "--emit slurm writes two files (slurm/topology.conf, slurm/topology.yaml): "
            "give --output-dir and --from-csv or --from-cluster"
        )
    return opts


def _checked_positions(
    args: argparse.Namespace, profile: Profile, opts: bundle.GenerateOptions
) -> PositionSet | None:
    """The nodes' positions, when a source is given, refused (or, with --force, warned
    about) when the check finds errors."""
    from labeler.emit.kinds import DEFAULT_KINDS, Kind

    pset = _positions(args, profile)
    if pset is not None:
        report = _check(pset, profile)
        if not report.ok:
            lines = report.problems()
            if not args.force:
                raise InputError(
                    [*lines, f"fix the labels (see '{command('check')}'), or pass --force"],
                    heading=f"{pset.origin}: the labels are not consistent; nothing generated:",
                )
            for line in lines:
                print(f"warning: {line}", file=sys.stderr)
    elif Kind.HYPERNODES in opts.kinds:
        if args.emit != ",".join(DEFAULT_KINDS) or args.prune:
            raise UsageError(
                "HyperNodes (--emit hypernodes, --prune) need --from-csv or --from-cluster"
            )
        print("note: no HyperNodes without --from-csv or --from-cluster", file=sys.stderr)
    return pset


def _write_dir(d: Path, outputs: list[Output]) -> None:
    """One file per output under --output-dir, each said on a line."""
    for o in outputs:
        # Config snippets go one folder down so that `kubectl apply -f D/` applies
        # exactly the API objects and never trips over a fragment without a kind.
        folder = o.folder or ("" if o.applicable else SNIPPETS_DIR)
        path = d / folder / o.filename
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise InputError(
                f"--output-dir {d}: cannot create {path.parent}: {e.strerror or e}; "
                "pick a writable directory"
            ) from e
        write_atomic(path, o.text())
        what = (
            f"{len(o.docs)} object(s)"
            if o.applicable
            else ("Slurm file" if o.raw is not None else "config snippet")
        )
        print(f"wrote {path} ({what})")


def _drop_unusable(
    args: argparse.Namespace, opts: bundle.GenerateOptions, target: Target
) -> bundle.GenerateOptions:
    """Leave out an output its consumer cannot use, saying why (refuse if it was asked for)."""
    from labeler.emit import bundle
    from labeler.emit.kinds import DEFAULT_KINDS

    asked = args.emit != ",".join(DEFAULT_KINDS)
    for kind, reasons in bundle.unusable(target, opts).items():
        if asked:
            raise InputError(reasons, heading=f"--emit {kind}: not generated:")
        for reason in reasons:
            print(f"note: no {kind} output: {reason}", file=sys.stderr)
        opts = dataclasses.replace(opts, kinds=tuple(k for k in opts.kinds if k != kind))
    return opts
