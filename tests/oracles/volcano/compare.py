"""Run ``advise`` and Volcano's own scheduler (the oracle) on generated scenarios, compare.

The comparison (tests/oracles/README.md, "Volcano"): advise runs first and the oracle takes
its choices where Volcano would break a tie at random (``--prefer``): its placement, and the
node it picked for each pod in every HyperNode it tried, dry runs included. Then the verdict
(the gang placed this cycle or not), the number of pods bound and pipelined, for every
HyperNode tier the pod counts per HyperNode (sorted), and the pod counts per node (sorted).
When neither places the gang, the PodGroup's word must be the same up to its "Origin
reason": the origin depends on which HyperNode Volcano tried last, a Go map walk. Volcano's
ties where advise made no pick still fall at random, and may decide
which HyperNode holds the gang; a difference counts only when ``SEEDS`` runs all differ.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter, deque
from pathlib import Path
from typing import Any
from unittest import mock

import yaml

from labeler.sim.volcano.allocate import Allocator
from labeler.sim.volcano.hypernodes import TOP
from labeler.sim.volcano.session import NodeState, Statement, SubJob, TaskState
from tests.oracles.batch import Disagreement, Result, run_advise
from tests.oracles.volcano import build, jobcompare, jobscenarios, scenarios

ROOT = Path(__file__).resolve().parents[3]
SEEDS = 8  # oracle runs, each with its own seed, before a difference counts
Obj = dict[str, Any]


def advise(folder: Path) -> Obj:
    """advise's JSON answer for the scenario in ``folder``."""
    cmd = [sys.executable, "-m", "labeler", "advise", "-f", str(folder / "job.yaml")]
    cmd += ["--from-snapshot", str(folder / "snapshot.yaml"), "-o", "json"]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    if r.returncode not in (0, 3) or not r.stdout.strip():
        return {"error": (r.stderr or r.stdout).strip()}
    answer: Obj = json.loads(r.stdout)
    return answer


def advise_traced(folder: Path) -> tuple[Obj, dict[str, list[list[str]]]]:
    """advise's JSON answer, run in this process, and the nodes it picked for each pod with
    the HyperNode of each attempt (dry runs included, in order; not the per-tier table's
    first-fit counting)."""
    tried: dict[str, list[list[str]]] = {}
    attempt: list[str] = []  # the HyperNode whose nodes the allocator is placing tasks on
    tasks, place = Allocator.tasks, Allocator._place

    def in_hypernode(self: Allocator, sj: SubJob, ts: deque[TaskState], hn: str) -> Any:
        attempt.append(hn)
        try:
            return tasks(self, sj, ts, hn)
        finally:
            attempt.pop()

    def recorded(self: Allocator, stmt: Statement, ts: TaskState, ns: NodeState) -> None:
        pick = [attempt[-1] if attempt else TOP, ns.name]
        if not self.first_fit and pick not in tried.setdefault(ts.task.ref, []):
            tried[ts.task.ref].append(pick)
        place(self, stmt, ts, ns)

    args = ["advise", "-f", str(folder / "job.yaml")]
    args += ["--from-snapshot", str(folder / "snapshot.yaml"), "-o", "json"]
    with (
        mock.patch.object(Allocator, "tasks", in_hypernode),
        mock.patch.object(Allocator, "_place", recorded),
    ):
        _, answer = run_advise(args)
    if isinstance(answer, str):
        return {"error": answer}, {}
    return answer, tried


def write_prefer(folder: Path, a: Obj, tried: dict[str, list[list[str]]]) -> None:
    """advise's choices, for the oracle to take where Volcano breaks a tie at random: its
    placement and in which order it placed the pods, and the nodes it picked in every
    HyperNode it tried."""
    placed = {**_advise_placed(a, "pods"), **_advise_placed(a, "pipelined")}
    prefer = {"placed": placed, "order": list(placed), "tried": tried}
    (folder / "prefer.json").write_text(json.dumps(prefer, indent=2, sort_keys=True) + "\n")


def oracle(exe: Path, folder: Path, seed: int = 1) -> Obj:
    """Volcano's answer for the scenario in ``folder`` (ties broken as ``prefer.json`` says)."""
    cmd = [str(exe), "--snapshot", str(folder / "snapshot.yaml"), "-f", str(folder / "job.yaml")]
    cmd += ["--seed", str(seed)]
    if (folder / "prefer.json").exists():
        cmd += ["--prefer", str(folder / "prefer.json")]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
    if r.returncode != 0:
        return {"error": r.stderr.strip()[-2000:]}
    answer: Obj = json.loads(r.stdout)
    return answer


def _hypernode_of(snapshot: list[Obj]) -> dict[str, dict[int, str]]:
    """Each node's HyperNode at every tier (members resolved as Volcano resolves them)."""
    nodes = [o for o in snapshot if o.get("kind") == "Node"]
    hns = [o for o in snapshot if o.get("kind") == "HyperNode"]
    parent: dict[str, str] = {}
    leaf: dict[str, str] = {}
    for hn in hns:
        for m in hn["spec"].get("members") or []:
            sel = m.get("selector") or {}
            if m.get("type") == "HyperNode":
                parent[sel["exactMatch"]["name"]] = hn["metadata"]["name"]
                continue
            for n in nodes:
                name, labels = n["metadata"]["name"], n["metadata"].get("labels") or {}
                if (
                    ("exactMatch" in sel and sel["exactMatch"]["name"] == name)
                    or ("regexMatch" in sel and re.search(sel["regexMatch"]["pattern"], name))
                    or (
                        "labelMatch" in sel
                        and all(
                            labels.get(k) == v
                            for k, v in sel["labelMatch"].get("matchLabels", {}).items()
                        )
                    )
                ):
                    leaf[name] = hn["metadata"]["name"]
    tier = {hn["metadata"]["name"]: int(hn["spec"]["tier"]) for hn in hns}
    out: dict[str, dict[int, str]] = {}
    for node, hn in leaf.items():
        chain: dict[int, str] = {}
        cur: str | None = hn
        while cur is not None:
            chain[tier[cur]] = cur
            cur = parent.get(cur)
        out[node] = chain
    return out


def invariants(placed: dict[str, str], where: dict[str, dict[int, str]]) -> Obj:
    """What a placement keeps whichever equally scored node Volcano picks."""
    per_node = sorted(Counter(placed.values()).values())
    per_tier: dict[int, list[int]] = {}
    tiers = sorted({t for chain in where.values() for t in chain})
    for t in tiers:
        c = Counter(where.get(n, {}).get(t, "-") for n in placed.values())
        per_tier[t] = sorted(c.values())
    return {"pods": len(placed), "perNode": per_node, "perTier": per_tier}


def _advise_placed(a: Obj, key: str) -> dict[str, str]:
    return {p["name"]: p["node"] for p in a.get(key) or []}


def _unschedulable(o: Obj) -> str:
    """The gang's word on the PodGroup: the Unschedulable message, else, when the gang is
    ready (its running members suffice) and nothing was placed, the Scheduled reason."""
    conds = o.get("conditions") or []
    for c in conds:
        if c["type"] == "Unschedulable":
            return str(c["message"])
    for c in conds:
        if c["type"] == "Scheduled":
            return str(c["reason"])
    return ""


def _gang_part(message: str) -> str:
    return message.split(" Origin reason is ")[0].removesuffix(".")


def differences(folder: Path, a: Obj, o: Obj) -> list[str]:
    """What differs between advise's answer ``a`` and the oracle's ``o``; empty: agree."""
    if o.get("refused"):
        return jobcompare.refusal_differences(a, o["refused"])
    if "error" in a or "error" in o:
        return [f"advise: {a.get('error')}", f"oracle: {o.get('error')}"]
    snapshot = yaml.safe_load((folder / "snapshot.yaml").read_text())["items"]
    where = _hypernode_of(snapshot)
    out = []
    for key_a, key_o in (("pods", "binds"), ("pipelined", "pipelined")):
        ia = invariants(_advise_placed(a, key_a), where)
        io = invariants(o[key_o], where)
        if ia != io:
            out.append(f"{key_o}: advise {ia} vs Volcano {io}")
    placed = a["pods"] or o["binds"] or a["pipelined"] or o["pipelined"]
    if not placed and _gang_part(a["message"]) != _gang_part(_unschedulable(o)):
        out.append(f"message: advise {a['message']!r} vs Volcano {_unschedulable(o)!r}")
    out += jobcompare.conversion_differences(folder, o)
    return [d for d in out if d]


def write_repro(folder: Path, exe: Path, diffs: list[str]) -> None:
    (folder / "repro.sh").write_text(
        '#!/bin/sh\n# advise and Volcano\'s own scheduler on this scenario\ncd "$(dirname "$0")"\n'
        "python -m labeler advise -f job.yaml --from-snapshot snapshot.yaml -o json\n"
        f"{exe} --snapshot snapshot.yaml -f job.yaml --prefer prefer.json\n"
    )
    (folder / "README").write_text("They disagree:\n" + "\n".join(diffs) + "\n")


def batch(n: int, seed: int, out_dir: Path) -> Result:
    """Generate ``n`` scenarios from ``seed``, run both, compare."""
    exe = build.build()
    result = Result()
    for i in range(n):
        folder = out_dir / f"{seed}-{i}"
        sc = scenarios.generate(seed * 1_000_003 + i)
        jobscenarios.apply(sc, seed * 1_000_003 + i)
        scenarios.write(sc, folder)
        a, tried = advise_traced(folder)
        if "error" not in a:
            write_prefer(folder, a, tried)
        o = oracle(exe, folder)
        diffs = differences(folder, a, o)
        # Ties where advise made no pick are Volcano's own random picks, and
        # they decide which HyperNode holds the gang: other seeds, then (see README.md).
        for run_seed in range(2, SEEDS + 1):
            if not diffs:
                break
            again = oracle(exe, folder, run_seed)
            if not differences(folder, a, again):
                o, diffs = again, []
        (folder / "advise.json").write_text(json.dumps(a, indent=2))
        (folder / "oracle.json").write_text(json.dumps(o, indent=2))
        if diffs:
            write_repro(folder, exe, diffs)
            kind = "error" if "error" in a or "error" in o else diffs[0].split(":")[0]
            result.disagreements.append(Disagreement(folder.name, kind, "; ".join(diffs), folder))
        else:
            result.agree += 1
    return result
