"""``advise --html`` for a Volcano Job in a real browser (headless Chromium): without a
profile the map's levels are the HyperNode tiers, and it shows what ``-o json`` says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from selenium.webdriver.common.by import By

from labeler.cli import main
from tests.browser.pages import open_page

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = str(ROOT / "examples" / "snapshot-volcano.yaml")
JOB = ROOT / "examples" / "volcano-job.yaml"


def _advise(capsys: pytest.CaptureFixture[str], tmp_path: Path, job: Path) -> tuple[int, Any, Path]:
    page = tmp_path / "volcano.html"
    argv = ["advise", "-f", str(job), "--from-snapshot", SNAPSHOT]
    code = main([*argv, "-o", "json", "--html", str(page)])
    out, err = capsys.readouterr()
    assert str(page) in err
    return code, json.loads(out), page


def test_volcano_placement_drawn_on_the_hypernode_tiers(
    chrome: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = yaml.safe_load(JOB.read_text())
    doc["spec"]["tasks"] = doc["spec"]["tasks"][1:]  # the workers alone, anywhere in the spine
    doc["spec"]["minAvailable"] = 4
    doc["spec"]["networkTopology"]["highestTierName"] = "spine"
    job = tmp_path / "workers.yaml"
    job.write_text(yaml.safe_dump(doc))
    code, advice, page = _advise(capsys, tmp_path, job)
    assert code == 0 and advice["hyperNode"] == "spine"
    dom = open_page(chrome, page.as_uri())
    assert dom["hl"] == [{"role": "placement", "path": ["spine"]}]
    placed = {b["name"]: int(b["text"]) for b in dom["boxes"] if "p" in b["cls"].split()}
    assert placed == {p["node"]: 1 for p in advice["pods"]}
    racks = {b["name"]: b["path"] for b in dom["boxes"]}
    assert all(racks[p["node"]] == ["spine", p["hyperNode"]] for p in advice["pods"])
    assert "FITS now (Volcano): 4 pod(s) within HyperNode spine" in (
        chrome.find_element(By.ID, "job").text
    )


def test_volcano_gang_that_does_not_fit_names_the_blockers(
    chrome: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, advice, page = _advise(capsys, tmp_path, JOB)
    assert code == 3 and advice["pods"] == []
    dom = open_page(chrome, page.as_uri())
    blocked = {b["name"] for b in dom["boxes"] if "b" in b["cls"].split()}
    assert {"gpu-a0", "gpu-b0"} <= blocked  # the coordinator's nodeSelector is node-role=cpu
    text = chrome.find_element(By.ID, "job").text
    assert "does NOT fit now (Volcano)" in text and "Kueue" not in text
    assert f"Volcano: {advice['message']}" in text
