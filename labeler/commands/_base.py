"""Helpers shared by the subcommand modules."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from labeler.errors import UsageError
from labeler.kube.client import ClusterOptions, api_client
from labeler.labels import key_problems, value_problems

if TYPE_CHECKING:
    from labeler.kube.nodes import NodeInfo
    from labeler.scope import Scope


def add_command(
    sub: Any, common: argparse.ArgumentParser, name: str, help_text: str
) -> argparse.ArgumentParser:
    return sub.add_parser(  # type: ignore[no-any-return]
        name, parents=[common], help=help_text, description=help_text
    )


def cluster(args: argparse.Namespace) -> Any:
    """The ApiClient for --kubeconfig/--context (kubectl's rules)."""
    return api_client(ClusterOptions(kubeconfig=args.kubeconfig, context=args.context))


# --- node scope -----------------------------------------------------------------------


def add_scope(p: argparse.ArgumentParser, *, when: str = "") -> None:
    """``--node-selector`` and ``--resource``: which cluster nodes are looked at.

    The default is :class:`labeler.scope.Scope`'s: the accelerator nodes, so that CPU and
    control-plane nodes, which nobody labels, are not reported as unlabelled.
    """
    from labeler.scope import DEFAULT_RESOURCES, Scope

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


def node_scope(args: argparse.Namespace) -> Scope:
    """The Scope of ``--node-selector`` / ``--resource``."""
    from labeler.scope import DEFAULT_RESOURCES, Scope
    from labeler.selector import parse_selector

    selector = parse_selector(args.node_selector) if args.node_selector is not None else None
    resources = tuple(args.resource) if args.resource else DEFAULT_RESOURCES
    return Scope(resources=resources, selector=selector)


def scoped_nodes(args: argparse.Namespace, scope: Scope) -> tuple[list[NodeInfo], int]:
    """One paginated LIST of every node; the nodes in scope and how many were left out.

    The selector is matched here, not by the API server, so that the count of nodes left
    out is true with ``--node-selector`` too (the LIST costs the same as the default's).
    """
    from labeler.kube.nodes import list_nodes

    nodes, _ = list_nodes(cluster(args))
    return scope.split(nodes)


# --- KEY=VALUE flags --------------------------------------------------------------------


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
