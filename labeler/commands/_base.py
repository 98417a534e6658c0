"""Helpers shared by the subcommand modules: one spelling and one parser per shared flag.

Several commands take the same things: a profile and its tree name, a source of nodes
(``--from-csv`` / ``--from-cluster`` / ``--from-snapshot``), a node scope
(``--node-selector`` / ``--resource``), ``KEY=VALUE`` pairs. Declaring them here keeps
the names, help texts, error messages and exit codes the same in every command
(scripts depend on them). What those flags give is read here too, so that the commands
that read nodes (advise, domains, map, audit) open the same way: ``profile_of``,
``read_nodes`` with ``origin_of``, ``node_scope``.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from labeler.base.errors import Exit, InputError, UsageError, one_line
from labeler.base.logs import logger
from labeler.commands import COMMANDS
from labeler.core.labels import key_problems, value_problems
from labeler.core.profiles import BUILTIN, Profile, load_profile

# What --profile takes, in every command.
PROFILE_HELP = f"{', '.join(BUILTIN)}, or a profile YAML file (docs/profiles.md)"

if TYPE_CHECKING:
    from labeler.core.dra import Devices
    from labeler.core.node import NodeInfo
    from labeler.core.scope import Scope
    from labeler.core.slinky import Slinky
    from labeler.kube.client import Api
    from labeler.sim.common.cluster import Snapshot

# Exit codes shared by every command; each command names what 0 (and 3) mean for it.
EXIT_ERROR = "error: invalid input, cluster or API failure (the message says what to do)"
EXIT_USAGE = "usage: bad or conflicting flags"

T = TypeVar("T")

log = logger("labeler.commands")  # what every command reads, said by one name


def add_command(
    sub: Any,
    common: argparse.ArgumentParser,
    name: str,
    *,
    exits: Mapping[Exit, str] | None = None,
) -> argparse.ArgumentParser:
    """A subcommand whose --help starts with its summary line (from the table of commands,
    ``labeler.commands.COMMANDS``) and ends with its exit codes (0 and 3 from ``exits``)."""
    help_text = COMMANDS[name][1]
    codes = {Exit.ERROR: EXIT_ERROR, Exit.USAGE: EXIT_USAGE, **(exits or {})}
    w = max(len(str(int(c))) for c in codes)
    epilog = "exit codes:\n" + "\n".join(
        textwrap.fill(
            codes[c],
            width=88,
            initial_indent=f"  {int(c):<{w}}  ",
            subsequent_indent=" " * (w + 4),
        )
        for c in sorted(codes)
    )
    return sub.add_parser(  # type: ignore[no-any-return]
        name,
        parents=[common],
        help=help_text,
        description=help_text,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def flag_value(parse: Callable[[str], T]) -> Callable[[str], T]:
    """An argparse ``type=`` from a parser that raises InputError: a bad value is then a
    usage error (exit 2) reported on one line by argparse, before anything is read."""

    def convert(text: str) -> T:
        try:
            return parse(text)
        except InputError as e:
            raise argparse.ArgumentTypeError(one_line(e)) from None

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


def checked(problems: Callable[[str], list[str]]) -> Callable[[str], str]:
    """An argparse ``type=`` that refuses a value for which ``problems`` finds any."""

    def check(text: str) -> str:
        found = problems(text)
        if found:
            raise argparse.ArgumentTypeError(f"{text!r} {'; '.join(found)}")
        return text

    check.__name__ = getattr(problems, "__name__", "value")
    return check


def _volcano_version(text: str) -> tuple[int, int]:
    from labeler.emit.hypernodes import parse_version

    return parse_version(text)


def add_volcano_version(p: Any, help_text: str) -> None:
    """``--volcano-version`` of generate and advise: MAJOR.MINOR, checked while parsing; by
    default the Volcano modelled here. The default is given parsed: argparse would parse a
    default string, and so import the parser's module (emit's HyperNodes) for every command
    line."""
    from labeler.core.volcano import VERSION

    p.add_argument(
        "--volcano-version",
        type=flag_value(_volcano_version),
        default=VERSION,
        help=f"{help_text} (default {'.'.join(map(str, VERSION))})",
    )


def cluster(args: argparse.Namespace, *, concurrency: int = 0) -> Api:
    """The API client for --kubeconfig/--context (kubectl's rules), with a pooled
    connection for each of ``concurrency`` writers. Imported here, not at the top: commands
    that never talk to a cluster must not pay for loading the client."""
    from labeler.kube.client import ClusterOptions, connect

    pool = max(ClusterOptions.pool_size, concurrency)
    timeout = ClusterOptions.request_timeout
    if getattr(args, "request_timeout", None):  # the MindCluster twins have no such flag
        timeout = (min(timeout[0], args.request_timeout), args.request_timeout)
    return connect(
        ClusterOptions(args.kubeconfig, args.context, pool_size=pool, request_timeout=timeout)
    )


# --- -o for report commands --------------------------------------------------------------


def add_report_format(p: argparse.ArgumentParser, human: str, *aliases: str) -> None:
    """``-o/--output FORMAT`` of a command that prints a report (``args.output``).

    Commands that write data (generate, export, lld) use ``-o`` for the output file
    instead; ``human`` is the default, the other choice is json.
    """
    p.add_argument(
        "-o",
        "--output",
        *aliases,
        dest="output",
        choices=[human, "json"],
        default=human,
        help=f"report format (default: {human})",
    )


def print_report(args: argparse.Namespace, text: str, doc: Any) -> None:
    """The report as ``-o`` asks: ``doc`` as indented JSON, else ``text``."""
    if args.output == "json":
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(text)


# --- profile and tree name ------------------------------------------------------------

TREE_NAME_HELP = (
    "tree name, the value of huawei.com/topotree, for profiles with a tree label "
    "(ascend-superpod; default: 'default')"
)


def add_tree_name(
    p: Any, *, required: bool = False, short: bool = False, help_text: str = TREE_NAME_HELP
) -> None:
    """``--topotree-name`` (MindCluster's name), alias ``--tree-name``."""
    flags = ["-t"] if short else []
    p.add_argument(
        *flags,
        "--topotree-name",
        "--tree-name",
        dest="topotree_name",
        metavar="T",
        required=required,
        help=help_text,
    )


def add_profile(
    p: argparse.ArgumentParser, *, default: str | None = None, tree_name: bool = True
) -> None:
    """``--profile`` (required unless a default is given) and, unless ``tree_name`` is
    False (a command that reads the tree name from the nodes), the tree name."""
    if default is None:
        p.add_argument("--profile", required=True, help=PROFILE_HELP)
    else:
        p.add_argument(
            "--profile",
            default=default,
            help=f"{PROFILE_HELP} (default: {default})",
        )
    if tree_name:
        add_tree_name(p)


def profile_of(args: argparse.Namespace) -> Profile:
    """The profile of ``--profile`` with the tree name of ``--topotree-name``."""
    return load_profile(args.profile, tree_name=args.topotree_name)


# --- where the nodes come from ----------------------------------------------------------


def add_source(
    p: argparse.ArgumentParser,
    *,
    required: bool,
    csv: bool = False,
    snapshot: bool = False,
    cluster_help: str = "today's nodes and labels, from the cluster (see --node-selector)",
) -> None:
    """The mutually exclusive ``--from-csv`` / ``--from-cluster`` / ``--from-snapshot``."""
    src = p.add_mutually_exclusive_group(required=required)
    if csv:
        src.add_argument(
            "--from-csv", metavar="CSV", help="nodes and labels from a bulk CSV (nodeName,<key>,…)"
        )
    src.add_argument("--from-cluster", action="store_true", help=cluster_help)
    if snapshot:
        src.add_argument(
            "--from-snapshot",
            metavar="FILE",
            help="a List of Nodes and Pods (kubectl get nodes,pods -A -o yaml), YAML or JSON",
        )


def origin_of(args: argparse.Namespace) -> str:
    """Where the nodes come from, as messages and pages name it: the file, or the cluster."""
    return getattr(args, "from_csv", None) or args.from_snapshot or "the cluster"


def read_nodes(
    args: argparse.Namespace,
    *,
    kueue: bool = False,
    api: Api | None = None,
    kueue_optional: bool = False,
) -> Snapshot:
    """The nodes and pods of ``--from-snapshot`` or ``--from-cluster`` (with the
    ResourceSlices of ``--dra-driver``), as the simulators and the map read them. With
    ``kueue``, the cluster's Workloads, Topologies, ResourceFlavors and queues too (a
    snapshot file carries its own); when there are Workloads, TAS pods are left to their
    topology assignments, as the snapshot reader does. ``api``: the client to read the
    cluster with, when the caller needs it again (else one is made). ``kueue_optional``:
    an answer that Kueue's objects may not be read (403) is a warning, not an error.
    """
    from labeler.sim.common.inputs import read_cluster, read_snapshot

    # domains has no --dra-driver: it says nothing about DRA, so it reads no slices.
    drivers = dra_drivers(args) if hasattr(args, "dra_driver") else ()
    if not args.from_cluster:
        snap = read_snapshot(args.from_snapshot)
    elif not kueue:
        snap = read_cluster(api or cluster(args), dra_drivers=drivers)
    else:
        api = api or cluster(args)
        objects = _kueue_objects(api, optional=kueue_optional)
        has_workloads = any(o.get("kind") == "Workload" for o in objects)
        snap = read_cluster(api, skip_tas=has_workloads, dra_drivers=drivers)
        snap = replace(snap, kueue=tuple(objects))
    for kind, n in sorted(snap.ignored.items()):
        log.info("snapshot: ignored %d object(s) of kind %s", n, kind)
    return snap


def _kueue_objects(api: Api, *, optional: bool = False) -> list[Mapping[str, Any]]:
    """Kueue's objects from the cluster: Workloads, Topologies, ResourceFlavors,
    LocalQueues and ClusterQueues, each kind read on its own, so that one kind this
    Kueue does not serve, or (``optional``) that may not be read, leaves out only that
    kind and not what the Workloads hold."""
    from labeler.kube.errors import Forbidden, NotFound
    from labeler.kube.kueue import KINDS, list_kueue_kind

    objects: list[Mapping[str, Any]] = []
    missing: list[str] = []
    refused: list[tuple[str, Exception]] = []
    for plural, kind in KINDS:
        try:
            objects += list_kueue_kind(api, plural, kind)
        except NotFound:
            missing.append(plural)
        except Forbidden as e:
            if not optional:
                raise
            refused.append((plural, e))
    if len(missing) == len(KINDS):
        log.info("Kueue's API is not served: no Workloads, Topologies or ResourceFlavors")
        return []
    if missing:
        log.info("Kueue serves no %s here: read as none", ", ".join(missing))
    for plural, error in refused:
        held = (
            "Kueue's Workloads are left out, so what they hold counts as free"
            if plural == "workloads"
            else f"Kueue's {plural} are left out"
        )
        print(
            f"warning: {error}: {held} (grant 'list' on Kueue's workloads, topologies, "
            "resourceflavors, localqueues and clusterqueues)",
            file=sys.stderr,
        )
    return objects


# --- node scope -----------------------------------------------------------------------


def add_scope(p: argparse.ArgumentParser, *, when: str = "") -> None:
    """``--node-selector`` and ``--resource``: which cluster nodes are looked at.

    The default is :class:`labeler.core.scope.Scope`'s: the accelerator nodes, so that CPU and
    control-plane nodes, which nobody labels, are not reported as unlabeled.
    """
    from labeler.core.scope import DEFAULT_RESOURCES, Scope

    g = p.add_argument_group("node scope" + (f" ({when})" if when else ""))
    g.add_argument(
        "--node-selector",
        metavar="SELECTOR",
        help="look at the nodes matching this label selector (kubectl syntax: k=v,k!=v,k,"
        f"!k,k in (a,b)) instead of the default: {Scope().describe()}",
    )
    g.add_argument(
        "--resource",
        action="append",
        metavar="PATTERN",
        help="accelerator resource (glob) that puts a node in the default scope and is "
        f"counted; repeatable (default: {', '.join(DEFAULT_RESOURCES)})",
    )
    add_dra_driver(g)


def node_scope(args: argparse.Namespace) -> Scope:
    """The Scope of ``--node-selector`` / ``--resource``."""
    from labeler.core.scope import DEFAULT_RESOURCES, Scope
    from labeler.core.selector import parse_selector

    selector = parse_selector(args.node_selector) if args.node_selector is not None else None
    resources = tuple(args.resource) if args.resource else DEFAULT_RESOURCES
    return Scope(resources=resources, selector=selector, dra_drivers=dra_drivers(args))


def scoped_nodes(args: argparse.Namespace, scope: Scope) -> tuple[list[NodeInfo], int]:
    """One paginated LIST of every node (and of the scope's DRA drivers' ResourceSlices);
    the nodes in scope and how many were left out.

    The selector is matched here, not by the API server, so that the count of nodes left
    out is true with ``--node-selector`` too (the LIST costs the same as the default's).
    """
    from labeler.kube.nodes import list_nodes

    api = cluster(args)
    nodes, _ = list_nodes(api)
    return scope.split(nodes, cluster_devices(api, scope.dra_drivers))


# --- DRA drivers: accelerators that only ResourceSlices publish ---------------------------

NO_DRA = "none"


def _driver_name(text: str) -> str:
    from labeler.core.labels import dns1123_subdomain_problems

    problems = [] if text == NO_DRA else dns1123_subdomain_problems(text)
    if problems:
        why = "; ".join(problems)
        raise argparse.ArgumentTypeError(f"{text!r} is not a DRA driver name: {why}")
    return text


def add_dra_driver(p: Any) -> None:
    """``--dra-driver``: whose ResourceSlice devices put a node in scope and are counted."""
    from labeler.core.dra import DEFAULT_DRIVERS

    p.add_argument(
        "--dra-driver",
        action="append",
        type=_driver_name,
        metavar="DRIVER",
        help="DRA driver whose devices (ResourceSlices, resource.k8s.io/v1) put a node in "
        "the default scope and are counted, under the driver's name; repeatable (default: "
        f"{', '.join(DEFAULT_DRIVERS)}; '{NO_DRA}': read no ResourceSlices)",
    )


def dra_drivers(args: argparse.Namespace) -> tuple[str, ...]:
    from labeler.core.dra import DEFAULT_DRIVERS

    given = getattr(args, "dra_driver", None)
    if not given:
        return DEFAULT_DRIVERS
    return () if NO_DRA in given else tuple(dict.fromkeys(given))


def cluster_devices(api: Api, drivers: tuple[str, ...]) -> dict[str, Devices]:
    """Node → its DRA devices of ``drivers``, from the cluster's ResourceSlices."""
    if not drivers:
        return {}
    from labeler.core.dra import device_counts
    from labeler.kube.resourceslices import read_resource_slices

    return device_counts(read_resource_slices(api, drivers), drivers)


# --- NS/NAME and KEY=VALUE flags ---------------------------------------------------------


def namespaced_name(flag: str, ref: str) -> tuple[str, str]:
    """The namespace and name of ``flag``'s NS/NAME value (a usage error, exit 2, if it is
    not one)."""
    ns, slash, name = ref.partition("/")
    if not slash or not ns or not name:
        raise UsageError(f"{flag} {ref!r}: expected NAMESPACE/NAME")
    return ns, name


def parse_pairs(values: Iterable[str], flag: str, *, labels: bool = True) -> dict[str, str]:
    """``KEY=VALUE`` pairs of a repeatable flag; each occurrence may also be comma-separated.

    With ``labels`` (node labels, nodeSelectors) every key and value must be one the API
    server accepts. A key given twice with different values is an error, not a silent
    override. Errors name the flag and the item (exit 2).
    """
    out: dict[str, str] = {}
    for raw in values:
        for part in raw.split(","):
            item = part.strip()
            if not item:
                continue
            key, eq, value = (s.strip() for s in item.partition("="))
            if not eq or not key:
                raise UsageError(f"{flag} {item!r}: expected KEY=VALUE")
            if labels:
                problems = [f"key {key!r} {p}" for p in key_problems(key)]
                problems += [f"value {value!r} {p}" for p in value_problems(value)]
                if problems:
                    raise UsageError(f"{flag} {item!r}: {'; '.join(problems)}")
            if out.get(key, value) != value:
                raise UsageError(f"{flag}: {key} is given twice ({out[key]!r} and {value!r})")
            out[key] = value
    return out


def add_slinky(p: argparse.ArgumentParser) -> None:
    """The Slinky node annotation flags shared by ``agent`` and ``apply``."""
    g = p.add_argument_group("Slinky (Slurm on Kubernetes)")
    g.add_argument(
        "--slinky-topology",
        action="store_true",
        help="also keep the topology.slinky.slurm.net/spec annotation (the node's leaf "
        "switch and block in generate --emit slurm's topology.yaml); owned like labels",
    )
    g.add_argument(
        "--slurm-topology-name",
        help="topology.yaml name of the tree topology, as given to generate (default: the "
        "profile name); the block topology adds '-block'",
    )


def slinky_from_args(args: argparse.Namespace, profile: Profile | None) -> Slinky | None:
    from labeler.core.slinky import Slinky, topology_names

    if not args.slinky_topology:
        if args.slurm_topology_name:
            raise UsageError("--slurm-topology-name goes with --slinky-topology")
        return None
    if profile is None:
        raise UsageError("--slinky-topology needs --profile (the levels of the topology)")
    topo = profile.topology
    return Slinky(topo, topology_names(topo, args.slurm_topology_name or profile.name))
