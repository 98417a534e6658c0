"""In-memory object store with one global resourceVersion counter and an event history.

Rules (https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions):
one integer counter across all objects (etcd's revision), bumped by every write; a write
that changes nothing is not a write (etcd3 GuaranteedUpdate skips identical bytes).

Stored objects are never mutated after they are stored: every write builds a new dict.
That lets readers serialise them outside the lock and lets watch events share them.
"""

from __future__ import annotations

import base64
import bisect
import copy
import json
import random
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from . import errors
from .resources import NAMESPACES, Resource
from .selectors import FieldSelector, LabelSelector
from .validation import FieldError, type_errors, validate_metadata

Key = tuple[str, str]  # (namespace or "", name)
Obj = dict[str, Any]


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Event:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    res: Resource
    key: Key
    obj: Obj
    prev: Obj | None


def _with_rv(obj: Obj, rv: int) -> Obj:
    out = dict(obj)
    out["metadata"] = dict(obj.get("metadata") or {}, resourceVersion=str(rv))
    return out


def _spec_part(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def leaf_paths(obj: Any, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Fields as server-side apply sees them: maps are walked, lists and scalars are leaves."""
    if isinstance(obj, dict) and obj:
        out: dict[tuple[str, ...], Any] = {}
        for k, v in obj.items():
            out.update(leaf_paths(v, (*prefix, k)))
        return out
    return {prefix: obj}


_APPLY_IGNORED = {("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace")}
_APPLY_IGNORED |= {("metadata", "resourceVersion"), ("metadata", "managedFields")}


def _get_path(obj: Any, path: tuple[str, ...]) -> Any:
    for p in path:
        if not isinstance(obj, dict) or p not in obj:
            return _MISSING
        obj = obj[p]
    return obj


def _del_path(obj: Obj, path: tuple[str, ...]) -> None:
    cur: Any = obj
    parents = []
    for p in path[:-1]:
        if not isinstance(cur, dict) or p not in cur:
            return
        parents.append((cur, p))
        cur = cur[p]
    if isinstance(cur, dict):
        cur.pop(path[-1], None)
    # Drop maps the removal left empty (an applier that owned all labels removes `labels`).
    for parent, p in reversed(parents):
        if parent[p] == {}:
            del parent[p]
        else:
            break


def _deep_merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _deep_merge(base.get(k), v)
        return out
    return copy.deepcopy(over)


_MISSING = object()


class Store:
    def __init__(self, history: int = 1000) -> None:
        self.cond = threading.Condition(threading.RLock())
        self.rv = 0
        self.history = history
        self.stopped = False
        self.watches_ended = 0  # bumped to end every open watch (FakeKube.end_watches)
        self._data: dict[Resource, dict[Key, Obj]] = {}
        self._sorted: dict[Resource, list[Key]] = {}
        self._events: list[Event] = []
        self._first_event_rv = 1
        # Server-side apply ownership: (resource, key) -> manager -> owned leaf paths.
        self._owners: dict[tuple[Resource, Key], dict[str, set[tuple[str, ...]]]] = {}
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.create(NAMESPACES, "", {"metadata": {"name": ns}, "status": {"phase": "Active"}})

    # ------------------------------------------------------------------ internals

    def _table(self, res: Resource) -> dict[Key, Obj]:
        return self._data.setdefault(res, {})

    def _keys(self, res: Resource) -> list[Key]:
        keys = self._sorted.get(res)
        if keys is None:
            keys = sorted(self._table(res))
            self._sorted[res] = keys
        return keys

    def _commit(self, res: Resource, key: Key, new: Obj | None, prev: Obj | None) -> Obj:
        """Store `new` (or delete when None) at a fresh resourceVersion and record the event."""
        self.rv += 1
        table = self._table(res)
        keys = self._sorted.get(res)
        if new is None:
            assert prev is not None
            stored = _with_rv(prev, self.rv)  # DELETED carries the deletion's revision
            del table[key]
            if keys is not None:
                keys.pop(bisect.bisect_left(keys, key))
            self._owners.pop((res, key), None)
            etype = "DELETED"
        else:
            stored = _with_rv(new, self.rv)
            table[key] = stored
            etype = "MODIFIED" if prev is not None else "ADDED"
            if prev is None and keys is not None:
                bisect.insort(keys, key)
        self._events.append(Event(self.rv, etype, res, key, stored, prev))
        if len(self._events) > self.history + 256:
            drop = len(self._events) - self.history
            del self._events[:drop]
            self._first_event_rv = self._events[0].rv
        self.cond.notify_all()
        return stored

    def _validate(self, res: Resource, obj: Obj, old: Obj | None = None) -> None:
        meta = obj.get("metadata")
        terr = type_errors(meta)
        if terr or not isinstance(meta, dict):
            raise errors.bad_request(terr or "metadata must be an object")
        errs = validate_metadata(meta, res.name_rule)
        if res.validate is not None:
            errs += res.validate(obj, old)
        if errs:
            raise errors.invalid(res, meta.get("name") or "", errs)

    def _check_namespace(self, res: Resource, ns: str) -> None:
        if res.namespaced and ("", ns) not in self._table(NAMESPACES):
            raise errors.not_found(NAMESPACES, ns)

    # ------------------------------------------------------------------ reads

    def exists(self, res: Resource, ns: str, name: str) -> bool:
        with self.cond:
            return (ns, name) in self._table(res)

    def get(self, res: Resource, ns: str, name: str) -> Obj:
        with self.cond:
            obj = self._table(res).get((ns, name))
        if obj is None:
            raise errors.not_found(res, name)
        return obj

    def all(self, res: Resource) -> list[Obj]:
        with self.cond:
            table = self._table(res)
            return [table[k] for k in self._keys(res)]

    def list(
        self,
        res: Resource,
        ns: str | None,
        lsel: LabelSelector,
        fsel: FieldSelector,
        limit: int = 0,
        cont: str | None = None,
    ) -> tuple[list[Obj], str, str | None, int | None]:
        """Returns (items, list resourceVersion, continue token, remainingItemCount).

        Pagination follows "API concepts: Retrieving large results sets in chunks": the
        token names the last key served; a page is short only at the end; remainingItemCount
        is set only without selectors.  Pages after the first report the first page's RV.
        """
        with self.cond:
            list_rv = self.rv
            keys = self._keys(res)
            table = self._table(res)
            start = 0
            if cont:
                token_rv, after = _decode_continue(cont)
                list_rv = token_rv
                start = bisect.bisect_right(keys, after)
            elif ns is not None and res.namespaced:
                start = bisect.bisect_left(keys, (ns, ""))
            name = fsel.required_name()
            items: list[Obj] = []
            last: Key | None = None
            i = start
            n = len(keys)
            while i < n:
                key = keys[i]
                i += 1
                if ns is not None and res.namespaced and key[0] != ns:
                    if key[0] > ns:
                        i = n
                        break
                    continue
                if name is not None and key[1] != name:
                    continue
                obj = table[key]
                if not lsel.empty and not lsel.matches(obj["metadata"].get("labels")):
                    continue
                if not fsel.empty and not fsel.matches(res.fields(obj)):
                    continue
                items.append(obj)
                last = key
                if limit and len(items) >= limit:
                    break
            more = limit > 0 and len(items) >= limit and i < n
            token = _encode_continue(list_rv, last) if more and last is not None else None
            remaining = None
            if more and lsel.empty and fsel.empty:
                if ns is not None and res.namespaced:
                    remaining = bisect.bisect_left(keys, (ns + "\x00", "")) - i
                else:
                    remaining = n - i
            return items, str(list_rv), token, remaining

    # ------------------------------------------------------------------ writes

    def create(self, res: Resource, ns: str, body: Obj, trusted: bool = False) -> Obj:
        """POST.  trusted=True skips the defensive copy (bulk seeding of fresh dicts)."""
        obj = body if trusted else copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if res.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
            ns = ""
        if not meta.get("name") and meta.get("generateName"):
            # names.SimpleNameGenerator: 5 characters from a consonant/digit alphabet.
            alphabet = "bcdfghjklmnpqrstvwxz2456789"
            meta["name"] = meta["generateName"] + "".join(random.choices(alphabet, k=5))
        obj["apiVersion"] = res.api_version
        obj["kind"] = res.kind
        self._validate(res, obj)
        # The server sets these itself on create (rest.BeforeCreate, FillObjectMetaSystemFields).
        for f in ("resourceVersion", "uid", "creationTimestamp", "deletionTimestamp", "generation"):
            meta.pop(f, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if res.custom or res.tracks_generation:
            meta["generation"] = 1
        if res.kind == "Pod":
            obj.setdefault("status", {}).setdefault("phase", "Pending")
        if res is NAMESPACES:
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj.setdefault("status", {"phase": "Active"})
        key = (ns, meta["name"])
        with self.cond:
            self._check_namespace(res, ns)
            if key in self._table(res):
                raise errors.already_exists(res, meta["name"])
            return self._commit(res, key, obj, None)

    def _finish_update(
        self, res: Resource, key: Key, old: Obj, new: Obj, require_rv: bool
    ) -> tuple[Obj, bool]:
        """Common tail of PUT and PATCH, called with the lock held.  Returns (obj, changed)."""
        name = key[1]
        meta = new.get("metadata")
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        rv = meta.get("resourceVersion")
        old_meta = old["metadata"]
        if rv:
            # Optimistic concurrency: "API concepts: resource versions" / "Conflicts".
            if str(rv) != old_meta["resourceVersion"]:
                raise errors.conflict(res, name)
        elif require_rv and res.custom:
            # Custom resources do not allow unconditional update (customResourceStrategy).
            raise errors.invalid(
                res,
                name,
                [
                    FieldError(
                        "FieldValueInvalid",
                        "metadata.resourceVersion",
                        "Invalid value: 0x0: must be specified for an update",
                    )
                ],
            )
        if meta.get("name", name) != name:
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the "
                f"URL ({name})"
            )
        new["apiVersion"] = res.api_version
        new["kind"] = res.kind
        meta["name"] = name
        if res.namespaced:
            meta["namespace"] = key[0]
        for f in ("uid", "creationTimestamp"):
            meta[f] = old_meta[f]
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if res.custom or res.tracks_generation:
            gen = old_meta.get("generation", 1)
            meta["generation"] = gen + 1 if _spec_part(new) != _spec_part(old) else gen
        self._validate(res, new, old)
        if new == old:
            return old, False  # no-op: no new revision, no watch event
        return self._commit(res, key, new, old), True

    def update(
        self, res: Resource, ns: str, name: str, body: Obj, manager: str = ""
    ) -> tuple[Obj, bool]:
        """PUT.  Returns (object, created)."""
        key = (ns if res.namespaced else "", name)
        with self.cond:
            old = self._table(res).get(key)
            if old is None:
                if res.allow_create_on_update:
                    return self.create(res, ns, body), True
                raise errors.not_found(res, name)
            new = copy.deepcopy(body)
            self._note_update(res, key, old, new, manager)
            return self._finish_update(res, key, old, new, require_rv=True)[0], False

    def mutate(
        self,
        res: Resource,
        ns: str,
        name: str,
        fn: Callable[[Obj], Obj],
        manager: str = "",
    ) -> Obj:
        """PATCH and the Python helpers: fn gets a private deep copy of the current object."""
        key = (ns if res.namespaced else "", name)
        with self.cond:
            old = self._table(res).get(key)
            if old is None:
                raise errors.not_found(res, name)
            new = fn(copy.deepcopy(old))
            if not isinstance(new, dict):
                raise errors.bad_request("patched object is not a JSON object")
            self._note_update(res, key, old, new, manager)
            return self._finish_update(res, key, old, new, require_rv=False)[0]

    def delete(self, res: Resource, ns: str, name: str, preconditions: Obj | None = None) -> Obj:
        key = (ns if res.namespaced else "", name)
        with self.cond:
            old = self._table(res).get(key)
            if old is None:
                raise errors.not_found(res, name)
            pre = preconditions or {}
            meta = old["metadata"]
            if pre.get("uid") and pre["uid"] != meta["uid"]:
                raise errors.conflict(
                    res,
                    name,
                    f"Precondition failed: UID in precondition: {pre['uid']}, UID in object "
                    f"meta: {meta['uid']}",
                )
            if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
                raise errors.conflict(
                    res,
                    name,
                    "Precondition failed: ResourceVersion in precondition: "
                    f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                    f"{meta['resourceVersion']}",
                )
            return self._commit(res, key, None, old)

    # ------------------------------------------------------------------ server-side apply

    def _note_update(self, res: Resource, key: Key, old: Obj, new: Obj, manager: str) -> None:
        """An Update takes ownership of the fields it changed away from appliers."""
        owners = self._owners.get((res, key))
        if not owners:
            return
        before, after = leaf_paths(old), leaf_paths(new)
        changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
        for m, paths in owners.items():
            if m != manager:
                paths -= changed
        if manager:
            owners.setdefault(manager + "\x00update", set()).update(
                p for p in changed if p in after
            )

    def apply(
        self, res: Resource, ns: str, name: str, cfg: Obj, manager: str, force: bool
    ) -> tuple[Obj, bool]:
        """Minimal server-side apply.  Returns (object, created)."""
        key = (ns if res.namespaced else "", name)
        applied = {p: v for p, v in leaf_paths(cfg).items() if p not in _APPLY_IGNORED}
        with self.cond:
            old = self._table(res).get(key)
            if old is None:
                body = copy.deepcopy(cfg)
                body.setdefault("metadata", {})["name"] = name
                obj = self.create(res, ns, body)
                self._owners[(res, key)] = {manager: set(applied)}
                return obj, True
            owners = self._owners.setdefault((res, key), {})
            conflicts: list[tuple[str, tuple[str, ...]]] = []
            for m, paths in owners.items():
                if m == manager:
                    continue
                for p in paths & set(applied):
                    if _get_path(old, p) != applied[p]:
                        conflicts.append((m, p))
            if conflicts and not force:
                raise _apply_conflict(res, name, conflicts)
            for m, p in conflicts:
                owners[m].discard(p)
            new = _deep_merge(copy.deepcopy(old), cfg)
            others = set().union(*(v for m, v in owners.items() if m != manager))
            for p in owners.get(manager, set()) - set(applied) - others:
                _del_path(new, p)  # the applier stopped declaring a field only it owned
            owners[manager] = set(applied)
            obj, _ = self._finish_update(res, key, old, new, require_rv=False)
            return obj, False


def _apply_conflict(res: Resource, name: str, conflicts: list[tuple[str, tuple[str, ...]]]) -> Any:
    def fmt(p: tuple[str, ...]) -> str:
        return "." + ".".join(p)

    def who(m: str) -> str:
        base = m.split("\x00")[0]
        return f'conflict with "{base}" using {res.api_version}'

    if len(conflicts) == 1:
        m, p = conflicts[0]
        msg = f"Apply failed with 1 conflict: {who(m)}: {fmt(p)}"
    else:
        msg = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(
            f"{who(m)}: {fmt(p)}" for m, p in conflicts
        )
    err = errors.conflict(res, name)
    err.message = msg
    assert err.details is not None
    err.details["causes"] = [
        {"reason": "FieldManagerConflict", "message": who(m), "field": fmt(p)} for m, p in conflicts
    ]
    return err


def _encode_continue(rv: int, key: Key) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": list(key)})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, Key]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError("wrong version")
        return int(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise errors.bad_request(f"continue key is not valid: {exc}") from None


def events_after(store: Store, rv: int) -> list[Event] | None:
    """Events with revision > rv, or None when rv is older than the kept history."""
    oldest = max(store._first_event_rv - 1, store.rv - store.history)
    if rv < oldest:
        return None
    idx = rv + 1 - store._first_event_rv
    return store._events[max(idx, 0) :]


def oldest_rv(store: Store) -> int:
    return max(store._first_event_rv - 1, store.rv - store.history)


def matching(store: Store, res: Resource, ns: str | None) -> Iterable[Obj]:
    table = store._table(res)
    for key in store._keys(res):
        if ns is None or not res.namespaced or key[0] == ns:
            yield table[key]
