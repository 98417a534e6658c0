"""Create or update cluster-scoped custom objects (Kueue Topology/ResourceFlavor, HyperNodes).

Get, then create or replace with the read ``resourceVersion`` (409 → read again): this works
on every API server and tells the operator exactly what changed. An object whose spec,
labels and annotations already hold what we want is left alone — no write at all.
Fields the server or another controller added (defaults, status, other labels) are kept.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from kubernetes import client

from labeler.kube.errors import Conflict, NotFound
from labeler.kube.raw import call_discard, call_json, list_pages

log = logging.getLogger(__name__)

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


def _send(fn: Any, *, verb: str, resource: str) -> None:
    """A write whose answer we do not need (the object echoed back)."""
    call_discard(fn, verb=verb, resource=resource)


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


class CustomObjects:
    """Cluster-scoped custom objects of the kinds in :data:`PLURALS`."""

    def __init__(self, api: client.ApiClient, *, conflict_retries: int = 3) -> None:
        self._api = client.CustomObjectsApi(api)
        self._retries = conflict_retries

    @staticmethod
    def _resource(api_version: str, kind: str) -> tuple[str, str, str]:
        """(group, version, plural) of one of the kinds in :data:`PLURALS`."""
        plural = PLURALS.get((api_version, kind))
        if plural is None:
            raise ValueError(f"no plural known for {api_version} {kind}")
        group, _, version = api_version.partition("/")
        return group, version, plural

    @classmethod
    def _where(cls, obj: Mapping[str, Any]) -> tuple[str, str, str, str, str]:
        kind = obj["kind"]
        group, version, plural = cls._resource(obj["apiVersion"], kind)
        return group, version, plural, kind, obj["metadata"]["name"]

    def get(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        group, version, plural, _, name = self._where(obj)
        try:
            doc: dict[str, Any] = call_json(
                partial(
                    self._api.get_cluster_custom_object,
                    group,
                    version,
                    plural,
                    name,
                    _preload_content=False,
                ),
                verb="get",
                resource=f"{plural}.{group}/{name}",
            )
        except NotFound:
            return None
        return doc

    def apply(self, obj: Mapping[str, Any], *, dry_run: bool = False) -> ApplyResult:
        """Create ``obj``, or replace its spec/labels/annotations; no write when equal."""
        group, version, plural, kind, name = self._where(obj)
        resource = f"{plural}.{group}/{name}"
        for _attempt in range(self._retries + 1):
            current = self.get(obj)
            if current is None:
                if not dry_run:
                    _send(
                        partial(
                            self._api.create_cluster_custom_object,
                            group,
                            version,
                            plural,
                            dict(obj),
                            field_manager="topology-labeler",
                            _preload_content=False,
                        ),
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
            body = dict(current)
            meta = dict(current.get("metadata") or {})
            for k, v in want_meta.items():
                meta[k] = {**(meta.get(k) or {}), **v}
            body["metadata"] = meta
            body["spec"] = obj.get("spec")
            try:
                _send(
                    partial(
                        self._api.replace_cluster_custom_object,
                        group,
                        version,
                        plural,
                        name,
                        body,
                        field_manager="topology-labeler",
                        _preload_content=False,
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
        group, version, plural = self._resource(api_version, kind)
        names: list[str] = []
        for doc in list_pages(
            partial(self._api.list_cluster_custom_object, group, version, plural),
            resource=f"{plural}.{group}",
            label_selector=label_selector,
        ):
            names += [i["metadata"]["name"] for i in doc.get("items") or []]
        return sorted(names)

    def delete(self, api_version: str, kind: str, name: str, *, dry_run: bool = False) -> None:
        group, version, plural = self._resource(api_version, kind)
        if dry_run:
            return
        with contextlib.suppress(NotFound):
            _send(
                partial(
                    self._api.delete_cluster_custom_object,
                    group,
                    version,
                    plural,
                    name,
                    _preload_content=False,
                ),
                verb="delete",
                resource=f"{plural}.{group}/{name}",
            )
