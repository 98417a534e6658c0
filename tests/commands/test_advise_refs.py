"""``advise --workload`` and ``--podgroup`` name an object as NAMESPACE/NAME: anything else is
a usage error (exit 2) that names the flag, the value and the form it takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from labeler.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("flag", "snapshot"),
    [("--workload", "snapshot-oci.yaml"), ("--podgroup", "snapshot-volcano.yaml")],
)
@pytest.mark.parametrize("ref", ["nope", "team-a/", "/infer"])
def test_a_reference_without_namespace_and_name_is_a_usage_error(
    flag: str, snapshot: str, ref: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["advise", flag, ref, "--from-snapshot", str(EXAMPLES / snapshot)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"error: {flag} {ref!r}: expected NAMESPACE/NAME"
    )
