"""The chart's values: the schema refuses a wrong one with a message naming it, `helm lint
--strict` passes for the defaults and each example, the README lists every value, and the
chart's version is the project's."""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

import pytest
import yaml

from tests.helm.helpers import CHART, EXAMPLES, MANIFESTS, PROFILES, ROOT, Helm

# value flags → what helm's message must name (the value's path, and why)
WRONG_VALUES = {
    "negative interval": (("--set", "agent.interval=-30"), ("/agent/interval", "-30")),
    "zero interval": (("--set", "agent.interval=0"), ("/agent/interval",)),
    "unknown profile": (("--set", "profile=slurm"), ("/profile", "one of 'oci', 'ascend'")),
    "tag in the repository": (
        ("--set", "image.repository=ghcr.io/topology-labeler/topology-labeler:0.1.0"),
        ("/image/repository",),
    ),
    "capitals in the repository": (
        ("--set", "image.repository=ghcr.io/Me/Labeler"),
        ("/image/repository",),
    ),
    "space in the tag": (("--set", "image.tag=0.1 beta"), ("/image/tag",)),
    "short digest": (("--set", "image.digest=sha256:abc"), ("/image/digest",)),
    "misspelt key": (("--set", "agent.intervall=60"), ("intervall",)),
    "no node selector term": (
        ("--set", "profiles.oci.nodeSelectorTerms=null"),
        ("/profiles/oci", "nodeSelectorTerms"),
    ),
    "taint key with a space": (
        ("--set", "agent.readinessGate.taint=not ready"),
        ("/agent/readinessGate/taint",),
    ),
    "custom profile without a file": (
        ("--set", "profile=custom"),
        ("/profiles/custom/file", "name"),
    ),
    "flag without dashes": (("--set", "agent.extraArgs={adopt}"), ("/agent/extraArgs/0",)),
}


@pytest.mark.parametrize("case", sorted(WRONG_VALUES))
def test_the_schema_refuses_a_wrong_value_naming_it(case: str, helm: Helm) -> None:
    flags, named = WRONG_VALUES[case]
    done = helm.run("template", "topology-labeler", str(CHART), *flags, check=False)
    assert done.returncode != 0
    assert "values don't meet the specifications of the schema" in done.stderr
    for text in named:
        assert text in done.stderr, done.stderr


@pytest.mark.parametrize("example", ["(defaults)", *PROFILES])
def test_helm_lint_strict_passes(example: str, helm: Helm) -> None:
    values = [] if example == "(defaults)" else ["-f", str(EXAMPLES / f"{example}.yaml")]
    done = helm.run("lint", "--strict", str(CHART), *values, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


def test_every_profile_has_an_example_that_selects_it() -> None:
    for profile in PROFILES:
        assert yaml.safe_load((EXAMPLES / f"{profile}.yaml").read_text())["profile"] == profile


def test_the_chart_version_is_the_projects() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert chart["version"] == chart["appVersion"] == version


def test_the_data_files_are_the_manifests_own() -> None:
    """The dashboard and the alerts exist once: the chart's files are links to those of
    manifests/audit/ (helm reads through them), so a change to one is a change to both."""
    for name in ("grafana-dashboard.json", "prometheusrule.yaml"):
        link = CHART / "files" / name
        assert link.is_symlink(), f"{link} must link to manifests/audit/{name}, not copy it"
        assert link.resolve() == (MANIFESTS / "audit" / name).resolve()


# Maps whose content is Kubernetes' own type or the user's data: listed as one value.
WHOLE = {"resources", "file", "labels"}


def value_paths(values: dict[str, Any], prefix: str = "") -> list[str]:
    paths: list[str] = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and key not in WHOLE:
            paths += value_paths(value, f"{path}.")
        else:
            paths.append(path)
    return paths


def test_the_chart_readme_lists_every_value_and_no_other() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    readme = (CHART / "README.md").read_text().split("\n## Values\n")[1]
    listed = re.findall(r"^\| `([^`]+)` \|", readme, flags=re.MULTILINE)
    assert len(listed) == len(set(listed)), "a value is listed twice"
    assert sorted(listed) == sorted(value_paths(values))


def test_the_schema_knows_every_value() -> None:
    """values.yaml itself is valid (helm lint checks it too), and every key in it has a
    schema entry, so that a misspelt key is refused rather than ignored."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    for path in value_paths(values):
        node = schema
        for part in path.split("."):
            assert node.get("additionalProperties") is False, f"{path}: open at {part}"
            node = node["properties"][part]


def test_both_readmes_give_the_helm_install_line() -> None:
    line = (
        "helm install topology-labeler charts/topology-labeler"
        " -n topology-labeler --create-namespace"
    )
    assert line in (ROOT / "README.md").read_text()
    assert line in (CHART / "README.md").read_text()
