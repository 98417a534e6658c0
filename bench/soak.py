"""Chaos soak of the agent and the audit exporter (run by hand, never in CI).

    nice python bench/soak.py [--minutes 60] [--nodes 2000] [--changes 10] [--every 30]
                              [--json-out FILE] [--code CHECKOUT]

Runs `topology-labeler agent` (one node, OCI IMDS faked) and `topology-labeler audit
--serve` as real processes against the in-repo fake API server, on loopback only, for
``--minutes``, while the cluster changes (``--changes`` label flips a second on GPU nodes)
and the network misbehaves as an operator's would. Every ``--every`` seconds, in turn:

- cut: every open watch is cut mid-stream (between two events);
- 500: every watch is cut and every request answered 500 for 10 s;
- 429: every request answered 429 (Retry-After: 1) for 10 s, open watches left alone;
- outage: the API server is away 8–10 s (connections cut, new ones refused);
- 410: every watch is cut and the next two watch or list requests of nodes answered 410.

Every ``--drift-every`` seconds one of the agent's labels is removed or given a wrong
value (the agent must put it back); every ``--imds-every`` seconds IMDS answers 500 for a
minute (the agent must keep its labels). It measures, from outside the processes:

- RSS and CPU per hour of each process (sampled each minute; growth is a least-squares
  slope over the samples after the first tenth of the run);
- reconnect delays: from each disruption's end (a cut: its moment; a window: its end; an
  outage: the server's return) to the first accepted watch of each stream (the journal;
  a 429 window counts only for a stream whose watch it refused);
- how far the exporter's figures are behind the cluster: one canary GPU node per second of
  the run, one more of them made `partial` each second, so the exporter's `partial` count
  says which second of the cluster it shows; "behind" is how long ago that state stopped
  being true. Samples while the API server answers normally ("healthy") are reported apart
  from those taken during a disruption and in the 5 s of catch-up after one;
- the stale gauge (`topology_labeler_audit_stale_seconds`), /readyz and /healthz;
- drift repair times, and every moment the agent's labels were wrong or missing other than
  the soak's own drift.

Progress lines every ten minutes; the summary at the end (and as JSON with --json-out).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from labeler.core.profiles import oci_rdma  # noqa: E402
from tests.e2e.fake_imds import HOST, RDMA, Answer, FakeImds, rdma_doc  # noqa: E402
from tests.fakekube import FakeKube  # noqa: E402

KEYS = oci_rdma().topology.keys  # island, network block, local block
OWNED = "topology-labeler.io/owned-labels"
GPU = {"nvidia.com/gpu": "8"}
AGENT_NODE = "soak-agent"
KINDS = ("cut", "500", "429", "outage", "410")
BREAKS = {"cut", "500", "outage", "410"}  # the kinds that break open watches
STREAMS = ("exporter nodes", "agent node")


def full_labels(i: int) -> dict[str, str]:
    return {KEYS[0]: "island-0", KEYS[1]: f"nb-{i // 500}", KEYS[2]: f"lb-{i // 50}"}


@dataclass
class Disruption:
    kind: str
    start: float  # wall clock (the fake's journal uses it too)
    end: float = 0.0  # 0 while it lasts


@dataclass
class Soak:
    args: argparse.Namespace
    fake: FakeKube
    imds: FakeImds
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    disruptions: list[Disruption] = field(default_factory=list)
    watches: dict[str, list[tuple[float, int]]] = field(default_factory=dict)  # (time, status)
    canary: dict[int, float] = field(default_factory=dict)  # partial count -> when it began
    behind: list[tuple[float, float, str]] = field(default_factory=list)  # (time, s, phase)
    stale_gauge: list[tuple[float, float, str]] = field(default_factory=list)
    probes: dict[str, int] = field(default_factory=dict)  # "readyz 503 healthy" -> count
    drift: list[tuple[str, float, str]] = field(default_factory=list)  # (kind, seconds, phase)
    wrong: list[tuple[float, float, str]] = field(default_factory=list)  # (start, end, what)
    usage: dict[str, list[tuple[float, float, float]]] = field(default_factory=dict)
    drifting: bool = False
    expected: dict[str, str] = field(default_factory=dict)

    # --- the phase of a moment --------------------------------------------------------

    def phase(self, t: float, catch_up: float = 5.0) -> str:
        """ "disrupted" during a disruption, "catch-up" in the ``catch_up`` seconds after
        one, else "healthy". A cut is a moment: the seconds after it are its catch-up."""
        with self.lock:
            spans = [(d.start, d.end or float("inf")) for d in self.disruptions]
        for start, end in spans:
            if start <= t <= end and end > start:
                return "disrupted"
        if any(end < t <= end + catch_up for _, end in spans):
            return "catch-up"
        return "healthy"

    def disrupt(self, kind: str) -> Disruption:
        d = Disruption(kind, time.time())
        with self.lock:
            self.disruptions.append(d)
        return d

    # --- the cluster's own changes ----------------------------------------------------

    def changes(self) -> None:
        """Flip random GPU nodes between labeled and unlabeled, ``--changes`` a second."""
        rng = random.Random(1)
        gap = 1.0 / self.args.changes
        while not self.stop.wait(gap):
            i = rng.randrange(self.args.nodes)
            name = f"gpu-{i:05d}"
            labels = self.fake.get_node(name)["metadata"].get("labels") or {}
            want = None if KEYS[0] in labels else full_labels(i)
            self.fake.set_node_labels(name, {k: (want or {}).get(k) for k in KEYS})

    def canaries(self) -> None:
        """Each second one more canary is partial (its local block removed): the count only
        grows, so each value names one second."""
        with self.lock:
            self.canary[0] = time.time()
        for tick in range(canaries(self.args)):
            if self.stop.wait(1.0):
                return
            self.fake.set_node_labels(f"canary-{tick:05d}", {KEYS[2]: None})
            with self.lock:
                self.canary[tick + 1] = time.time()

    # --- chaos --------------------------------------------------------------------------

    def chaos(self) -> None:
        rng = random.Random(2)
        turn = 0
        while not self.stop.wait(self.args.every):
            kind = KINDS[turn % len(KINDS)]
            turn += 1
            d = self.disrupt(kind)
            if kind == "cut":
                self.fake.cut_watches()
            elif kind in ("500", "429"):
                if kind == "500":
                    self.fake.cut_watches()
                self.fake.faults.add(
                    status=int(kind), retry_after=1 if kind == "429" else None, times=None
                )
                self.stop.wait(10.0)
                self.fake.faults.clear()
            elif kind == "outage":
                self.fake.go_away()
                self.stop.wait(rng.uniform(8.0, 10.0))
                self.fake.come_back()
            elif kind == "410":
                self.fake.faults.add(method="GET", path="/api/v1/nodes", status=410, times=2)
                self.fake.cut_watches()
            d.end = time.time() if kind != "cut" else d.start

    def imds_windows(self) -> None:
        doc = rdma_doc("i", "nb", "lb", AGENT_NODE)
        while not self.stop.wait(self.args.imds_every):
            d = self.disrupt("imds")
            self.imds.set(AGENT_NODE, RDMA, Answer(500, "down"))
            self.imds.set(AGENT_NODE, HOST, Answer(500, "down"))
            self.stop.wait(60.0)
            self.imds.set(AGENT_NODE, RDMA, doc)
            self.imds.set(AGENT_NODE, HOST, Answer(404, "Not Found"))
            d.end = time.time()
            with self.imds._lock:
                self.imds.seen.clear()

    def drifts(self) -> None:
        """Remove a level label or give it a wrong value; time until the agent repairs it."""
        turn = 0
        while not self.stop.wait(self.args.drift_every):
            key = KEYS[turn % len(KEYS)]
            kind = "removed" if turn % 2 == 0 else "wrong value"
            turn += 1
            self.drifting = True
            start = time.time()
            try:
                self.fake.set_node_labels(AGENT_NODE, {key: None if kind == "removed" else "x"})
            except Exception:
                self.drifting = False
                continue
            while not self.stop.is_set() and self.labels_now() != self.expected:
                if time.time() - start > 120:
                    kind += " (not repaired in 120 s)"
                    break
                time.sleep(0.005)
            self.drift.append((kind, time.time() - start, self.phase(start, catch_up=0)))
            self.drifting = False

    # --- what is watched from outside ---------------------------------------------------

    def labels_now(self) -> dict[str, str]:
        labels = self.fake.get_node(AGENT_NODE)["metadata"].get("labels") or {}
        return {k: labels.get(k, "") for k in self.expected}

    def label_watch(self) -> None:
        """Every moment the agent's labels differ from what it wrote, drift aside."""
        since: float | None = None
        what = ""
        while not self.stop.wait(0.05):
            drifting, now = self.drifting, self.labels_now()
            bad = not drifting and now != self.expected
            t = time.time()
            if bad and since is None:
                since = t
                what = ", ".join(f"{k}={now[k]!r}" for k in now if now[k] != self.expected[k])
            elif not bad and since is not None:
                self.wrong.append((since, t, what))
                since = None

    def observe(self, exporter: str, agent: str) -> None:
        """Scrape the exporter twice a second: how far behind it is, its stale gauge;
        probe /readyz and both /healthz."""
        n = 0
        while not self.stop.wait(0.5):
            t = time.time()
            text = fetch(exporter + "/metrics")[1]
            partial = gauge(text, r'topology_labeler_nodes\{[^}]*state="partial"\}')
            stale = gauge(text, r'topology_labeler_audit_stale_seconds\{[^}]*"nodes"[^}]*\}')
            phase = self.phase(t)
            if partial is not None:
                self.behind.append((t, self.lag(int(partial), t), phase))
            if stale is not None:
                self.stale_gauge.append((t, stale, phase))
            n += 1
            if n % 4 == 0:
                for name, url in (
                    ("exporter readyz", exporter + "/readyz"),
                    ("exporter healthz", exporter + "/healthz"),
                    ("agent healthz", agent + "/healthz"),
                ):
                    status = fetch(url)[0]
                    key = f"{name} {status} {phase}"
                    self.probes[key] = self.probes.get(key, 0) + 1

    def lag(self, shown: int, now: float) -> float:
        """How long ago the canary state the exporter shows stopped being true."""
        with self.lock:
            superseded = self.canary.get(shown + 1)
        return 0.0 if superseded is None else max(0.0, now - superseded)

    def sample(self, procs: dict[str, subprocess.Popen[str]]) -> None:
        """Each minute: RSS and CPU seconds of each process; the journal's watch requests."""
        while True:
            t = time.time()
            for name, proc in procs.items():
                rss, cpu = usage(proc.pid)
                self.usage.setdefault(name, []).append((t, rss, cpu))
            for rec in self.fake.take_journal():
                stream = stream_of(rec.path, rec.query, rec.verb)
                if stream:
                    self.watches.setdefault(stream, []).append((rec.time, rec.status))
            if self.stop.wait(60.0):
                return


def stream_of(path: str, query: dict[str, str], verb: str) -> str:
    if verb != "watch" or path != "/api/v1/nodes":
        return ""
    return "agent node" if query.get("fieldSelector") else "exporter nodes"


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def gauge(text: str, series: str) -> float | None:
    m = re.search(rf"^{series} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def usage(pid: int) -> tuple[float, float]:
    """RSS in MB and CPU seconds (user + system) of a process."""
    status = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"^VmRSS:\s+(\d+)", status, re.M).group(1)) / 1024  # type: ignore[union-attr]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return rss, cpu


def start_processes(soak: Soak, tmp: Path) -> tuple[dict[str, subprocess.Popen[str]], str, str]:
    kubeconfig = soak.fake.write_kubeconfig(tmp / "kubeconfig")
    # --code: the processes run another checkout's labeler (a before/after in one setting)
    env = {**os.environ, "PYTHONPATH": str(soak.args.code or ROOT)}
    common = [f"--kubeconfig={kubeconfig}", "--log-format=json", "--log-level=info"]
    agent_port, exporter_port = free_port(), free_port()
    agent = [
        "agent",
        "--profile=oci-rdma",
        f"--node-name={AGENT_NODE}",
        f"--imds-url={soak.imds.url_for(AGENT_NODE)}",
        "--interval=20",
        f"--port={agent_port}",
        "--address=127.0.0.1",
    ]
    exporter = ["audit", "--serve", "--profile=oci-rdma", f"--port={exporter_port}"]
    exporter += ["--bind=127.0.0.1", "--watch-timeout=60"]
    procs = {}
    for name, argv in (("agent", agent), ("exporter", exporter)):
        log = (tmp / f"{name}.log").open("w")
        procs[name] = subprocess.Popen(
            [sys.executable, "-m", "labeler", *argv, *common],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=tmp,  # not the repository: `-m` would import its labeler before --code's
        )
    return procs, f"http://127.0.0.1:{exporter_port}", f"http://127.0.0.1:{agent_port}"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def canaries(args: argparse.Namespace) -> int:
    return int(args.minutes * 60) + 60


def seed(fake: FakeKube, imds: FakeImds, args: argparse.Namespace) -> None:
    owned = {OWNED: ",".join(KEYS)}
    fake.seed_nodes(
        args.nodes, name_fmt="gpu-{:05d}", labels_fn=full_labels, allocatable=GPU, annotations=owned
    )
    fake.seed_nodes(
        canaries(args),
        name_fmt="canary-{:05d}",
        labels_fn=lambda c: {KEYS[0]: "island-c", KEYS[1]: "nb-c", KEYS[2]: f"lb-c{c // 50}"},
        allocatable=GPU,
        annotations=owned,
    )
    fake.add_node(AGENT_NODE)  # no GPUs: out of the exporter's scope, drift counts no node
    imds.set(AGENT_NODE, RDMA, rdma_doc("i", "nb", "lb", AGENT_NODE))


def wait_until(cond: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise SystemExit(f"soak: {what} did not happen within {timeout:.0f} s")
        time.sleep(0.1)


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    with FakeKube(history=5000) as fake, FakeImds() as imds:
        fake.bookmark_interval = 60.0  # as a real API server, about once a minute
        seed(fake, imds, args)
        soak = Soak(args, fake, imds)
        procs, exporter, agent = start_processes(soak, tmp)
        try:
            wait_until(
                lambda: set(KEYS) <= set(fake.get_node(AGENT_NODE)["metadata"].get("labels") or {}),
                60,
                "the agent's first labels",
            )
            wait_until(lambda: fetch(exporter + "/readyz")[0] == 200, 120, "the exporter's start")
            time.sleep(2.0)  # the agent's own write comes back through its watch
            owned = fake.get_node(AGENT_NODE)["metadata"]["annotations"][OWNED].split(",")
            labels = fake.get_node(AGENT_NODE)["metadata"]["labels"]
            soak.expected = {k: labels[k] for k in owned}
            started = time.time()
            loops = [
                soak.changes,
                soak.canaries,
                soak.chaos,
                soak.imds_windows,
                soak.drifts,
                soak.label_watch,
                lambda: soak.observe(exporter, agent),
                lambda: soak.sample(procs),
            ]
            threads = [threading.Thread(target=f, daemon=True) for f in loops]
            for t in threads:
                t.start()
            end = started + args.minutes * 60
            while time.time() < end:
                time.sleep(min(600.0, max(0.0, end - time.time())))
                dead = [n for n, p in procs.items() if p.poll() is not None]
                if dead:
                    raise SystemExit(f"soak: {', '.join(dead)} exited; see {tmp}")
                print(progress(soak, started), flush=True)
            soak.stop.set()
            for t in threads:
                t.join(15)
            soak.sample(procs)  # the last sample (stop is set: one round)
        finally:
            soak.stop.set()
            fake.faults.clear()
            for proc in procs.values():
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            for proc in procs.values():
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
        return report(soak, started, tmp)


def progress(soak: Soak, started: float) -> str:
    minutes = (time.time() - started) / 60
    mem = ", ".join(f"{n} {s[-1][1]:.1f} MB" for n, s in soak.usage.items() if s)
    healthy = [b for _, b, p in soak.behind if p == "healthy"]
    worst = max(healthy, default=float("nan"))
    return (
        f"soak: {minutes:.0f} min, {len(soak.disruptions)} disruptions, RSS {mem}, "
        f"exporter at most {worst:.1f} s behind while healthy, "
        f"{len(soak.wrong)} label faults"
    )


def slope_mb_per_hour(samples: list[tuple[float, float, float]]) -> float:
    """Least-squares slope of RSS over time, after the first tenth of the run (warm-up)."""
    if len(samples) < 3:
        return float("nan")
    cut = samples[0][0] + (samples[-1][0] - samples[0][0]) / 10
    pts = [(t, rss) for t, rss, _ in samples if t >= cut]
    if len(pts) < 2:
        return float("nan")
    mt = statistics.fmean(t for t, _ in pts)
    mr = statistics.fmean(r for _, r in pts)
    den = sum((t - mt) ** 2 for t, _ in pts)
    return sum((t - mt) * (r - mr) for t, r in pts) / den * 3600 if den else float("nan")


def reconnects(soak: Soak) -> dict[str, dict[str, list[float]]]:
    """Per disruption kind and stream: seconds from the disruption's end to the stream's
    first accepted watch after it (a window's requests answered 500/429/410 do not count).
    A 429 window leaves open watches alone: only a stream whose watch failed in it counts."""
    out: dict[str, dict[str, list[float]]] = {}
    for d in soak.disruptions:
        if d.kind == "imds" or not d.end:
            continue
        for stream in STREAMS:
            seen = soak.watches.get(stream, [])
            failed = any(d.start <= t <= d.end and status != 200 for t, status in seen)
            if d.kind not in BREAKS and not failed:
                continue
            after = [
                t for t, status in soak.watches.get(stream, []) if t >= d.end and status == 200
            ]
            if after:
                out.setdefault(d.kind, {}).setdefault(stream, []).append(min(after) - d.end)
    return out


def stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    values = sorted(values)
    p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
    return {"n": len(values), "median": statistics.median(values), "p99": p99, "max": values[-1]}


def report(soak: Soak, started: float, tmp: Path) -> dict[str, Any]:
    hours = (time.time() - started) / 3600
    resources = {}
    for name, samples in soak.usage.items():
        first, last = samples[0], samples[-1]
        resources[name] = {
            "rss_start_mb": first[1],
            "rss_end_mb": last[1],
            "rss_max_mb": max(s[1] for s in samples),
            "rss_growth_mb_per_hour": slope_mb_per_hour(samples),
            "cpu_seconds_per_hour": (last[2] - first[2]) / ((last[0] - first[0]) / 3600 or 1),
            "per_10_min": [
                (round((t - started) / 60), round(r, 1), round(c, 1)) for t, r, c in samples[::10]
            ],
        }
    kinds: dict[str, int] = {}
    for d in soak.disruptions:
        kinds[d.kind] = kinds.get(d.kind, 0) + 1
    logs = {n: (tmp / f"{n}.log").read_text(errors="replace") for n in ("agent", "exporter")}
    return {
        "minutes": round(hours * 60, 1),
        "canaries": canaries(soak.args),
        "args": vars(soak.args),
        "disruptions": kinds,
        "resources": resources,
        "reconnect_s": {
            k: {s: stats(v) for s, v in by.items()} for k, by in reconnects(soak).items()
        },
        "behind_s": {
            p: stats([b for _, b, ph in soak.behind if ph == p])
            for p in ("healthy", "catch-up", "disrupted")
        },
        "stale_gauge_s": {
            p: stats([v for _, v, ph in soak.stale_gauge if ph == p])
            for p in ("healthy", "catch-up", "disrupted")
        },
        "probes": dict(sorted(soak.probes.items())),
        "drift_repair_s": {
            p: stats([s for _, s, ph in soak.drift if ph == p]) for p in ("healthy", "disrupted")
        },
        "labels_wrong_or_missing": [
            {"from_s": round(a - started, 2), "for_s": round(b - a, 3), "what": w}
            for a, b, w in soak.wrong
        ],
        "log_lines": {
            n: {
                "total": text.count("\n"),
                "cut off between chunks": text.count("cut off between chunks"),
                "cannot read node": text.count("cannot read node"),
            }
            for n, text in logs.items()
        },
        "logs": str(tmp),
        "load_average": os.getloadavg()[0],
    }


def print_report(r: dict[str, Any]) -> None:
    a = r["args"]
    print(
        f"\nsoak: {r['minutes']} min, {a['nodes']} GPU nodes + {r['canaries']} canaries, "
        f"{a['changes']:g} changes/s, disruptions {r['disruptions']}, "
        f"load average {r['load_average']:.1f}"
    )
    for name, res in r["resources"].items():
        print(
            f"  {name:8s} RSS {res['rss_start_mb']:.1f} → {res['rss_end_mb']:.1f} MB "
            f"(max {res['rss_max_mb']:.1f}), growth {res['rss_growth_mb_per_hour']:+.2f} MB/h, "
            f"CPU {res['cpu_seconds_per_hour']:.0f} s/h"
        )
    print("  reconnect after each disruption's end (s): median / max (n)")
    for kind, by in r["reconnect_s"].items():
        parts = [
            f"{s}: {v['median']:.2f} / {v['max']:.2f} ({v['n']})" for s, v in by.items() if v["n"]
        ]
        print(f"    {kind:7s} " + "; ".join(parts))
    for key, label in (
        ("behind_s", "exporter behind the cluster"),
        ("stale_gauge_s", "stale gauge"),
    ):
        parts = [
            f"{p}: median {v.get('median', 0):.2f}, p99 {v.get('p99', 0):.2f}, max "
            f"{v.get('max', 0):.2f} ({v['n']})"
            for p, v in r[key].items()
            if v["n"]
        ]
        print(f"  {label} (s): " + "; ".join(parts))
    for p, v in r["drift_repair_s"].items():
        if v["n"]:
            print(
                f"  drift repaired ({p}): median {v['median'] * 1000:.0f} ms, "
                f"max {v['max'] * 1000:.0f} ms ({v['n']})"
            )
    print(f"  probes: {r['probes']}")
    wrong = r["labels_wrong_or_missing"]
    print(f"  labels wrong or missing (other than the soak's drift): {wrong or 'none'}")
    print(f"  log lines: {r['log_lines']}; logs in {r['logs']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--nodes", type=int, default=1500, help="GPU nodes besides the canaries")
    ap.add_argument("--changes", type=float, default=10.0, help="label flips a second")
    ap.add_argument("--every", type=float, default=30.0, help="seconds between disruptions")
    ap.add_argument("--drift-every", type=float, default=20.0)
    ap.add_argument("--imds-every", type=float, default=300.0)
    ap.add_argument("--json-out", type=Path)
    ap.add_argument(
        "--code",
        type=Path,
        help="run the agent and the exporter from this checkout (default: this one), e.g. "
        "`git archive main labeler | tar -x -C DIR` for a before/after",
    )
    args = ap.parse_args()
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"soak-{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    result = run(args, tmp)
    print_report(result)
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
