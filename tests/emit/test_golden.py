"""Golden files for every output on three small clusters (OCI 3-level, Ascend 2-level,
custom 4-level). Regenerate after an intended change with ``UPDATE_GOLDEN=1 pytest``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from labeler.core.check import check_positions
from labeler.core.positions import read_csv
from labeler.core.profiles import load_profile
from labeler.emit import Output, Target, bundle, hypernodes, kueue

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
INPUTS = GOLDEN / "inputs"

CASES = {
    "oci": dict(
        profile="oci-rdma",
        csv="oci.csv",
        flavor={"node.kubernetes.io/instance-type": "BM.GPU.H100.8"},
        tolerations=("nvidia.com/gpu:NoSchedule",),
        version=(1, 14),
    ),
    "ascend": dict(
        profile="ascend-superpod",
        csv="ascend.csv",
        flavor={"accelerator": "huawei-Ascend910"},
        tolerations=(),
        version=(1, 13),  # no tierName before 1.14
    ),
    "custom": dict(
        profile=str(INPUTS / "custom-profile.yaml"),
        csv="custom.csv",
        flavor={},  # no ResourceFlavor without --flavor-node-label
        tolerations=(),
        version=(1, 14),
    ),
}


def outputs(case: str) -> list[Output]:
    c = CASES[case]
    profile = load_profile(str(c["profile"]))
    pset = read_csv(INPUTS / str(c["csv"]), profile.topology)
    assert check_positions(profile.topology, pset.positions, pset.tree_labels).ok
    opts = bundle.GenerateOptions(
        options=(
            kueue.KueueOptions(
                flavor_node_labels=c["flavor"],  # type: ignore[arg-type]
                tolerations=tuple(kueue.parse_toleration(t) for t in c["tolerations"]),  # type: ignore[attr-defined]
            ),
            hypernodes.HyperNodeOptions(
                volcano_version=c["version"],  # type: ignore[arg-type]
                owner=hypernodes.owner_value(profile.name, profile.topology.name),
            ),
        ),
    )
    return bundle.build(Target(profile.topology, profile.name, pset.positions), opts)


@pytest.mark.parametrize("case", sorted(CASES))
def test_outputs_match_golden_files(case: str) -> None:
    produced = {o.filename: o.text() for o in outputs(case)}
    folder = GOLDEN / case
    if os.environ.get("UPDATE_GOLDEN"):
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.yaml"):
            old.unlink()
        for name, text in produced.items():
            (folder / name).write_text(text, encoding="utf-8")
    expected = {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*.yaml")}
    assert sorted(produced) == sorted(expected)
    for name, text in produced.items():
        assert text == expected[name], f"{case}/{name} differs from the golden file"


def test_generation_is_deterministic_and_order_independent() -> None:
    profile = load_profile("oci-rdma")
    pset = read_csv(INPUTS / "oci.csv", profile.topology)
    opts = bundle.GenerateOptions()
    forward = Target(profile.topology, profile.name, pset.positions)
    backward = Target(profile.topology, profile.name, list(reversed(pset.positions)))
    a = [o.text() for o in bundle.build(forward, opts)]
    b = [o.text() for o in bundle.build(backward, opts)]
    assert a == b


def test_hypernode_names_stable_when_nodes_are_added() -> None:
    profile = load_profile("oci-rdma")
    pset = read_csv(INPUTS / "oci.csv", profile.topology)
    before = hypernodes.build_hypernodes(profile.topology, pset.positions[:-1])
    after = hypernodes.build_hypernodes(profile.topology, pset.positions)
    names_before = {d["metadata"]["name"] for d in before}
    names_after = {d["metadata"]["name"] for d in after}
    assert names_before == names_after
