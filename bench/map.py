"""Benchmark: the topology map of N nodes: build, render, file size, and the time a headless
Chromium takes from navigation start until the page has drawn every box (layout included).

Run by hand: ``python bench/map.py [--nodes 10000]`` (needs Debian's chromium and
chromium-driver, and selenium from the test extras). Each node carries 16 labels like a
real GPU node (4 of them unique to it), 8 GPUs, some busy; 3 % partial, 2 % unlabeled,
1 % tainted.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from labeler.core.capacity import Node
from labeler.core.node import Taint
from labeler.core.profiles import oci_rdma
from labeler.core.scope import Scope
from labeler.topomap.model import build_map, details_from_nodes, facts_from_nodes
from labeler.topomap.render import render_html

P = "oci.oraclecloud.com/rdma."
SHARED = {
    "beta.kubernetes.io/arch": "amd64",
    "kubernetes.io/arch": "amd64",
    "kubernetes.io/os": "linux",
    "node.kubernetes.io/instance-type": "BM.GPU.H100.8",
    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
    "nvidia.com/gpu.count": "8",
    "topology.kubernetes.io/region": "us-ashburn-1",
    "topology.kubernetes.io/zone": "US-ASHBURN-AD-1",
    "oci.oraclecloud.com/fault-domain": "FAULT-DOMAIN-1",
}


def nodes(n: int, seed: int = 7) -> list[Node]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        name = f"gpu-{i:05d}"
        labels = dict(SHARED)
        labels["kubernetes.io/hostname"] = name
        labels["displayName"] = f"inst-{rng.getrandbits(40):x}"
        labels["internal_addr"] = f"10.{i // 65536}.{i // 256 % 256}.{i % 256}"
        labels["oci.oraclecloud.com/host.serial_number"] = f"{rng.getrandbits(48):012x}"
        levels = {
            P + "hpc_island_id": f"island-{i // 2000}",
            P + "network_block_id": f"nb-{i // 400}",
            P + "local_block_id": f"lb-{i // 20}",
        }
        roll = rng.random()
        if roll < 0.02:
            levels = {}
        elif roll < 0.05:
            levels.pop(P + "local_block_id")
        labels.update(levels)
        taints = (Taint("nvidia.com/gpu-health", "degraded", "NoSchedule"),) if roll > 0.99 else ()
        used = {"nvidia.com/gpu": rng.choice((0, 0, 4, 8, 8))}
        out.append(Node(name, labels, {"nvidia.com/gpu": 8, "cpu": 224000}, used, taints))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3, help="browser loads (the median is shown)")
    args = ap.parse_args()
    topology = oci_rdma().topology
    data = nodes(args.nodes)

    t0 = time.perf_counter()
    facts = facts_from_nodes(topology, Scope(), data)
    details = details_from_nodes(data, {f.name: [r for r, _ in f.accelerators] for f in facts})
    topo = build_map(topology, facts, profile="oci-rdma", scope="bench", origin="bench",
                     details=details)  # fmt: skip
    t1 = time.perf_counter()
    page = render_html(topo)
    t2 = time.perf_counter()
    size = len(page.encode())

    # Imported here so that other benchmarks can use nodes() without selenium.
    from tests.topomap.browser import start_browser

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "map.html"
        path.write_text(page, encoding="utf-8")
        driver = start_browser()
        try:
            render_ms, load_s, boxes = [], [], 0
            for _ in range(args.runs):
                driver.get("about:blank")
                started = time.perf_counter()
                driver.get(path.as_uri())
                load_s.append(time.perf_counter() - started)
                render_ms.append(int(driver.execute_script(
                    "return +document.documentElement.dataset.renderMs")))  # fmt: skip
                boxes = driver.execute_script("return document.querySelectorAll('i.n').length")
        finally:
            driver.quit()
    render_ms.sort()
    load_s.sort()
    print(f"nodes={args.nodes} domains={len(topo.domains)} boxes={boxes}")
    print(f"build={t1 - t0:.2f}s render_html={t2 - t1:.2f}s size={size / 1e6:.2f}MB")
    print(
        f"browser: drawn {render_ms[len(render_ms) // 2]} ms after navigation start "
        f"(runs: {render_ms}); driver.get returned after {load_s[len(load_s) // 2]:.2f}s"
    )


if __name__ == "__main__":
    main()
