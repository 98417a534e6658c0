"""Kubernetes quantities → exact values, Kueue's integer units and whole counts."""

from __future__ import annotations

from fractions import Fraction

import pytest

from labeler.core.quantity import (
    QuantityError,
    format_units,
    parse_count,
    parse_quantity,
    quantity_units,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("8", 8),
        ("500m", Fraction(1, 2)),
        ("1.5", Fraction(3, 2)),
        (".5", Fraction(1, 2)),
        ("16Gi", 16 * 2**30),
        ("512Ki", 512 * 1024),
        ("3Mi", 3 * 2**20),
        ("2k", 2000),
        ("4M", 4 * 10**6),
        ("1G", 10**9),
        ("1T", 10**12),
        ("2e3", 2000),
        ("1E3", 1000),  # an exponent, not the exa suffix
        ("100n", Fraction(1, 10**7)),
        ("-1", -1),
        ("+2", 2),
    ],
)
def test_parse(text: str, value: Fraction | int) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "5 Gi", "1Zi", "Gi", "1e"])
def test_rejects_with_an_example(bad: str) -> None:
    with pytest.raises(QuantityError, match=r"quantity|suffix"):
        parse_quantity(bad)


def test_cpu_is_millicores_rounded_up() -> None:
    assert quantity_units("cpu", "1") == 1000
    assert quantity_units("cpu", "250m") == 250
    assert quantity_units("cpu", "0.0001") == 1  # MilliValue rounds up


def test_other_resources_are_whole_units_rounded_up() -> None:
    assert quantity_units("memory", "1Gi") == 2**30
    assert quantity_units("memory", "1.5") == 2
    assert quantity_units("nvidia.com/gpu", "8") == 8


def test_format() -> None:
    assert format_units("cpu", 500) == "500m"
    assert format_units("cpu", 4000) == "4"
    assert format_units("memory", 16 * 2**30) == "16Gi"
    assert format_units("nvidia.com/gpu", 8) == "8"


def test_whole_counts_floor_the_exact_value_and_refuse_non_quantities() -> None:
    assert parse_count("8") == 8
    assert parse_count("1500m") == 1  # a fraction of a GPU is not a GPU
    assert parse_count("1e3") == 1000
    assert parse_count(" 16 ") == 16
    assert parse_count("-2") == -2  # a quantity, though never a positive count
    for bad in ("", "x", "8 GPUs", "1.2.3", "8Z"):
        assert parse_count(bad) is None, bad
