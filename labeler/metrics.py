"""Every Prometheus metric of the project, in one place (prefix ``topology_labeler_``).

Each process (agent, audit exporter) gets its own registry so tests can create many.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Info

from labeler import __version__

PREFIX = "topology_labeler"


def build_info(registry: CollectorRegistry, component: str) -> None:
    info = Info(f"{PREFIX}_build", "Version of topology-labeler", registry=registry)
    info.info({"version": __version__, "component": component})
