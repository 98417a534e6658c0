"""OCI instance metadata (IMDS v2): where this host sits in the RDMA network.

Primary document: ``GET /opc/v2/host/rdmaTopologyData`` (only hosts in a dedicated capacity
pool with capacity topology have it). When it is missing (404) or empty, ``GET /opc/v2/host``
is asked instead: it may embed ``rdmaTopologyData``, or carry ``networkBlockId`` (used for the
HPC island and the network block), ``rackId`` (local block) and ``id`` (host).

Outcomes (see ``labeler.sources``):
- a ``Reading`` of full IDs keyed by label key;
- ``NoData`` when neither document has topology: a normal state (no capacity topology);
- ``SourceError`` for anything that is not a definite answer: timeouts, refused
  connections, 401/403, 429, 5xx, malformed JSON, a required field missing or not a string.

IMDS rejects requests that carry ``Forwarded``/``X-Forwarded-*`` headers and must be reached
directly from the host, so the session ignores proxy environment variables
(``trust_env=False``) and never adds such headers.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import requests

from labeler.errors import UsageError
from labeler.profiles import OCI_GPU_MEMORY_FABRIC, OCI_HOST_ID, Profile
from labeler.sources import NoData, Reading, SourceError

log = logging.getLogger(__name__)

DEFAULT_IMDS_URL = "http://169.254.169.254"
RDMA_PATH = "/opc/v2/host/rdmaTopologyData"
HOST_PATH = "/opc/v2/host"
AUTH_HEADER = {"Authorization": "Bearer Oracle"}
_FORBIDDEN_HEADERS = ("forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto")

# The IMDS fields of rdmaTopologyData, by role.
ISLAND, NETWORK_BLOCK, LOCAL_BLOCK, HOST, FABRIC = (
    "hpc_island",
    "network_block",
    "local_block",
    "host",
    "gpu_memory_fabric",
)
RDMA_FIELDS = {
    ISLAND: "customerHPCIslandId",
    NETWORK_BLOCK: "customerNetworkBlock",
    LOCAL_BLOCK: "customerLocalBlock",
    HOST: "customerHostId",
}
FABRIC_FIELD = "customerGpuMemoryFabric"
LEVEL_ROLES = (ISLAND, NETWORK_BLOCK, LOCAL_BLOCK)


@dataclass(frozen=True)
class OciKeys:
    """Which label key each IMDS role is written to (None: the profile does not write it)."""

    hpc_island: str | None
    network_block: str | None
    local_block: str | None
    host: str | None
    gpu_memory_fabric: str | None

    def for_role(self, role: str) -> str | None:
        value: str | None = getattr(self, role)
        return value

    @property
    def all(self) -> tuple[str, ...]:
        roles = (*LEVEL_ROLES, HOST, FABRIC)
        return tuple(k for k in (self.for_role(r) for r in roles) if k)


def oci_keys(profile: Profile) -> OciKeys:
    """Map a profile's keys to IMDS roles.

    Levels are matched by their ``name`` (``hpc_island``, ``network_block``, ``local_block``);
    a profile whose level names are not all among these must have exactly three levels,
    taken widest first. Extra labels: the first is the host ID, the second the GPU memory
    fabric ID; more are an error. This lets a profile file rename every key.
    """
    levels = profile.topology.levels
    names = [lv.name for lv in levels]
    roles: dict[str, str] = {}
    if all(n in LEVEL_ROLES for n in names):
        roles = {lv.name: lv.key for lv in levels}
    elif len(levels) == len(LEVEL_ROLES):
        roles = {role: lv.key for role, lv in zip(LEVEL_ROLES, levels, strict=True)}
    else:
        raise UsageError(
            f"profile {profile.name!r}: source oci-imds needs levels named "
            f"{', '.join(LEVEL_ROLES)} (or exactly three levels, widest first); got "
            f"{', '.join(names)}"
        )
    extra = list(profile.extra_keys)
    if len(extra) > 2:
        raise UsageError(
            f"profile {profile.name!r}: source oci-imds writes at most two extra labels "
            f"(host ID, GPU memory fabric ID); got {', '.join(extra)}"
        )
    return OciKeys(
        hpc_island=roles.get(ISLAND),
        network_block=roles.get(NETWORK_BLOCK),
        local_block=roles.get(LOCAL_BLOCK),
        host=extra[0] if extra else None,
        gpu_memory_fabric=extra[1] if len(extra) > 1 else None,
    )


DEFAULT_KEYS = OciKeys(
    hpc_island="oci.oraclecloud.com/rdma.hpc_island_id",
    network_block="oci.oraclecloud.com/rdma.network_block_id",
    local_block="oci.oraclecloud.com/rdma.local_block_id",
    host=OCI_HOST_ID,
    gpu_memory_fabric=OCI_GPU_MEMORY_FABRIC,
)


@dataclass(frozen=True)
class ImdsOptions:
    """Bounded waiting: at most ``attempts`` requests per document, each limited by
    ``connect_timeout``/``read_timeout``, with jittered exponential backoff in between."""

    url: str = DEFAULT_IMDS_URL
    connect_timeout: float = 1.0
    read_timeout: float = 2.0
    attempts: int = 3
    backoff: float = 0.5
    max_backoff: float = 4.0


class _Retry(Exception):
    """A transient failure worth another attempt."""


class OciImdsSource:
    """Reads the RDMA topology of this host from IMDS. Thread-compatible, not thread-safe."""

    name = "oci-imds"

    def __init__(
        self,
        keys: OciKeys = DEFAULT_KEYS,
        options: ImdsOptions | None = None,
        *,
        stop: threading.Event | None = None,
        session: requests.Session | None = None,
        sleep: Callable[[float], bool] | None = None,
    ) -> None:
        self.map = keys
        self.keys = keys.all
        self.options = options or ImdsOptions()
        self._stop = stop or threading.Event()
        # Waiting on the stop event makes backoff end at once on SIGTERM.
        self._sleep = sleep or self._stop.wait
        self._session = session or requests.Session()
        # Never route IMDS through a proxy from HTTP(S)_PROXY, never read .netrc.
        self._session.trust_env = False
        for header in _FORBIDDEN_HEADERS:
            self._session.headers.pop(header, None)

    def read(self) -> Reading | NoData:
        doc = self._get_json(RDMA_PATH)
        if doc is not None and not _is_empty(doc):
            return self._from_rdma(_require_object(doc, RDMA_PATH), RDMA_PATH)
        host = self._get_json(HOST_PATH)
        if host is None or _is_empty(host):
            return NoData(
                f"IMDS has no RDMA topology ({RDMA_PATH} and {HOST_PATH} are missing or empty):"
                " this host is not in a capacity topology"
            )
        host = _require_object(host, HOST_PATH)
        embedded = host.get("rdmaTopologyData")
        if isinstance(embedded, Mapping) and embedded:
            return self._from_rdma(embedded, HOST_PATH + " rdmaTopologyData")
        if host.get("networkBlockId") is None:
            return NoData(
                f"IMDS has no RDMA topology: {RDMA_PATH} is missing and {HOST_PATH} has "
                "neither rdmaTopologyData nor networkBlockId"
            )
        return self._from_host(host)

    # --- parsing ------------------------------------------------------------------

    def _from_rdma(self, doc: Mapping[str, Any], where: str) -> Reading:
        ids: dict[str, str] = {}
        for role, field_name in RDMA_FIELDS.items():
            key = self.map.for_role(role)
            value = _required_string(doc, field_name, where)
            if key:
                ids[key] = value
        fabric = doc.get(FABRIC_FIELD)
        if fabric is not None:
            if not isinstance(fabric, str):
                raise SourceError(
                    f"IMDS {where}: {FABRIC_FIELD} is {type(fabric).__name__}, not a string; "
                    "the metadata service answered something unexpected, check the host"
                )
            _check_printable(fabric, FABRIC_FIELD, where)
            if fabric and self.map.gpu_memory_fabric:
                ids[self.map.gpu_memory_fabric] = fabric
        return Reading(ids=ids, details={"document": where})

    def _from_host(self, doc: Mapping[str, Any]) -> Reading:
        where = HOST_PATH
        block = _required_string(doc, "networkBlockId", where)
        rack = _required_string(doc, "rackId", where)
        host = _required_string(doc, "id", where)
        values = {ISLAND: block, NETWORK_BLOCK: block, LOCAL_BLOCK: rack, HOST: host}
        ids = {k: v for role, v in values.items() if (k := self.map.for_role(role))}
        return Reading(ids=ids, details={"document": where})

    # --- HTTP ---------------------------------------------------------------------

    def _get_json(self, path: str) -> Any:
        """The parsed JSON at ``path``; None for 404 or an empty body. Raises SourceError."""
        opts = self.options
        url = opts.url.rstrip("/") + path
        last: Exception | None = None
        for attempt in range(1, max(1, opts.attempts) + 1):
            if attempt > 1:
                delay = min(opts.max_backoff, opts.backoff * 2 ** (attempt - 2))
                delay *= 0.5 + random.random() / 2
                log.debug("IMDS retry url=%s attempt=%d delay=%.2fs", url, attempt, delay)
                if self._sleep(delay) or self._stop.is_set():
                    break
            try:
                return self._get_once(url)
            except _Retry as e:
                last = e
        raise SourceError(f"{last}; keeping the current labels and retrying later")

    def _get_once(self, url: str) -> Any:
        opts = self.options
        try:
            resp = self._session.get(
                url,
                headers=AUTH_HEADER,
                timeout=(opts.connect_timeout, opts.read_timeout),
                allow_redirects=False,
            )
        except requests.Timeout as e:
            raise _Retry(f"IMDS {url}: no answer within the timeout ({e})") from e
        except requests.RequestException as e:
            raise _Retry(
                f"IMDS {url}: cannot connect ({type(e).__name__}); the agent needs "
                "hostNetwork to reach the metadata service"
            ) from e
        status = resp.status_code
        if status == 404:
            return None
        if status in (401, 403):
            raise SourceError(
                f"IMDS {url}: {status} {resp.reason}: the metadata service refused the "
                "request; IMDS v2 needs 'Authorization: Bearer Oracle' and no Forwarded "
                "headers (is a proxy in the way?)"
            )
        if status == 429 or status >= 500:
            raise _Retry(f"IMDS {url}: {status} {resp.reason}")
        if status != 200:
            raise SourceError(f"IMDS {url}: unexpected answer {status} {resp.reason}")
        text = resp.text
        if not text.strip():
            return None
        try:
            return json.loads(text)
        except ValueError as e:
            raise SourceError(f"IMDS {url}: the answer is not JSON ({e}): {text[:80]!r}") from e


def _is_empty(doc: Any) -> bool:
    return doc is None or doc == {} or doc == "" or doc == []


def _require_object(doc: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(doc, Mapping):
        raise SourceError(
            f"IMDS {where}: expected a JSON object, got {type(doc).__name__}; "
            "the metadata service answered something unexpected"
        )
    return doc


def _required_string(doc: Mapping[str, Any], field_name: str, where: str) -> str:
    value = doc.get(field_name)
    if value is None:
        raise SourceError(
            f"IMDS {where}: required field {field_name} is missing; the topology document "
            "is incomplete, keeping the current labels"
        )
    if not isinstance(value, str) or not value.strip():
        raise SourceError(
            f"IMDS {where}: field {field_name} must be a non-empty string, got {value!r}"
        )
    _check_printable(value, field_name, where)
    return value.strip()


def _check_printable(value: str, field_name: str, where: str) -> None:
    """An ID is printable text: a lone surrogate (JSON may escape one, UTF-8 cannot encode
    it, so hashing it crashed the agent) or a control character is garbage, not an ID."""
    if not value.strip().isprintable():
        raise SourceError(
            f"IMDS {where}: field {field_name} is not printable text ({value[:80]!r}); "
            "the metadata service answered something unexpected, keeping the current labels"
        )
