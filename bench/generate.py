"""Benchmark: 100,000 nodes from CSV → check → every output, time and peak memory.

Run by hand: ``python bench/generate.py [--nodes 100000]``. Peak memory is the process's
max RSS (ru_maxrss), which includes the interpreter and libraries.
"""

from __future__ import annotations

import argparse
import hashlib
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from labeler.core.check import check_positions
from labeler.core.positions import read_csv
from labeler.core.profiles import oci_rdma
from labeler.emit import Target, bundle, hypernodes, kueue


def write_csv(path: Path, n: int) -> None:
    """OCI-shaped cluster: 32 nodes per local block, 8 blocks per network block, 8 per island."""
    h = lambda s: hashlib.sha256(s.encode()).hexdigest()[:16]  # noqa: E731
    k = "oci.oraclecloud.com/rdma."
    with path.open("w", encoding="utf-8") as f:
        f.write(f"nodeName,{k}hpc_island_id,{k}network_block_id,{k}local_block_id\n")
        for i in range(n):
            lb, nb, isl = i // 32, i // 256, i // 2048
            f.write(f"gpu-{i:06d},{h(f'i{isl}')},{h(f'n{nb}')},{h(f'l{lb}')}\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=100_000)
    args = ap.parse_args()
    profile = oci_rdma()
    with tempfile.TemporaryDirectory() as d:
        csv_path = Path(d) / "nodes.csv"
        write_csv(csv_path, args.nodes)
        t0 = time.perf_counter()
        pset = read_csv(csv_path, profile.topology)
        t1 = time.perf_counter()
        report = check_positions(profile.topology, pset.positions, pset.tree_labels)
        assert report.ok
        t2 = time.perf_counter()
        opts = bundle.GenerateOptions(
            options=(
                kueue.KueueOptions(
                    flavor_node_labels={"node.kubernetes.io/instance-type": "BM.GPU.H100.8"}
                ),
                hypernodes.HyperNodeOptions(owner="oci-rdma"),
            )
        )
        target = Target(profile.topology, profile.name, pset.positions)
        outputs = bundle.build(target, opts)
        t3 = time.perf_counter()
        out_dir = Path(d) / "out"
        out_dir.mkdir()
        size = 0
        for o in outputs:
            text = o.text()
            size += len(text)
            (out_dir / o.filename).write_text(text, encoding="utf-8")
        t4 = time.perf_counter()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    n_hn = sum(len(o.docs) for o in outputs if o.filename == "volcano-hypernodes.yaml")
    print(f"nodes={args.nodes} hypernodes={n_hn} output={size / 1e6:.1f} MB")
    print(
        f"read_csv={t1 - t0:.2f}s check={t2 - t1:.2f}s build={t3 - t2:.2f}s "
        f"yaml+write={t4 - t3:.2f}s total={t4 - t0:.2f}s peak_rss={peak_mb:.0f} MB"
    )


if __name__ == "__main__":
    main()
