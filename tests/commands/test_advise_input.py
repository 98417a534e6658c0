"""``advise -f FILE``: the file is read once and its objects say which scheduler answers.

Read once matters to a user who pipes a manifest in (``kubectl get … -o yaml | advise -f
/dev/stdin``): a pipe can be read only once, so every scheduler's input must work from one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from labeler.cli import main
from tests.builders import node, pod
from tests.fakekube import FakeKube
from tests.helpers import cli_env
from tests.sim.kubesched.podgroups import gang

ROOT = Path(__file__).resolve().parents[2]
OCI = ROOT / "examples" / "snapshot-oci.yaml"
VOLCANO = ROOT / "examples" / "snapshot-volcano.yaml"


def piped(manifest: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``advise -f /dev/stdin`` with ``manifest`` on a pipe, as a shell pipeline runs it."""
    return subprocess.run(
        [sys.executable, "-m", "labeler", "advise", "-f", "/dev/stdin", *args, "-o", "json"],
        input=manifest,
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=60,
        check=False,
    )


def _list(items: list[dict]) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items})


@pytest.mark.parametrize(
    ("manifest", "snapshot", "scheduler"),
    [
        (ROOT / "examples" / "jobset-leader-workers.yaml", OCI, "Kueue"),
        (ROOT / "examples" / "volcano-job.yaml", VOLCANO, "Volcano"),
    ],
)
def test_each_schedulers_manifest_works_from_a_pipe(
    manifest: Path, snapshot: Path, scheduler: str
) -> None:
    r = piped(manifest.read_text(), "--from-snapshot", str(snapshot))
    assert r.returncode == 3, r.stderr  # both examples are pending, and say why
    doc = json.loads(r.stdout)
    assert doc["fits"] is False
    if scheduler == "Kueue":
        assert doc["workloads"][0]["name"].endswith("llm-train")
    else:
        assert doc["message"].startswith("5/5 tasks in gang unschedulable")


def test_kube_scheduler_podgroups_work_from_a_pipe(tmp_path: Path) -> None:
    snap = tmp_path / "snapshot.yaml"
    snap.write_text(
        _list(
            [
                node(f"n{i}")
                .hostname()
                .labels({"rack": "rack-1", "zone": "zone-1"})
                .allocatable(cpu="2", pods="110")
                .obj()
                for i in (1, 2)
            ]
        )
    )
    r = piped(
        _list(
            [
                gang("pg1", "rack", 2),
                pod("p1").namespace("ns").requests(cpu="1").scheduling_group("pg1").obj(),
                pod("p2").namespace("ns").requests(cpu="1").scheduling_group("pg1").obj(),
            ]
        ),
        "--from-snapshot",
        str(snap),
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["scheduler"] == "kube-scheduler" and {p["node"] for p in doc["pods"]} == {
        "n1",
        "n2",
    }


def test_a_file_no_scheduler_reads_names_the_file_and_what_it_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "svc.yaml"
    f.write_text(_list([{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}]))
    assert main(["advise", "-f", str(f), "--from-snapshot", str(OCI)]) == 1
    err = capsys.readouterr().err
    assert f"{f}: nothing advise can answer for (it holds Service)" in err
    assert "Kueue Workload" in err and "Volcano Job" in err and "CompositePodGroups" in err


def test_a_broken_file_names_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "job.yaml"
    f.write_text("kind: Job\nspec: [\n")
    assert main(["advise", "-f", str(f), "--from-snapshot", str(OCI)]) == 1
    err = capsys.readouterr().err
    assert f"{f}:3:1: " in err and "not valid YAML/JSON" in err
    f.write_text("just text\n")
    assert main(["advise", "-f", str(f), "--from-snapshot", str(OCI)]) == 1
    assert f"{f}: not a Kubernetes object or List" in capsys.readouterr().err


def exec_kubeconfig(fake_kube: FakeKube, tmp_path: Path) -> tuple[Path, Path]:
    """A kubeconfig whose credentials come from an exec plugin (as EKS's and GKE's do) that
    records each run: every client made runs it once, which costs a user seconds each."""
    runs = tmp_path / "plugin-runs"
    plugin = tmp_path / "credential-plugin"
    plugin.write_text(
        f"#!{sys.executable}\n"
        "import json\n"
        f"open({str(runs)!r}, 'a').write('run\\n')\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', "
        "'kind': 'ExecCredential', 'status': {'token': 't'}}))\n"
    )
    plugin.chmod(0o755)
    config = fake_kube.kubeconfig()
    config["users"][0]["user"] = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": str(plugin),
            "interactiveMode": "Never",
        }
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path, runs


@pytest.mark.parametrize(
    ("flag", "what"),
    [("--workload", "workloads.kueue.x-k8s.io/team-a/missing"), ("--podgroup", "team-a/missing")],
)
def test_one_client_per_run_from_the_cluster(
    fake_kube: FakeKube,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flag: str,
    what: str,
) -> None:
    fake_kube.add_object(
        "Node",
        node("n1")
        .hostname()
        .labels({"rack": "rack-1", "zone": "zone-1"})
        .allocatable(cpu="2", pods="110")
        .obj(),
    )
    kubeconfig, runs = exec_kubeconfig(fake_kube, tmp_path)
    args = ["advise", "--kubeconfig", str(kubeconfig), "--from-cluster", flag, "team-a/missing"]
    assert main(args) == 1
    assert what in capsys.readouterr().err
    # the object was looked up (a GET after the LIST) with the client that read the cluster
    assert runs.read_text().splitlines() == ["run"]
