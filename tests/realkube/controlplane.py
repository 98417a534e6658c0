"""Start and stop a real control plane: etcd, kube-apiserver, kube-scheduler and KWOK, on
loopback, from the binaries that ``scripts/control-plane.sh build`` made.

``python -m tests.realkube.controlplane start DIR --bin BIN`` starts it in the background and
returns once the API server's ``/readyz`` answers, with ``DIR/kubeconfig`` (the admin, in
``system:masters``) and ``DIR/pids`` written; ``stop DIR`` ends exactly the processes listed
there. The test fixtures use :class:`ControlPlane` directly, which can also kill and restart
one component in the middle of a test.

The API server runs as a cluster's does (RBAC, client certificates, ServiceAccount tokens,
the default admission chain, API Priority and Fairness) with three differences a test
cluster needs: there is no kube-controller-manager, so the ``ServiceAccount`` admission
plugin is off (it would refuse pods in namespaces whose ``default`` ServiceAccount no
controller creates); the endpoint reconciler is off; and etcd does not fsync.
"""

from __future__ import annotations

import argparse
import base64
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.helpers import free_port
from tests.realkube.certs import Authority, Pair, service_account_keys

# The Kubernetes 1.37 workload-aware scheduling APIs: Workload and PodGroup
# (scheduling.k8s.io/v1beta1, beta but off by default), CompositePodGroup (v1alpha3), and the
# scheduler's topology-aware placement of them (gang scheduling has no gate of its own in
# 1.37: it comes with GenericWorkload). API server and scheduler get the same gates.
FEATURE_GATES = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true,CompositePodGroup=true"
RUNTIME_CONFIG = "scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true"
# KWOK manages only the nodes that carry this annotation: the bench's 10,000 nodes stay
# unmanaged, so that heartbeats do not load the API server.
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
STAGES = Path(__file__).with_name("kwok-stages.yaml")
COMPONENTS = ("etcd", "kube-apiserver", "kube-scheduler", "kwok")


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(path: Path, server: str, ca: Path, user: dict[str, str]) -> Path:
    """A kubeconfig for ``server`` with one user entry (client certificate or token)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "realkube",
                "cluster": {"server": server, "certificate-authority-data": _b64(ca)},
            }
        ],
        "users": [{"name": "user", "user": user}],
        "contexts": [{"name": "realkube", "context": {"cluster": "realkube", "user": "user"}}],
        "current-context": "realkube",
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def cert_user(pair: Pair) -> dict[str, str]:
    return {"client-certificate-data": _b64(pair.cert), "client-key-data": _b64(pair.key)}


@dataclass
class ControlPlane:
    """One control plane in ``folder``. Ports are chosen once, so a restarted component
    comes back where its clients expect it."""

    folder: Path
    bin: Path
    etcd_port: int = field(default_factory=free_port)
    peer_port: int = field(default_factory=free_port)
    api_port: int = field(default_factory=free_port)
    scheduler_port: int = field(default_factory=free_port)
    kwok_port: int = field(default_factory=free_port)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    @property
    def kubeconfig(self) -> Path:
        return self.folder / "kubeconfig"

    @property
    def pki(self) -> Path:
        return self.folder / "pki"

    def prepare(self) -> None:
        """Certificates, keys and the admin's kubeconfig."""
        ca = Authority(self.pki)
        self._serving = ca.issue("apiserver", "kube-apiserver", serving=True)
        self._sa = service_account_keys(self.pki)
        admin = ca.issue("admin", "admin", ("system:masters",))
        write_kubeconfig(self.kubeconfig, self.server, ca.cert, cert_user(admin))
        self.ca = ca
        (self.folder / "logs").mkdir(exist_ok=True)

    def user_kubeconfig(self, name: str, user: str, groups: tuple[str, ...] = ()) -> Path:
        """A kubeconfig for a client-certificate user of ``groups``."""
        pair = self.ca.issue(name, user, groups)
        return write_kubeconfig(
            self.folder / f"{name}.kubeconfig", self.server, self.ca.cert, cert_user(pair)
        )

    def token_kubeconfig(self, name: str, token: str) -> Path:
        """A kubeconfig that presents a bearer token (a ServiceAccount's, say)."""
        return write_kubeconfig(
            self.folder / f"{name}.kubeconfig", self.server, self.ca.cert, {"token": token}
        )

    def command(self, name: str) -> list[str]:
        exe = str(self.bin / name)
        kc = str(self.kubeconfig)
        if name == "etcd":
            peer = f"http://127.0.0.1:{self.peer_port}"
            client = f"http://127.0.0.1:{self.etcd_port}"
            return [
                exe,
                f"--data-dir={self.folder / 'etcd'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=default={peer}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ]
        if name == "kube-apiserver":
            return [
                exe,
                f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.api_port}",
                f"--tls-cert-file={self._serving.cert}",
                f"--tls-private-key-file={self._serving.key}",
                f"--client-ca-file={self.ca.cert}",
                "--authorization-mode=RBAC",
                f"--service-account-issuer=https://127.0.0.1:{self.api_port}",
                f"--service-account-key-file={self._sa.cert}",
                f"--service-account-signing-key-file={self._sa.key}",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--allow-privileged=true",
                "--disable-admission-plugins=ServiceAccount",
                "--endpoint-reconciler-type=none",
                f"--feature-gates={FEATURE_GATES}",
                f"--runtime-config={RUNTIME_CONFIG}",
                "--profiling=false",
                "--v=0",
            ]
        if name == "kube-scheduler":
            return [
                exe,
                f"--kubeconfig={kc}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.scheduler_port}",
                # the API server's serving pair (127.0.0.1): probes check it against our CA
                f"--tls-cert-file={self._serving.cert}",
                f"--tls-private-key-file={self._serving.key}",
                f"--feature-gates={FEATURE_GATES}",
                "--v=0",
            ]
        if name == "kwok":
            return [
                exe,
                f"--kubeconfig={kc}",
                f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake",
                f"--config={STAGES}",
                f"--server-address=127.0.0.1:{self.kwok_port}",
            ]
        raise ValueError(f"unknown component {name}")

    def launch(self, name: str) -> None:
        log = (self.folder / "logs" / f"{name}.log").open("ab")
        self.procs[name] = subprocess.Popen(
            self.command(name),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # outlives `start`; `stop` ends it by its PID
        )
        log.close()
        self._record()

    def _record(self) -> None:
        lines = [f"{name} {proc.pid}\n" for name, proc in self.procs.items()]
        (self.folder / "pids").write_text("".join(lines))

    def health_url(self, name: str) -> str | None:
        return {
            "kube-apiserver": f"{self.server}/readyz",
            "kube-scheduler": f"https://127.0.0.1:{self.scheduler_port}/healthz",
            "kwok": f"http://127.0.0.1:{self.kwok_port}/healthz",
        }.get(name)

    def start(self, timeout: float = 60.0) -> None:
        """Every component, each started once the one it needs answers; returns when all
        of them report healthy."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.prepare()
        for name in COMPONENTS:
            self.launch(name)
            if name == "kube-apiserver":
                self.wait_healthy(name, timeout)
        for name in ("kube-scheduler", "kwok"):
            self.wait_healthy(name, timeout)

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until the API server's ``/readyz`` answers 200."""
        self.wait_healthy("kube-apiserver", timeout)

    def wait_healthy(self, name: str, timeout: float = 60.0) -> None:
        """Until the component's health endpoint answers 200; a component that died
        meanwhile is reported with the end of its log."""
        url = self.health_url(name)
        assert url is not None, name
        deadline = time.monotonic() + timeout
        context = ssl.create_default_context(cafile=str(self.ca.cert))
        while True:
            for other, proc in self.procs.items():
                if proc.poll() is not None:
                    tail = self.log_tail(other)
                    raise RuntimeError(f"{other} exited with {proc.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(url, context=context, timeout=2) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{name} not healthy after {timeout:.0f} s:\n{self.log_tail(name)}"
                )
            time.sleep(0.2)

    def log_tail(self, name: str, lines: int = 30) -> str:
        path = self.folder / "logs" / f"{name}.log"
        if not path.exists():
            return "(no log)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """End one component at once, as a crash would."""
        proc = self.procs.pop(name)
        proc.send_signal(sig)
        proc.wait(timeout=30)
        self._record()

    def restart(self, name: str) -> None:
        self.launch(name)
        self.wait_healthy("kube-apiserver" if name == "etcd" else name)

    def stop(self) -> None:
        for name in reversed(COMPONENTS):
            proc = self.procs.pop(name, None)
            if proc is not None:
                _end(proc.pid, proc)
        self._record()

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        kubeconfig: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """The real kubectl, as the admin unless another kubeconfig is given; with
        ``check``, a failure raises with kubectl's own message."""
        done = subprocess.run(
            [str(self.bin / "kubectl"), f"--kubeconfig={kubeconfig or self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and done.returncode != 0:
            raise RuntimeError(
                f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stderr}"
            )
        return done


def _end(pid: int, proc: subprocess.Popen[bytes] | None = None, grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc is not None:
            if proc.poll() is not None:
                return
        else:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    if proc is not None:
        proc.wait()


def stop_recorded(folder: Path, bin_dir: Path) -> int:
    """End the processes that ``start`` listed in ``folder/pids``, each only if it still
    runs a binary from ``bin_dir`` (a PID the system gave to another program since is left
    alone). Returns how many were ended."""
    pids = folder / "pids"
    if not pids.exists():
        raise SystemExit(f"error: {pids} not found: no control plane was started in {folder}")
    ended = 0
    for line in reversed(pids.read_text().splitlines()):
        name, pid = line.split()
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        if Path(exe) == bin_dir / name:
            _end(int(pid))
            ended += 1
    pids.write_text("")
    return ended


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="control-plane", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--bin", type=Path, required=True, help="the folder of the built binaries")
    args = parser.parse_args(argv)
    folder = args.dir.resolve()
    if args.action == "stop":
        print(f"control-plane: ended {stop_recorded(folder, args.bin.resolve())} processes")
        return 0
    plane = ControlPlane(folder, args.bin.resolve())
    started = time.monotonic()
    try:
        plane.start()
    except RuntimeError as err:
        plane.stop()
        print(f"control-plane: error: {err}", file=sys.stderr)
        return 1
    print(
        f"control-plane: ready in {time.monotonic() - started:.1f} s at {plane.server}; "
        f"export KUBECONFIG={plane.kubeconfig}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())


def metric_sum(text: str, name: str, *labels: str) -> float:
    """The sum of metric ``name``'s series in Prometheus text ``text`` that carry every one
    of ``labels`` (``'code="409"'``): how the components' own counters and gauges are read."""
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(name + "{") and all(label in line for label in labels)
    )
