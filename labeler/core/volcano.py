"""Volcano's vocabulary, shared by what writes its objects (emit, and the stanza Kueue's
advice suggests for a Volcano job) and what models its scheduler (the Volcano simulator):
the release they follow unless ``--volcano-version`` says otherwise, a job's topology
mode, and the types of a HyperNode's members."""

from __future__ import annotations

from enum import StrEnum

VERSION = (1, 14)  # MAJOR, MINOR


class MemberType(StrEnum):
    """``spec.members[].type``: a member is a set of nodes, or a child HyperNode."""

    NODE = "Node"
    HYPERNODE = "HyperNode"


class TopologyMode(StrEnum):
    """``networkTopology.mode``: hard confines the job to one HyperNode up to the highest
    tier allowed; soft only prefers that."""

    HARD = "hard"
    SOFT = "soft"
