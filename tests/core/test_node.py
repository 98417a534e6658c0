"""The one node model: raw Node JSON/YAML → NodeInfo, read leniently; pure (no client)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from labeler.core.node import NodeInfo, Taint

ROOT = Path(__file__).resolve().parents[2]


def test_from_dict_reads_scheduling_facts() -> None:
    info = NodeInfo.from_dict(
        {
            "metadata": {
                "name": "n1",
                "uid": "u-1",
                "resourceVersion": 42,
                "labels": {"a": "1"},
                "annotations": {"b": "2"},
            },
            "spec": {
                "unschedulable": True,
                "taints": [
                    {"key": "gpu", "value": "bad", "effect": "NoSchedule"},
                    {"key": "drain", "effect": "NoExecute"},
                    "junk",
                ],
            },
            "status": {
                "allocatable": {"nvidia.com/gpu": "8"},
                "conditions": [
                    {"type": "MemoryPressure", "status": "False"},
                    {"type": "Ready", "status": "False"},
                ],
            },
        }
    )
    assert (info.name, info.uid, info.resource_version) == ("n1", "u-1", "42")
    assert info.labels == {"a": "1"} and info.annotations == {"b": "2"}
    assert info.allocatable == {"nvidia.com/gpu": "8"}
    assert info.unschedulable and not info.ready
    assert info.taints == (Taint("gpu", "bad", "NoSchedule"), Taint("drain", "", "NoExecute"))
    assert [str(t) for t in info.taints] == ["gpu=bad:NoSchedule", "drain:NoExecute"]


def test_missing_fields_take_their_defaults() -> None:
    info = NodeInfo.from_dict({"metadata": {"name": "bare"}})
    assert info.ready and not info.unschedulable  # no conditions: a hand-written snapshot
    assert (info.labels, info.allocatable, info.taints, info.uid) == ({}, {}, (), "")


def test_pure_modules_do_not_import_the_client() -> None:
    """NodePosition, audit facts and the node model must work without the kubernetes package
    loaded (snapshot files, unit tests, tools)."""
    code = (
        "import sys, labeler.core.node, labeler.core.quantity, labeler.sim.common.cluster, "
        "labeler.core.states, labeler.audit.jobview; "
        "sys.exit('kubernetes' in sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
