"""Volcano's vocabulary, shared by the feature that writes its objects (emit) and the one
that models its scheduler (the Volcano simulator): the release both follow unless
``--volcano-version`` says otherwise, and the types of a HyperNode's members."""

from __future__ import annotations

from enum import StrEnum

VERSION = (1, 14)  # MAJOR, MINOR


class MemberType(StrEnum):
    """``spec.members[].type``: a member is a set of nodes, or a child HyperNode."""

    NODE = "Node"
    HYPERNODE = "HyperNode"
