"""Cluster access as kubectl does it (--kubeconfig, $KUBECONFIG, --context, in-cluster), and
the one object every API request goes through.

The official client loads the configuration (kubeconfig merging, contexts, credential
plugins, the in-cluster ServiceAccount) and builds the TLS/proxy-aware urllib3 pool from it;
:class:`Api` sends every request on that pool (GET, LIST pages, PATCH, POST, watch) with the
client's credentials and hands back the answer's body. How an answer is framed is urllib3's
and http.client's to read; what we hold it to is checked on the answer: success is a 2xx
status only, the whole answer comes within the read timeout (labeler.base.httpclient's
deadline), a body is read up to a cap while it streams, and an answer that must hold a
named object holds that one (labeler.kube.answer). Reading JSON into our own plain models
is cheaper than the client's generated classes, which cost seconds to import and more CPU
per node than the request (see :mod:`labeler.kube.official`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from labeler.base.errors import InputError, UsageError
from labeler.base.files import read_text
from labeler.base.httpclient import (
    Deadline,
    deadline_pools,
    out_of_step,
    read_capped,
    read_some,
    sending,
)
from labeler.base.version import __version__
from labeler.kube import official
from labeler.kube.answer import ERROR_KEPT, WrongAnswer, body_limit, check_object, unframed
from labeler.kube.errors import ApiStatus
from labeler.kube.steps import Call

if TYPE_CHECKING:
    import urllib3

JSON = "application/json"


@dataclass(frozen=True)
class ClusterOptions:
    kubeconfig: str | None = None
    context: str | None = None
    # Enough pooled connections for the bulk writer's worker threads.
    pool_size: int = 32
    # (connect, read) seconds for every call that does not set its own (watches do). The
    # read timeout bounds the whole answer, not each receive: an API server that accepts a
    # connection and never answers, or trickles its answer, fails the call as retryable.
    request_timeout: tuple[float, float] = (10.0, 60.0)


class Api:
    """Requests to one API server, on the official client's pool of keep-alive connections.

    ``configuration`` is a ``kubernetes.client.Configuration``: host, TLS files, proxy and
    the bearer token (refreshed by the loader's hook, as the official client does it).
    """

    def __init__(
        self,
        configuration: Any,
        *,
        request_timeout: tuple[float, float] = ClusterOptions.request_timeout,
    ) -> None:
        import urllib3  # with the client, not before: offline commands never load either

        self.configuration = configuration
        self._timeout_of = urllib3.Timeout
        rest = official.rest().RESTClientObject(configuration)
        self.pool: urllib3.PoolManager = rest.pool_manager
        deadline_pools(self.pool)  # before the first pool is made: every one has deadlines
        self.host = str(configuration.host).rstrip("/")
        # Without a proxy every request goes to one server: ask its connection pool
        # directly instead of having the pool manager parse each URL and look the pool up
        # (a noticeable share of a request's CPU at 10,000 patches).
        direct = not isinstance(self.pool, urllib3.ProxyManager)
        self._direct = self.pool.connection_from_url(self.host) if direct else None
        self._prefix = urllib3.util.parse_url(self.host).path or ""
        self.request_timeout = request_timeout
        # Retries are labeler.kube.errors' (with backoff; a write whose answer was lost is
        # looked at before it is sent again). urllib3 only sends a GET once more when its
        # kept connection broke under it (the server's idle close racing with the request),
        # never a write; 3xx is an answer.
        self._retries = urllib3.Retry(
            1, connect=0, read=1, other=0, redirect=False, respect_retry_after_header=False
        )
        self._headers = {"User-Agent": f"topology-labeler/{__version__}"}

    def headers(self) -> dict[str, str]:
        """The headers of a request: ours and the credentials, asked for each request
        because the client's loader may refresh a token (exec plugins, OIDC)."""
        headers = dict(self._headers)
        for auth in self.configuration.auth_settings().values():
            headers[auth["key"]] = auth["value"]
        return headers

    def send(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: bytes | None = None,
        content_type: str = JSON,
        timeout: tuple[float, float] | None = None,
        echo: bool = True,
        accept: str = JSON,
        name: str = "",
    ) -> bytes:
        """Send one request and read its whole answer: the body when the status is 2xx,
        else :class:`ApiStatus`. A broken connection raises (retry with
        labeler.kube.errors.call); no connection is left half-read. ``echo=False``: the
        body of a successful write is not needed (a cut-off one is no error); ``accept``:
        the Accept header (a LIST may ask for metadata only, see labeler.kube.nodes);
        ``name``: the answer must hold the object of that name (else WrongAnswer, the
        connection dropped)."""
        if query:
            path += "?" + urlencode(query)
        connect, read = timeout or self.request_timeout
        with Deadline(read) as deadline:
            try:
                resp = self._urlopen(method, path, body, content_type, accept, deadline, connect)
            except Exception as exc:
                if deadline.expired:  # its socket was shut at the deadline
                    raise deadline.timed_out() from exc
                raise
            conn = resp.connection  # given back to the pool once the body is read
            try:
                data = read_capped(resp, body_limit(name), deadline)
                if name:
                    check_object(data, name)
            except Exception as exc:
                _done_with(resp, whole=False)
                if isinstance(exc, WrongAnswer):
                    out_of_step(conn)
                if not echo and not isinstance(exc, WrongAnswer):
                    return b""  # a cut-off echo of a write that took effect is no error
                if deadline.expired:
                    raise deadline.timed_out() from exc
                raise
        _done_with(resp, whole=True)
        return data if echo else b""

    def perform(self, call: Call) -> bytes:
        """:meth:`send` for a step of API work (labeler.kube.steps)."""
        return self.send(
            call.method,
            call.path,
            body=call.body,
            content_type=call.content_type,
            echo=call.echo,
            accept=call.accept,
            name=call.name,
        )

    def stream(
        self, path: str, *, query: Mapping[str, Any], timeout: tuple[float, float]
    ) -> tuple[Any, Deadline]:
        """GET an answer to read as it comes (a watch): the urllib3 response, body unread,
        when its status is 2xx, else :class:`ApiStatus` as for :meth:`send`; and the
        deadline of the whole answer (the read timeout), which the caller closes.

        The caller owns the answer's connection: read to the end and released, or
        abandoned (see :mod:`labeler.kube.raw`). Every other request goes through
        :meth:`send`, which reads its answer whole and never leaves a connection out.
        """
        deadline = Deadline(timeout[1])
        try:
            target = f"{path}?{urlencode(query)}"
            return self._urlopen("GET", target, None, JSON, JSON, deadline, timeout[0]), deadline
        except Exception as exc:
            deadline.close()
            if deadline.expired:
                raise deadline.timed_out() from exc
            raise

    def _urlopen(
        self,
        method: str,
        path: str,
        body: bytes | None,
        content_type: str,
        accept: str,
        deadline: Deadline,
        connect: float,
    ) -> Any:
        """One request on the official client's pool under ``deadline``; the urllib3
        response, body unread, when its status is 2xx, else :class:`ApiStatus` with (the
        start of) the body read and the connection released, or closed when the rest of
        the body was left unread."""
        headers = {"Accept": accept, **self.headers()}
        if body is not None:
            headers["Content-Type"] = content_type
        wait = self._timeout_of(connect=connect, read=deadline.seconds)  # each socket op
        if self._direct is not None:
            send, target = self._direct.urlopen, self._prefix + path
            extra = {"assert_same_host": False}
        else:
            send, target, extra = self.pool.urlopen, self.host + path, {}
        with sending(deadline):
            resp = send(
                method,
                target,
                body=body,
                headers=headers,
                timeout=wait,
                retries=self._retries,
                preload_content=False,
                **extra,
            )
        bad = unframed(resp)
        if bad is not None:
            _done_with(resp, whole=False)
            raise bad
        if not 200 <= resp.status < 300:
            whole = False
            try:
                data, whole = read_some(resp, ERROR_KEPT)
            finally:
                _done_with(resp, whole)
            raise ApiStatus(resp.status, resp.reason or "", data, resp.headers)
        return resp


def _done_with(resp: Any, whole: bool) -> None:
    """Give a response's connection back to the pool when its body was read to the end,
    else close it: what is left on it would be read as the next answer."""
    if not whole:
        resp.close()
    resp.release_conn()


# A kubeconfig with embedded certificates is a few KB; the cap only stops a wrong path.
MAX_KUBECONFIG_BYTES = 16 << 20


def configuration(opts: ClusterOptions) -> Any:
    """The official client's Configuration, in kubectl's order of precedence.

    Every failure is one line (exit 1, as every command's --help says), except a path given
    by flag or $KUBECONFIG that does not exist: a bad flag value (exit 2).
    """
    cfg = official.configuration().Configuration()
    path = opts.kubeconfig or os.environ.get("KUBECONFIG")
    default = Path.home() / ".kube" / "config"
    if path and not any(Path(p).is_file() for p in path.split(os.pathsep) if p):
        flag = "--kubeconfig" if opts.kubeconfig else "$KUBECONFIG"
        raise UsageError(f"{flag} {path}: no such file; give the path of a kubeconfig file")
    source = path or str(default)
    use_file = bool(path or default.is_file() or opts.context)
    if not use_file and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        raise InputError(
            "no cluster configured: pass --kubeconfig, set KUBECONFIG, create "
            "~/.kube/config, or run inside a pod"
        )
    try:
        if use_file:
            for file in (p for p in source.split(os.pathsep) if Path(p).is_file()):
                _check_kubeconfig(file)
            # $KUBECONFIG may list several files; the client merges them like kubectl.
            official.kube_config().load_kube_config(
                config_file=source,
                context=opts.context,
                client_configuration=cfg,
                persist_config=False,
            )
        else:
            official.incluster_config().load_incluster_config(client_configuration=cfg)
    except InputError as e:
        raise InputError(f"cannot load cluster configuration ({source}): {e}") from e
    # The loader indexes into whatever the YAML holds: a list or a number where it wants a
    # mapping surfaces as one of these, not as its own ConfigException.
    except (
        official.config_exception(),
        OSError,
        TypeError,
        ValueError,
        AttributeError,
        KeyError,
    ) as e:
        if not use_file:
            source = "in-cluster ServiceAccount"
        raise InputError(
            f"cannot load cluster configuration ({source}): {type(e).__name__}: "
            f"{' '.join(str(e).split())}; check that it is a kubeconfig (kubectl config view)"
        ) from e
    cfg.connection_pool_maxsize = opts.pool_size
    return cfg


def _check_kubeconfig(path: str) -> None:
    """Refuse a file that is not a YAML mapping (or is an alias bomb) before the client's
    loader, which reads it with no such checks and fails with a traceback."""
    from labeler.base import yamlsafe

    doc = yamlsafe.load(
        read_text(path, MAX_KUBECONFIG_BYTES, what="the kubeconfig"),
        path,
        hint="not a kubeconfig (kubectl config view shows a valid one)",
    )
    if doc is not None and not isinstance(doc, Mapping):
        raise InputError(
            f"{path}: not a kubeconfig: a YAML {type(doc).__name__}, not a mapping with "
            "clusters, contexts and users"
        )


def connect(opts: ClusterOptions) -> Api:
    """The :class:`Api` for a cluster, configured as kubectl would be."""
    return Api(configuration(opts), request_timeout=opts.request_timeout)


def for_host(host: str, **kwargs: Any) -> Api:
    """An :class:`Api` for a server that needs no credentials (a local test server)."""
    return Api(official.configuration().Configuration(host=host), **kwargs)
