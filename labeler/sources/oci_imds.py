"""OCI instance metadata (IMDS v2): where this host sits in the RDMA network.

Primary document: ``GET /opc/v2/host/rdmaTopologyData`` (only hosts in a dedicated capacity
pool with capacity topology have it). When it is missing (404) or empty, ``GET /opc/v2/host``
is asked instead: it may embed ``rdmaTopologyData``, or carry ``networkBlockId`` (used for the
HPC island and the network block), ``rackId`` (local block) and ``id`` (host).

Outcomes (see ``labeler.sources``):
- a ``Reading`` of full IDs by role (``hpc_island``, ``network_block``, ``local_block``,
  ``host``, ``gpu_memory_fabric``); the profile maps the roles to label keys;
- ``NoData`` when neither document has topology: a normal state (no capacity topology);
- ``SourceError`` for anything that is not a definite answer: timeouts, refused
  connections, 401/403, 429, 5xx, malformed JSON, a required field missing or not a string.

IMDS rejects requests that carry ``Forwarded``/``X-Forwarded-*`` headers and must be reached
directly from the host, so the session ignores proxy environment variables
(``trust_env=False``) and never adds such headers.
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from labeler.backoff import Backoff
from labeler.errors import UsageError
from labeler.flags import positive_number
from labeler.profiles import Profile, Roles
from labeler.sources import NoData, Reading, SourceError, SourceKind

if TYPE_CHECKING:
    import requests

log = logging.getLogger(__name__)

NAME = "oci-imds"
DEFAULT_IMDS_URL = "http://169.254.169.254"
RDMA_PATH = "/opc/v2/host/rdmaTopologyData"
HOST_PATH = "/opc/v2/host"
AUTH_HEADER = {"Authorization": "Bearer Oracle"}
_FORBIDDEN_HEADERS = ("forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto")

# The roles this source reports; a profile's levels named so take them.
ISLAND, NETWORK_BLOCK, LOCAL_BLOCK, HOST, FABRIC = (
    "hpc_island",
    "network_block",
    "local_block",
    "host",
    "gpu_memory_fabric",
)
# Levels widest first; a profile's extra labels are the host ID, then the GPU memory fabric.
ROLES = Roles(levels=(ISLAND, NETWORK_BLOCK, LOCAL_BLOCK), extras=(HOST, FABRIC))
# The IMDS fields of rdmaTopologyData, by role.
RDMA_FIELDS = {
    ISLAND: "customerHPCIslandId",
    NETWORK_BLOCK: "customerNetworkBlock",
    LOCAL_BLOCK: "customerLocalBlock",
    HOST: "customerHostId",
}
FABRIC_FIELD = "customerGpuMemoryFabric"


@dataclass(frozen=True)
class ImdsOptions:
    """Bounded waiting: at most ``attempts`` requests per document, each limited by
    ``timeout`` (to connect, and again to read), with jittered exponential backoff in
    between. The defaults here are the flags' defaults."""

    url: str = DEFAULT_IMDS_URL
    timeout: float = 2.0
    attempts: int = 3
    backoff: float = 0.5
    max_backoff: float = 4.0

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ImdsOptions:
        if args.imds_attempts < 1:
            raise UsageError("--imds-attempts must be at least 1")
        return cls(url=args.imds_url, timeout=args.imds_timeout, attempts=args.imds_attempts)


def add_flags(parser: argparse.ArgumentParser) -> None:
    default = ImdsOptions()
    g = parser.add_argument_group("OCI instance metadata (source oci-imds)")
    g.add_argument("--imds-url", default=default.url, help=f"default {default.url}")
    g.add_argument(
        "--imds-timeout",
        type=positive_number,
        default=default.timeout,
        help=f"seconds per IMDS request (default {default.timeout:g})",
    )
    g.add_argument(
        "--imds-attempts",
        type=int,
        default=default.attempts,
        help=f"IMDS requests per read, with backoff (default {default.attempts})",
    )


def _build(profile: Profile, args: argparse.Namespace, stop: threading.Event) -> OciImdsSource:
    return OciImdsSource(ImdsOptions.from_args(args), stop=stop)


KIND = SourceKind(NAME, add_flags, _build)


class _Retry(Exception):
    """A transient failure worth another attempt."""


class OciImdsSource:
    """Reads the RDMA topology of this host from IMDS. Thread-compatible, not thread-safe."""

    name = NAME
    roles = ROLES

    def __init__(
        self,
        options: ImdsOptions | None = None,
        *,
        stop: threading.Event | None = None,
        session: requests.Session | None = None,
        sleep: Callable[[float], bool] | None = None,
    ) -> None:
        # requests is imported here, not at the top: the agent command registers this
        # module's flags on every start of the CLI, which must stay quick. Its exceptions
        # are kept for _get_once: an import statement there would run in the source thread,
        # and one running while the interpreter shuts down can abort the process.
        import requests

        self._timeout_error: type[Exception] = requests.Timeout
        self._request_error: type[Exception] = requests.RequestException
        self.options = options or ImdsOptions()
        self._backoff = Backoff(self.options.backoff, self.options.max_backoff, (0.5, 1.0))
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
        ids = {role: _required_string(doc, name, where) for role, name in RDMA_FIELDS.items()}
        fabric = doc.get(FABRIC_FIELD)
        if fabric is not None:
            if not isinstance(fabric, str):
                raise SourceError(
                    f"IMDS {where}: {FABRIC_FIELD} is {type(fabric).__name__}, not a string; "
                    "the metadata service answered something unexpected, check the host"
                )
            _check_printable(fabric, FABRIC_FIELD, where)
            if fabric:
                ids[FABRIC] = fabric
        return Reading(ids=ids, details={"document": where})

    def _from_host(self, doc: Mapping[str, Any]) -> Reading:
        where = HOST_PATH
        block = _required_string(doc, "networkBlockId", where)
        rack = _required_string(doc, "rackId", where)
        host = _required_string(doc, "id", where)
        ids = {ISLAND: block, NETWORK_BLOCK: block, LOCAL_BLOCK: rack, HOST: host}
        return Reading(ids=ids, details={"document": where})

    # --- HTTP ---------------------------------------------------------------------

    def _get_json(self, path: str) -> Any:
        """The parsed JSON at ``path``; None for 404 or an empty body. Raises SourceError."""
        opts = self.options
        url = opts.url.rstrip("/") + path
        last: Exception | None = None
        for attempt in range(1, max(1, opts.attempts) + 1):
            if attempt > 1:
                delay = self._backoff.delay(attempt - 1)
                log.debug("IMDS retry url=%s attempt=%d delay=%.2fs", url, attempt, delay)
                if self._sleep(delay) or self._stop.is_set():
                    break
            try:
                return self._get_once(url)
            except _Retry as e:
                last = e
        raise SourceError(f"{last}; keeping the current labels and retrying later")

    def _get_once(self, url: str) -> Any:
        try:
            resp = self._session.get(
                url,
                headers=AUTH_HEADER,
                timeout=self.options.timeout,  # to connect, and again to read
                allow_redirects=False,
            )
        except self._timeout_error as e:
            raise _Retry(f"IMDS {url}: no answer within the timeout ({e})") from e
        except self._request_error as e:
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
