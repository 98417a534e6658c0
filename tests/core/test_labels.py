"""Label rules as the API server applies them, and the encoders' guarantees."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labeler.base.errors import InputError
from labeler.core.labels import (
    InvalidLabelValue,
    LabelValueTooLong,
    check_key,
    check_value,
    key_problems,
    parse_encoding,
    value_problems,
)

# The API server's own value regex (k8s.io/apimachinery IsValidLabelValue), kept separate
# from the implementation so the property tests check against the rule, not the code.
API_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
OCID = (
    "ocid1.computelocalblock.oc1.iad.anuwcljrbxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789ab"
)


@pytest.mark.parametrize(
    "key",
    [
        "oci.oraclecloud.com/rdma.local_block_id",
        "huawei.com/topotree.superpodid",
        "simple",
        "a" * 63,
        ("a" * 63 + ".") * 3 + "b" * 61 + "/name",  # prefix of exactly 253
    ],
)
def test_valid_keys(key: str) -> None:
    assert key_problems(key) == []
    assert check_key(key) == key


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("", "empty"),
        ("/name", "prefix before '/' is empty"),
        ("Example.com/name", "lowercase"),
        ("example.com/", "name part is empty"),
        ("a" * 64, "64 characters"),
        ("example.com/-bad", "start and end"),
        ("x" * 254 + "/n", "254 characters"),
    ],
)
def test_invalid_keys_say_which_rule(key: str, fragment: str) -> None:
    assert any(fragment in p for p in key_problems(key)), key_problems(key)


def test_value_rules_match_api_server() -> None:
    assert value_problems("") == []
    assert value_problems("a" * 63) == []
    assert value_problems("a-b_c.d") == []
    assert value_problems("-a")
    assert value_problems("a" * 64)


def test_too_long_value_error_names_key_length_and_fix() -> None:
    with pytest.raises(LabelValueTooLong) as e:
        check_value("oci.oraclecloud.com/rdma.local_block_id", OCID)
    msg = str(e.value)
    assert "oci.oraclecloud.com/rdma.local_block_id" in msg
    assert f"{len(OCID)} characters" in msg
    assert "--encoding hash" in msg


def test_bad_characters_error_names_value() -> None:
    with pytest.raises(InvalidLabelValue, match="'a b'"):
        check_value("k", "a b")


def test_hash_is_sha256_prefix() -> None:
    enc = parse_encoding("hash")
    assert enc.encode("k", "abc") == "ba7816bf8f01cfea"  # sha256("abc")
    assert parse_encoding("hash:8").encode("k", "abc") == "ba7816bf"


def test_suffix_11_matches_oci_hpc_oke() -> None:
    assert parse_encoding("suffix:11").encode("k", OCID) == OCID[-11:]


def test_raw_rejects_what_the_server_would() -> None:
    assert parse_encoding("raw").encode("k", "12") == "12"
    with pytest.raises(LabelValueTooLong):
        parse_encoding("raw").encode("k", OCID)


@pytest.mark.parametrize("spec", ["", "md5", "hash:0", "hash:64", "suffix", "suffix:x", "raw:3"])
def test_unknown_encodings_are_rejected(spec: str) -> None:
    with pytest.raises(InputError, match="hash, hash:N, suffix:N"):
        parse_encoding(spec)


@given(st.text(min_size=1, max_size=200), st.sampled_from(["hash", "hash:63", "hash:1"]))
def test_hash_output_is_always_a_valid_label_value(source_id: str, spec: str) -> None:
    value = parse_encoding(spec).encode("k", source_id)
    assert API_VALUE.fullmatch(value)
    assert len(value) <= 63
    assert value == parse_encoding(spec).encode("k", source_id)  # deterministic


@given(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789.-_", min_size=1, max_size=120),
    st.integers(min_value=1, max_value=63),
)
def test_suffix_output_is_valid_or_a_clear_error(source_id: str, n: int) -> None:
    try:
        value = parse_encoding(f"suffix:{n}").encode("k", source_id)
    except InvalidLabelValue as e:
        assert "--encoding hash" in str(e)
        return
    assert API_VALUE.fullmatch(value)
    assert len(value) <= n
    assert source_id.endswith(value)


@given(st.text(max_size=80))
def test_value_problems_agree_with_api_regex(value: str) -> None:
    valid = bool(API_VALUE.fullmatch(value)) and len(value) <= 63
    assert (value_problems(value) == []) == valid


@pytest.mark.parametrize("value", ["a\n", "a\nb", "\n"])
def test_newlines_are_invalid_even_at_the_end(value: str) -> None:
    assert value_problems(value)
    assert key_problems("example.com/" + value)
