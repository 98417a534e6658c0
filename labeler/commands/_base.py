"""Helpers shared by the subcommand modules."""

from __future__ import annotations

import argparse
from typing import Any

from labeler.errors import UsageError
from labeler.kube.client import ClusterOptions, api_client


def add_command(
    sub: Any, common: argparse.ArgumentParser, name: str, help_text: str
) -> argparse.ArgumentParser:
    return sub.add_parser(  # type: ignore[no-any-return]
        name, parents=[common], help=help_text, description=help_text
    )


def cluster(args: argparse.Namespace) -> Any:
    """The ApiClient for --kubeconfig/--context (kubectl's rules)."""
    return api_client(ClusterOptions(kubeconfig=args.kubeconfig, context=args.context))


def not_built(issue: int) -> Any:
    def handler(args: argparse.Namespace) -> int:
        raise UsageError(
            f"'topology-labeler {args.command}' is not built yet (tracked in issue {issue})"
        )

    return handler


def placeholder(
    sub: Any, common: argparse.ArgumentParser, name: str, help_text: str, issue: int
) -> None:
    p = add_command(sub, common, name, f"{help_text} [not built yet: issue {issue}]")
    p.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    p.set_defaults(handler=not_built(issue))
