"""``--kueue-feature-gates``: Kueue's syntax, its defaults and its dependency check."""

from __future__ import annotations

import pytest

from labeler.base.errors import UsageError
from labeler.sim.kueue.gates import (
    BALANCED,
    FAIL_FAST,
    GATES,
    NOT_READY_FIXED_TIME,
    ON_POD_TERMINATION,
    REPLACEMENT,
    parse_gates,
)


def test_defaults_are_the_modelled_kueues() -> None:
    gates = parse_gates(None)
    assert not gates.on(BALANCED) and not gates.on(NOT_READY_FIXED_TIME)
    assert gates.on(REPLACEMENT) and gates.on(FAIL_FAST) and gates.on(ON_POD_TERMINATION)
    assert gates.changed == {}


def test_kueue_syntax_spaces_empty_parts_and_go_booleans() -> None:
    gates = parse_gates(f" {BALANCED} = T ,,{FAIL_FAST}=0")
    assert gates.on(BALANCED) and not gates.on(FAIL_FAST)
    assert gates.changed == {BALANCED: True, FAIL_FAST: False}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("TASNodeFeasibilityForAllLevels=true", ["unrecognized feature gate", BALANCED]),
        (BALANCED, [f"missing bool value for {BALANCED}"]),
        (f"{BALANCED}=yes", [f"invalid value of {BALANCED}=yes"]),
        # FailFast and PodTermination stay on by default and need the replacement gate
        (f"{REPLACEMENT}=false", [f"{FAIL_FAST} is enabled, but depends on", REPLACEMENT]),
        ("TopologyAwareScheduling=false", ["depends on features that are disabled"]),
    ],
)
def test_bad_values_are_usage_errors_in_kueues_words(text: str, words: list[str]) -> None:
    with pytest.raises(UsageError) as err:
        parse_gates(text)
    for word in words:
        assert word in str(err.value)


def test_turning_replacement_off_with_its_dependants() -> None:
    gates = parse_gates(f"{REPLACEMENT}=false,{FAIL_FAST}=false,{ON_POD_TERMINATION}=false")
    assert not gates.on(REPLACEMENT)
    assert set(gates.changed) == {REPLACEMENT, FAIL_FAST, ON_POD_TERMINATION}
    assert all(name in GATES for name in gates.changed)
