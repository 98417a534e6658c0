"""Every Prometheus metric of the project, in one place (prefix ``topology_labeler_``).

Each process (agent, audit exporter) gets its own registry so tests can create many.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info

from labeler import __version__

PREFIX = "topology_labeler"


def build_info(registry: CollectorRegistry, component: str) -> None:
    info = Info(f"{PREFIX}_build", "Version of topology-labeler", registry=registry)
    info.info({"version": __version__, "component": component})


# --- agent (DaemonSet) --------------------------------------------------------------------


@dataclass(frozen=True)
class AgentMetrics:
    """The per-node agent's metrics; one set per process registry."""

    registry: CollectorRegistry
    source_reads: Counter
    source_read_duration: Histogram
    label_writes: Counter
    label_conflicts: Counter
    node_labeled: Gauge
    last_success: Gauge


def agent_metrics(registry: CollectorRegistry) -> AgentMetrics:
    build_info(registry, "agent")
    return AgentMetrics(
        registry=registry,
        source_reads=Counter(
            f"{PREFIX}_source_reads",
            "Topology source reads by result (reading, no_data, error)",
            ["source", "result"],
            registry=registry,
        ),
        source_read_duration=Histogram(
            f"{PREFIX}_source_read_duration_seconds",
            "Time to read the topology source, retries included",
            ["source"],
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=registry,
        ),
        label_writes=Counter(
            f"{PREFIX}_label_writes",
            "Label patches sent for this node by result (success, error)",
            ["result"],
            registry=registry,
        ),
        label_conflicts=Counter(
            f"{PREFIX}_label_conflicts",
            "Label keys found holding a value topology-labeler does not own (each new one once)",
            registry=registry,
        ),
        node_labeled=Gauge(
            f"{PREFIX}_node_labeled",
            "1 when every level label of the profile is present and current on this node",
            registry=registry,
        ),
        last_success=Gauge(
            f"{PREFIX}_last_success_timestamp_seconds",
            "Unix time of the last reconcile that completed (labelled, no data or conflict)",
            registry=registry,
        ),
    )
