"""Reading a cloud's instance metadata service: one bounded, proxy-free GET at a time.

Shared by the metadata sources (OCI IMDS, the GCE metadata server, Azure IMDS; their common
shell is ``labeler.sources.metadata``): each document is fetched under a deadline (retries
included: a server trickling bytes cannot hold a read longer) and a size cap (metadata
documents are a few KB), with jittered backoff between attempts that ends at once when the
stop event is set. The deadline and the capped read are the API client's too
(labeler.base.httpclient): one mechanism for every answer the agent waits for.

Metadata services reject requests that carry ``Forwarded``/``X-Forwarded-*`` headers and
must be reached directly from the host, so the session ignores proxy environment variables
(``trust_env=False``) and never adds such headers.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from labeler.base import logs
from labeler.base.backoff import Backoff
from labeler.base.httpclient import AnswerTooLarge, Deadline, deadline_pools, read_capped, sending
from labeler.base.logs import logger
from labeler.sources import SourceError

if TYPE_CHECKING:
    import requests

log = logger(__name__)

MAX_DOCUMENT_BYTES = 1 << 20  # metadata documents are a few KB; more is not the service
# The link-local address every cloud here serves its metadata on (metadata.google.internal
# resolves to it too): no DNS needed from a hostNetwork pod whose resolver is the cluster's.
METADATA_URL = "http://169.254.169.254"
_FORBIDDEN_HEADERS = ("forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto")


@dataclass(frozen=True)
class Service:
    """How one metadata service is asked and named in messages.

    ``name``: how errors call it ("IMDS", "GCE metadata"); ``headers``: what every request
    must carry; ``flags``: what its flags start with (``--<flags>-url``, ``-timeout``,
    ``-attempts``); ``query``: parameters every request carries (Azure's api-version);
    ``refused``: what to check when it answers 401/403, if more than the headers."""

    name: str
    headers: Mapping[str, str]
    flags: str
    query: Mapping[str, str] = field(default_factory=dict)
    refused: str | None = None

    @property
    def refused_hint(self) -> str:
        """What to check when the service answers 401/403."""
        if self.refused is not None:
            return self.refused
        needed = " and ".join(f"'{k}: {v}'" for k, v in self.headers.items())
        return (
            f"it needs the header {needed} and no X-Forwarded-For header (is a proxy in the way?)"
        )


@dataclass(frozen=True)
class HttpOptions:
    """At most ``attempts`` requests per document with jittered exponential backoff in
    between, all within ``timeout`` seconds (a deadline for the document, not per socket
    read); at most ``max_bytes`` of a document are read."""

    url: str = METADATA_URL
    timeout: float = 5.0
    attempts: int = 3
    backoff: float = 0.5
    max_backoff: float = 4.0
    max_bytes: int = MAX_DOCUMENT_BYTES


class Retry(Exception):
    """A transient failure worth another attempt."""


class Refused(SourceError):
    """401/403: every document would be refused the same way; no fallback helps."""


class MetadataClient:
    """GETs documents from one metadata service. Thread-compatible, not thread-safe."""

    def __init__(
        self,
        service: Service,
        options: HttpOptions,
        *,
        stop: threading.Event | None = None,
        session: requests.Session | None = None,
        sleep: Callable[[float], bool] | None = None,
    ) -> None:
        # requests is imported here, not at the top: the agent command registers the
        # sources' flags on every start of the CLI, which must stay quick. Its exceptions
        # are kept for _get_once: an import statement there would run in the source thread,
        # and one running while the interpreter shuts down can abort the process.
        import requests
        import urllib3

        logs.configure()  # requests and urllib3 log on their own: in our format, filtered
        self._timeout_error: type[Exception] = requests.Timeout
        # What a failed request (requests') or a failed read of its body (urllib3's) raises.
        self._request_error: tuple[type[Exception], ...] = (
            requests.RequestException,
            urllib3.exceptions.HTTPError,
            OSError,
        )
        self.service = service
        self.options = options
        self._backoff = Backoff(options.backoff, options.max_backoff, (0.5, 1.0))
        self._stop = stop or threading.Event()
        # Waiting on the stop event makes backoff end at once on SIGTERM.
        self._sleep = sleep or self._stop.wait
        self.session = session or requests.Session()
        self.session.mount("http://", _deadline_adapter())
        # Never route metadata requests through a proxy from HTTP(S)_PROXY, never read .netrc.
        self.session.trust_env = False
        for header in _FORBIDDEN_HEADERS:
            self.session.headers.pop(header, None)

    def get_json(self, path: str) -> Any:
        """The parsed JSON at ``path``; None for 404 or an empty body. Raises SourceError."""
        data = self.get(path)
        if data is None or not data.strip():
            return None
        url = self.options.url.rstrip("/") + path
        try:
            return json.loads(data)
        except (ValueError, RecursionError) as e:
            raise SourceError(
                f"{self.service.name} {url}: the answer is not JSON ({e}): {data[:80]!r}"
            ) from e

    def get(self, path: str) -> bytes | None:
        """The body at ``path``; None for 404. Raises SourceError."""
        opts = self.options
        url = opts.url.rstrip("/") + path
        deadline = time.monotonic() + opts.timeout
        last: Exception | None = None
        for attempt in range(1, max(1, opts.attempts) + 1):
            if attempt > 1:
                delay = min(self._backoff.delay(attempt - 1), deadline - time.monotonic())
                if delay <= 0:
                    break
                log.debug("metadata retry url=%s attempt=%d delay=%.2fs", url, attempt, delay)
                if self._sleep(delay) or self._stop.is_set():
                    break
            try:
                return self._get_once(url, deadline)
            except Retry as e:
                last = e
            if time.monotonic() >= deadline:
                break
        raise SourceError(f"{last}; keeping the current labels and retrying later")

    def _get_once(self, url: str, deadline: float) -> bytes | None:
        remaining = max(0.001, deadline - time.monotonic())
        svc = self.service
        expired = (
            f"{svc.name} {url}: no complete answer within --{svc.flags}-timeout "
            f"{self.options.timeout:g}s"
        )
        with Deadline(remaining) as guard:
            try:
                with sending(guard):
                    resp = self.session.get(
                        url,
                        headers=dict(svc.headers),
                        params=dict(svc.query) or None,
                        timeout=remaining,  # to connect, and per socket read; the guard: all
                        allow_redirects=False,
                        stream=True,
                    )
            except self._timeout_error as e:
                raise Retry(f"{expired} ({e})") from e
            except self._request_error as e:
                if guard.expired:
                    raise Retry(expired) from e
                raise Retry(
                    f"{svc.name} {url}: cannot connect ({type(e).__name__}); the agent needs "
                    "hostNetwork to reach the metadata service"
                ) from e
            try:
                return self._answer(resp, url, guard, expired)
            finally:
                resp.close()

    def _answer(self, resp: Any, url: str, guard: Deadline, expired: str) -> bytes | None:
        """The body of a 200 (at most ``max_bytes``), None for 404; raises otherwise."""
        name = self.service.name
        status = resp.status_code
        if status == 404:
            return None
        if status in (401, 403):
            raise Refused(
                f"{name} {url}: {status} {resp.reason}: the metadata service refused the "
                f"request; {self.service.refused_hint}"
            )
        if status == 429 or status >= 500:
            raise Retry(f"{name} {url}: {status} {resp.reason}")
        if status != 200:
            raise SourceError(f"{name} {url}: unexpected answer {status} {resp.reason}")
        cap = self.options.max_bytes
        too_big = SourceError(
            f"{name} {url}: the answer is larger than {cap} bytes; metadata documents are a "
            "few KB, so this is not the metadata service answering (check the route to "
            "169.254.169.254)"
        )
        try:
            return read_capped(resp.raw, cap, guard)
        except AnswerTooLarge as e:
            raise too_big from e
        except TimeoutError as e:
            raise Retry(expired) from e
        except self._request_error as e:
            raise Retry(
                expired if guard.expired else f"{name} {url}: answer cut short ({e})"
            ) from e


def _deadline_adapter() -> Any:
    """A requests adapter whose connections hand their socket to the deadline in force as
    the request goes out (labeler.base.httpclient)."""
    from requests.adapters import HTTPAdapter

    class Adapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            deadline_pools(self.poolmanager)

    return Adapter()


def check_printable(value: str, what: str, where: str) -> None:
    """An ID is printable text: a lone surrogate (JSON may escape one, UTF-8 cannot encode
    it, so hashing it crashed the agent) or a control character is garbage, not an ID."""
    if not value.strip().isprintable():
        raise SourceError(
            f"{where}: {what} is not printable text ({value[:80]!r}); the metadata service "
            "answered something unexpected, keeping the current labels"
        )
