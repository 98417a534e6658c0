"""Pick the agent's topology source from ``profile.source``: one small table to extend.

Each factory gets the profile, the parsed command line and the stop event (so that a
source's retries end on SIGTERM). Source-specific flags belong to the source's factory.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable

from labeler.errors import UsageError
from labeler.profiles import Profile
from labeler.sources import Source

Factory = Callable[[Profile, argparse.Namespace, threading.Event], Source]


def _oci_imds(profile: Profile, args: argparse.Namespace, stop: threading.Event) -> Source:
    from labeler.sources.oci_imds import DEFAULT_IMDS_URL, ImdsOptions, OciImdsSource, oci_keys

    options = ImdsOptions(
        url=getattr(args, "imds_url", None) or DEFAULT_IMDS_URL,
        connect_timeout=getattr(args, "imds_timeout", 2.0),
        read_timeout=getattr(args, "imds_timeout", 2.0),
        attempts=getattr(args, "imds_attempts", 3),
    )
    return OciImdsSource(oci_keys(profile), options, stop=stop)


def _ascend(profile: Profile, args: argparse.Namespace, stop: threading.Event) -> Source:
    from labeler.sources.ascend import AscendSource, check_tree_name, make_reader
    from labeler.sources.ascend.npusmi import DEFAULT_NPU_SMI, DEFAULT_TIMEOUT

    tree_label = profile.topology.tree_label
    if tree_label:
        check_tree_name(profile.topology.name, tree_label)
    reader = make_reader(
        getattr(args, "ascend_reader", None) or "auto",
        dcmi_lib=getattr(args, "dcmi_lib", None),
        npu_smi=getattr(args, "npu_smi", None) or DEFAULT_NPU_SMI,
        timeout=getattr(args, "npu_smi_timeout", None) or DEFAULT_TIMEOUT,
    )
    generation = getattr(args, "ascend_generation", None) or "auto"
    if tree_label:
        return AscendSource(reader, generation=generation, tree_label=tree_label)
    return AscendSource(reader, generation=generation)


SOURCES: dict[str, Factory] = {
    "oci-imds": _oci_imds,
    "ascend": _ascend,
}


def make_source(
    profile: Profile, args: argparse.Namespace, stop: threading.Event | None = None
) -> Source:
    factory = SOURCES.get(profile.source)
    if factory is None:
        raise UsageError(
            f"profile {profile.name!r} uses source {profile.source!r}, which the agent cannot "
            f"read; agent sources: {', '.join(sorted(SOURCES))}"
        )
    return factory(profile, args, stop or threading.Event())
