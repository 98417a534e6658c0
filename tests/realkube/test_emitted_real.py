"""What ``generate`` writes and ``advise`` prints, accepted by the real API server with the
released CRDs (their OpenAPI schemas and CEL rules) and Volcano's HyperNode admission policy
installed: by server-side apply, and a second apply changes nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import ROOT
from tests.realkube import processes
from tests.realkube.controlplane import ControlPlane

CSV = ROOT / "examples" / "oci-cluster.csv"


def versions(plane: ControlPlane, files: list[Path]) -> dict[str, str]:
    """kind/name → resourceVersion of every object in the files, as the server holds them."""
    got = json.loads(plane.kubectl("get", *(f"--filename={f}" for f in files), "-o", "json").stdout)
    items = got.get("items", [got])
    return {f"{o['kind']}/{o['metadata']['name']}": o["metadata"]["resourceVersion"] for o in items}


def apply_twice(plane: ControlPlane, files: list[Path]) -> dict[str, str]:
    args = (
        "apply",
        "--server-side",
        "--field-manager=topology-test",
        *(f"--filename={f}" for f in files),
    )
    plane.kubectl(*args)
    first = versions(plane, files)
    plane.kubectl(*args)
    assert versions(plane, files) == first, "a second apply changed an object"
    return first


def test_generated_kueue_and_volcano_objects_pass_admission(
    crds: ControlPlane, tmp_path: Path
) -> None:
    out = tmp_path / "gen"
    flavor = "node.kubernetes.io/instance-type=BM.GPU.H100.8"
    done = processes.cli(
        "generate",
        "--profile",
        "oci-rdma",
        "--from-csv",
        str(CSV),
        "--output-dir",
        str(out),
        "--flavor-node-label",
        flavor,
        "--flavor-toleration",
        "nvidia.com/gpu:NoSchedule",
    )
    assert done.returncode == 0, done.stderr
    files = [
        out / "kueue-topology.yaml",
        out / "kueue-resourceflavor.yaml",
        out / "volcano-hypernodes.yaml",
    ]
    held = apply_twice(crds, files)
    assert sum(k.startswith("HyperNode/") for k in held) >= 3
    assert {"Topology/oci-rdma", "ResourceFlavor/oci-rdma"} <= set(held)


def test_generate_apply_writes_through_the_tool_and_a_rerun_changes_nothing(
    crds: ControlPlane, tmp_path: Path
) -> None:
    args = (
        "generate",
        "--profile",
        "oci-rdma",
        "--from-csv",
        str(CSV),
        "--topology-name",
        "via-tool",
        "--hypernode-prefix",
        "via-tool-",
        "--apply",
    )
    first = processes.cli(*args, kubeconfig=crds.kubeconfig)
    assert first.returncode == 0, first.stderr
    objects = json.loads(
        crds.kubectl("get", "topologies.kueue.x-k8s.io,hypernodes", "-o", "json").stdout
    )["items"]
    ours = {
        f"{o['kind']}/{o['metadata']['name']}": o["metadata"]["resourceVersion"]
        for o in objects
        if o["metadata"]["name"].startswith("via-tool")
    }
    assert "Topology/via-tool" in ours and any(k.startswith("HyperNode/via-tool-") for k in ours)
    again = processes.cli(*args, kubeconfig=crds.kubeconfig)
    assert again.returncode == 0, again.stderr
    objects = json.loads(
        crds.kubectl("get", "topologies.kueue.x-k8s.io,hypernodes", "-o", "json").stdout
    )["items"]
    assert {
        f"{o['kind']}/{o['metadata']['name']}": o["metadata"]["resourceVersion"]
        for o in objects
        if o["metadata"]["name"].startswith("via-tool")
    } == ours


def test_hypernode_policy_is_live(crds: ControlPlane) -> None:
    """The check above means something only if Volcano's policy refuses what it should: a
    member with two selectors at once."""
    bad = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "bad-two-selectors"},
        "spec": {
            "tier": 1,
            "members": [
                {
                    "type": "Node",
                    "selector": {"exactMatch": {"name": "a"}, "regexMatch": {"pattern": "a.*"}},
                }
            ],
        },
    }
    refused = crds.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(bad), check=False)
    assert refused.returncode != 0
    assert "denied" in refused.stderr.lower() or "invalid" in refused.stderr.lower(), refused.stderr


def test_merged_init_params_configmap_is_accepted(crds: ControlPlane, tmp_path: Path) -> None:
    conf = {"actions": "enqueue, allocate, backfill", "tiers": [{"plugins": [{"name": "gang"}]}]}
    cm = tmp_path / "volcano-scheduler-configmap.yaml"
    cm.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "volcano-scheduler-configmap", "namespace": "default"},
                "data": {"volcano-scheduler.conf": yaml.safe_dump(conf)},
            }
        )
    )
    done = processes.cli(
        "generate", "--profile", "oci-rdma", "--from-csv", str(CSV), "--merge-into", str(cm)
    )
    assert done.returncode == 0, done.stderr
    held = yaml.safe_load(yaml.safe_load(cm.read_text())["data"]["volcano-scheduler.conf"])
    init = next(c for c in held["configurations"] if c["name"] == "init-params")
    assert "resource-level-config" in init["arguments"]
    apply_twice(crds, [cm])


def _stanza(advice: str) -> dict[str, Any]:
    """The ``schedulingConstraints`` block ``advise`` prints for a kube-scheduler PodGroup."""
    match = re.search(r"^(\s*)schedulingConstraints:\n((?:\1\s+.*\n)+)", advice, re.M)
    assert match, advice
    block = match.group(0)
    indent = len(match.group(1))
    stanza: dict[str, Any] = yaml.safe_load("\n".join(line[indent:] for line in block.splitlines()))
    return stanza


def test_podgroup_with_the_stanza_advise_prints_is_accepted(
    crds: ControlPlane, tmp_path: Path
) -> None:
    advice = processes.cli(
        "advise",
        "--profile",
        "oci-rdma",
        "--from-snapshot",
        str(ROOT / "examples" / "snapshot-oci.yaml"),
        "--pods",
        "4",
        "--request",
        "nvidia.com/gpu=8",
        "--required",
        "local_block",
    )
    assert advice.returncode == 3, advice.stderr  # does not fit now: 3, as documented
    stanza = _stanza(advice.stdout)
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "advised", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}, **stanza},
    }
    path = tmp_path / "podgroup.yaml"
    path.write_text(yaml.safe_dump(group))
    apply_twice(crds, [path])
    held = json.loads(crds.kubectl("get", "-f", str(path), "-o", "json").stdout)
    assert held["spec"]["schedulingConstraints"] == stanza["schedulingConstraints"]
