"""Volcano's HyperNode vocabulary, shared by the feature that writes HyperNodes (emit) and
the one that reads them (Volcano's simulator)."""

from __future__ import annotations

from enum import StrEnum


class MemberType(StrEnum):
    """``spec.members[].type``: a member is a set of nodes, or a child HyperNode."""

    NODE = "Node"
    HYPERNODE = "HyperNode"
