"""``agent --once`` for several nodes at a time, each a real process against a loopback
metadata server (one shared fake, answering per node at its own URL)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.e2e.fake_imds import FakeImds
from tests.fakekube import FakeKube
from tests.helpers import cli_env


def agents_once(
    kubeconfig: Path, fake: FakeImds, profile: str, flag: str, *nodes: str
) -> list[subprocess.CompletedProcess[str]]:
    """Run the agents in parallel; ``flag`` is the source's URL flag (``--gce-metadata``,
    ``--azure-imds``), given ``-url`` and, so that a 503 is an error at once rather than
    a wait for retries, ``-attempts 1``."""
    env = cli_env()
    env.pop("KUBECONFIG", None)
    procs = [
        subprocess.Popen(
            [
                *(sys.executable, "-m", "labeler", "agent", "--once", "--profile", profile),
                *("--kubeconfig", str(kubeconfig), "--node-name", node),
                *(f"{flag}-url", fake.url_for(node), f"{flag}-attempts", "1"),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for node in nodes
    ]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=60)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
    return out


def labels(fake: FakeKube, node: str) -> dict[str, str]:
    return dict(fake.get_node(node)["metadata"].get("labels") or {})
