"""Cluster access as kubectl does it (--kubeconfig, $KUBECONFIG, --context, in-cluster), and
the one object every API request goes through.

The official client loads the configuration (kubeconfig merging, contexts, credential
plugins, the in-cluster ServiceAccount) and builds the TLS/proxy-aware urllib3 pool from it;
:class:`Api` sends requests on that pool itself, with the client's credentials, and hands
back the raw answer. Reading JSON into our own plain models is cheaper than the client's
generated classes, which cost seconds to import and more CPU per node than the request
(see :mod:`labeler.kube.official`).
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
from labeler.base.version import __version__
from labeler.kube import official, strict
from labeler.kube.answer import WrongAnswer, body_limit, check_object
from labeler.kube.errors import ApiStatus
from labeler.kube.steps import Call
from labeler.kube.wire import Wire

if TYPE_CHECKING:
    import urllib3

JSON = "application/json"
# Which transport carries whole-answer requests: "own" (labeler.kube.wire, the default) or
# "official" (the official client's urllib3 pool for every request, as behind a proxy).
TRANSPORT_ENV = "TOPOLOGY_LABELER_TRANSPORT"
TRANSPORTS = ("own", "official")


@dataclass(frozen=True)
class ClusterOptions:
    kubeconfig: str | None = None
    context: str | None = None
    # Enough pooled connections for the bulk writer's worker threads.
    pool_size: int = 32
    # (connect, read) seconds for every call that does not set its own (watches do). The
    # official client waits forever by default, so an API server that accepts a connection
    # and never answers would hang ``apply`` for good; with a timeout the call fails as
    # retryable and is retried like a 5xx.
    request_timeout: tuple[float, float] = (10.0, 60.0)


class Api:
    """Requests to one API server, on one pool of keep-alive connections.

    ``configuration`` is a ``kubernetes.client.Configuration``: host, TLS files, proxy and
    the bearer token (refreshed by the loader's hook, as the official client does it).
    """

    def __init__(
        self,
        configuration: Any,
        *,
        request_timeout: tuple[float, float] = ClusterOptions.request_timeout,
        own_transport: bool = True,
    ) -> None:
        import urllib3  # with the client, not before: offline commands never load either

        self.configuration = configuration
        self._timeout_of = urllib3.Timeout
        rest = official.rest().RESTClientObject(configuration)
        self.pool: urllib3.PoolManager = rest.pool_manager
        strict.harden(self.pool)  # before the first pool is made: every one reads strictly
        self.host = str(configuration.host).rstrip("/")
        # Without a proxy every request goes to one server: ask its connection pool
        # directly instead of having the pool manager parse each URL and look the pool up
        # (a noticeable share of a request's CPU at 10,000 patches).
        direct = not isinstance(self.pool, urllib3.ProxyManager)
        self._direct = self.pool.connection_from_url(self.host) if direct else None
        self._prefix = urllib3.util.parse_url(self.host).path or ""
        self.timeout = urllib3.Timeout(connect=request_timeout[0], read=request_timeout[1])
        # No Accept here: each request says what it accepts (``send(accept=...)``), so a
        # LIST that asks for metadata only does not change the header bytes the wire caches.
        self._headers = {"User-Agent": f"topology-labeler/{__version__}"}
        # Whole-answer requests go on connections of our own that this pool opens (TCP,
        # TLS and its checks as configured); see labeler.kube.wire.
        self.wire: Wire | None = None
        if self._direct is not None and own_transport:
            pool = self._direct
            self.wire = Wire(
                lambda connect: _open(pool, connect),
                host=_host_header(pool),
                prefix=self._prefix,
                headers=self.headers,
                timeout=request_timeout,
            )

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
        repeatable: bool = False,
        accept: str = JSON,
        name: str = "",
    ) -> bytes:
        """Send one request and read its whole answer: the body when the status is 2xx,
        else :class:`ApiStatus`. A broken connection raises (retry with
        labeler.kube.errors.call); no connection is left half-read. ``echo=False``: the
        body of a successful write is not needed; ``repeatable``: a write that may be sent
        twice (see labeler.kube.wire.Wire.send); ``accept``: the Accept header (a LIST may
        ask for metadata only, see labeler.kube.nodes); ``name``: the answer must hold the
        object of that name (else WrongAnswer, the connection dropped)."""
        if query:
            path += "?" + urlencode(query)
        if self.wire is not None:
            return self.wire.send(
                method,
                path,
                body=body,
                content_type=content_type,
                timeout=timeout,
                echo=echo,
                repeatable=repeatable,
                accept=accept,
                name=name,
            )
        resp = self._urlopen(method, path, body, content_type, timeout, accept)
        try:
            # A 2xx body is read whole or raises.
            data, _ = strict.read_body(resp, ok=True, limit=body_limit(name))
            if name:
                check_object(data, name)
        except Exception as exc:
            _done_with(resp, whole=False)
            if echo or isinstance(exc, WrongAnswer):
                raise
            return b""  # a cut-off echo of a write that took effect is no error
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
            repeatable=call.repeatable,
            accept=call.accept,
            name=call.name,
        )

    def stream(self, path: str, *, query: Mapping[str, Any], timeout: tuple[float, float]) -> Any:
        """GET an answer to read as it comes (a watch): the urllib3 response, body unread,
        when its status is 2xx, else :class:`ApiStatus` as for :meth:`send`.

        The caller owns the answer's connection: read to the end and released, or
        abandoned (see :mod:`labeler.kube.raw`). Every other request goes through
        :meth:`send`, which reads its answer whole and never leaves a connection out.
        """
        return self._urlopen("GET", f"{path}?{urlencode(query)}", None, JSON, timeout, JSON)

    def _urlopen(
        self,
        method: str,
        path: str,
        body: bytes | None,
        content_type: str,
        timeout: tuple[float, float] | None,
        accept: str,
    ) -> Any:
        """One request on the official client's pool; the urllib3 response, body unread,
        when its status is 2xx, else :class:`ApiStatus` with (the start of) the body read
        and the connection released, or closed when the rest of the body was left unread."""
        headers = {"Accept": accept, **self.headers()}
        if body is not None:
            headers["Content-Type"] = content_type
        wait = self._timeout_of(connect=timeout[0], read=timeout[1]) if timeout else self.timeout
        if self._direct is not None:
            send, target = self._direct.urlopen, self._prefix + path
            extra = {"redirect": False, "assert_same_host": False}
        else:
            send, target, extra = self.pool.urlopen, self.host + path, {"redirect": False}
        resp = send(
            method, target, body=body, headers=headers, timeout=wait, preload_content=False, **extra
        )
        if not 200 <= resp.status < 300:
            whole = False
            try:
                data, whole = strict.read_body(resp, ok=False)
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


def _open(pool: Any, connect_timeout: float) -> Any:
    """A new connection of ``pool``, connected: the pool's own connection class and
    settings (TLS context, CA, client certificate, hostname check)."""
    conn = pool._new_conn()
    conn.timeout = connect_timeout
    conn.connect()
    return conn


def _host_header(pool: Any) -> str:
    default = 443 if pool.scheme == "https" else 80
    host = f"[{pool.host}]" if ":" in pool.host else pool.host
    return host if pool.port in (None, default) else f"{host}:{pool.port}"


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
    """The :class:`Api` for a cluster, configured as kubectl would be; the transport as
    ``$TOPOLOGY_LABELER_TRANSPORT`` says (default: our own)."""
    transport = os.environ.get(TRANSPORT_ENV) or "own"
    if transport not in TRANSPORTS:
        raise UsageError(
            f"${TRANSPORT_ENV}={transport!r}: give one of {', '.join(TRANSPORTS)} "
            "(official: the official client's transport for every request)"
        )
    return Api(
        configuration(opts),
        request_timeout=opts.request_timeout,
        own_transport=transport == "own",
    )


def for_host(host: str, **kwargs: Any) -> Api:
    """An :class:`Api` for a server that needs no credentials (a local test server)."""
    return Api(official.configuration().Configuration(host=host), **kwargs)
