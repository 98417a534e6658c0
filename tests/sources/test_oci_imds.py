"""The OCI IMDS source against ``responses``: every outcome a node can meet, one test each."""

from __future__ import annotations

import json
import threading

import pytest
import requests
import responses

from labeler.base.errors import UsageError
from labeler.core.model import Level, Topology
from labeler.core.profiles import OCI_GPU_MEMORY_FABRIC, OCI_HOST_ID, OCI_PREFIX, Profile, oci_rdma
from labeler.sources import NoData, Reading, SourceError
from labeler.sources import oci_imds as imds
from labeler.sources.oci_imds import HOST_PATH, RDMA_PATH, ROLES, ImdsOptions, OciImdsSource

URL = "http://imds.test"
RDMA = URL + RDMA_PATH
HOST = URL + HOST_PATH
ISLAND = "ocid1.hpcisland.oc1.iad.anuwcljrg5pyaeycajoqlss6bcvmz4mqnhgsszhm4ihzjcyrdmmsnbinmaca"
BLOCK = "ocid1.computenetworkblock.oc1.iad.anuwcljrg5pyaeycbm2kpvcl7uu3a2fmo3cbt5wrwnrxqwizf6sa"
LOCAL = "ocid1.computelocalblock.oc1.iad.anuwcljrg5pyaeycu6xkmkpz4o3oub4a4qrp5f6tsoy2hfb4p6ya"
HOSTID = "ocid1.computebaremetalhost.oc1.iad.anuwcljrg5pyaeyc3hq2ykbz6w5lfcyzj7dgagevmyfuggxta"
FABRIC = "ocid1.computegpumemoryfabric.oc1.iad.anuwcljrg5pyaeycn7ptrpezmu3xhyxj6uc5gqbjzbvz6q"
DOC = {
    "customerHPCIslandId": ISLAND,
    "customerNetworkBlock": BLOCK,
    "customerLocalBlock": LOCAL,
    "customerHostId": HOSTID,
}


# The roles that need only the topology documents; the extras' own tests add the others.
TOPOLOGY = frozenset({*imds.LEVELS, imds.HOST, imds.FABRIC})


def rdma_calls() -> int:
    return sum(1 for c in responses.calls if c.request.url == RDMA)


def source(wanted: frozenset[str] = TOPOLOGY, **kw: object) -> OciImdsSource:
    opts = ImdsOptions(url=URL, attempts=3, backoff=0.001, max_backoff=0.002, **kw)  # type: ignore[arg-type]
    return OciImdsSource(options=opts, wanted=wanted)


@responses.activate
def test_reads_rdma_topology_with_the_oracle_bearer_and_no_forwarded_headers() -> None:
    responses.get(RDMA, json=DOC)
    got = source().read()
    assert got == Reading(
        ids={
            imds.ISLAND: ISLAND,
            imds.NETWORK_BLOCK: BLOCK,
            imds.LOCAL_BLOCK: LOCAL,
            imds.HOST: HOSTID,
        },
        details={"document": RDMA_PATH, "source": "rdma"},
    )
    sent = responses.calls[0].request.headers
    assert sent["Authorization"] == "Bearer Oracle"
    assert not [h for h in sent if h.lower().startswith(("forwarded", "x-forwarded"))]
    assert len(responses.calls) == 1  # no fallback when the document is there


@responses.activate
def test_gpu_memory_fabric_is_read_when_present() -> None:
    responses.get(RDMA, json={**DOC, "customerGpuMemoryFabric": FABRIC})
    got = source().read()
    assert isinstance(got, Reading)
    assert got.ids[imds.FABRIC] == FABRIC


def test_proxy_environment_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("http_proxy", "http://proxy.invalid:3128")
    src = source()
    assert src._client.session.trust_env is False
    with responses.RequestsMock() as rsps:
        rsps.get(RDMA, json=DOC)
        assert isinstance(src.read(), Reading)


@responses.activate
@pytest.mark.parametrize("missing", [{"status": 404}, {"body": ""}, {"json": {}}])
def test_falls_back_to_host_document_with_networkblock_rack_and_id(missing: dict) -> None:
    responses.get(RDMA, **missing)
    block, rack, host = "a" * 64, "b" * 64, "c" * 64
    responses.get(HOST, json={"id": host, "networkBlockId": block, "rackId": rack, "x": 1})
    got = source().read()
    assert isinstance(got, Reading)
    assert got.ids == {
        imds.ISLAND: block,
        imds.NETWORK_BLOCK: block,
        imds.LOCAL_BLOCK: rack,
        imds.HOST: host,
    }
    assert got.details["document"] == HOST_PATH


@responses.activate
def test_host_document_with_embedded_rdma_topology_wins_over_its_ids() -> None:
    responses.get(RDMA, status=404)
    responses.get(HOST, json={"id": "c" * 64, "networkBlockId": "a" * 64, "rdmaTopologyData": DOC})
    got = source().read()
    assert isinstance(got, Reading)
    assert got.ids[imds.LOCAL_BLOCK] == LOCAL


@responses.activate
@pytest.mark.parametrize(
    "host", [{"status": 404}, {"json": {}}, {"json": {"id": "c" * 64, "shape": "VM.GPU.A10.1"}}]
)
def test_no_topology_anywhere_is_no_data_not_an_error(host: dict) -> None:
    responses.get(RDMA, status=404)
    responses.get(HOST, **host)
    got = source().read()
    assert isinstance(got, NoData)
    assert "capacity topology" in got.reason or "no RDMA topology" in got.reason


@responses.activate
@pytest.mark.parametrize("status", [401, 403])
def test_auth_failures_are_errors_without_retry(status: int) -> None:
    responses.get(RDMA, status=status)
    with pytest.raises(SourceError, match=f"{status}.*Bearer Oracle"):
        source().read()
    assert len(responses.calls) == 1


@responses.activate
@pytest.mark.parametrize("status", [429, 500, 503])
def test_throttling_and_server_errors_retry_then_fail(status: int) -> None:
    responses.get(RDMA, status=status)
    with pytest.raises(SourceError, match=str(status)):
        source().read()
    assert rdma_calls() == 3  # bounded by attempts (then /host is asked, in vain)


@responses.activate
def test_a_transient_5xx_then_success_is_a_reading() -> None:
    responses.get(RDMA, status=502)
    responses.get(RDMA, json=DOC)
    assert isinstance(source().read(), Reading)
    assert len(responses.calls) == 2


@responses.activate
def test_timeout_is_an_error_after_bounded_retries() -> None:
    responses.get(RDMA, body=requests.ReadTimeout("read timed out"))
    with pytest.raises(SourceError, match="no complete answer within --imds-timeout"):
        source().read()
    assert rdma_calls() == 3


@responses.activate
def test_connection_refused_is_an_error_that_mentions_host_network() -> None:
    responses.get(RDMA, body=requests.ConnectionError("refused"))
    with pytest.raises(SourceError, match="hostNetwork"):
        source().read()


@responses.activate
@pytest.mark.parametrize("body", ["{not json", "<html>gateway</html>"])
def test_malformed_json_is_an_error(body: str) -> None:
    responses.get(RDMA, body=body)
    with pytest.raises(SourceError, match="not JSON"):
        source().read()


@responses.activate
def test_a_json_list_is_an_error() -> None:
    responses.get(RDMA, json=[1, 2])
    with pytest.raises(SourceError, match="expected a JSON object"):
        source().read()


@responses.activate
@pytest.mark.parametrize(
    ("field", "unknown"),
    [
        ("customerHostId", [imds.HOST]),
        ("customerLocalBlock", [imds.LOCAL_BLOCK]),
        ("customerNetworkBlock", [imds.NETWORK_BLOCK, imds.LOCAL_BLOCK]),
        ("customerHPCIslandId", list(imds.LEVELS)),
    ],
)
def test_a_missing_field_makes_its_role_and_the_narrower_levels_unknown(
    field: str, unknown: list[str]
) -> None:
    responses.get(RDMA, json={k: v for k, v in DOC.items() if k != field})
    got = source().read()
    assert isinstance(got, Reading)
    assert sorted(got.unknown) == sorted(unknown)
    assert f"{field} is missing" in got.unknown[unknown[0]]
    # Never a placeholder: an unknown role has no ID at all; the others are all there.
    assert set(got.ids) == {imds.ISLAND, imds.NETWORK_BLOCK, imds.LOCAL_BLOCK, imds.HOST} - set(
        unknown
    )


@responses.activate
@pytest.mark.parametrize("bad", [42, "", ["x"], {"a": "b"}])
def test_a_required_field_that_is_not_a_string_is_an_error(bad: object) -> None:
    responses.get(RDMA, json={**DOC, "customerLocalBlock": bad})
    with pytest.raises(SourceError, match="customerLocalBlock must be a non-empty string"):
        source().read()


@responses.activate
@pytest.mark.parametrize("field", ["customerLocalBlock", "customerGpuMemoryFabric"])
@pytest.mark.parametrize("bad", ["\\ud800", "\\u0000", "\\n"])
def test_an_id_with_a_lone_surrogate_or_control_character_is_an_error(field: str, bad: str) -> None:
    # JSON may escape anything; "\ud800" alone is not text (UTF-8 cannot encode it, so the
    # hash encoder crashed the agent) and no OCID holds control characters: garbage, not an ID.
    body = json.dumps({**DOC, field: "PLACEHOLDER"}).replace("PLACEHOLDER", f"ocid1.{bad}x")
    responses.get(RDMA, body=body)
    with pytest.raises(SourceError, match=f"{field} .*not printable"):
        source().read()


@responses.activate
def test_a_fabric_that_is_not_a_string_is_an_error() -> None:
    responses.get(RDMA, json={**DOC, "customerGpuMemoryFabric": 7})
    with pytest.raises(SourceError, match="customerGpuMemoryFabric"):
        source().read()


@responses.activate
def test_partial_host_document_leaves_the_local_block_unknown() -> None:
    responses.get(RDMA, status=404)
    responses.get(HOST, json={"id": "c" * 64, "networkBlockId": "a" * 64})
    got = source().read()
    assert isinstance(got, Reading)
    assert got.ids == {imds.ISLAND: "a" * 64, imds.NETWORK_BLOCK: "a" * 64, imds.HOST: "c" * 64}
    assert "rackId is missing" in got.unknown[imds.LOCAL_BLOCK]


@responses.activate
@pytest.mark.parametrize(
    "broken", [{"status": 500}, {"status": 503}, {"body": "{not json"}, {"body": "[1,"}]
)
def test_a_broken_rdma_document_falls_back_to_host_in_the_same_read(broken: dict) -> None:
    responses.get(RDMA, **broken)
    responses.get(HOST, json={"id": "c" * 64, "rdmaTopologyData": DOC})
    got = source().read()
    assert isinstance(got, Reading)
    assert got.ids[imds.LOCAL_BLOCK] == LOCAL
    assert got.details["document"] == HOST_PATH + " rdmaTopologyData"


@responses.activate
@pytest.mark.parametrize("host", [{"status": 404}, {"json": {"id": "c" * 64}}, {"status": 500}])
def test_a_broken_rdma_document_without_fallback_stays_an_error(host: dict) -> None:
    responses.get(RDMA, status=500)
    responses.get(HOST, **host)
    with pytest.raises(SourceError, match="500"):
        source().read()


@responses.activate
def test_oci_hpc_oke_extras_from_host_and_instance() -> None:
    responses.get(RDMA, json={**DOC, "customerGpuMemoryFabric": FABRIC})
    responses.get(HOST, json={"rdmaFabricData": {"planes": 4, "ipv6": True}, "id": "x"})
    cluster = "ocid1.computegpumemorycluster.oc1.iad.anuwcljrg5pyaeycclusterid01"
    responses.get(
        URL + imds.INSTANCE_PATH, json={"freeformTags": {imds.MEMORY_CLUSTER_TAG: cluster}}
    )
    got = source(wanted=frozenset(ROLES.levels + ROLES.extras)).read()
    assert isinstance(got, Reading)
    assert got.values == {imds.PLANES: "4", imds.IPV6: "true"}
    assert got.ids[imds.MEMORY_CLUSTER] == cluster
    assert got.ids[imds.FABRIC] == FABRIC


@responses.activate
def test_extras_unknown_when_host_fails_and_no_cluster_without_a_fabric() -> None:
    responses.get(RDMA, json=DOC)
    responses.get(HOST, status=500)
    got = source(wanted=frozenset(ROLES.levels + ROLES.extras)).read()
    assert isinstance(got, Reading)
    assert set(got.unknown) == {imds.PLANES, imds.IPV6}  # kept as they are, not removed
    assert imds.MEMORY_CLUSTER not in got.ids  # /instance/ only asked with a GPU fabric
    assert not [c for c in responses.calls if c.request.url.endswith("/instance/")]


@responses.activate
@pytest.mark.parametrize(("text", "want"), [("3\n", "3"), ("N/A", None), ("", None), (None, None)])
def test_tray_index_file(tmp_path: object, text: str | None, want: str | None) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "tray_index"
    if text is not None:
        path.write_text(text)
    responses.get(RDMA, json=DOC)
    got = source(wanted=TOPOLOGY | {imds.TRAY}, tray_index_file=str(path)).read()
    assert isinstance(got, Reading)
    assert got.values.get(imds.TRAY) == want


@responses.activate
def test_a_body_over_the_cap_is_an_error() -> None:
    responses.get(RDMA, body="{" + " " * 2000 + "}")
    with pytest.raises(SourceError, match="larger than 1000 bytes"):
        source(max_bytes=1000).read()


@responses.activate
def test_stop_event_cuts_the_backoff_short() -> None:
    responses.get(RDMA, status=500)
    stop = threading.Event()
    stop.set()
    src = OciImdsSource(options=ImdsOptions(url=URL, attempts=5, backoff=30), stop=stop)
    with pytest.raises(SourceError):
        src.read()  # would sleep 30 s+ without the stop event
    assert rdma_calls() == 1


def test_profile_file_can_rename_every_key() -> None:
    profile = Profile(
        name="mine",
        topology=Topology(
            "t",
            (Level("ex.com/island", "a"), Level("ex.com/block", "b"), Level("ex.com/rack", "c")),
        ),
        extra_keys=("ex.com/host",),
        source="oci-imds",
    )
    # Levels by position, widest first; the one extra label is the host ID. No fabric key
    # in this profile: the fabric is not written.
    assert profile.keys_for(ROLES) == {
        imds.ISLAND: "ex.com/island",
        imds.NETWORK_BLOCK: "ex.com/block",
        imds.LOCAL_BLOCK: "ex.com/rack",
        imds.HOST: "ex.com/host",
    }


def test_builtin_profile_maps_the_roles_to_the_oci_keys() -> None:
    assert oci_rdma().keys_for(ROLES) == {
        imds.ISLAND: OCI_PREFIX + "rdma.hpc_island_id",
        imds.NETWORK_BLOCK: OCI_PREFIX + "rdma.network_block_id",
        imds.LOCAL_BLOCK: OCI_PREFIX + "rdma.local_block_id",
        imds.HOST: OCI_HOST_ID,
        imds.FABRIC: OCI_GPU_MEMORY_FABRIC,
        imds.MEMORY_CLUSTER: OCI_PREFIX + "host.gpu_memory_cluster_id",
        imds.PLANES: OCI_PREFIX + "rdma.planes",
        imds.IPV6: OCI_PREFIX + "rdma.ipv6",
        imds.TRAY: OCI_PREFIX + "host.tray_index",
    }


def test_profile_with_unmappable_levels_is_a_usage_error() -> None:
    profile = Profile(
        name="two",
        topology=Topology("t", (Level("a/b", "x"), Level("a/c", "y"))),
        source="oci-imds",
    )
    with pytest.raises(UsageError, match="source oci-imds needs levels named hpc_island"):
        profile.keys_for(ROLES)


def test_a_profile_with_more_extra_labels_than_roles_is_a_usage_error() -> None:
    profile = Profile(
        name="three",
        topology=oci_rdma().topology,
        extra_keys=("a/h", "a/f", "a/z", "a/y", "a/x", "a/w", "a/v"),
        source="oci-imds",
    )
    with pytest.raises(UsageError, match=r"at most 6 extra label\(s\) \(host, gpu_memory_fabric,"):
        profile.keys_for(ROLES)
