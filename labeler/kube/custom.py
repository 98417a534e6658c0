"""Create or update cluster-scoped custom objects (Kueue Topology/ResourceFlavor, HyperNodes).

Get, then create or replace with the read ``resourceVersion`` (409 → read again): this works
on every API server and tells the operator exactly what changed. An object whose spec,
labels and annotations already hold what we want is left alone — no write at all.
Fields the server or another controller added (defaults, status, other labels) are kept.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import quote

from labeler.base.logs import logger
from labeler.kube.client import Api
from labeler.kube.errors import Conflict, NotFound
from labeler.kube.raw import call_discard, get_object, list_items

log = logger(__name__)

CREATED = "created"
UPDATED = "updated"
UNCHANGED = "unchanged"
DELETED = "deleted"

# apiVersion/kind → plural (only the kinds this project writes)
PLURALS = {
    ("kueue.x-k8s.io/v1beta2", "Topology"): "topologies",
    ("kueue.x-k8s.io/v1beta2", "ResourceFlavor"): "resourceflavors",
    ("topology.volcano.sh/v1alpha1", "HyperNode"): "hypernodes",
}


@dataclass(frozen=True)
class ApplyResult:
    kind: str
    name: str
    action: str  # created / updated / unchanged / deleted


FIELD_MANAGER = {"fieldManager": "topology-labeler"}


def _body(obj: Mapping[str, Any]) -> bytes:
    return json.dumps(obj).encode()


def contains(have: Any, want: Any) -> bool:
    """True when ``have`` already holds everything in ``want`` (maps: subset; lists: same
    length, item by item) — server defaults on top of ours do not count as a difference."""
    if isinstance(want, Mapping):
        return isinstance(have, Mapping) and all(
            k in have and contains(have[k], v) for k, v in want.items()
        )
    if isinstance(want, list):
        return (
            isinstance(have, list)
            and len(have) == len(want)
            and all(contains(h, w) for h, w in zip(have, want, strict=True))
        )
    return bool(have == want)


def _name(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["name"])


class CustomObjects:
    """Cluster-scoped custom objects of the kinds in :data:`PLURALS`."""

    def __init__(self, api: Api, *, conflict_retries: int = 3) -> None:
        self._api = api
        self._retries = conflict_retries

    @staticmethod
    def _resource(api_version: str, kind: str) -> tuple[str, str, str]:
        """(collection path, plural.group, kind) of one of the kinds in :data:`PLURALS`."""
        plural = PLURALS.get((api_version, kind))
        if plural is None:
            raise ValueError(f"no plural known for {api_version} {kind}")
        group, _, _version = api_version.partition("/")
        return f"/apis/{api_version}/{plural}", f"{plural}.{group}", kind

    @classmethod
    def _where(cls, obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
        """(collection path, object path, resource as errors name it, kind)."""
        collection, what, kind = cls._resource(obj["apiVersion"], obj["kind"])
        name = obj["metadata"]["name"]
        return collection, f"{collection}/{quote(name, safe='')}", f"{what}/{name}", kind

    def get(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        _, path, resource, kind = self._where(obj)
        name = obj["metadata"]["name"]
        try:
            return get_object(self._api, path, kind=kind, name=name, resource=resource)
        except NotFound:
            return None

    def apply(self, obj: Mapping[str, Any], *, dry_run: bool = False) -> ApplyResult:
        """Create ``obj``, or replace its spec/labels/annotations; no write when equal."""
        collection, path, resource, kind = self._where(obj)
        name = obj["metadata"]["name"]
        for _attempt in range(self._retries + 1):
            current = self.get(obj)
            if current is None:
                if not dry_run:
                    create = partial(
                        self._api.send,
                        "POST",
                        collection,
                        query=FIELD_MANAGER,
                        body=_body(obj),
                        echo=False,
                    )
                    call_discard(
                        create,
                        verb="create",
                        resource=resource,
                    )
                log.info("custom object created kind=%s name=%s dry_run=%s", kind, name, dry_run)
                return ApplyResult(kind, name, CREATED)
            want_meta = {
                k: obj["metadata"][k] for k in ("labels", "annotations") if k in obj["metadata"]
            }
            if contains(current.get("spec"), obj.get("spec")) and contains(
                current.get("metadata"), want_meta
            ):
                return ApplyResult(kind, name, UNCHANGED)
            if dry_run:
                return ApplyResult(kind, name, UPDATED)
            replacement = dict(current)
            meta = dict(current.get("metadata") or {})
            for k, v in want_meta.items():
                meta[k] = {**(meta.get(k) or {}), **v}
            replacement["metadata"] = meta
            replacement["spec"] = obj.get("spec")
            body = _body(replacement)
            try:
                call_discard(
                    partial(
                        self._api.send, "PUT", path, query=FIELD_MANAGER, body=body, echo=False
                    ),
                    verb="update",
                    resource=resource,
                )
            except Conflict:
                log.info("conflict, re-reading kind=%s name=%s", kind, name)
                continue
            log.info("custom object updated kind=%s name=%s", kind, name)
            return ApplyResult(kind, name, UPDATED)
        raise Conflict(
            f"update {resource}: the object kept changing under us ({self._retries + 1} "
            "attempts); retry later",
            status=409,
            verb="update",
            resource=resource,
        )

    def list_names(self, api_version: str, kind: str, label_selector: str) -> list[str]:
        """Names of the objects of one kind that match a label selector."""
        collection, what, _ = self._resource(api_version, kind)
        query = {"labelSelector": label_selector}
        names, _ = list_items(self._api, collection, _name, resource=what, kind=kind, query=query)
        return sorted(names)

    def delete(self, api_version: str, kind: str, name: str, *, dry_run: bool = False) -> None:
        collection, what, _ = self._resource(api_version, kind)
        if dry_run:
            return
        path = f"{collection}/{quote(name, safe='')}"
        with contextlib.suppress(NotFound):
            call_discard(
                lambda: self._api.send("DELETE", path, echo=False),
                verb="delete",
                resource=f"{what}/{name}",
            )
