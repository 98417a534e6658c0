"""Read DRA ResourceSlices (``resource.k8s.io/v1``, cluster-scoped) as plain JSON.

Each driver is listed and watched with the field selector ``spec.driver=<driver>``, which
the API server supports for ResourceSlices (with ``spec.nodeName``), so a cluster full of
other drivers' slices costs nothing. A server that does not serve ``resource.k8s.io/v1``
(before Kubernetes 1.34, or with the API turned off) answers 404: the one-shot readers take
that as "no slices"; the exporter's watch looks again later.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from labeler.base.logs import logger
from labeler.core.dra import SliceDevices, read_slice
from labeler.kube.client import Api
from labeler.kube.errors import Forbidden, NotFound
from labeler.kube.raw import list_items, watch_events

log = logger(__name__)

PATH = "/apis/resource.k8s.io/v1/resourceslices"
RESOURCE = "resourceslices.resource.k8s.io"
KIND = "ResourceSlice"


def _selector(driver: str) -> str:
    return f"spec.driver={driver}"


def list_slices(api: Api, driver: str, *, page_size: int = 500) -> tuple[list[SliceDevices], str]:
    """One driver's slices (paginated) and the list's resourceVersion to watch from.
    Raises NotFound when the API is not served."""
    query = {"fieldSelector": _selector(driver)}
    try:
        return list_items(
            api,
            PATH,
            lambda obj: read_slice(obj, RESOURCE),
            resource=RESOURCE,
            kind=KIND,
            page_size=page_size,
            query=query,
        )
    except Forbidden as e:
        # Roles written before DRA lack this rule; say how to do without it as well.
        raise Forbidden(
            f"{e} — or pass --dra-driver none to count no DRA devices",
            status=e.status,
            verb=e.verb,
            resource=e.resource,
        ) from e


def read_resource_slices(api: Api, drivers: Iterable[str]) -> list[SliceDevices]:
    """Every slice of ``drivers``; none when the cluster does not serve the API."""
    out: list[SliceDevices] = []
    for driver in drivers:
        try:
            out += list_slices(api, driver)[0]
        except NotFound:
            log.info(
                "the cluster does not serve %s (resource.k8s.io/v1); no DRA devices counted",
                RESOURCE,
            )
            return []
    return out


def watch_slices(
    api: Api,
    driver: str,
    *,
    resource_version: str,
    timeout_seconds: int = 300,
    opened: Callable[[], None] | None = None,
) -> Iterator[tuple[str, SliceDevices | None, str]]:
    """(event type, slice, resourceVersion) from one watch request of one driver's slices;
    BOOKMARK events carry no slice. Raises ``Expired`` (410) when the caller must re-list.
    ``opened``: see :func:`labeler.kube.raw.watch_events`."""
    events = watch_events(
        api,
        PATH,
        resource=RESOURCE,
        kind=KIND,
        resource_version=resource_version,
        query={"fieldSelector": _selector(driver)},
        timeout_seconds=timeout_seconds,
        opened=opened,
    )
    for kind, obj in events:
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            yield kind, read_slice(obj, f"{RESOURCE} watch event"), version
        else:
            yield kind, None, version
