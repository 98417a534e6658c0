"""Profile files: every problem reported at once; built-ins as docs/profiles.md lists them."""

from pathlib import Path

import pytest

from labeler.base.errors import InputError
from labeler.core.profiles import load_profile


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "profile.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_custom_four_level_profile(tmp_path: Path) -> None:
    spec = write(
        tmp_path,
        """
name: dc
treeName: fabric
levels:
  - {key: example.com/zone, name: zone}
  - {key: example.com/spine, name: spine, tierName: spine-tier}
  - {key: example.com/leaf}
  - {key: example.com/rack, name: rack, reservedNode: 1}
extraLabels: [example.com/host]
encoding: suffix:12
""",
    )
    p = load_profile(spec)
    assert p.name == "dc"
    assert p.topology.name == "fabric"
    assert p.topology.keys[0] == "example.com/zone"
    assert p.topology.level("leaf").key == "example.com/leaf"  # name defaults to key name
    assert p.topology.level("spine").tier == "spine-tier"
    assert p.topology.volcano_levels()["level1"].reserved_node == 1
    assert p.all_keys[-1] == "example.com/host"


def test_every_problem_is_listed_at_once(tmp_path: Path) -> None:
    spec = write(
        tmp_path,
        """
name: bad
colour: blue
encoding: md5
levels:
  - {key: "Bad Key/x", name: a, reservedNode: 2}
  - {key: example.com/ok, name: b, speed: fast}
extraLabels: ["-nope"]
""",
    )
    with pytest.raises(InputError) as e:
        load_profile(spec)
    msg = str(e.value)
    assert spec in msg
    for fragment in [
        "'colour'",
        "encoding",
        "levels[0].key",
        "reservedNode",
        "'speed'",
        "extraLabels[0]",
    ]:
        assert fragment in msg, fragment


def test_unknown_profile_name_says_what_exists() -> None:
    with pytest.raises(InputError, match="oci-rdma, ascend-superpod, gce"):
        load_profile("no-such-profile")


def test_ascend_tree_name_override() -> None:
    assert load_profile("ascend-superpod", tree_name="pod-a").topology.name == "pod-a"
