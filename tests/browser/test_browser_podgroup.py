"""``advise --html`` for kube-scheduler PodGroups in a real browser (headless Chromium):
the job panel names kube-scheduler as the scheduler whose message it shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from selenium.webdriver.common.by import By

from labeler.cli import main
from labeler.core.profiles import oci_rdma
from tests.browser.pages import open_page
from tests.builders import node, pod
from tests.sim.kubesched.podgroups import gang


def _write(path: Path, items: list[dict[str, Any]]) -> str:
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


def test_a_gang_that_does_not_fit_shows_kube_schedulers_message(
    chrome: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    island, nb, lb = oci_rdma().topology.keys
    nodes = []
    for i in range(4):  # two local blocks of two 2-CPU nodes
        n = node(f"gpu-{i}").hostname().allocatable(cpu="2", pods="110").obj()
        n["metadata"]["labels"] = {island: "i1", nb: "nb1", lb: "lb1" if i < 2 else "lb2"}
        nodes.append(n)
    snap = _write(tmp_path / "snap.yaml", nodes)
    # three 2-CPU pods required in one local block: no block holds them
    pods = [
        pod(f"p{i}").namespace("ns").requests(cpu="2").scheduling_group("pg1").obj()
        for i in range(3)
    ]
    pg = _write(tmp_path / "pg.yaml", [gang("pg1", lb, 3), *pods])
    page = tmp_path / "map.html"
    argv = ["advise", "--from-snapshot", snap, "-f", pg, "--profile", "oci-rdma", "-o", "json"]
    assert main([*argv, "--html", str(page)]) == 3
    advice = json.loads(capsys.readouterr().out)
    open_page(chrome, page.as_uri())
    text = chrome.find_element(By.ID, "job").text
    assert "does NOT fit now" in text and "Kueue" not in text
    assert f"kube-scheduler: {advice['message']}" in text
