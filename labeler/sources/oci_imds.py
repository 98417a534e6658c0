"""OCI instance metadata (IMDS v2): where this host sits in the RDMA network.

Primary document: ``GET /opc/v2/host/rdmaTopologyData`` (only hosts in a dedicated capacity
pool with capacity topology have it). When it is missing (404), empty, or cannot be read (5xx,
timeout, malformed JSON), ``GET /opc/v2/host`` is asked in the same read: it may embed
``rdmaTopologyData``, or carry ``networkBlockId`` (used for the HPC island and the network
block), ``rackId`` (local block) and ``id`` (host). A failed primary document with nothing
to fall back on stays an error (never "no data").

The other labels Oracle's oci-hpc-oke labeler writes on the same nodes come from the same
documents, derived as it derives them (docs/compatibility.md): ``rdmaFabricData.planes`` and
``.ipv6`` of ``/opc/v2/host`` (written as they are), the ``oci:compute:gpumemorycluster``
free-form tag of ``/opc/v2/instance/`` (only on hosts with a GPU memory fabric, as only
GB200/GB300 are in a GPU memory cluster) and the NVLink tray index, which IMDS does not
publish: ``nvidia-smi -q`` prints it, and ``--tray-index-file`` names a file holding it.

Outcomes (see ``labeler.sources``):
- a ``Reading`` of full IDs by role (``hpc_island``, ``network_block``, ``local_block``,
  ``host``, ``gpu_memory_fabric``, ``gpu_memory_cluster``) and plain values (``rdma_planes``,
  ``rdma_ipv6``, ``tray_index``); the profile maps the roles to label keys. A field that is
  missing makes its role unknown (not written, not removed); a missing level also makes the
  narrower levels unknown, since they cannot be placed under it;
- ``NoData`` when neither document has topology: a normal state (no capacity topology);
- ``SourceError`` for anything that is not a definite answer: timeouts, refused
  connections, 401/403, 429, 5xx, malformed JSON, a field that is not a string.

Every document is fetched under a deadline (``--imds-timeout``, retries included: a server
trickling bytes cannot hold a read longer) and a size cap (IMDS documents are a few KB).

IMDS rejects requests that carry ``Forwarded``/``X-Forwarded-*`` headers and must be reached
directly from the host; the HTTP client shared by the metadata sources
(``labeler.sources.metadata_http``) ignores proxies and never adds such headers.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labeler.base.logs import logger
from labeler.core.profiles import Profile, Roles
from labeler.sources import Flag, NoData, Reading, Settings, SourceError, nested_levels, options
from labeler.sources.metadata import MetadataSource, metadata_kind
from labeler.sources.metadata_http import HttpOptions, Refused, Service, check_printable

log = logger(__name__)

NAME = "oci-imds"
RDMA_PATH = "/opc/v2/host/rdmaTopologyData"
HOST_PATH = "/opc/v2/host"
INSTANCE_PATH = "/opc/v2/instance/"
MEMORY_CLUSTER_TAG = "oci:compute:gpumemorycluster"
MAX_TRAY_FILE_BYTES = 256
AUTH_HEADER = {"Authorization": "Bearer Oracle"}
SERVICE = Service(
    name="IMDS",
    headers=AUTH_HEADER,
    flags="imds",
    refused="IMDS v2 needs 'Authorization: Bearer Oracle' and no Forwarded headers (is a "
    "proxy in the way?)",
)

# The roles this source reports; a profile's levels named so take them.
ISLAND, NETWORK_BLOCK, LOCAL_BLOCK, HOST, FABRIC = (
    "hpc_island",
    "network_block",
    "local_block",
    "host",
    "gpu_memory_fabric",
)
MEMORY_CLUSTER, PLANES, IPV6, TRAY = "gpu_memory_cluster", "rdma_planes", "rdma_ipv6", "tray_index"
LEVELS = (ISLAND, NETWORK_BLOCK, LOCAL_BLOCK)
# Levels widest first; a profile's extra labels take the extra roles in this order.
ROLES = Roles(levels=LEVELS, extras=(HOST, FABRIC, MEMORY_CLUSTER, PLANES, IPV6, TRAY))
# The IMDS fields of rdmaTopologyData, by role.
RDMA_FIELDS = {
    ISLAND: "customerHPCIslandId",
    NETWORK_BLOCK: "customerNetworkBlock",
    LOCAL_BLOCK: "customerLocalBlock",
    HOST: "customerHostId",
}
FABRIC_FIELD = "customerGpuMemoryFabric"


@dataclass(frozen=True)
class ImdsOptions(HttpOptions):
    """The metadata shell's options (``HttpOptions``: url, a deadline per document,
    attempts), and the file holding the NVLink tray index (None: no tray label)."""

    tray_index_file: str | None = None


class OciImdsSource(MetadataSource):
    """Reads the RDMA topology of this host from IMDS. Thread-compatible, not thread-safe.

    ``wanted``: the roles the profile writes (default: all); documents that only feed roles
    nobody writes are not fetched."""

    name = NAME
    roles = ROLES
    service = SERVICE
    options: ImdsOptions

    def __init__(
        self,
        options: ImdsOptions | None = None,
        *,
        wanted: frozenset[str] | None = None,
        **client: Any,
    ) -> None:
        super().__init__(options or ImdsOptions(), **client)
        self.wanted = frozenset(ROLES.levels + ROLES.extras) if wanted is None else wanted
        self._get_json = self._client.get_json

    def read(self) -> Reading | NoData:
        failed: SourceError | None = None
        try:
            doc = self._get_json(RDMA_PATH)
        except Refused:
            raise
        except SourceError as e:
            # Not a definite answer, but /host may embed the same IDs: ask it now rather
            # than leave the node unlabeled until the next read.
            failed, doc = e, None
        if doc is not None and not _is_empty(doc):
            reading = self._from_rdma(_require_object(doc, RDMA_PATH), RDMA_PATH)
            return self._with_extras(reading, None)
        try:
            host = self._get_json(HOST_PATH)
        except SourceError as e:
            raise (failed or e) from None
        found = self._from_host(host)
        if isinstance(found, NoData):
            if failed is not None:
                raise SourceError(f"{failed} ({HOST_PATH} has no topology to fall back on)")
            return found
        if failed is not None:
            log.warning("IMDS %s failed, labeled from %s: %s", RDMA_PATH, HOST_PATH, failed)
        return self._with_extras(found, host)

    # --- parsing ------------------------------------------------------------------

    def _from_rdma(self, doc: Mapping[str, Any], where: str) -> Reading:
        ids, unknown = _levels(doc, RDMA_FIELDS, where)
        _put(ids, unknown, HOST, doc, RDMA_FIELDS[HOST], where)
        fabric = _optional_string(doc, FABRIC_FIELD, where, empty_ok=True)
        if fabric:
            ids[FABRIC] = fabric
        return Reading(ids=ids, details={"document": where, "source": "rdma"}, unknown=unknown)

    def _from_host(self, host: Any) -> Reading | NoData:
        if host is None or _is_empty(host):
            return NoData(
                f"IMDS has no RDMA topology ({RDMA_PATH} and {HOST_PATH} are missing or empty):"
                " this host is not in a capacity topology"
            )
        doc = _require_object(host, HOST_PATH)
        embedded = doc.get("rdmaTopologyData")
        if isinstance(embedded, Mapping) and embedded:
            return self._from_rdma(embedded, HOST_PATH + " rdmaTopologyData")
        if doc.get("networkBlockId") is None:
            return NoData(
                f"IMDS has no RDMA topology: {RDMA_PATH} is missing and {HOST_PATH} has "
                "neither rdmaTopologyData nor networkBlockId"
            )
        # /host has no island: the network block stands for it, as oci-hpc-oke does.
        names = {ISLAND: "networkBlockId", NETWORK_BLOCK: "networkBlockId", LOCAL_BLOCK: "rackId"}
        ids, unknown = _levels(doc, names, HOST_PATH)
        _put(ids, unknown, HOST, doc, "id", HOST_PATH)
        return Reading(ids=ids, details={"document": HOST_PATH, "source": "host"}, unknown=unknown)

    def _with_extras(self, reading: Reading, host: Any) -> Reading:
        """Add the non-topology labels: RDMA fabric data, GPU memory cluster, tray index."""
        ids, values, unknown = dict(reading.ids), {}, dict(reading.unknown)
        if self.wanted & {PLANES, IPV6}:
            try:
                if host is None:
                    host = self._get_json(HOST_PATH)
                fabric = host.get("rdmaFabricData") if isinstance(host, Mapping) else None
                for role, name in ((PLANES, "planes"), (IPV6, "ipv6")):
                    value = fabric.get(name) if isinstance(fabric, Mapping) else None
                    if value is not None:
                        values[role] = _plain(value, f"rdmaFabricData.{name}")
            except SourceError as e:
                unknown.update({PLANES: str(e), IPV6: str(e)})
        if MEMORY_CLUSTER in self.wanted and FABRIC in ids:
            try:
                instance = self._get_json(INSTANCE_PATH)
                tags = instance.get("freeformTags") if isinstance(instance, Mapping) else None
                tag = tags.get(MEMORY_CLUSTER_TAG) if isinstance(tags, Mapping) else None
                if isinstance(tag, str) and tag.strip():
                    _check_printable(tag, MEMORY_CLUSTER_TAG, INSTANCE_PATH)
                    ids[MEMORY_CLUSTER] = tag.strip()
            except SourceError as e:
                unknown[MEMORY_CLUSTER] = str(e)
        path = self.options.tray_index_file
        if TRAY in self.wanted and path:
            try:
                tray = _read_tray_index(Path(path))
                if tray is not None:
                    values[TRAY] = tray
            except SourceError as e:
                unknown[TRAY] = str(e)
        return Reading(ids=ids, details=reading.details, values=values, unknown=unknown)


def _build(profile: Profile, settings: Settings, stop: threading.Event) -> OciImdsSource:
    wanted = frozenset(profile.keys_for(ROLES))
    return OciImdsSource(options(ImdsOptions(), settings, NAME), stop=stop, wanted=wanted)


KIND = metadata_kind(
    OciImdsSource,
    title=f"OCI instance metadata (source {NAME})",
    what="IMDS",
    defaults=ImdsOptions(),
    extra=(
        Flag(
            "--tray-index-file",
            "tray_index_file",
            "a file holding this host's NVLink tray index (GB200/GB300), e.g. written at pod "
            "start from 'nvidia-smi -q' (Tray Index); absent, empty or N/A: no tray label",
            metavar="PATH",
        ),
    ),
    build=_build,
)


def _levels(
    doc: Mapping[str, Any], names: Mapping[str, str], where: str
) -> tuple[dict[str, str], dict[str, str]]:
    """The level IDs widest first (``names``: level role → field of ``doc``). A missing
    field makes its level unknown, and every narrower one too (not read at all): a block
    cannot be placed under a parent nobody knows, and no placeholder is written (a shared
    fake value would group unrelated hosts)."""
    found: dict[str, str] = {}
    for role in LEVELS:
        value = _optional_string(doc, names[role], where)
        if value is None:
            break
        found[role] = value
    return nested_levels(LEVELS, found, lambda role: _missing(where, names[role]))


def _put(
    ids: dict[str, str],
    unknown: dict[str, str],
    role: str,
    doc: Mapping[str, Any],
    name: str,
    where: str,
) -> None:
    value = _optional_string(doc, name, where)
    if value is None:
        unknown[role] = _missing(where, name)
    else:
        ids[role] = value


def _missing(where: str, name: str) -> str:
    return (
        f"IMDS {where}: field {name} is missing; its label is kept as it is "
        "until the metadata service publishes it"
    )


def _plain(value: Any, name: str) -> str:
    """A value written as it is, as oci-hpc-oke writes it: a flag in lowercase, a number
    in decimal, text stripped."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | str):
        text = str(value).strip()
        _check_printable(text, name, HOST_PATH)
        return text
    raise SourceError(
        f"IMDS {HOST_PATH}: {name} is {type(value).__name__}, not a number, flag or string; "
        "the metadata service answered something unexpected"
    )


def _read_tray_index(path: Path) -> str | None:
    """The tray index in ``path``; None when the file is absent, empty or says N/A
    (nvidia-smi's answer on a host without NVLink trays)."""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_TRAY_FILE_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise SourceError(f"--tray-index-file {path}: cannot read: {e}") from e
    if len(data) > MAX_TRAY_FILE_BYTES:
        raise SourceError(
            f"--tray-index-file {path}: more than {MAX_TRAY_FILE_BYTES} bytes; it should "
            "hold only the tray index nvidia-smi prints"
        )
    text = data.decode("utf-8", errors="replace").strip()
    if not text or text.upper() == "N/A":
        return None
    _check_printable(text, "tray index", str(path))
    return text


def _is_empty(doc: Any) -> bool:
    return doc is None or doc == {} or doc == "" or doc == []


def _require_object(doc: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(doc, Mapping):
        raise SourceError(
            f"IMDS {where}: expected a JSON object, got {type(doc).__name__}; "
            "the metadata service answered something unexpected"
        )
    return doc


def _optional_string(
    doc: Mapping[str, Any], field_name: str, where: str, *, empty_ok: bool = False
) -> str | None:
    """The field, stripped; None when it is missing (or empty, with ``empty_ok``). Any other
    type, or an empty or unprintable string, is garbage: an error."""
    value = doc.get(field_name)
    if value is None or (empty_ok and value == ""):
        return None
    if not isinstance(value, str) or not value.strip():
        raise SourceError(
            f"IMDS {where}: field {field_name} must be a non-empty string, got {value!r}"
        )
    _check_printable(value, field_name, where)
    return value.strip()


def _check_printable(value: str, field_name: str, where: str) -> None:
    check_printable(value, f"field {field_name}", f"IMDS {where}")
