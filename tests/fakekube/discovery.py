"""Non-resource endpoints: /version, discovery documents, health, and Table output.

Discovery documents follow "Kubernetes API Concepts: Discovery API" (legacy, unaggregated
form).  kubectl asks for the aggregated form first (Accept: ...;as=APIGroupDiscoveryList)
and falls back to these when the answer is plain application/json.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from . import errors
from .resources import RESOURCES, Resource, group_versions

if TYPE_CHECKING:
    from .server import FakeKube


def version_info(fake: FakeKube) -> dict[str, str]:
    major, minor, patch = fake.version
    return {
        "major": str(major),
        "minor": str(minor),
        "gitVersion": f"v{major}.{minor}.{patch}",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-04-22T16:00:00Z",
        "goVersion": "go1.23.8",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": gvs, "preferredVersion": gvs[0]}


def handle(fake: FakeKube, method: str, path: str) -> tuple[int, Any]:
    if method not in ("GET", "HEAD"):
        raise errors.method_not_allowed()
    p = path.rstrip("/") or "/"
    if p == "/version":
        return 200, version_info(fake)
    if p in ("/healthz", "/readyz", "/livez"):
        return 200, b"ok"
    if p == "/api":
        host = fake.url.split("://", 1)[1]
        return 200, {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
        }
    served = _served(fake)
    if p == "/apis":
        return 200, {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [_group(g, vs) for g, vs in served.items()],
        }
    parts = p.strip("/").split("/")
    if parts[0] == "api" and len(parts) == 2:
        return 200, _resource_list("", parts[1])
    if parts[0] == "apis" and len(parts) == 2 and parts[1] in served:
        g = _group(parts[1], served[parts[1]])
        return 200, {"kind": "APIGroup", "apiVersion": "v1", **g}
    if parts[0] == "apis" and len(parts) == 3 and parts[2] in served.get(parts[1], ()):
        return 200, _resource_list(parts[1], parts[2])
    # /openapi/v2 and /openapi/v3 are deliberately absent: kubectl copes with a 404.
    raise errors.not_found_path()


def _served(fake: FakeKube) -> dict[str, list[str]]:
    """Group → its served versions, without the ones the fake is told not to serve."""
    out = {}
    for group, versions in group_versions().items():
        kept = [v for v in versions if f"{group}/{v}" not in fake.unserved]
        if kept:
            out[group] = kept
    return out


def _resource_list(group: str, version: str) -> dict[str, Any]:
    rs = [r for r in RESOURCES if r.group == group and r.version == version]
    if not rs:
        raise errors.not_found_path()
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": [r.discovery() for r in rs],
    }


# ------------------------------------------------------------------ Table output


def _age(ts: str | None) -> str:
    if not ts:
        return "<unknown>"
    then = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    secs = int((datetime.now(UTC) - then).total_seconds())
    if secs < 120:
        return f"{secs}s"
    if secs < 7200:
        return f"{secs // 60}m"
    if secs < 172800:
        return f"{secs // 3600}h"
    return f"{secs // 86400}d"


def _node_cells(obj: dict[str, Any]) -> list[Any]:
    conds = {c.get("type"): c.get("status") for c in obj.get("status", {}).get("conditions", [])}
    status = "Ready" if conds.get("Ready") == "True" else "NotReady"
    if obj.get("spec", {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    roles = sorted(
        k.split("/", 1)[1]
        for k in (obj["metadata"].get("labels") or {})
        if k.startswith("node-role.kubernetes.io/")
    )
    version = obj.get("status", {}).get("nodeInfo", {}).get("kubeletVersion", "")
    return [
        status,
        ",".join(roles) or "<none>",
        _age(obj["metadata"].get("creationTimestamp")),
        version,
    ]


def as_table(
    res: Resource, items: list[dict[str, Any]], rv: str, token: str | None = None
) -> dict[str, Any]:
    """meta.k8s.io/v1 Table, what `kubectl get` asks for (server-side printing)."""
    cols = [
        {"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}
    ]
    if res.kind == "Node":
        for n in ("Status", "Roles", "Age", "Version"):
            cols.append(
                {"name": n, "type": "string", "format": "", "description": n, "priority": 0}
            )
    else:
        cols.append(
            {"name": "Age", "type": "string", "format": "", "description": "Age", "priority": 0}
        )
    rows = []
    for o in items:
        meta = o["metadata"]
        cells = [meta["name"]]
        cells += _node_cells(o) if res.kind == "Node" else [_age(meta.get("creationTimestamp"))]
        rows.append(
            {
                "cells": cells,
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": meta,
                },
            }
        )
    lm: dict[str, Any] = {"resourceVersion": rv}
    if token:
        lm["continue"] = token
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": lm,
        "columnDefinitions": cols,
        "rows": rows,
    }
