"""End to end through the command lines a user types: topology-labeler and the twins.

Most run the CLI's main() in-process (each subprocess costs seconds of imports); one test
runs the real command lines as subprocesses.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import openpyxl
import pytest

from labeler.base.errors import Terminated
from labeler.bulk.writes import StopOnSignal
from labeler.cli import main
from labeler.commands.mindcluster import label_tool_main, lld_parser_main
from labeler.kube.nodes import METADATA_LIST
from tests.commands.conftest import Result
from tests.fakekube import FakeKube
from tests.helpers import cli_env

ROOT = Path(__file__).resolve().parents[2]
G = "huawei.com/topotree.groupid"
T = "huawei.com/topotree"
S = "huawei.com/topotree.superpodid"


def run(
    *args: str, kubeconfig: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = cli_env()
    env.pop("KUBECONFIG", None)
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, input=stdin, timeout=120
    )


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """``topology-labeler ARGS --kubeconfig K`` in-process (labeler.cli.main), output captured."""

    def call(*args: str, kubeconfig: Path) -> Result:
        capsys.readouterr()
        code = main([*args, "--kubeconfig", str(kubeconfig)])
        out = capsys.readouterr()
        return Result(code, out.out, out.err)

    return call


# Both the API server that answers the label writers' LIST with metadata only and one that
# ignores that form (before 1.15) and sends full Nodes: the same requests, the same output.
SERVERS = pytest.mark.parametrize("metadata", [True, False], ids=["metadata-list", "old-server"])


def lists_asked_metadata_only(fake: FakeKube) -> bool:
    records = fake.requests(verb="list")
    return bool(records) and all(r.accept == METADATA_LIST for r in records)


@SERVERS
def test_plan_apply_rerun_and_conflict(
    fake_kube: FakeKube,
    kubeconfig: Path,
    tmp_path: Path,
    cli: Callable[..., Result],
    metadata: bool,
) -> None:
    fake_kube.partial_metadata = metadata
    fake_kube.add_node("n1")
    fake_kube.add_node("n2", labels={G: "9"})  # someone else's value
    fake_kube.add_node("n3", labels={G: "1", T: "t"})
    csv = tmp_path / "c.csv"
    csv.write_bytes(f"\ufeffnodeName,{G},{T}\r\nn1,0,t\r\nn2,0,t\r\nn3,1,t\r\n".encode())

    p = cli("plan", "--config-path", str(csv), kubeconfig=kubeconfig)
    assert p.returncode == 3, p.stderr
    assert p.stdout.splitlines() == [
        f"n1: add {T}=t",
        f"n1: add {G}=0",
        f"n2: add {T}=t",
        f"n2: conflict {G}: has '9' (not ours), wanted '0' (--adopt takes it over)",
        "3 node(s): 2 to change, 1 unchanged, 1 with conflicts, 0 missing, 0 skipped",
    ]
    assert fake_kube.count("patch") == 0

    p2 = cli("apply", "--config-path", str(csv), "--dry-run", kubeconfig=kubeconfig)
    assert (p2.returncode, p2.stdout) == (3, p.stdout)
    assert fake_kube.count("patch") == 0

    p = cli("apply", "--config-path", str(csv), "--qps", "50", kubeconfig=kubeconfig)
    assert p.returncode == 3, p.stderr
    assert "\r" not in p.stderr  # no progress bar off a terminal
    # Every row counted once: n2 was written (T) but keeps a conflict (G), so it counts
    # as a conflict; its write shows in the patches.
    *lines, summary = p.stdout.splitlines()
    assert lines == [
        f"n1: add {T}=t",
        f"n1: add {G}=0",
        f"n2: add {T}=t",
        f"n2: conflict {G}: has '9' (not ours), wanted '0' (--adopt takes it over)",
    ]
    assert summary.startswith(
        "3 node(s): 1 labeled, 1 unchanged, 0 failed, 1 with conflicts, 0 missing, 0 skipped "
        "(2 patches in "
    )
    assert fake_kube.get_node("n1")["metadata"]["labels"][G] == "0"
    assert fake_kube.get_node("n2")["metadata"]["labels"][G] == "9"

    fake_kube.clear_journal()
    p = cli("apply", "--config-path", str(csv), "--adopt", kubeconfig=kubeconfig)
    assert p.returncode == 0, p.stderr
    assert f"n2: change {G}: 9 → 0" in p.stdout
    assert fake_kube.counts() == {"list": 1, "patch": 1}

    fake_kube.clear_journal()
    p = cli("apply", "--config-path", str(csv), kubeconfig=kubeconfig)
    assert p.returncode == 0, p.stderr
    assert fake_kube.counts() == {"list": 1}
    assert "0 labeled, 3 unchanged" in p.stdout
    assert lists_asked_metadata_only(fake_kube)


def test_invalid_csv_and_missing_nodes_write_nothing(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path, cli: Callable[..., Result]
) -> None:
    fake_kube.add_node("n1")
    bad = tmp_path / "bad.csv"
    bad.write_text(f"nodeName,{G}\nn1,a b\nn1,2\n")
    p = cli("apply", "--config-path", str(bad), kubeconfig=kubeconfig)
    assert p.returncode == 1
    assert f"{bad}:2:2: invalid value 'a b'" in p.stderr
    assert f"{bad}:3:1: node 'n1' already has a row on line 2" in p.stderr

    csv = tmp_path / "c.csv"
    csv.write_text(f"nodeName,{G}\nn1,2\nghost,3\n")
    p = cli("apply", "--config-path", str(csv), kubeconfig=kubeconfig)
    assert p.returncode == 1
    assert f"{csv}:3: node 'ghost' is not in the cluster" in p.stderr
    assert fake_kube.count("patch") == 0

    p = cli("apply", "--config-path", str(csv), "--skip-missing-nodes", kubeconfig=kubeconfig)
    assert p.returncode == 0, p.stderr
    assert "ghost: missing (not in the cluster)" in p.stdout
    assert fake_kube.get_node("n1")["metadata"]["labels"][G] == "2"


@SERVERS
def test_export_then_delete(
    fake_kube: FakeKube,
    kubeconfig: Path,
    tmp_path: Path,
    cli: Callable[..., Result],
    metadata: bool,
) -> None:
    fake_kube.partial_metadata = metadata
    fake_kube.add_node("n1", labels={T: "t", G: "0", S: "4"})
    fake_kube.add_node("n2", labels={S: "5"})
    fake_kube.add_node("n3")
    out = tmp_path / "backup.csv"
    p = cli("export", "--profile", "ascend-superpod", "-o", str(out), kubeconfig=kubeconfig)
    assert p.returncode == 0, p.stderr
    assert out.read_text() == f"nodeName,{T},{G},{S}\nn1,t,0,4\nn2,,,5\n"
    assert lists_asked_metadata_only(fake_kube)

    # Round trip: applying the export to the cluster it came from writes nothing.
    fake_kube.clear_journal()
    p = cli("apply", "--config-path", str(out), kubeconfig=kubeconfig)
    assert p.returncode == 0, p.stderr
    assert "0 labeled, 2 unchanged" in p.stdout
    assert fake_kube.counts() == {"list": 1}

    # Exported labels are not ours: delete leaves them unless --adopt.
    p = cli("delete", "--config-path", str(out), kubeconfig=kubeconfig)
    assert p.returncode == 3
    assert f"n1: conflict {S}: has '4' (not ours), left in place (--adopt removes it)" in p.stdout
    p = cli("delete", "--config-path", str(out), "--adopt", kubeconfig=kubeconfig)
    assert p.returncode == 0, p.stderr
    assert f"n2: remove {S} (was '5')" in p.stdout
    assert not {T, G, S} & set(fake_kube.get_node("n1")["metadata"]["labels"])
    assert lists_asked_metadata_only(fake_kube)


def lld_workbook(path: Path) -> Path:
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = "超节点规划"
    for row in [["编号", "主机名称", "机框编号"], [1, "n1", 1], [2, "n2", 13], [], [3, "n3", 14]]:
        ws.append(row)
    wb.save(path)
    return path


def test_lld_then_twin_label_tool(
    fake_kube: FakeKube,
    kubeconfig: Path,
    tmp_path: Path,
    cli: Callable[..., Result],
    twin: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for n in ("n1", "n2", "n3"):
        fake_kube.add_node(n)
    xlsx = lld_workbook(tmp_path / "plan.xlsx")
    out = tmp_path / "labels.csv"
    p = cli("lld", "-i", str(xlsx), "-o", str(out), "-t", "prod", kubeconfig=kubeconfig)
    assert p.returncode == 0, p.stderr
    assert f"CSV file successfully generated: {out}" in p.stdout
    assert out.read_bytes() == f"nodeName,{G},{T}\nn1,0,prod\nn2,1,prod\nn3,1,prod\n".encode()

    tool = label_tool_main
    p = twin(tool, "apply", "--config-path", str(out), kubeconfig=kubeconfig)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines() == [
        "Starting adding labels...",
        "Adding labels completed successfully!",
        "Processed 3 nodes.",
    ]
    assert fake_kube.get_node("n2")["metadata"]["labels"][G] == "1"

    # A wrong answer at the prompt is asked again, as the original does.
    p = twin(tool, "apply", stdin=f"/nonexistent\n{out}\n", kubeconfig=kubeconfig)
    assert p.returncode == 0, p.stdout
    assert "Error: File '/nonexistent' does not exist. Please try again." in p.stdout

    monkeypatch.delenv("KUBECONFIG")
    p = twin(tool, "delete", "--config-path", str(out), "--kubeconfig", str(kubeconfig))
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines()[-2:] == [
        "Removing labels completed successfully!",
        "Processed 3 nodes.",
    ]
    assert not {G, T} & set(fake_kube.get_node("n3")["metadata"]["labels"])

    p = twin(tool, "apply", "--config-path", str(tmp_path / "nope.csv"), kubeconfig=kubeconfig)
    assert p.returncode == 1
    assert p.stdout == f"Error: File '{tmp_path / 'nope.csv'}' does not exist\n"


def test_twin_lld_parser(tmp_path: Path, twin: Callable[..., Result]) -> None:
    xlsx = lld_workbook(tmp_path / "plan.xlsx")
    tool = lld_parser_main
    out = tmp_path / "o.csv"
    p = twin(tool, "--input", str(xlsx), "-o", str(out), "-g", "12", stdin="t1\n")
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines() == [
        "Please enter topotree name: Target worksheet found: 超节点规划",
        f"CSV file successfully generated: {out}",
        "Processed 3 rows of data",
        "Topotree name: t1",
        "Group per rack (divisor): 12",
        "Script execution completed",
    ]
    assert out.read_text().startswith("nodeName,")  # no BOM

    p = twin(tool, "-i", str(tmp_path / "missing.xlsx"), "-o", str(out), "-t", "t1")
    assert p.returncode == 1
    assert p.stdout.splitlines()[-1] == "Script execution failed"
    p = twin(tool, "-i", str(xlsx), "-o", str(out), "-t", "t1", "-g", "0")
    assert p.returncode == 1
    assert p.stdout == "Error: group-per-rack must be a positive integer, got 0\n"


def test_twins_closed_stdin_and_ctrl_c_at_a_prompt(
    fake_kube: FakeKube,
    kubeconfig: Path,
    twin: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No traceback when a prompt meets a closed stdin (exit 1) or Ctrl-C (exit 130)."""
    fake_kube.add_node("n1")
    p = twin(label_tool_main, "apply", stdin="\n", kubeconfig=kubeconfig)
    assert p.returncode == 1
    assert p.stdout.splitlines()[-1] == (
        "Error: no CSV file path given (standard input is closed); "
        "pass --config-path /path/to/labels.csv"
    )
    assert "Starting" not in p.stdout
    p = twin(lld_parser_main, stdin="")
    assert (p.returncode, p.stdout.splitlines()[-1]) == (1, "Error: Input file path is required")
    p = twin(lld_parser_main, "-i", "x.xlsx", stdin="")
    assert (p.returncode, p.stdout.splitlines()[-1]) == (1, "Error: Topotree name is required")

    def ctrl_c(prompt: str) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr("builtins.input", ctrl_c)
    for fn, args in ((label_tool_main, ["delete"]), (lld_parser_main, ["-o", "x.csv"])):
        p = twin(fn, *args)
        assert (p.returncode, p.stdout.splitlines()[-1]) == (130, "Interrupted.")
    assert fake_kube.count("patch") == 0


@pytest.mark.slow
def test_the_real_command_lines(fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path) -> None:
    """``python -m labeler``, ``tools/lld_parser.py`` and ``tools/label_tool.py`` as processes."""
    for n in ("n1", "n2", "n3"):
        fake_kube.add_node(n)
    xlsx = lld_workbook(tmp_path / "plan.xlsx")
    out = tmp_path / "labels.csv"
    p = run(str(ROOT / "tools" / "lld_parser.py"), "-i", str(xlsx), "-o", str(out), "-t", "t")
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"CSV file successfully generated: {out}" in p.stdout

    p = run("-m", "labeler", "apply", "--config-path", str(out), "--kubeconfig", str(kubeconfig))
    assert p.returncode == 0, p.stderr
    assert f"n3: add {G}=1" in p.stdout

    fake_kube.clear_journal()
    p = run(
        str(ROOT / "tools" / "label_tool.py"),
        "apply",
        "--config-path",
        str(out),
        kubeconfig=kubeconfig,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.endswith("Adding labels completed successfully!\nProcessed 3 nodes.\n")
    assert fake_kube.counts() == {"list": 1}

    # ``echo | label_tool.py apply``: the prompt meets EOF; a clear error, no traceback.
    p = run(str(ROOT / "tools" / "label_tool.py"), "apply", stdin="\n", kubeconfig=kubeconfig)
    assert (p.returncode, p.stderr) == (1, ""), p.stderr
    assert "pass --config-path" in p.stdout


def test_apply_keeps_the_slinky_annotation(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path, cli: Callable[..., Result]
) -> None:
    from labeler.core.node import SLINKY_ANNOTATION

    fake_kube.add_node("n1")
    fake_kube.add_node("n2", annotations={SLINKY_ANNOTATION: "theirs:s9"})
    csv = tmp_path / "c.csv"
    csv.write_text(f"nodeName,{T},{G},huawei.com/topotree.superpodid\nn1,t,0,5\nn2,t,0,6\n")
    base = ["apply", "--config-path", str(csv), "--slinky-topology"]
    p = cli(*base, kubeconfig=kubeconfig)
    assert p.returncode == 2 and "--profile" in p.stderr  # the levels come from the profile
    p = cli(*base, "--profile", "ascend-superpod", kubeconfig=kubeconfig)
    assert p.returncode == 3, (p.stdout, p.stderr)
    assert "n1: annotate topology.slinky.slurm.net/spec=ascend-superpod:superpod-5" in p.stdout
    assert f"n2: conflict {SLINKY_ANNOTATION}: has 'theirs:s9'" in p.stdout
    ann = fake_kube.get_node("n1")["metadata"]["annotations"]
    assert ann[SLINKY_ANNOTATION] == "ascend-superpod:superpod-5"
    assert fake_kube.get_node("n2")["metadata"]["annotations"][SLINKY_ANNOTATION] == "theirs:s9"
    # Deleting the narrowest level takes our annotation away with it.
    d = cli(
        "delete",
        "--config-path",
        str(csv),
        "--slinky-topology",
        "--profile",
        "ascend-superpod",
        kubeconfig=kubeconfig,
    )
    assert d.returncode in (0, 3), d.stderr
    assert SLINKY_ANNOTATION not in (fake_kube.get_node("n1")["metadata"].get("annotations") or {})
    assert fake_kube.get_node("n2")["metadata"]["annotations"][SLINKY_ANNOTATION] == "theirs:s9"


def interrupted(
    command: list[str], sig: str, fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path
) -> tuple[int, str, str, int]:
    """Run ``command`` (given the CSV) on 40 slow nodes and send ``sig`` once 4 patches
    came: (exit code, stdout, stderr, nodes labeled)."""

    names = fake_kube.seed_nodes(40)
    csv = tmp_path / "c.csv"
    csv.write_text(f"nodeName,{G},{T}\n" + "".join(f"{n},0,t\n" for n in names))
    fake_kube.latency_ms = 100
    env = cli_env()
    env["KUBECONFIG"] = str(kubeconfig)
    proc = subprocess.Popen(
        [sys.executable, *command, "--config-path", str(csv), "--concurrency", "2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while fake_kube.count("patch") < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(getattr(signal, sig))
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err
    written = sum(G in fake_kube.get_node(n)["metadata"]["labels"] for n in names)
    assert 4 <= written < 40
    return proc.returncode, out, err, written


@pytest.mark.parametrize(("sig", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_interrupted_apply_prints_what_was_and_was_not_written(
    sig: str, code: int, fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path
) -> None:
    """Ctrl-C or SIGTERM in the middle: writes in flight finish, the rest never start, and
    the summary says which is which before the exit code of the signal."""
    command = ["-m", "labeler", "apply"]
    rc, out, err, written = interrupted(command, sig, fake_kube, kubeconfig, tmp_path)
    assert rc == code, err
    assert f"40 node(s): {written} labeled" in out
    assert f"interrupted: {40 - written} node(s) not written" in err


@pytest.mark.parametrize(("sig", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_an_interrupted_twin_does_not_call_unwritten_nodes_successful(
    sig: str, code: int, fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path
) -> None:
    twin = str(Path(__file__).parents[2] / "tools" / "label_tool.py")
    rc, out, err, written = interrupted([twin, "apply"], sig, fake_kube, kubeconfig, tmp_path)
    assert rc == code, err
    assert f"Interrupted: {written} node(s) written, {40 - written} not" in out
    assert "completed successfully" not in out and "Successful nodes" not in out


@pytest.mark.parametrize(
    ("signum", "code", "second"),
    [(signal.SIGINT, 130, KeyboardInterrupt), (signal.SIGTERM, 143, Terminated)],
)
def test_a_first_signal_asks_the_writes_to_stop_a_second_stops_at_once(
    signum: int, code: int, second: type[BaseException]
) -> None:
    before = signal.getsignal(signum)
    with StopOnSignal() as stop:
        assert not stop.requested()
        os.kill(os.getpid(), signum)  # handled in this (the main) thread, at once
        assert stop.requested() and stop.exit_code == code
        with pytest.raises(second):
            os.kill(os.getpid(), signum)
    assert signal.getsignal(signum) is before  # put back as it was


def test_result_lines_come_in_the_csv_order_whatever_order_the_writes_end_in(
    fake_kube: FakeKube, tmp_path: Path, cli: Callable[..., Result], twin: Callable[..., Result]
) -> None:
    """The first row's writes are slow (a loopback relay holds them back), so they end
    last; apply, delete and the MindCluster twin still print in the CSV's order, as the
    original twin did with its one kubectl per row."""
    from tests.kube.hostile import Forward, Relay, Request, Rule, Script

    names = ["zeta", "alpha", "mid", "beta"]
    for name in names:
        fake_kube.add_node(name)
    csv = tmp_path / "c.csv"
    csv.write_text(f"nodeName,{G}\n" + "".join(f"{n},{i}\n" for i, n in enumerate(names)))

    def slow(req: Request, forward: Forward) -> Script:
        return [0.3, forward(req)]

    with Relay(fake_kube, [Rule("PATCH", "/api/v1/nodes/zeta", slow, times=0)]) as relay:
        kubeconfig = relay.kubeconfig(tmp_path / "kubeconfig")
        p = cli("apply", "--config-path", str(csv), kubeconfig=kubeconfig)
        assert p.returncode == 0, p.stderr
        assert p.stdout.splitlines()[:-1] == [f"{n}: add {G}={i}" for i, n in enumerate(names)]
        p = cli("delete", "--config-path", str(csv), kubeconfig=kubeconfig)
        assert p.returncode == 0, p.stderr
        assert p.stdout.splitlines()[:-1] == [
            f"{n}: remove {G} (was '{i}')" for i, n in enumerate(names)
        ]
        csv.write_text(csv.read_text() + "nowhere,9\n")
        p = twin(label_tool_main, "apply", "--config-path", str(csv), kubeconfig=kubeconfig)
    assert p.returncode == 1, p.stdout
    assert f"Successful nodes (4): {', '.join(names)}" in p.stdout


def test_request_timeout_gives_up_on_a_slow_answer_and_asks_again(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path, cli: Callable[..., Result]
) -> None:
    """--request-timeout (kubectl's flag) bounds each whole answer: the LIST answered after
    3 s is given up on at 1 s and asked again, as a lost answer is."""
    fake_kube.add_node("n1", labels={S: "4"})
    fake_kube.faults.add(method="GET", path="/api/v1/nodes", delay=3.0)
    out = tmp_path / "backup.csv"
    flags = ("export", "--profile", "ascend-superpod", "-o", str(out))
    p = cli(*flags, "--request-timeout", "1s", kubeconfig=kubeconfig)
    assert p.returncode == 0, p.stderr
    assert "retrying verb=list resource=nodes attempt=1" in p.stderr
    assert out.read_text() == f"nodeName,{S}\nn1,4\n"


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("0", "'0' must be more than 0"),
        ("1d", "'1d' is not a duration"),
        ("1.5.2s", "'1.5.2s' is not a duration"),
    ],
)
def test_request_timeout_refuses_what_is_not_a_bound(
    value: str, error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        main(["export", "--profile", "ascend-superpod", "--request-timeout", value])
    assert e.value.code == 2 and f"--request-timeout: {error}" in capsys.readouterr().err
