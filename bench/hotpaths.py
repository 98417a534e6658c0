"""Benchmark: the pure hot paths of this tree against another checkout's, in one process.

    .venv/bin/python bench/hotpaths.py --before /path/to/old/checkout [--rounds 10] [--only NAME]

For each case the module it times (``labeler/core/sheet.py``, ...) is loaded twice, from
the other checkout and from this tree, with the rest of ``labeler`` from this tree; the
two copies are called alternately on the same data, the garbage collector off while
timing (with it on, single runs of the other benchmarks varied by ±30 % on the shared
machine). Prints the best CPU time (``time.process_time``) of each, their ratio, and
whether the two results are equal (compared by ``repr``). The old module must still import
from this tree, so this measures a change inside one module (a refactoring, a faster
loop), not one across the tree. Not a test: run it by hand, copy the ratios into
bench/README.md.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

TREE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TREE))

from labeler.core.positions import PositionSet, read_csv  # noqa: E402
from labeler.core.profiles import oci_rdma  # noqa: E402
from labeler.core.scope import Scope  # noqa: E402
from tests.topomap.big import nodes as map_nodes  # noqa: E402

TOPOLOGY = oci_rdma().topology


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def bench(name: str) -> ModuleType:
    """One of the other benchmarks of this folder, for its data."""
    return load(TREE / "bench" / f"{name}.py", f"bench_{name}")


def csv_data() -> tuple[bytes, PositionSet]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "nodes.csv"
        bench("generate").write_csv(path, 100_000)
        return path.read_bytes(), read_csv(path, TOPOLOGY)


def plan_case(case: str) -> Callable[[ModuleType], Any]:
    plan = bench("plan")
    sheet = plan.sheet_of(10_000, changed=case == "changed")
    nodes = plan.nodes_of(10_000, labeled=case != "cold")
    rows = {r.node: r.values for r in sheet.rows}

    def run(m: ModuleType) -> list[Any]:
        bulk = m.Writer.BULK if hasattr(m, "Writer") else m.BULK  # a string before the enum
        return [m.plan_labels(n, m.Desired(set=rows[n.name], writer=bulk)) for n in nodes]

    return run


def map_case() -> Callable[[ModuleType], Any]:
    from labeler.topomap.model import details_from_nodes, facts_from_nodes

    nodes = map_nodes(100_000)
    facts = facts_from_nodes(TOPOLOGY, Scope(), nodes)
    details = details_from_nodes(nodes, {f.name: [r for r, _ in f.accelerators] for f in facts})
    return lambda m: m.build_map(
        TOPOLOGY, facts, profile="p", scope="s", origin="o", details=details
    )


def capacity_case(leader: bool) -> Callable[[ModuleType], Any]:
    from labeler.sim.common.shape import PodShape
    from labeler.sim.kueue.tree import build_tree

    tree = build_tree(TOPOLOGY, map_nodes(20_000))
    shape = PodShape(requests={"nvidia.com/gpu": 4})
    return lambda m: m.leaf_capacity(tree, shape, leader=shape if leader else None)


def cases() -> dict[str, tuple[str, Callable[[], Callable[[ModuleType], Any]]]]:
    """Name → (the module it times, a maker of the call: data are built only when run)."""
    shared: dict[str, tuple[bytes, PositionSet]] = {}

    def csv() -> tuple[bytes, PositionSet]:
        if "csv" not in shared:
            shared["csv"] = csv_data()
        return shared["csv"]

    def parse() -> Callable[[ModuleType], Any]:
        data = csv()[0]
        return lambda m: m.parse_label_csv(data, "nodes.csv", level_keys=TOPOLOGY.keys)

    def check() -> Callable[[ModuleType], Any]:
        pset = csv()[1]
        return lambda m: m.check_positions(TOPOLOGY, pset.positions, pset.tree_labels)

    def hypernodes() -> Callable[[ModuleType], Any]:
        pset = csv()[1]
        return lambda m: m.build_hypernodes(TOPOLOGY, pset.positions)

    return {
        "parse_label_csv 100k rows": ("labeler/core/sheet.py", parse),
        "check_positions 100k": ("labeler/core/check.py", check),
        "plan_labels 10k cold": ("labeler/core/plan.py", lambda: plan_case("cold")),
        "plan_labels 10k unchanged": ("labeler/core/plan.py", lambda: plan_case("unchanged")),
        "plan_labels 10k changed": ("labeler/core/plan.py", lambda: plan_case("changed")),
        "build_map 100k": ("labeler/topomap/model.py", map_case),
        "leaf_capacity 20k": ("labeler/sim/kueue/tree.py", lambda: capacity_case(False)),
        "leaf_capacity 20k leader": ("labeler/sim/kueue/tree.py", lambda: capacity_case(True)),
        "build_hypernodes 100k": ("labeler/emit/hypernodes.py", hypernodes),
    }


def best_of(call: Callable[[ModuleType], Any], module: ModuleType, best: float) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        call(module)
        return min(best, time.process_time() - start)
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, type=Path, help="the other checkout")
    parser.add_argument("--rounds", type=int, default=10, help="calls of each copy (best kept)")
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    args = parser.parse_args()
    print(f"before: {args.before}; after: {TREE}; best of {args.rounds}")
    for i, (name, (module, make)) in enumerate(cases().items()):
        if args.only not in name:
            continue
        old = load(args.before / module, f"before_{i}")
        new = load(TREE / module, f"after_{i}")
        call = make()
        same = repr(call(old)) == repr(call(new))
        t_old = t_new = float("inf")
        for _ in range(args.rounds):
            t_old = best_of(call, old, t_old)
            t_new = best_of(call, new, t_new)
        print(
            f"{name:27} before {t_old * 1e3:7.1f} ms  after {t_new * 1e3:7.1f} ms  "
            f"ratio {t_new / t_old:.3f}  same result: {'yes' if same else 'NO'}"
        )


if __name__ == "__main__":
    main()
