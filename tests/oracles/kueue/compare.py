"""Run ``advise`` and the Kueue oracle on generated scenarios and compare their answers.

What is compared (tests/oracles/README.md, "Kueue", says why):
- placing a pending Workload: the verdict (admitted or not); when admitted, the pods per
  lowest-level domain of each PodSet (Kueue's TAS placement is deterministic: domains are
  sorted by capacity, then by their values); when not, Kueue's TAS message must be the one
  ``advise`` gives for the first PodSet that does not fit;
- failing nodes of an admitted Workload: the outcome (replaced, evicted, kept, waiting,
  unaffected), the eviction message, and after a replacement the pods per node.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

from tests.oracles.batch import Disagreement, Result, run_advise
from tests.oracles.kueue import build
from tests.oracles.kueue.scenarios import Scenario, generate


def _scenario(folder: Path, sc: Scenario) -> list[str]:
    """The Workload to place, or the admitted one and its failed nodes: the same flags for
    advise and the oracle."""
    if sc.kind == "place":
        return ["-f", str(folder / "workload.json")]
    return ["--workload", sc.admitted, *(a for node in sc.failed for a in ("--failed-node", node))]


def advise_args(folder: Path, sc: Scenario) -> list[str]:
    args = ["advise", "--from-snapshot", str(folder / "snapshot.json"), "-o", "json"]
    gates = ["--kueue-feature-gates", sc.gates] if sc.gates else []
    return [*args, *_scenario(folder, sc), *gates]


def oracle_args(binary: Path, folder: Path, sc: Scenario) -> list[str]:
    gates = ["--feature-gates", sc.gates] if sc.gates else []
    return [
        str(binary),
        "--snapshot",
        str(folder / "snapshot.json"),
        *_scenario(folder, sc),
        *gates,
    ]


def run_oracle(args: list[str]) -> dict[str, Any] | str:
    done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=60)
    if done.returncode != 0:
        return done.stderr.strip()
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def _oracle_counts(podset: dict[str, Any]) -> dict[str, int]:
    return {d["values"][-1]: d["count"] for d in podset["domains"]}


def _advise_counts(podset: dict[str, Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for entry in podset.get("assignment") or []:
        # A topology whose lowest level is not the hostname names no node: the entry's
        # lowest-level domain is what Kueue's assignment holds.
        key = entry.get("hostname") or list(entry["domains"].values())[-1]
        counts[key] = counts.get(key, 0) + int(entry["count"])
    return counts


def compare_place(advise: dict[str, Any], oracle: dict[str, Any]) -> tuple[str, str] | None:
    admitted = oracle["outcome"] == "admitted"
    if bool(advise["fits"]) != admitted:
        said = oracle["message"] if not admitted else "admitted"
        return "verdict", f"advise fits={advise['fits']} ({advise.get('message')}); Kueue: {said}"
    if not admitted:
        message = oracle["message"]
        ours = advise.get("message") or ""
        if ours not in message:
            return "message", f"advise: {ours!r}; Kueue: {message!r}"
        return None
    ours_by_name = {p["name"]: p for p in advise["workloads"][0]["podsets"]}
    for ps in oracle["podSets"]:
        theirs = _oracle_counts(ps)
        ours = _advise_counts(ours_by_name.get(ps["name"], {}))
        if theirs != ours:
            return "placement", f"PodSet {ps['name']}: advise {ours}; Kueue {theirs}"
    return None


def _before(sc: Scenario) -> dict[str, dict[str, int]]:
    """Each PodSet's pods per node before the failure, from the admitted Workload."""
    name = sc.admitted.split("/")[1]
    wl = next(
        o for o in sc.snapshot if o.get("kind") == "Workload" and o["metadata"]["name"] == name
    )
    out = {}
    for psa in wl["status"]["admission"]["podSetAssignments"]:
        s = psa["topologyAssignment"]["slices"][0]
        roots = s["valuesPerLevel"][0]["individual"]["roots"]
        out[psa["name"]] = dict(zip(roots, s["podCounts"]["individual"], strict=True))
    return out


def _any_order(message: Any) -> str:
    """An eviction message with its list of nodes sorted: Kueue lists failed nodes in the
    order its node controller met them, which follows the order of Node events."""
    head, sep, names = str(message).rpartition(": ")
    comma = ", " if ", " in names else ","
    return head + sep + comma.join(sorted(names.split(comma)))


def compare_failure(
    sc: Scenario, advise: dict[str, Any], oracle: dict[str, Any]
) -> tuple[str, str] | None:
    outcome = oracle["outcome"]
    before = _before(sc)
    after = {ps["name"]: _oracle_counts(ps) for ps in oracle["podSets"]}
    if outcome == "replaced" and after == before:
        outcome = "kept"  # the assignment stays as it was (a Workload owned by a single Pod)
    if advise.get("outcome") != outcome:
        ours = f"{advise.get('outcome')} ({advise.get('message')})"
        return "outcome", f"advise {ours}; Kueue {outcome} ({oracle['message']})"
    reported = {f["node"] for f in advise.get("failures") or []}
    if not set(oracle["failedNodes"]) <= reported:
        return "failed-nodes", f"advise reports {sorted(reported)}; Kueue {oracle['failedNodes']}"
    if outcome == "evicted" and _any_order(advise.get("message")) != _any_order(oracle["message"]):
        return (
            "eviction-message",
            f"advise: {advise.get('message')!r}; Kueue: {oracle['message']!r}",
        )
    if outcome == "replaced":
        for ps in advise.get("podsets") or []:
            ours = dict(before.get(ps["name"], {}))
            for failed in ps.get("failed") or []:
                ours.pop(failed["node"], None)
                for entry in failed.get("replacement") or []:
                    ours[entry["node"]] = ours.get(entry["node"], 0) + int(entry["count"])
            if ours != after.get(ps["name"]):
                return (
                    "replacement",
                    f"PodSet {ps['name']}: advise {ours}; Kueue {after.get(ps['name'])}",
                )
    return None


def judge(sc: Scenario, binary: Path, folder: Path) -> tuple[str, str] | None:
    """The class and detail of a disagreement, or None when both agree."""
    sc.write(folder)
    return agree(sc, folder, run_oracle(oracle_args(binary, folder, sc)))


def agree(sc: Scenario, folder: Path, oracle: dict[str, Any] | str) -> tuple[str, str] | None:
    """advise's answer on the scenario in ``folder`` against the oracle's."""
    code, advise = run_advise(advise_args(folder, sc))
    if isinstance(oracle, str):
        if isinstance(advise, str):
            return None  # both refuse the input
        return "oracle-error", oracle
    if isinstance(advise, str):
        return "advise-error", f"exit {code}: {advise}"
    if sc.kind == "place":
        return compare_place(advise, oracle)
    return compare_failure(sc, advise, oracle)


def write_repro(folder: Path, sc: Scenario, binary: Path, kind: str, detail: str) -> None:
    advise = "topology-labeler " + shlex.join(advise_args(Path("."), sc))
    oracle = shlex.join(oracle_args(Path("$ORACLE"), Path("."), sc)).replace(
        "'$ORACLE'", '"$ORACLE"'
    )
    (folder / "repro.sh").write_text(
        "#!/bin/sh\n# Run from this folder; ORACLE is the oracle binary "
        "(python -m tests.oracles.kueue.build prints its path).\n"
        f"{advise}\n{oracle}\n"
    )
    (folder / "README").write_text(f"{sc.name}: {kind}\n{detail}\n")


def batch(n: int, seed: int, out_dir: Path) -> Result:
    binary = build.build()
    result = Result()
    for i in range(n):
        sc = generate(seed + i)
        folder = out_dir / sc.name
        verdict = judge(sc, binary, folder)
        if verdict is None:
            result.agree += 1
            for f in folder.iterdir():
                f.unlink()
            folder.rmdir()
            continue
        kind, detail = verdict
        write_repro(folder, sc, binary, kind, detail)
        result.by_kind[kind] += 1
        result.disagreements.append(Disagreement(sc.name, kind, detail, folder))
    return result
