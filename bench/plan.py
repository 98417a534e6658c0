"""Benchmark: CPU of ``plan_bulk`` (the pure diff of a CSV against the listed nodes).

    .venv/bin/python bench/plan.py [--nodes 10000] [--repeat 5]
    PYTHONPATH=/path/to/other/checkout .venv/bin/python bench/plan.py   # another tree

No cluster and no CSV file: the sheet and the nodes are built in memory as ``apply`` has
them after validation and the LIST (two labels per node; nodes we already labeled carry
our ``owned-labels``/``owned-by`` annotations, as ``list_node_labels`` keeps them). Cases:

- cold: the nodes have no labels of ours yet (every key is added);
- unchanged: the warm re-run (every key already holds its value);
- changed: one of the two keys changes on every node.

Prints, per case, the best of REPEAT runs of CPU time (``time.process_time``) in µs per
node. Not a test: run it by hand and copy the figures into bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import time

import labeler
from labeler.bulk.apply import BulkOptions, plan_bulk
from labeler.core.node import OWNED_ANNOTATION, OWNERS_ANNOTATION, NodeLabels
from labeler.core.plan import Writer
from labeler.core.sheet import CsvRow, LabelSheet

G = "huawei.com/topotree.groupid"
T = "huawei.com/topotree"
SEPARATORS = (",", ":")  # as the project writes its annotations


def sheet_of(count: int, *, changed: bool) -> LabelSheet:
    rows = tuple(
        CsvRow(f"node-{i:05d}", i + 2, {G: str(i // 64), T: "2" if changed else "1"})
        for i in range(count)
    )
    return LabelSheet("bench.csv", (G, T), rows)


def kubelet_labels(name: str) -> dict[str, str]:
    """The labels every node has before ours (as the fake API server of bench/bulk.py)."""
    return {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
    }


def nodes_of(count: int, *, labeled: bool) -> list[NodeLabels]:
    names = [f"node-{i:05d}" for i in range(count)]
    if not labeled:
        return [NodeLabels(name, kubelet_labels(name), {}, "1") for name in names]
    owners = {G: Writer.BULK, T: Writer.BULK}
    return [
        NodeLabels(
            name,
            {**kubelet_labels(name), G: str(i // 64), T: "1"},
            # A string object of its own per node, as parsed from a LIST answer (a str
            # caches its hash per object, so sharing one would flatter any cache by text).
            {
                OWNED_ANNOTATION: f"{G},{T}",
                OWNERS_ANNOTATION: json.dumps(owners, separators=SEPARATORS),
            },
            "2",
        )
        for i, name in enumerate(names)
    ]


def cpu_per_node(sheet: LabelSheet, nodes: list[NodeLabels], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        plan = plan_bulk(sheet, nodes, BulkOptions())
        best = min(best, time.process_time() - start)
    assert len(plan.diffs) == len(nodes)
    return best / len(nodes) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"labeler from {labeler.__file__}; {args.nodes} nodes, best of {args.repeat}")
    cases = {
        "cold": (sheet_of(args.nodes, changed=False), nodes_of(args.nodes, labeled=False)),
        "unchanged": (sheet_of(args.nodes, changed=False), nodes_of(args.nodes, labeled=True)),
        "changed": (sheet_of(args.nodes, changed=True), nodes_of(args.nodes, labeled=True)),
    }
    for name, (sheet, nodes) in cases.items():
        print(f"{name:>10}: {cpu_per_node(sheet, nodes, args.repeat):6.1f} µs/node")


if __name__ == "__main__":
    main()
