"""Run ``advise`` and the real kube-scheduler on generated scenarios and compare them.

The rules (tests/oracles/README.md, "kube-scheduler", says why):
- every pending pod: bound or not, the same on both sides;
- a pod left unbound: kube-scheduler's message is ``advise``'s, except that in ``0/N
  placements are available, first placement status: S`` kube-scheduler tries the
  placements in no set order, so S must be the status ``advise`` found for one of the
  group's placements, and a pod's own filter message may be the one it got in any placement
  of a group none of whose placements is feasible; a pod kube-scheduler never tried (a gang
  short of its minCount) must be one ``advise`` says is waiting;
- every group with a topology constraint whose pods were bound: the domain, ``advise``'s;
- where kube-scheduler wrote ``cannot determine domain for already scheduled pods: ...``,
  one of the messages ``advise`` says it may write (``alternatives``: it meets the running
  pods in no set order);
- the pods of each group per node, exactly.

Where ``advise`` reports a draw of kube-scheduler's (a pod whose top score several nodes
share, a group whose best placement score several placements share), its answer is
worked out again with kube-scheduler's draws replayed (``replayed``): at each node tie,
the tied node that kube-scheduler gave a pod of that group more often than the
simulation has so far, else the first by name; at each placement tie, the domain
kube-scheduler bound the group in, if it is one of the tied. That answer must then agree
in every point above, so each of kube-scheduler's nodes and domains must be one of the
simulator's own best.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from labeler.commands.advise.input import read_manifest
from labeler.sim.common.inputs import read_snapshot_objects
from labeler.sim.kubesched import objects as ob
from labeler.sim.kubesched.objects import Group, GroupPod, Objects, collect
from labeler.sim.kubesched.report import advice_dict
from labeler.sim.kubesched.schedule import advise
from labeler.sim.kubesched.state import State
from tests.oracles import batch as batch_
from tests.oracles.batch import Disagreement
from tests.oracles.kubesched import oracle
from tests.oracles.kubesched.build import control_plane_bin
from tests.oracles.kubesched.scenarios import generate

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[3]
PLACEMENTS = re.compile(
    r"^((?:pod group is unschedulable, )*)0/(\d+) placements are available, "
    r"first placement status: (.*?)((?:, pod group preemption: [^,]*)*)$",
    re.S,
)
"""The group's error in front (once per level it was re-made at), the count, the status of
the placement tried first, what the post-filter added at the end."""
WAITING = ("waiting for minCount pods", "waiting for composite pod group", "waiting for pods's")
REPRO = """#!/bin/sh
# Reproduce one scenario: advise's answer, then the real kube-scheduler's (the oracle starts
# a control plane of its own: etcd, kube-apiserver, kube-scheduler and KWOK v1.37.2).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# the repository holding this folder, else the one that wrote it
cd "$(git -C "$here" rev-parse --show-toplevel 2>/dev/null || echo "{root}")"
. scripts/venv.sh >/dev/null
topology-labeler advise --from-snapshot "$here/snapshot.yaml" -f "$here/podgroups.yaml" \
    -o json || echo "(advise exited $?: 3 means some pod stays pending)"
python -m tests.oracles.kubesched.oracle "$here"
"""


@dataclass
class Result(batch_.Result):
    seconds: list[float] = field(default_factory=list)
    """Per scenario, the oracle's time (create, decide, read, delete)."""
    redrawn: list[str] = field(default_factory=list)
    """The scenarios that agreed only at kube-scheduler's second or third draw."""


def run_advise(folder: Path) -> tuple[int, Obj | str]:
    """advise's exit code and JSON answer (or its error) on the scenario's files."""
    args = ["advise", "--from-snapshot", str(folder / "snapshot.yaml")]
    return batch_.run_advise([*args, "-f", str(folder / "podgroups.yaml"), "-o", "json"])


def _walk(groups: list[Obj]) -> Iterator[Obj]:
    for g in groups:
        yield g
        yield from _walk(g.get("children") or [])


def _cycles(groups: list[Obj]) -> Iterator[Obj]:
    """Every group of every cycle: the first's, then those of the cycles run again at once
    for pods a fitting hierarchy left over (``again``)."""
    for g in _walk(groups):
        yield g
        if g.get("again"):
            yield from _cycles([g["again"]])


def _pods_under(group: Obj, pod_groups: dict[str, str]) -> list[str]:
    """The pending pods (ns/name) of ``group``'s subtree in advise's answer."""
    names = {g["name"] for g in _walk([group]) if g["kind"] == "PodGroup"}
    return [pod for pod, pg in pod_groups.items() if pg in names]


def _tied(group: Obj) -> set[str]:
    feasible = [p for p in group.get("placements") or [] if p["feasible"]]
    top = max((p["scores"].get("total", 0) for p in feasible), default=0)
    return {p["domain"] for p in feasible if p["scores"].get("total", 0) == top}


POST_FILTER = re.compile(r"(, pod group preemption: [^,]*)+$")


def _message_agrees(
    ours: str, theirs: str, statuses: set[str], swaps: Collection[tuple[str, str]] = ()
) -> bool:
    if ours == theirs:
        return True
    for said, instead in swaps:
        # a group's error as its own message or behind its parents' prefixes
        if ours.endswith(said) and theirs == ours[: len(ours) - len(said)] + instead:
            return True
    a, b = PLACEMENTS.match(ours), PLACEMENTS.match(theirs)
    if not (a and b):
        return False
    same = a.group(1, 2, 4) == b.group(1, 2, 4)
    return same and b.group(3) in statuses


def _elsewhere(theirs: str, said: set[str]) -> bool:
    """kube-scheduler's message is one the pod may end with in another placement of a group
    none of whose placements is feasible (what the post-filter added aside: advise lists
    these before it)."""
    return theirs in said or POST_FILTER.sub("", theirs) in said


def compare(ours: Obj, theirs: Obj, labels: dict[str, dict[str, str]]) -> tuple[str, str] | None:
    """The first difference as (class, detail), or None when they agree."""
    real = {p["name"]: p for p in theirs["pods"]}
    # every cycle's groups: the pods left over by a fitting hierarchy end with the last's
    cycles = list(_cycles(ours["groups"]))
    statuses = {p["message"] for g in cycles for p in g.get("placements") or []}
    statuses |= {g["message"] for g in cycles}
    swaps = {(g["message"], a) for g in cycles for a in g.get("alternatives") or []}
    # when no placement of a group is feasible kube-scheduler reports the one it tried first
    elsewhere: dict[str, set[str]] = {}
    for g in cycles:
        for placement in g.get("placements") or []:
            for name, said in (placement.get("pods") or {}).items():
                elsewhere.setdefault(name, set()).update(said)
    for pod in ours["pods"]:
        r = real[pod["name"]]
        if bool(pod["node"]) != (r["state"] == "bound"):
            said = r["message"] or r["state"]
            return "verdict", f"{pod['name']}: advise {pod['node'] or pod['message']!r}; " + (
                f"kube-scheduler {r['node'] or said!r}"
            )
        if pod["node"]:
            continue
        if r["state"] == "queued":
            if not pod["message"].startswith(WAITING):
                return (
                    "message",
                    f"{pod['name']}: advise {pod['message']!r}; kube-scheduler: queued",
                )
        elif not _message_agrees(pod["message"], r["message"], statuses, swaps) and not _elsewhere(
            r["message"], elsewhere.get(pod["name"], set())
        ):
            return (
                "message",
                f"{pod['name']}: advise {pod['message']!r}; kube-scheduler {r['message']!r}",
            )
    pod_groups = {p["name"]: p["group"] for p in ours["pods"]}
    for group in _walk(ours["groups"]):
        key = group.get("topology_key")
        bound = [real[p]["node"] for p in _pods_under(group, pod_groups) if real[p]["node"]]
        if not key or not bound or not group["fits"] or group["domain"] is None:
            continue
        domains = {labels[n].get(key) for n in bound}
        want = group["domain"][key]
        if domains != {want}:
            tie = f" (a tie among {', '.join(sorted(_tied(group)))})" if group.get("tie") else ""
            return "domain", (
                f"{group['kind']} {group['name']} ({key}): advise {want}{tie}"
                f"; kube-scheduler {', '.join(sorted(map(str, domains)))}"
            )
    groups = {p["name"]: p["group"] for p in ours["pods"]}
    ours_at = Counter((p["group"], p["node"]) for p in ours["pods"] if p["node"])
    real_at = Counter((groups[p["name"]], p["node"]) for p in theirs["pods"] if p["node"])
    if ours_at != real_at:
        a, b = ours_at - real_at, real_at - ours_at
        return "spread", f"pods per group and node: advise {_at(a)}; kube-scheduler {_at(b)}"
    return None


def _at(counts: Counter[tuple[str, str]]) -> str:
    return ", ".join(f"{g}@{n}×{c}" for (g, n), c in sorted(counts.items())) or "-"


def tied(ours: Obj) -> bool:
    """Whether advise reports a draw of kube-scheduler's that replaying can steer: a pod
    whose node was one of several of equal score, a group whose placement was one of
    several of equal score."""
    groups = _cycles(ours["groups"])
    return any(p.get("tied_nodes") for p in ours["pods"]) or any(g.get("tie") for g in groups)


def replayed(folder: Path, theirs: Obj) -> Obj:
    """advise's JSON answer on the scenario, worked out again with kube-scheduler's draws
    replayed: among nodes of equal score, the first tied node (by name) where
    kube-scheduler bound more pods of the pod's group than the simulation has put there so
    far (its running pods included), else the first tied node; among a group's placements
    of equal score, the domain kube-scheduler bound the group's pods in, when it is one of
    them. Only a tie is steered: a node or a placement that is not among the simulator's
    best is never taken."""
    manifest = read_manifest(str(folder / "podgroups.yaml"))
    snap, items = read_snapshot_objects(str(folder / "snapshot.yaml"), tas_pods_via_workloads=False)
    known = [(o, "snapshot") for o in items if isinstance(o, dict)]
    asked = [(o, manifest.where(i)) for i, o in enumerate(manifest.objects)]
    objs = collect(asked, known)
    group_of = {p.ref: p.group for p in objs.pods}
    want: Counter[tuple[str, str, str]] = Counter()
    for p in objs.pods:
        if p.node:
            want[(p.namespace, p.group, p.node)] += 1
    for r in theirs["pods"]:
        if r["node"]:
            want[(r["name"].split("/")[0], group_of[r["name"]], r["node"])] += 1

    def prefer(pod: GroupPod, nodes: tuple[str, ...], state: State) -> str:
        have = Counter(node for _p, node in state.members.get((pod.namespace, pod.group), []))
        key = (pod.namespace, pod.group)
        return next((n for n in nodes if want[(*key, n)] > have[n]), nodes[0])

    domains = _domains_taken(objs, theirs, {n.name: n.labels for n in snap.nodes})

    def prefer_domain(group: Group, tied: tuple[str | None, ...]) -> str | None:
        want = domains.get((group.kind, group.namespace, group.name))
        return want if want in tied else tied[0]

    origin = str(folder / "podgroups.yaml")
    advice = advise(objs, snap.nodes, origin, prefer=prefer, prefer_domain=prefer_domain)
    return advice_dict(advice)


def _domains_taken(
    objs: Objects, theirs: Obj, labels: dict[str, Mapping[str, str]]
) -> dict[tuple[str, str, str], str]:
    """Per group with a topology key, the one domain kube-scheduler bound its pods in."""
    bound = {r["name"]: r["node"] for r in theirs["pods"] if r["node"]}
    out: dict[tuple[str, str, str], str] = {}
    for (kind, namespace, name), group in objs.groups.items():
        if group.key is None:
            continue
        under = set(ob.pod_groups_under(objs, group))
        nodes = {
            bound[p.ref]
            for p in objs.pods
            if p.namespace == namespace and p.group in under and p.ref in bound
        }
        values = {labels[n].get(group.key) for n in nodes}
        if len(values) == 1 and None not in values:
            out[(kind, namespace, name)] = str(next(iter(values)))
    return out


def agrees(folder: Path, ours: Obj, theirs: Obj) -> tuple[str, str] | None:
    """The comparison of one answer of kube-scheduler's with advise's, with its draws
    among tied nodes and placements replayed where advise reports ties (``replayed``)."""
    labels = _labels(folder)
    found = compare(ours, theirs, labels)
    if found is None or not tied(ours):
        return found
    again = compare(replayed(folder, theirs), theirs, labels)
    if again is None:
        return None
    kind, detail = again
    return kind, f"{detail} (with kube-scheduler's draws among tied nodes and placements replayed)"


def _labels(folder: Path) -> dict[str, dict[str, str]]:
    items = yaml.safe_load((folder / "snapshot.yaml").read_text())["items"]
    return {o["metadata"]["name"]: o["metadata"]["labels"] for o in items if o["kind"] == "Node"}


def write_repro(folder: Path, kind: str, detail: str) -> None:
    (folder / "README").write_text(
        f"advise and kube-scheduler v{oracle.KUBERNETES.lstrip('v')} disagree: {kind}\n"
        f"{detail}\n\noracle.json is the real scheduler's answer (advise.json, where present, "
        "advise's); repro.sh runs both again.\n"
    )
    script = folder / "repro.sh"
    script.write_text(REPRO.replace("{root}", str(ROOT)))
    script.chmod(0o755)


DRAWS = 3
"""How many times a scenario that disagrees goes through kube-scheduler before it counts as a
disagreement. kube-scheduler draws at random (the order of placements, one of equal nodes),
so one run shows one of the answers it can give; ``advise`` agrees when its answer is one of
them. An answer kube-scheduler never gives in three draws is a disagreement."""


def _decide(api: oracle.Api, folder: Path, labels: dict[str, dict[str, str]]) -> Obj | str:
    """kube-scheduler's answer (again once if it bound a pod to a node of an earlier
    scenario that the scheduler had not yet seen go), or why there is none."""
    for _attempt in range(2):
        theirs = oracle.run(api, folder)
        stray = [p["node"] for p in theirs["pods"] if p["node"] and p["node"] not in labels]
        if not stray:
            return theirs
        time.sleep(1.0)
    return f"kube-scheduler bound pods to nodes of another scenario: {stray}"


def one(
    api: oracle.Api, folder: Path, draws: int = DRAWS, redrawn: list[str] | None = None
) -> tuple[str, str] | None:
    """One scenario folder through advise and, up to ``draws`` times, kube-scheduler; the
    last answer read is kept in ``oracle.json``. A scenario that agreed only at a later
    draw is added to ``redrawn``."""
    labels = _labels(folder)
    code, ours = run_advise(folder)
    if isinstance(ours, str):
        return "advise-error", f"advise exited {code}: {ours}"
    (folder / "advise.json").write_text(json.dumps(ours, indent=2) + "\n")
    found: tuple[str, str] | None = None
    for draw in range(draws):
        theirs = _decide(api, folder, labels)
        if isinstance(theirs, str):
            return "oracle", theirs
        (folder / "oracle.json").write_text(json.dumps(theirs, indent=2) + "\n")
        found = agrees(folder, ours, theirs)
        if found is None:
            if draw and redrawn is not None:
                redrawn.append(folder.name)
            return None
    assert found is not None
    kind, detail = found
    return kind, f"{detail} (kube-scheduler's last of {draws} runs)"


def batch(n: int, seed: int, out_dir: Path) -> Result:
    """``n`` scenarios of ``seed`` through one control plane; the folders of those that
    disagree stay in ``out_dir`` with a README and repro.sh."""
    result = Result()
    with tempfile.TemporaryDirectory(prefix="kubesched-oracle-") as tmp:
        plane = oracle.OraclePlane(Path(tmp) / "plane", control_plane_bin())
        try:
            plane.start()
            api = oracle.Api(plane)
            for i in range(n):
                sc = generate(seed, i)
                folder = sc.write(out_dir / sc.name)
                started = time.monotonic()
                found = one(api, folder, redrawn=result.redrawn)
                result.seconds.append(time.monotonic() - started)
                if found is None:
                    result.agree += 1
                    shutil.rmtree(folder)
                    continue
                kind, detail = found
                write_repro(folder, kind, detail)
                result.disagreements.append(Disagreement(sc.name, kind, detail, folder))
                result.by_kind[kind] += 1
        finally:
            plane.stop()
    return result
