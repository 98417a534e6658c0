"""--merge-into: set only resource-level-config in the Volcano scheduler ConfigMap."""

from __future__ import annotations

import json

import pytest
import yaml

from labeler.base.errors import InputError
from labeler.core.profiles import ascend_superpod, oci_rdma
from labeler.emit.configmap import merge_resource_level_config

CM = """apiVersion: v1
kind: ConfigMap
metadata:
  name: volcano-scheduler-configmap
  namespace: volcano-system
data:
  volcano-scheduler.conf: |
    actions: "enqueue, allocate, backfill"
    tiers:
    - plugins:
      - name: priority
      - name: gang
        enableNodeOrder: false
      - name: volcano-npu_v26.1.0_linux-x86_64
    configurations:
      - name: init-params
        arguments: {"a":"9","resource-level-config": '{"other": {"level1": {"label": "x/y"}}}'}
      - name: enqueue
        arguments: {"overcommit-factor": 1.2}
"""

OTHER = """apiVersion: v1
kind: ServiceAccount
metadata:
  name: volcano-scheduler   # a comment that must survive
"""


def conf_of(text: str) -> dict:  # type: ignore[type-arg]
    docs = [d for d in yaml.safe_load_all(text) if d and d.get("kind") == "ConfigMap"]
    return yaml.safe_load(docs[0]["data"]["volcano-scheduler.conf"])  # type: ignore[no-any-return]


def test_sets_only_resource_level_config_and_keeps_everything_else() -> None:
    topo = ascend_superpod().topology
    r = merge_resource_level_config(CM, topo, origin="cm.yaml")
    assert r.changed
    before, after = conf_of(CM), conf_of(r.text)
    args = after["configurations"][0]["arguments"]
    assert json.loads(args.pop("resource-level-config")) == {
        "other": {"level1": {"label": "x/y"}},
        "default": {
            "level1": {"label": "huawei.com/topotree.superpodid"},
            "level2": {"label": "huawei.com/topotree.groupid"},
        },
    }
    before["configurations"][0]["arguments"].pop("resource-level-config")
    assert after == before  # actions, tiers, other arguments and configurations unchanged
    assert any("kept the other trees" in n for n in r.notes)
    again = merge_resource_level_config(r.text, topo, origin="cm.yaml")
    assert not again.changed and again.text == r.text


def test_creates_init_params_when_absent_and_keeps_other_documents() -> None:
    cm = CM.split("    configurations:")[0]
    text = OTHER + "---\n" + cm
    r = merge_resource_level_config(text, oci_rdma().topology, origin="volcano.yaml")
    assert r.text.startswith(OTHER + "---\n")  # byte for byte
    conf = conf_of(r.text)
    assert conf["configurations"][0]["name"] == "init-params"
    assert "hpc_island_id" in conf["configurations"][0]["arguments"]["resource-level-config"]
    assert conf["tiers"][0]["plugins"][1] == {"name": "gang", "enableNodeOrder": False}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (OTHER, "not a Volcano scheduler ConfigMap: found ServiceAccount/volcano-scheduler"),
        ("kind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n", "found ConfigMap/x"),
        (CM + "---\n" + CM, "holds 2 ConfigMaps"),
        ("a: [\n", "not valid YAML"),
        (
            "kind: ConfigMap\ndata:\n  volcano-scheduler.conf: 'configurations: 3'\n",
            "must be a list",
        ),
    ],
)
def test_refuses_what_is_not_the_scheduler_configmap(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        merge_resource_level_config(text, oci_rdma().topology, origin="f.yaml")
