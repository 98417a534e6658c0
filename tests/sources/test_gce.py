"""The GCE metadata source against ``responses``: each answer the metadata server can give."""

from __future__ import annotations

import pytest
import responses

from labeler.core.profiles import GCE_BLOCK, GCE_HOST, GCE_SUBBLOCK, gce
from labeler.sources import NoData, Reading, SourceError
from labeler.sources import gce as src
from labeler.sources.gce import HOST_PATH, ROLES, TOPOLOGY_PATH, GceSource
from labeler.sources.metadata_http import HttpOptions

URL = "http://metadata.test"
TOPO = URL + TOPOLOGY_PATH
HOST = URL + HOST_PATH
DOC = {"cluster": "europe-west4-cl1", "block": "b1f0c3", "subBlock": "s7a2e9", "host": "h0d4c1"}


def source() -> GceSource:
    http = HttpOptions(URL, timeout=2.0, attempts=3, backoff=0.001, max_backoff=0.002)
    return GceSource(http)


@responses.activate
def test_reads_physical_host_topology_with_the_google_header() -> None:
    responses.get(TOPO, json=DOC)
    got = source().read()
    assert got == Reading(
        ids={"block": "b1f0c3", "subblock": "s7a2e9", "host": "h0d4c1", "cluster": DOC["cluster"]},
        details={"document": TOPOLOGY_PATH},
    )
    assert responses.calls[0].request.headers["Metadata-Flavor"] == "Google"
    assert len(responses.calls) == 1


@responses.activate
def test_the_compute_api_spelling_subblock_is_taken_too() -> None:
    responses.get(TOPO, json={"block": "b", "subblock": "s", "host": "h"})
    got = source().read()
    assert isinstance(got, Reading) and got.ids["subblock"] == "s"


@responses.activate
@pytest.mark.parametrize("first", [404, 503, "not json"])
def test_physical_host_is_the_fallback(first: int | str) -> None:
    if isinstance(first, int):
        responses.get(TOPO, status=first)
    else:
        responses.get(TOPO, body=first)
    responses.get(HOST, body="/b1f0c3/s7a2e9/h0d4c1\n")
    got = source().read()
    assert isinstance(got, Reading)
    assert got.ids == {"block": "b1f0c3", "subblock": "s7a2e9", "host": "h0d4c1"}
    assert got.details == {"document": HOST_PATH}


@responses.activate
def test_a_vm_without_either_attribute_has_no_data() -> None:
    responses.get(TOPO, status=404)
    responses.get(HOST, status=404)
    got = source().read()
    assert isinstance(got, NoData) and "no physical host topology" in got.reason


@responses.activate
def test_a_failure_with_nothing_to_fall_back_on_stays_an_error() -> None:
    responses.get(TOPO, status=500)
    responses.get(HOST, status=404)
    with pytest.raises(SourceError, match=r"500.*has no topology to fall back on"):
        source().read()


@responses.activate
def test_refused_is_an_error_that_names_the_header_and_asks_nothing_else() -> None:
    responses.get(TOPO, status=403)
    with pytest.raises(SourceError, match="Metadata-Flavor: Google"):
        source().read()
    assert len(responses.calls) == 1


@responses.activate
@pytest.mark.parametrize("body", ["b/s", "/b//h", "/a/b/c/d", "/b/s/h\x00"])
def test_a_malformed_physical_host_is_an_error(body: str) -> None:
    responses.get(TOPO, status=404)
    responses.get(HOST, body=body)
    with pytest.raises(SourceError, match="physical_host"):
        source().read()


@responses.activate
def test_a_missing_level_makes_it_and_the_narrower_ones_unknown() -> None:
    responses.get(TOPO, json={"block": "b", "host": "h"})
    got = source().read()
    assert isinstance(got, Reading)
    assert got.ids == {"block": "b"}
    assert set(got.unknown) == {"subblock", "host"}
    assert "subBlock is missing" in got.unknown["subblock"]


@responses.activate
@pytest.mark.parametrize("doc", [["b", "s", "h"], {"block": 7, "subBlock": "s", "host": "h"}])
def test_a_document_of_the_wrong_shape_is_an_error(doc: object) -> None:
    responses.get(TOPO, json=doc)
    with pytest.raises(SourceError, match="physical_host_topology"):
        source().read()


def test_the_gce_profile_writes_gkes_keys_unencoded() -> None:
    profile = gce()
    keys = profile.keys_for(ROLES)
    assert keys == {src.BLOCK: GCE_BLOCK, src.SUBBLOCK: GCE_SUBBLOCK, src.HOST: GCE_HOST}
    assert profile.encoding == "raw" and profile.source == src.NAME
