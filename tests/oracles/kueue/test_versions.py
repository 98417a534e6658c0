"""One Kueue version on both sides: the oracle's go.mod, its KueueVersion constant, the
build's key and the version advise names as modelled."""

from __future__ import annotations

import re

from labeler.sim.kueue.gates import KUEUE_VERSION as MODELLED
from tests.oracles.kueue import build


def test_oracle_and_advise_name_the_same_kueue() -> None:
    gomod = (build.GO_DIR / "go.mod").read_text()
    required = re.search(r"sigs\.k8s\.io/kueue (v\S+)", gomod)
    assert required is not None
    main = (build.GO_DIR / "main.go").read_text()
    constant = re.search(r'const KueueVersion = "(v[^"]+)"', main)
    assert constant is not None
    assert required.group(1) == constant.group(1) == build.KUEUE_VERSION
    assert f"Kueue {build.KUEUE_VERSION}" == MODELLED
