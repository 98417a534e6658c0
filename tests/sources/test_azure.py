"""The Azure IMDS source against ``responses``: each answer IMDS can give."""

from __future__ import annotations

from typing import Any

import pytest
import responses
from responses import matchers

from labeler.agent.decide import desired_from_outcome
from labeler.core.labels import InvalidLabelValue, parse_encoding
from labeler.core.profiles import (
    AZURE_INTERCONNECT_GROUP,
    AZURE_INTERCONNECT_SUBGROUP,
    AZURE_PLACEMENT_GROUP,
    azure,
)
from labeler.sources import NoData, Reading, SourceError
from labeler.sources import azure as src
from labeler.sources.azure import API_VERSION, COMPUTE_PATH, ROLES, AzureSource
from labeler.sources.metadata_http import HttpOptions

URL = "http://imds.test"
COMPUTE = URL + COMPUTE_PATH
GROUP = "2deed8b4-d1e9-42be-a40a-9882201aa9f5"
SUBGROUP = "0f0ba375-aaf1-4ac8-a579-a3b180d47de5"
PLACEMENT = "42d64506-b0a6-4308-911e-38982951ce42"
DOC = {
    "vmSize": "Standard_ND128isr_GB300_v6",
    "interconnectGroupId": GROUP,
    "interconnectSubgroupId": SUBGROUP,
    "placementGroupId": PLACEMENT,
    "tagsList": [],
}


def source(attempts: int = 3, timeout: float = 2.0) -> AzureSource:
    http = HttpOptions(URL, timeout=timeout, attempts=attempts, backoff=0.001, max_backoff=0.002)
    return AzureSource(http)


def answer(**kw: Any) -> None:
    query = matchers.query_param_matcher({"api-version": API_VERSION, "format": "json"})
    responses.get(COMPUTE, match=[query], **kw)


@responses.activate
def test_reads_the_interconnect_fields_with_the_metadata_header() -> None:
    answer(json=DOC)
    got = source().read()
    assert got == Reading(
        ids={
            "interconnect_group": GROUP,
            "interconnect_subgroup": SUBGROUP,
            "placement_group": PLACEMENT,
        },
        details={"source": "interconnect fields"},
    )
    (call,) = responses.calls
    assert call.request.headers["Metadata"] == "true"
    assert "X-Forwarded-For" not in call.request.headers


@responses.activate
def test_the_legacy_tag_is_both_group_and_subgroup_as_cloud_node_manager_reads_it() -> None:
    tags = [{"name": "Other", "value": "x"}, {"name": src.LEGACY_TAG, "value": "rack-7"}]
    answer(json={"placementGroupId": PLACEMENT, "tagsList": tags})
    got = source().read()
    assert isinstance(got, Reading)
    assert got.ids == {
        "interconnect_group": "rack-7",
        "interconnect_subgroup": "rack-7",
        "placement_group": PLACEMENT,
    }
    assert got.details == {"source": f"tag {src.LEGACY_TAG}"}


@responses.activate
def test_the_fields_win_over_the_legacy_tag() -> None:
    answer(json={**DOC, "tagsList": [{"name": src.LEGACY_TAG, "value": "old"}]})
    got = source().read()
    assert isinstance(got, Reading) and got.ids["interconnect_group"] == GROUP


@responses.activate
@pytest.mark.parametrize(
    "doc",
    [
        {"vmSize": "Standard_D4s_v3"},
        {"placementGroupId": PLACEMENT, "tagsList": [{"name": "x", "value": "y"}]},
        {"interconnectGroupId": "", "interconnectSubgroupId": ""},
    ],
)
def test_a_vm_without_interconnect_ids_has_no_data(doc: dict[str, Any]) -> None:
    answer(json=doc)
    got = source().read()
    assert isinstance(got, NoData) and "no interconnect group" in got.reason


def tag(value: str, name: str = src.LEGACY_TAG) -> dict[str, str]:
    return {"name": name, "value": value}


@responses.activate
@pytest.mark.parametrize(
    ("tags", "wanted"),
    [
        # cloud-node-manager's table for the tag (its metadata label rules): the first tag
        # of that exact name decides, an empty one included, and names are case-sensitive.
        ([tag("group-123")], "group-123"),
        ([tag("first"), tag("second")], "first"),
        ([tag(""), tag("second")], None),
        ([tag("ignored", name="platform_interconnect_group")], None),
        ([tag("")], None),
        ([tag("x", name="other")], None),
    ],
)
def test_the_legacy_tag_as_cloud_node_manager_reads_it(
    tags: list[dict[str, str]], wanted: str | None
) -> None:
    answer(json={"tagsList": tags})
    got = source().read()
    if wanted is None:
        assert isinstance(got, NoData)
    else:
        assert isinstance(got, Reading)
        assert got.ids == {"interconnect_group": wanted, "interconnect_subgroup": wanted}


@responses.activate
def test_a_missing_subgroup_is_unknown_and_a_missing_group_makes_both_unknown() -> None:
    answer(json={"interconnectGroupId": GROUP})
    got = source().read()
    assert isinstance(got, Reading) and got.ids == {"interconnect_group": GROUP}
    assert "interconnectSubgroupId is missing" in got.unknown["interconnect_subgroup"]
    responses.reset()
    # With either field present the tag is not mixed in (cloud-node-manager's rule too).
    answer(json={"interconnectSubgroupId": SUBGROUP, "tagsList": [tag("legacy")]})
    got = source().read()
    assert isinstance(got, Reading) and got.ids == {}
    assert set(got.unknown) == {"interconnect_group", "interconnect_subgroup"}


@responses.activate
def test_5xx_is_retried_then_an_error_that_keeps_the_labels() -> None:
    answer(status=503)
    with pytest.raises(SourceError, match=r"503.*keeping the current labels"):
        source(attempts=2).read()
    assert len(responses.calls) == 2


@responses.activate
def test_a_5xx_then_an_answer_reads() -> None:
    answer(status=500)
    answer(json=DOC)
    got = source().read()
    assert isinstance(got, Reading) and got.ids["interconnect_subgroup"] == SUBGROUP


@responses.activate
@pytest.mark.parametrize("status", [401, 403])
def test_refused_names_the_header_and_is_not_retried(status: int) -> None:
    answer(status=status)
    with pytest.raises(SourceError, match="Metadata: true"):
        source().read()
    assert len(responses.calls) == 1


@responses.activate
def test_404_is_an_error_not_no_data() -> None:
    # IMDS always has a compute document: a 404 is the wrong service or api-version.
    answer(status=404)
    with pytest.raises(SourceError, match="--azure-imds-url"):
        source().read()


@responses.activate
@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("{not json", "not JSON"),
        ('["a"]', "expected a JSON object"),
        ('{"interconnectGroupId": null}', "interconnectGroupId must be a non-empty string"),
        ('{"interconnectGroupId": 7}', "interconnectGroupId must be a non-empty string"),
        ('{"interconnectGroupId": "a\\u0000b"}', "not printable"),
        ('{"tagsList": {"name": "x"}}', "tagsList must be a list"),
    ],
)
def test_malformed_answers_are_errors(body: str, match: str) -> None:
    answer(body=body)
    with pytest.raises(SourceError, match=match):
        source().read()


def test_an_imds_that_never_answers_is_a_timeout_naming_the_flag() -> None:
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts the connection, never answers
    try:
        port = listener.getsockname()[1]
        http = HttpOptions(f"http://127.0.0.1:{port}", timeout=0.5, attempts=2, backoff=0.01)
        with pytest.raises(SourceError, match="--azure-imds-timeout"):
            AzureSource(http).read()
    finally:
        listener.close()


def test_the_azure_profile_writes_cloud_node_managers_keys_unencoded() -> None:
    profile = azure()
    assert profile.keys_for(ROLES) == {
        src.GROUP: AZURE_INTERCONNECT_GROUP,
        src.SUBGROUP: AZURE_INTERCONNECT_SUBGROUP,
        src.PLACEMENT: AZURE_PLACEMENT_GROUP,
    }
    assert profile.encoding == "raw" and profile.source == src.NAME


@pytest.mark.parametrize("value", ["invalid/value", "a" * 64])
def test_a_tag_that_is_no_label_value_is_an_error_naming_the_key(value: str) -> None:
    # cloud-node-manager refuses such a tag too; the agent reports it and writes nothing.
    reading = Reading(ids={src.GROUP: value, src.SUBGROUP: value})
    profile = azure()
    with pytest.raises(InvalidLabelValue, match=AZURE_INTERCONNECT_GROUP):
        desired_from_outcome(
            profile, reading, parse_encoding("raw"), "n1", keys=profile.keys_for(ROLES)
        )
