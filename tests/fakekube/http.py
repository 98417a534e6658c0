"""HTTP routing and request handling for the fake API server."""

from __future__ import annotations

import contextlib
import copy
import json
import select
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import yaml

from . import discovery, errors
from .errors import ApiError
from .journal import Record, classify
from .patch import PatchError, json_patch, merge_patch, strategic_merge_patch
from .resources import Resource, find
from .selectors import SelectorError, parse_field_selector, parse_label_selector
from .watch import WatchFilter, stream

if TYPE_CHECKING:
    from .server import FakeKube

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSONPATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"


# Resources whose status subresource is served (GET and PATCH of .../{name}/status). As
# in the API server, a write of the object itself keeps its .status (the strategies'
# PrepareForUpdate), and a write of .../status changes only .status, except that a node's
# (nodeStatusStrategy) takes metadata too: only its spec is kept.
STATUS_SUBRESOURCE = frozenset({"nodes", "pods"})


def _through(rt: Route, cur: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """What of ``new`` a write through ``rt`` may change in ``cur``."""
    if rt.res.plural not in STATUS_SUBRESOURCE:
        return new
    if rt.sub is None:
        return {**new, "status": cur.get("status") or {}} if "status" in cur else new
    if rt.res.plural == "nodes":
        return {**new, "spec": cur.get("spec") or {}}
    return {**cur, "status": new.get("status") or {}}


class Route:
    def __init__(
        self, res: Resource, ns: str | None, name: str | None, sub: str | None = None
    ) -> None:
        self.res, self.ns, self.name, self.sub = res, ns, name, sub

    @property
    def collection(self) -> bool:
        return self.name is None


def route(path: str) -> Route | None:
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    ns: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    sub = rest[2] if len(rest) == 3 else None
    if not rest or len(rest) > 3 or (sub is not None and sub != "status"):
        return None  # other subresources (/scale, /eviction, ...) are not served
    res = find(group, version, rest[0])
    if res is None or (sub is not None and res.plural not in STATUS_SUBRESOURCE):
        return None
    name = rest[1] if len(rest) >= 2 else None
    if ns is not None and not res.namespaced:
        return None
    if ns is None and res.namespaced and name is not None:
        return None  # namespaced objects have no cluster-wide item URL
    return Route(res, ns, name, sub)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as client-go and urllib3 expect
    disable_nagle_algorithm = True  # else each small keep-alive response waits ~40 ms
    # Go's net/http buffers the first 4 KiB of an answer, so the headers and a small body
    # leave in one write; without this the client would see two segments per answer.
    wbufsize = 4096
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the journal records requests

    def setup(self) -> None:
        super().setup()
        self.server.fake.connections.opened(self.connection)

    def finish(self) -> None:
        self.server.fake.connections.closed(self.connection)
        super().finish()

    def do_GET(self) -> None:
        self._handle("GET")

    def do_HEAD(self) -> None:
        self._handle("HEAD")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    # ------------------------------------------------------------------ plumbing

    def _handle(self, method: str) -> None:
        fake = self.server.fake
        url = urlsplit(self.path)
        path = url.path
        query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip() or None
        rt = route(path)
        if rt is not None and rt.res.api_version in fake.unserved:
            rt = None  # answered by discovery: 404, as for any path the server does not serve
        verb = classify(method, path, query, rt.collection if rt else None)
        body: Any = None
        accept = self.headers.get("Accept")
        rec = Record(method, path, query, ctype, None, 0, time.time(), verb, accept)
        try:
            if fake.latency_ms:
                time.sleep(fake.latency_ms / 1000.0)
            fault = fake.faults.match(method, path)
            if fault is not None:
                if fault.delay:
                    time.sleep(fault.delay)
                if fault.hold is not None:
                    fault.hold.wait(10)  # a test lets it through; never forever
                if fault.drop:
                    rec.body = _try_json(raw)
                    fake._journal.add(rec)
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault.status:
                    raise errors.by_code(fault.status, fault.message, fault.retry_after)
                # A connection that breaks in the middle of the answer (the request took
                # effect; the client sees a short body).
                self._truncate = fault.truncate
                # The request took effect but no answer at all comes back (the connection
                # dropped after the server applied it).
                self._drop_reply = fault.drop_reply
            if raw:
                body = _parse_body(raw, ctype)
            rec.body = body if not isinstance(body, str) else None
            if rt is None:
                code, out = discovery.handle(fake, method, path)
                # Journal before answering: a test that reads the journal right after the
                # client returns must see this request.
                rec.status = code
                fake._journal.add(rec)
                self._send(code, out)
            else:
                self._resource(method, rt, query, body, ctype, rec)
            return
        except ApiError as err:
            rec.status = err.code
            fake._journal.add(rec)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._send(err.code, err.status(), err.headers)
        except (BrokenPipeError, ConnectionResetError):
            rec.status = 0
            fake._journal.add(rec)

    def _send(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
        if getattr(self, "_drop_reply", False):
            self._drop_reply = False
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if getattr(self, "_truncate", False):
            self._truncate = False
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if self.command != "HEAD":
            self.wfile.write(data)

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return bool(self.connection.recv(1, socket.MSG_PEEK) == b"")
        except OSError:
            return True

    # ------------------------------------------------------------------ resources

    def _resource(
        self,
        method: str,
        rt: Route,
        query: dict[str, str],
        body: Any,
        ctype: str | None,
        rec: Record,
    ) -> None:
        fake = self.server.fake
        res = rt.res
        code = 200
        try:
            if method in ("GET", "HEAD") and rt.collection:
                if query.get("watch") in ("true", "1"):
                    rec.status = 200
                    fake._journal.add(rec)
                    self._watch(rt, query)
                    return
                out = self._list(rt, query)
            elif method in ("GET", "HEAD"):
                assert rt.name is not None
                obj = fake.store.get(res, rt.ns or "", rt.name)
                out = self._converted_object(res, obj)
            elif method == "POST" and rt.collection:
                if rt.ns is None and res.namespaced:
                    raise errors.method_not_allowed()
                out = fake.store.create(res, rt.ns or "", _require_object(body))
                code = 201
            elif method == "PUT" and not rt.collection:
                assert rt.name is not None
                new = _require_object(body)
                if res.plural in STATUS_SUBRESOURCE and fake.store.exists(
                    res, rt.ns or "", rt.name
                ):
                    new = _through(rt, fake.store.get(res, rt.ns or "", rt.name), new)
                out, created = fake.store.update(
                    res, rt.ns or "", rt.name, new, query.get("fieldManager", "")
                )
                code = 201 if created else 200  # events allow create-on-update: 201
            elif rt.sub is not None and method not in ("GET", "HEAD", "PATCH"):
                raise errors.method_not_allowed()
            elif method == "PATCH" and not rt.collection:
                out, code = self._patch(rt, query, body, ctype)
                # The answer is negotiated as for a GET (transformResponseObject).
                out = self._converted_object(res, out)
            elif method == "DELETE" and not rt.collection:
                assert rt.name is not None
                opts = body if isinstance(body, dict) else {}
                obj = fake.store.delete(res, rt.ns or "", rt.name, opts.get("preconditions"))
                out = obj if res.delete_returns_object else _success(res, obj)
            else:
                raise errors.method_not_allowed()
        except ApiError as err:
            rec.status = err.code
            fake._journal.add(rec)
            self._send(err.code, err.status(), err.headers)
            return
        rec.status = code
        fake._journal.add(rec)
        self._send(code, out)

    def _selectors(self, rt: Route, query: dict[str, str]) -> tuple[Any, Any]:
        try:
            lsel = parse_label_selector(query.get("labelSelector"))
            fsel = parse_field_selector(
                query.get("fieldSelector"), rt.res.supports_field, rt.res.unsupported_field
            )
        except SelectorError as exc:
            raise errors.bad_request(str(exc)) from None
        return lsel, fsel

    def _list(self, rt: Route, query: dict[str, str]) -> Any:
        res = rt.res
        lsel, fsel = self._selectors(rt, query)
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            raise errors.bad_request(f"invalid limit: {query.get('limit')!r}") from None
        items, rv, token, remaining = self.server.fake.store.list(
            res, rt.ns, lsel, fsel, max(limit, 0), query.get("continue") or None
        )
        convert = self._convert()
        if convert is not None and convert[0] == "Table":
            return discovery.as_table(res, items, rv, token)
        meta: dict[str, Any] = {"resourceVersion": rv}
        if token:
            meta["continue"] = token
        if remaining is not None:
            meta["remainingItemCount"] = remaining
        if convert is not None:
            kind, api_version = convert
            if kind != "PartialObjectMetadataList":
                raise errors.not_acceptable(
                    f"you requested {kind}, but the requested object is a list "
                    f"(*{res.group or 'core'}.{res.list_kind})"
                )
            return {
                "kind": kind,
                "apiVersion": api_version,
                "metadata": meta,
                "items": [_partial(o, api_version) for o in items],
            }
        if not res.custom:
            # Typed lists omit kind/apiVersion on items; unstructured (CRD) lists keep them.
            items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in items]
        return {
            "kind": res.list_kind,
            "apiVersion": res.api_version,
            "metadata": meta,
            "items": items,
        }

    def _convert(self) -> tuple[str, str] | None:
        """The kind and apiVersion the answer is converted to, negotiated from Accept as
        the API server does (k8s.io/apiserver handlers/negotiation): the media ranges in
        order, skipping those it cannot serve (protobuf here) and conversions it does not
        offer; none left is its default, plain JSON. ``None``: the resource itself."""
        for clause in (self.headers.get("Accept") or "").split(","):
            media, *params = (p.strip() for p in clause.split(";"))
            if media not in ("application/json", "application/*", "*/*"):
                continue
            opts = dict(p.split("=", 1) for p in params if "=" in p)
            if not {"as", "g", "v"} & opts.keys():
                return None
            kind = opts.get("as", "")
            offered = {"Table"}
            if self.server.fake.partial_metadata:
                offered |= {"PartialObjectMetadata", "PartialObjectMetadataList"}
            group, version = opts.get("g"), opts.get("v")
            if group == "meta.k8s.io" and version in ("v1", "v1beta1") and kind in offered:
                return kind, f"meta.k8s.io/{version}"
        return None

    def _converted_object(self, res: Resource, obj: dict[str, Any]) -> Any:
        convert = self._convert()
        if convert is None:
            return obj
        kind, api_version = convert
        if kind == "Table":
            return discovery.as_table(res, [obj], obj["metadata"]["resourceVersion"])
        if kind != "PartialObjectMetadata":
            raise errors.not_acceptable(
                f"you requested {kind}, but the requested object is not a list "
                f"(*{res.group or 'core'}.{res.kind})"
            )
        return _partial(obj, api_version)

    def _watch(self, rt: Route, query: dict[str, str]) -> None:
        fake = self.server.fake
        lsel, fsel = self._selectors(rt, query)
        timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
        events = stream(
            fake.store,
            WatchFilter(rt.res, rt.ns, lsel, fsel),
            query.get("resourceVersion"),
            timeout,
            query.get("allowWatchBookmarks") in ("true", "1"),
            query.get("sendInitialEvents") in ("true", "1"),
            self._client_gone,
            fake.bookmark_interval,
        )
        try:
            first = next(events, None)
        except ApiError as err:
            self._send(err.code, err.status(), err.headers)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.flush()
        fake.connections.watching(self.connection, rt.res.plural)
        try:
            if first is not None:
                self._chunk(first)
                for ev in events:
                    self._chunk(ev)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    def _chunk(self, ev: tuple[str, Any]) -> None:
        data = json.dumps({"type": ev[0], "object": ev[1]}, separators=(",", ":")).encode() + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _patch(
        self, rt: Route, query: dict[str, str], body: Any, ctype: str | None
    ) -> tuple[Any, int]:
        store = self.server.fake.store
        res, ns, name = rt.res, rt.ns or "", rt.name
        assert name is not None
        accepted = [JSONPATCH, MERGE, APPLY] if res.custom else [JSONPATCH, MERGE, STRATEGIC, APPLY]
        if ctype not in accepted:
            raise errors.unsupported_media(ctype or "", accepted)
        manager = query.get("fieldManager", "")
        if ctype == APPLY:
            if not manager:
                raise errors.apply_needs_field_manager()
            cfg = _require_object(body)
            if cfg.get("kind") not in (None, res.kind) or cfg.get("apiVersion") not in (
                None,
                res.api_version,
            ):
                raise errors.bad_request(
                    f"the API version in the data ({cfg.get('apiVersion')}) does not match the "
                    f"expected API version ({res.api_version})"
                )
            force = query.get("force") in ("true", "1")
            obj, created = store.apply(res, ns, name, cfg, manager, force)
            return obj, 201 if created else 200
        if body is None:
            raise errors.bad_request("the body of the request was empty")

        def patched(cur: dict[str, Any]) -> dict[str, Any]:
            if ctype == MERGE:
                return _as_dict(merge_patch(cur, _require_object(body)))
            if ctype == STRATEGIC:
                return _as_dict(strategic_merge_patch(cur, _require_object(body)))
            return _as_dict(json_patch(cur, body))

        def fn(cur: dict[str, Any]) -> dict[str, Any]:
            try:
                return _through(rt, cur, patched(copy.deepcopy(cur)))
            except PatchError as exc:
                if exc.code == 400:
                    raise errors.bad_request(str(exc)) from None
                raise ApiError(422, "Invalid", str(exc)) from None

        return store.mutate(res, ns, name, fn, manager), 200


def _as_dict(v: Any) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise errors.bad_request("the patched object is not a JSON object")
    return v


def _success(res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
    details: dict[str, Any] = {"name": obj["metadata"]["name"]}
    if res.group:
        details["group"] = res.group
    details["kind"] = res.plural
    details["uid"] = obj["metadata"]["uid"]
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }


def _partial(obj: dict[str, Any], api_version: str) -> dict[str, Any]:
    """An object as PartialObjectMetadata: its metadata and nothing else."""
    return {"kind": "PartialObjectMetadata", "apiVersion": api_version, "metadata": obj["metadata"]}


def _try_json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _parse_body(raw: bytes, ctype: str | None) -> Any:
    try:
        if ctype and "yaml" in ctype:
            return yaml.safe_load(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise errors.bad_request(f"error decoding request body: {exc}") from None


def _require_object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise errors.bad_request("the request body must be a JSON object")
    return body


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a hung client must not block interpreter exit
    allow_reuse_address = True
    fake: FakeKube

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A connection cut on purpose (cut_watches, go_away, a fault) fails the handler's
        # last write: expected, so not printed as a server error.
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)
