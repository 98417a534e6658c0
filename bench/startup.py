"""Benchmark: start-up of the command line, as ratios to a bare ``python -c pass``.

    python bench/startup.py [--runs 5] [--tree NAME=PATH ...] [--venv NAME=VENV ...]

Each command runs as a real process from a neutral working directory, either with
PYTHONPATH set to a checkout (``--tree``: two checkouts compared in one run, sharing this
venv) or with the interpreter of a venv the project was installed into (``--venv``, after
``pip install .``: no PYTHONPATH, no editable finder; the ratio a user's install sees):

- ``--help``, and the offline commands: ``lld`` (a small workbook), ``generate --from-csv``,
  ``check --from-csv``, ``advise --from-snapshot``, ``plan`` of a CSV with a bad value
  (it must fail before asking for a cluster);
- ``agent --once`` against the in-repo fake API server and the fake IMDS (both in this
  process): wall time from spawning the process until every level label is on the node,
  and the process's peak RSS.

Runs are interleaved (tree A, tree B, A, B…) so a change in machine load hits both; each
figure is the median of ``--runs``. Wall and CPU milliseconds (user + sys of the child,
from ``wait4``) are both printed, each with its ratio to the bare interpreter's; on a
shared, loaded machine the CPU ratio is the steadier one. With
``--imports``, also what the imports of each offline command cost (``python -X importtime``:
the median self time of each package, or of each of our packages such as
``labeler.core``, beyond what a bare interpreter of the same environment imports). Not a
test: run it by hand and copy the figures into bench/README.md.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import openpyxl  # noqa: E402

from labeler.core.profiles import oci_rdma  # noqa: E402
from tests.e2e.fake_imds import RDMA, FakeImds, rdma_doc  # noqa: E402
from tests.fakekube import FakeKube  # noqa: E402

LEVELS = oci_rdma().level_keys
Sample = tuple[float, float, float]  # wall s, cpu s, peak RSS MB


def run(cmd: list[str], env: dict[str, str], cwd: Path, until: Callable[[], bool] | None) -> Sample:
    """Spawn, wait (for ``until`` if given, else for exit), return wall/CPU/RSS."""
    # GNU time reports the peak RSS: ``wait4``'s would count the pages of this (big)
    # process that the child had before its exec. The CPU time is wait4's (microseconds,
    # where GNU time prints 10 ms steps): the command's and GNU time's own, ~0.5 ms.
    stats = cwd / "time.out"
    timed = ["/usr/bin/time", "-o", str(stats), "-f", "%M", *cmd]
    start = time.perf_counter()
    proc = subprocess.Popen(
        timed, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    wall = 0.0
    if until is not None:
        while not until():
            # Has it exited? (Looked at, not reaped: wait4 below reaps it for its usage.)
            exited = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if exited is not None or time.perf_counter() - start > 60:
                break
            time.sleep(0.002)
        wall = time.perf_counter() - start
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if until is None:
        wall = time.perf_counter() - start
    elif not until():
        raise SystemExit(f"{cmd}: did not label the node ({proc.returncode})")
    rss_kb = stats.read_text().split()[-1]
    return wall, usage.ru_utime + usage.ru_stime, int(rss_kb) / 1024


def import_costs(
    python: str, cmd: list[str], env: dict[str, str], cwd: Path, runs: int
) -> dict[str, float]:
    """Median self import time (ms) of each package ``cmd`` imports beyond ``python -c pass``
    of the same environment (site, and an editable install's finder, are on both sides)."""
    timed = {**env, "PYTHONPROFILEIMPORTTIME": "1"}  # -X importtime, for a console script too

    def self_times(argv: list[str]) -> dict[str, int]:
        p = subprocess.run(argv, env=timed, cwd=cwd, capture_output=True)
        out: dict[str, int] = {}
        for line in p.stderr.decode().splitlines():
            if line.startswith("import time:") and "self [us]" not in line:
                own, _, name = line[len("import time:") :].split("|")
                out[name.strip()] = int(own)
        return out

    bare = set(self_times([python, "-c", "pass"]))
    per_run: list[collections.Counter[str]] = []
    for _ in range(runs):
        groups: collections.Counter[str] = collections.Counter()
        for name, us in self_times(cmd).items():
            if name not in bare:
                parts = name.split(".")
                groups[".".join(parts[:2]) if parts[0] == "labeler" else parts[0]] += us
        per_run.append(groups)
    names = set().union(*per_run)
    return {g: statistics.median(r[g] for r in per_run) / 1000 for g in names}


def workbook(path: Path) -> Path:
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = "超节点规划"
    ws.append(["编号", "主机名称", "机框编号"])
    for i in range(64):
        ws.append([i + 1, f"n{i}", i // 4 + 1])
    wb.save(path)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument(
        "--tree",
        action="append",
        default=[],
        help="NAME=PATH of a checkout to measure (default: this one as 'this')",
    )
    ap.add_argument(
        "--venv",
        action="append",
        default=[],
        help="NAME=VENV: a venv the project was installed into with `pip install .`",
    )
    ap.add_argument(
        "--imports", action="store_true", help="also print what each offline command imports"
    )
    args = ap.parse_args()
    # name → (its python, the command line a user types, its environment, what it is)
    sides: dict[str, tuple[str, list[str], dict[str, str], str]] = {}
    bare_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    here = sys.executable
    for name, tree in (t.split("=", 1) for t in args.tree):
        sides[name] = (here, [here, "-m", "labeler"], {**bare_env, "PYTHONPATH": tree}, tree)
    for name, venv in (v.split("=", 1) for v in args.venv):
        bin_dir = Path(venv) / "bin"
        script = [str(bin_dir / "topology-labeler")]  # the console script pip made
        sides[name] = (str(bin_dir / "python"), script, bare_env, f"{venv} (installed)")
    if not sides:
        sides["this"] = (here, [here, "-m", "labeler"], {**bare_env, "PYTHONPATH": str(ROOT)}, "")

    # Byte-compile each tree first, as pip does on install: otherwise a process started
    # with PYTHONDONTWRITEBYTECODE (set on some CI and build machines) compiles every
    # module of ours on every run, and that is what would be measured.
    for _, tree in (t.split("=", 1) for t in args.tree or [f"this={ROOT}"]):
        subprocess.run([sys.executable, "-m", "compileall", "-q", f"{tree}/labeler"], check=True)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    bare_env.pop("PYTHONDONTWRITEBYTECODE", None)
    tmp = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    csv = ROOT / "examples" / "oci-cluster.csv"
    bad = tmp / "bad.csv"
    bad.write_text(csv.read_text().replace("gpu-02,", "gpu_02,", 1))
    xlsx = workbook(tmp / "lld.xlsx")
    snapshot = ROOT / "examples" / "snapshot-oci.yaml"

    def commands_of(python: str, tl: list[str]) -> dict[str, list[str]]:
        return {
            "python -c pass": [python, "-c", "pass"],
            "--help": [*tl, "--help"],
            "lld": [*tl, "lld", "-i", str(xlsx), "-o", str(tmp / "lld.csv"), "-t", "t"],
            "generate --from-csv": [
                *tl,
                "generate",
                "--profile=oci-rdma",
                f"--from-csv={csv}",
                f"--output-dir={tmp / 'out'}",
            ],
            "check --from-csv": [*tl, "check", "--profile=oci-rdma", f"--from-csv={csv}"],
            "advise --from-snapshot": [
                *tl,
                "advise",
                "--profile=oci-rdma",
                f"--from-snapshot={snapshot}",
                "--pods=2",
                "--request=nvidia.com/gpu=8",
            ],
            "plan (CSV error)": [*tl, "plan", f"--config-path={bad}"],
        }

    labels = list(commands_of(here, []))
    results: dict[tuple[str, str], list[Sample]] = {}
    with FakeKube() as fake, FakeImds() as imds:
        kubeconfig = fake.write_kubeconfig(tmp / "kubeconfig")
        for i in range(args.runs):
            for name, (python, tl, env, _) in sides.items():
                for label, cmd in commands_of(python, tl).items():
                    results.setdefault((name, label), []).append(run(cmd, env, tmp, None))
                node = f"gpu-{name}-{i}"
                fake.add_node(node)
                imds.set(node, RDMA, rdma_doc("i", "nb", "lb", node))
                agent = [
                    *tl,
                    "agent",
                    "--once",
                    "--profile=oci-rdma",
                    f"--kubeconfig={kubeconfig}",
                    f"--node-name={node}",
                    f"--imds-url={imds.url_for(node)}",
                    "--log-level=warning",
                ]

                def labeled(node: str = node) -> bool:
                    labels = fake.get_node(node)["metadata"].get("labels") or {}
                    return all(k in labels for k in LEVELS)

                results.setdefault((name, "agent --once"), []).append(run(agent, env, tmp, labeled))
    print(
        f"start-up, median of {args.runs} runs, load average {os.getloadavg()[0]:.1f} "
        f"(wall ms / CPU ms / ratio of each to python -c pass / peak RSS MB)"
    )
    for name, (_, _, _, what) in sides.items():
        bare = results[(name, "python -c pass")]
        bare_wall = statistics.median(s[0] for s in bare)
        bare_cpu = statistics.median(s[1] for s in bare)
        print(f"[{name}] {what}")
        for label in [*labels, "agent --once"]:
            samples = results[(name, label)]
            wall = statistics.median(s[0] for s in samples)
            cpu = statistics.median(s[1] for s in samples)
            rss = max(s[2] for s in samples)
            print(
                f"  {label:24s} {1000 * wall:5.0f} ms  cpu {1000 * cpu:5.1f} ms  "
                f"x{wall / bare_wall:5.1f} wall  x{cpu / bare_cpu:5.1f} cpu  {rss:6.1f} MB"
            )
    if args.imports:
        print(f"imports beyond python -c pass, median self ms of {args.runs} runs of -X importtime")
        for label in labels[1:]:
            for name, (python, tl, env, _) in sides.items():
                costs = import_costs(python, commands_of(python, tl)[label], env, tmp, args.runs)
                top = sorted(costs.items(), key=lambda kv: -kv[1])
                print(f"  [{name}] {label}: {sum(costs.values()):.0f} ms in {len(costs)} packages")
                print("    " + ", ".join(f"{g} {ms:.1f}" for g, ms in top[:12]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
