"""Every Prometheus metric of the project, in one place (prefix ``topology_labeler_``).

Each process (agent, audit exporter) gets its own registry so tests can create many.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from labeler.base.version import __version__

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
    unconfirmed_reads: Counter
    label_writes: Counter
    label_conflicts: Counter
    node_labeled: Gauge
    last_success: Gauge
    thread_errors: Counter
    label_unknown: Gauge


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
        unconfirmed_reads=Counter(
            f"{PREFIX}_source_unconfirmed_reads",
            "Source reads whose topology differed from the labels' and was held back, "
            "waiting for --confirm-reads reads in a row (a one-off answer stays here)",
            ["source"],
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
            "Label keys found holding a value topology-labeler does not own, or that another "
            "of its writers owns (each new one once)",
            registry=registry,
        ),
        node_labeled=Gauge(
            f"{PREFIX}_node_labeled",
            "1 when every level label of the profile is present and current on this node",
            registry=registry,
        ),
        last_success=Gauge(
            f"{PREFIX}_last_success_timestamp_seconds",
            "Unix time of the last reconcile that completed (labeled, no data or conflict)",
            registry=registry,
        ),
        thread_errors=Counter(
            f"{PREFIX}_agent_thread_errors",
            "Unexpected exceptions in the agent's threads (source, watch, loop); the source "
            "and watch recover, the loop ends the process",
            ["thread"],
            registry=registry,
        ),
        label_unknown=Gauge(
            f"{PREFIX}_label_unknown",
            "1 for each label of the profile that the last source reading could not tell, "
            "so it is neither written nor removed; cause: why (missing, wider-unknown, "
            "no-data, fabric-pending, fabric-failed); the agent's log says more",
            ["key", "cause"],
            registry=registry,
        ),
    )


# --- audit: nodes the topology-aware schedulers cannot see ----------------------
#
# Aggregates only, no per-node series: a 10,000-node cluster must not cost 10,000 series.
# The figures are published from one immutable snapshot per scrape (a custom collector), so
# a scrape never sees half of one recomputation and half of the next.


@dataclass(frozen=True)
class AuditFigures:
    """One consistent set of audit numbers, as the exporter publishes them (no per-node
    series). Plain values: the audit's report fills them without knowing Prometheus."""

    states: Mapping[str, int]  # labeled / partial / unlabeled / inconsistent -> nodes
    unlabeled_accelerators: Mapping[str, int]  # resource -> on partial + unlabeled nodes
    nesting_violations: Mapping[str, int]  # level name -> values with several parents
    domains: Mapping[str, int]  # level name -> distinct values
    foreign_nodes: int  # nodes with level labels not set by topology-labeler
    last_sync: float | None  # unix time the state was last known current


class AuditCollector(Collector):
    """Publishes the latest AuditFigures; nothing until the first list has completed."""

    def __init__(self, profile: str, figures: Callable[[], AuditFigures | None]) -> None:
        self.profile = profile
        self._figures = figures

    def describe(self) -> Iterable[Metric]:
        return []  # unchecked collector: the series depend on the cluster

    def collect(self) -> Iterable[Metric]:
        fig = self._figures()
        if fig is None:
            return
        p = self.profile
        per_key: tuple[tuple[str, str, str, Mapping[str, int]], ...] = (
            (
                "nodes",
                "Nodes in audit scope by label state (labeled, partial, unlabeled, inconsistent)",
                "state",
                fig.states,
            ),
            (
                "unlabeled_accelerators",
                "Allocatable accelerators on partial and unlabeled nodes: capacity that "
                "topology-aware schedulers (Kueue TAS, Volcano) cannot use",
                "resource",
                fig.unlabeled_accelerators,
            ),
            (
                "nesting_violations",
                "Level values found under more than one value of the next wider level",
                "level",
                fig.nesting_violations,
            ),
            (
                "domains",
                "Distinct topology domains (label values) per level among nodes in scope",
                "level",
                fig.domains,
            ),
        )
        for name, documentation, label, values in per_key:
            family = GaugeMetricFamily(f"{PREFIX}_{name}", documentation, labels=["profile", label])
            for key, n in values.items():
                family.add_metric([p, key], n)
            yield family
        foreign = GaugeMetricFamily(
            f"{PREFIX}_foreign_labeled_nodes",
            "Nodes in scope whose level labels were set by another tool or by hand "
            "(not in the topology-labeler.io/owned-labels annotation)",
            labels=["profile"],
        )
        foreign.add_metric([p], fig.foreign_nodes)
        yield foreign
        if fig.last_sync is not None:
            yield GaugeMetricFamily(
                f"{PREFIX}_audit_last_sync_timestamp_seconds",
                "Unix time the audit's view of the nodes was last confirmed current "
                "(list completed or watch event received)",
                value=fig.last_sync,
            )


@dataclass(frozen=True)
class AuditCounters:
    """How the exporter's watch is doing: re-lists (410 or start) and failed calls."""

    relists: Counter
    errors: Counter


def audit_metrics(
    registry: CollectorRegistry, profile: str, figures: Callable[[], AuditFigures | None]
) -> AuditCounters:
    """Register the audit exporter's metrics in a per-process registry."""
    build_info(registry, "audit")
    registry.register(AuditCollector(profile, figures))
    return AuditCounters(
        relists=Counter(
            f"{PREFIX}_audit_relists",
            "Full LISTs of nodes (at start and after a watch expired with 410)",
            registry=registry,
        ),
        errors=Counter(
            f"{PREFIX}_audit_watch_errors",
            "Failed list or watch calls of nodes, by error class",
            ["error"],
            registry=registry,
        ),
    )


# --- audit: the DRA ResourceSlice watch (one per driver of the scope) -------------------


def slice_watch_errors(registry: CollectorRegistry) -> Counter:
    """Failed list or watch calls of ResourceSlices, by driver and error class (a cluster
    that does not serve the API is not an error)."""
    return Counter(
        f"{PREFIX}_audit_resourceslice_watch_errors",
        "Failed list or watch calls of DRA ResourceSlices, by driver and error class",
        ["driver", "error"],
        registry=registry,
    )


# --- audit: hot swap (can Kueue replace a failed node of each admitted TAS Workload?) ---
#
# Counts by ClusterQueue only (a few series), published from the last computed view.


@dataclass(frozen=True)
class HotSwapFigures:
    by_cluster_queue: Mapping[str, Mapping[str, int]]  # ClusterQueue -> state -> Workloads
    at_risk_nodes: int  # nodes whose failure alone would evict some Workload
    computed: float  # unix time the view was computed
    kueue: bool  # Kueue's API is served


class HotSwapCollector(Collector):
    """Publishes the latest HotSwapFigures (nothing before the first view)."""

    def __init__(self, figures: Callable[[], HotSwapFigures | None]) -> None:
        self._figures = figures

    def describe(self) -> Iterable[Metric]:
        return ()  # no fixed series: the ClusterQueues are the cluster's

    def collect(self) -> Iterable[Metric]:
        fig = self._figures()
        return () if fig is None else self._families(fig)

    @staticmethod
    def _families(fig: HotSwapFigures) -> Sequence[Metric]:
        workloads = GaugeMetricFamily(
            f"{PREFIX}_hotswap_workloads",
            "Admitted TAS Workloads by whether Kueue could replace any one of their nodes "
            "now (state: replaceable, not_replaceable, exempt), by ClusterQueue",
            labels=["cluster_queue", "state"],
        )
        for cq, states in fig.by_cluster_queue.items():
            for state, n in states.items():
                workloads.add_metric([cq, state], n)
        singles = (
            ("at_risk_nodes", "Nodes whose failure alone would evict (or strand) an admitted "
             "TAS Workload", fig.at_risk_nodes),
            ("kueue_served", "1 when Kueue's API is served (the hot-swap view is computed), "
             "0 when not", 1 if fig.kueue else 0),
            ("last_computed_timestamp_seconds", "Unix time the hot-swap view was last "
             "computed from the watched state", fig.computed),
        )  # fmt: skip
        return [workloads] + [
            GaugeMetricFamily(f"{PREFIX}_hotswap_{name}", text, value=value)
            for name, text, value in singles
        ]


def hotswap_metrics(
    registry: CollectorRegistry, figures: Callable[[], HotSwapFigures | None]
) -> Counter:
    """Register the hot-swap gauges; returns the Workload watch's error counter."""
    registry.register(HotSwapCollector(figures))
    return Counter(
        f"{PREFIX}_hotswap_watch_errors",
        "Failed list or watch calls of Kueue's Workloads, by error class",
        ["error"],
        registry=registry,
    )


# --- audit: how fresh each watched resource is --------------------------------------


class StalenessCollector(Collector):
    """Publishes, per watched resource, the seconds since it was last in sync."""

    def __init__(self, read: Callable[[], Iterable[tuple[str, str, float]]]) -> None:
        self._read = read  # (resource, DRA driver or "", seconds) per watch

    def describe(self) -> Iterable[Metric]:
        return ()  # no fixed series: the watches depend on the scope

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(
            f"{PREFIX}_audit_stale_seconds",
            "Seconds since the exporter's view of each watched resource was last in sync "
            "with the API server: 0 while its watch is open, counting from the failure that "
            "broke it (from the start, before the first LIST)",
            labels=["resource", "driver"],
        )
        for resource, driver, seconds in self._read():
            family.add_metric([resource, driver], seconds)
        yield family


def watch_staleness(
    registry: CollectorRegistry, read: Callable[[], Iterable[tuple[str, str, float]]]
) -> None:
    registry.register(StalenessCollector(read))
