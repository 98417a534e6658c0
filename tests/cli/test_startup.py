"""Start-up: which modules a command loads, in a fresh interpreter (the figures are in
bench/README.md; here only what must hold on every machine).

Offline commands must not load the Kubernetes client (nor urllib3 under it): its package
imports every generated API class and model, seconds of CPU on a small machine. Commands
that talk to the API load the client's configuration and transport modules only. The
top-level --help loads no command module, and each offline command none of what only
another command or another flag needs (each such module was once a few ms of every run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from labeler.commands import COMMANDS
from tests.fakekube import FakeKube
from tests.helpers import fresh_python

ROOT = Path(__file__).resolve().parents[2]
CSV = ROOT / "examples" / "oci-cluster.csv"
SNAPSHOT = ROOT / "examples" / "snapshot-oci.yaml"
ADVISE = ["--pods=1", "--request=nvidia.com/gpu=8"]

# Runs each command line in one process (exits caught), then prints the loaded modules.
PROBE = """
import json, sys
from labeler.cli import main
for argv in json.loads(sys.argv[1]):
    try:
        main(argv)
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""


def loaded_by(*argvs: list[str], cwd: Path) -> set[str]:
    return set(json.loads(fresh_python(PROBE, json.dumps(argvs), cwd=cwd).stdout.splitlines()[-1]))


def beyond_bare(modules: set[str], cwd: Path) -> set[str]:
    """``modules`` less those a bare interpreter of this environment already has (site and
    its .pth files: the editable install's finder loads pathlib and re)."""
    bare = "import json, sys; print(json.dumps(sorted(sys.modules)))"
    return modules - set(json.loads(fresh_python(bare, cwd=cwd).stdout))


def client_modules(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in ("kubernetes", "urllib3")}


def test_help_and_offline_commands_do_not_load_the_client(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(CSV.read_text().replace("gpu-02,", "gpu_02,", 1))
    modules = loaded_by(
        ["--help"],
        ["generate", "--profile=oci-rdma", f"--from-csv={CSV}", f"--output-dir={tmp_path}"],
        ["check", "--profile=oci-rdma", f"--from-csv={CSV}"],
        ["advise", "--profile=oci-rdma", f"--from-snapshot={SNAPSHOT}", *ADVISE],
        ["plan", f"--config-path={bad}"],  # a CSV error stops it before the cluster
        cwd=tmp_path,
    )
    assert "labeler.commands.generate" in modules and "labeler.sim.kueue.advice" in modules
    assert client_modules(modules) == set()


def test_help_lists_the_commands_without_importing_any(tmp_path: Path) -> None:
    # The top-level --help is the table in labeler/commands/__init__.py: no command module,
    # so none of what their flags import (profiles, sources, the simulator, PyYAML), and no
    # logging until a command runs.
    modules = beyond_bare(loaded_by(["--help"], cwd=tmp_path), tmp_path)
    ours = {m for m in modules if m.split(".")[0] == "labeler"}
    assert ours == {
        "labeler",
        "labeler.base",
        "labeler.base.errors",
        "labeler.base.version",
        "labeler.cli",
        "labeler.commands",
    }
    assert not {"typing", "logging", "dataclasses", "yaml"} & modules


@pytest.mark.parametrize(
    ("argv", "not_loaded"),
    [
        # check reads the CSV and judges it: no simulator (only --affinity-config needs
        # its rules), no hashing, no median from statistics, no selector (the help of
        # --node-selector names the default scope, not a parsed one), no YAML, no exact
        # quantities (only a node's allocatable read from a cluster needs them), and no
        # logging when nothing is logged (it loads traceback, threading, string, weakref).
        (
            ["check", "--profile=oci-rdma", f"--from-csv={CSV}"],
            {
                "labeler.sim",
                "labeler.core.selector",
                "statistics",
                "hashlib",
                "yaml",
                "fractions",
                "decimal",
                "logging",
            },
        ),
        # generate without --emit slurm: no Slinky model nor the label planner under it;
        # its files are written without tempfile (which loads random and hashlib).
        (
            ["generate", "--profile=oci-rdma", f"--from-csv={CSV}", "--output-dir=out"],
            {
                "labeler.sim",
                "labeler.core.slinky",
                "labeler.core.plan",
                "statistics",
                "yaml",
                "tempfile",
                "random",
                "hashlib",
                "fractions",
                "decimal",
                "logging",
            },
        ),
        # Kueue's advise of one PodSet: not Volcano's simulator, not emit's HyperNodes (the
        # --volcano-version default is not parsed), not the domains inventory, and no
        # logging for its debug line at the default level.
        (
            ["advise", "--profile=oci-rdma", f"--from-snapshot={SNAPSHOT}", *ADVISE],
            {
                "labeler.sim.volcano",
                "labeler.emit",
                "labeler.sim.kueue.inventory",
                "statistics",
                "logging",
            },
        ),
    ],
    ids=["check", "generate", "advise"],
)
def test_an_offline_command_loads_only_what_it_uses(
    argv: list[str], not_loaded: set[str], tmp_path: Path
) -> None:
    modules = loaded_by(argv, cwd=tmp_path)
    assert f"labeler.commands.{COMMANDS[argv[0]][0]}" in modules  # it ran
    assert not {m for m in modules for n in not_loaded if m == n or m.startswith(f"{n}.")}


FROZEN_PROBE = """
import atexit, gc, sys
import labeler.cli as cli

def spy(name, real):
    def call(*args):
        print(name, "collector on:", gc.isenabled(), "frozen:", gc.get_freeze_count() > 0)
        return real(*args)
    setattr(cli, name, call)

spy("parse", cli.parse)
spy("_run", cli._run)
argv = sys.argv[1:]
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0))
cli.main(argv)
print("frozen after main(argv):", gc.get_freeze_count() > 0)
sys.argv = ["topology-labeler", *argv]
cli.main()
"""


def test_the_entry_point_leaves_what_it_made_to_the_exit(tmp_path: Path) -> None:
    # As the process's entry point, main() keeps the collector off while it loads the
    # command and parses the line, freezes what that made before the command runs (with
    # the collector on), and freezes the heap again when the command is done, so the
    # interpreter's collections at exit skip it; main(argv), as tests call it in their own
    # process, leaves the collector alone.
    argv = ["check", "--profile=oci-rdma", f"--from-csv={CSV}"]
    out = fresh_python(FROZEN_PROBE, *argv, cwd=tmp_path).stdout
    said = [line for line in out.splitlines() if line.startswith(("frozen", "parse", "_run"))]
    assert said == [
        "parse collector on: True frozen: False",
        "_run collector on: True frozen: False",
        "frozen after main(argv): False",
        "parse collector on: False frozen: False",
        "_run collector on: True frozen: True",
        "frozen at exit: True",
    ]


def test_lld_reads_the_workbook_without_openpyxl(tmp_path: Path) -> None:
    # openpyxl is a test dependency only (it builds workbooks here); importing it would
    # cost the lld command more than all the rest of its start-up.
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = "超节点规划"
    for row in (["主机名称", "机框编号"], ["n1", 1]):
        ws.append(row)
    wb.save(tmp_path / "lld.xlsx")
    out = tmp_path / "out.csv"
    argv = ["lld", "-i", str(tmp_path / "lld.xlsx"), "-o", str(out), "-t", "default"]
    modules = loaded_by(argv, cwd=tmp_path)
    assert out.read_text().splitlines()[1:] == ["n1,0,default"]
    assert "labeler.bulk.xlsx" in modules
    assert {m for m in modules if m.split(".")[0] == "openpyxl"} == set()
    assert client_modules(modules) == set()
    assert "logging" not in modules  # nothing was logged


def test_api_commands_load_configuration_and_transport_not_the_generated_api(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path
) -> None:
    fake_kube.add_node("gpu-01")
    modules = loaded_by(
        ["audit", "--profile=oci-rdma", f"--kubeconfig={kubeconfig}"],
        ["plan", f"--config-path={CSV}", f"--kubeconfig={kubeconfig}", "--skip-missing-nodes"],
        cwd=tmp_path,
    )
    # both really asked the cluster: audit for nodes, the DRA driver's ResourceSlices and,
    # for its hot-swap view, pods, Workloads, Topologies and ResourceFlavors; plan for nodes
    assert fake_kube.count("list", "/api/v1/nodes") == 2
    assert fake_kube.count("list", "/apis/resource.k8s.io/v1/resourceslices") == 1
    assert fake_kube.count("list") == 7
    kube = client_modules(modules)
    assert {"kubernetes.client.configuration", "kubernetes.config.kube_config"} <= kube
    assert "kubernetes.client.rest" in kube
    generated = {
        m for m in kube if m.startswith(("kubernetes.client.api.", "kubernetes.client.models"))
    }
    assert generated == set()
    assert "kubernetes.client.api_client" not in kube
    # The kubeconfig loader's OIDC refresh (requests, OAuth2) is loaded only for a refresh.
    assert not {"requests", "requests_oauthlib", "oauthlib"} & modules


def test_the_full_client_still_imports_after_the_lean_one(tmp_path: Path) -> None:
    """A plug-in or test that imports the whole client later gets the real package, sharing
    the configuration class the lean import loaded."""
    code = """
from labeler.kube import official
lean = official.configuration().Configuration
official.kube_config()
from kubernetes import client, config, watch
assert client.Configuration is lean, "two Configuration classes"
assert client.CoreV1Api and client.V1Node and watch.Watch
assert config.load_kube_config is official.kube_config().load_kube_config
print("ok")
"""
    assert fresh_python(code, cwd=tmp_path).stdout.strip() == "ok"


OIDC_PROBE = """
import json, sys
from labeler.kube.client import ClusterOptions, connect
api = connect(ClusterOptions(sys.argv[1]))
print(json.dumps([api.headers()["authorization"], sorted(sys.modules)]))
"""


def _jwt(claims: dict[str, object]) -> str:
    import base64

    def part(doc: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part(claims)}.sig"


@pytest.mark.parametrize("issuer_agrees", [True, False])
def test_an_expired_oidc_token_is_refreshed_by_the_official_loader(
    tmp_path: Path, issuer_agrees: bool
) -> None:
    """The kubeconfig loader refreshes an expired OIDC id-token at the issuer's token
    endpoint (OAuth2 refresh grant), however lean our import of it is; a refused refresh
    (oauthlib's InvalidClientIdError, which the loader catches) keeps the old token."""
    import http.server
    import threading
    import time

    fresh = _jwt({"exp": int(time.time()) + 3600, "sub": "me"})
    asked: list[str] = []

    class Issuer(http.server.BaseHTTPRequestHandler):
        def _json(self, doc: dict[str, str]) -> None:
            body = json.dumps(doc).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            asked.append(f"GET {self.path}")
            self._json({"token_endpoint": f"http://127.0.0.1:{port}/token"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            asked.append(f"POST {self.path} {self.rfile.read(length).decode()}")
            if issuer_agrees:
                self._json({"id_token": fresh, "refresh_token": "r2", "access_token": "a"})
            else:
                self._json({"error": "invalid_request"})

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Issuer)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    expired = _jwt({"exp": int(time.time()) - 60, "sub": "me"})
    kubeconfig = tmp_path / "kubeconfig"
    oidc = {
        "client-id": "cid",
        "client-secret": "secret",
        "id-token": expired,
        "refresh-token": "r1",
        "idp-issuer-url": f"http://127.0.0.1:{port}",
    }
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "http://127.0.0.1:1"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "users": [{"name": "u", "user": {"auth-provider": {"name": "oidc", "config": oidc}}}],
    }
    kubeconfig.write_text(json.dumps(config))  # JSON is YAML
    env = {"OAUTHLIB_INSECURE_TRANSPORT": "1"}  # the test issuer speaks plain HTTP
    try:
        p = subprocess.run(
            [sys.executable, "-c", OIDC_PROBE, str(kubeconfig)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
            check=False,
            env={**os.environ, **env},
        )
    finally:
        server.shutdown()
    assert p.returncode == 0, p.stderr
    token, modules = json.loads(p.stdout.splitlines()[-1])
    assert token == f"Bearer {fresh if issuer_agrees else expired}"
    assert "requests_oauthlib" in modules  # the real one, loaded for the refresh
    assert asked[0] == "GET /.well-known/openid-configuration"
    assert asked[1].startswith("POST /token") and "refresh_token=r1" in asked[1]
