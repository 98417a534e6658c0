"""The GCE metadata server: where this VM sits in Google's cluster, block and sub-block.

Documents (``Metadata-Flavor: Google`` on every request, docs/compatibility.md):
- ``instance/attributes/physical_host_topology``: a JSON object with ``cluster``,
  ``block``, ``subBlock`` (``subblock`` is taken too, as the Compute API spells it) and
  ``host``;
- else ``instance/attributes/physical_host``: the string ``/<block>/<sub-block>/<host>``.

Only some VMs have them (A4X, A4, A3 Ultra/Mega/High-8g, H4D, or a compact placement
policy): a VM without either attribute has no topology ("no data"). A failed first
document falls back to the second in the same read; with nothing to fall back on, the
failure stays an error (never "no data").

Roles: levels ``block``, ``subblock``, ``host`` (GKE's Kueue topology uses all three
under the same names, ``cloud.google.com/gce-topology-*``); extra ``cluster``. A missing
level makes it and the narrower levels unknown (not written, not removed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from labeler.core.profiles import Roles
from labeler.sources import NoData, Reading, SourceError, nested_levels
from labeler.sources.metadata import MetadataSource, metadata_kind
from labeler.sources.metadata_http import Refused, Service, check_printable

NAME = "gce-metadata"
ATTRIBUTES = "/computeMetadata/v1/instance/attributes/"
TOPOLOGY_PATH = ATTRIBUTES + "physical_host_topology"
HOST_PATH = ATTRIBUTES + "physical_host"
SERVICE = Service(
    name="GCE metadata",
    headers={"Metadata-Flavor": "Google"},
    flags="gce-metadata",
)

BLOCK, SUBBLOCK, HOST, CLUSTER = "block", "subblock", "host", "cluster"
LEVELS = (BLOCK, SUBBLOCK, HOST)
ROLES = Roles(levels=LEVELS, extras=(CLUSTER,))
# Fields of physical_host_topology by role; the first spelling found is taken.
FIELDS = {
    BLOCK: ("block",),
    SUBBLOCK: ("subBlock", "subblock"),
    HOST: ("host",),
    CLUSTER: ("cluster",),
}


class GceSource(MetadataSource):
    """Reads this VM's physical host topology from the GCE metadata server."""

    name = NAME
    roles = ROLES
    service = SERVICE

    def read(self) -> Reading | NoData:
        failed: SourceError | None = None
        try:
            doc = self._client.get_json(TOPOLOGY_PATH)
        except Refused:
            raise
        except SourceError as e:
            failed, doc = e, None  # physical_host may still answer: ask it now
        if doc not in (None, {}, ""):
            if not isinstance(doc, Mapping):
                raise SourceError(
                    f"GCE metadata {TOPOLOGY_PATH}: expected a JSON object, got "
                    f"{type(doc).__name__}; the metadata server answered something unexpected"
                )
            return _from_topology(doc)
        try:
            raw = self._client.get(HOST_PATH)
        except SourceError as e:
            raise (failed or e) from None
        text = (raw or b"").decode("utf-8", errors="replace").strip()
        if not text:
            if failed is not None:
                raise SourceError(f"{failed} ({HOST_PATH} has no topology to fall back on)")
            return NoData(
                "the GCE metadata server has no physical host topology for this VM "
                "(physical_host_topology and physical_host are missing): it is not on a "
                "machine type or placement policy that publishes one"
            )
        return _from_path(text)


KIND = metadata_kind(GceSource, title=f"GCE metadata server (source {NAME})", what="metadata")


def _from_topology(doc: Mapping[str, Any]) -> Reading:
    where = f"GCE metadata {TOPOLOGY_PATH}"
    found: dict[str, str] = {}
    for role, names in FIELDS.items():
        value = next((doc[n] for n in names if doc.get(n) not in (None, "")), None)
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            raise SourceError(
                f"{where}: field {names[0]} must be a non-empty string, got {value!r}"
            )
        check_printable(value, f"field {names[0]}", where)
        found[role] = value.strip()
    ids, unknown = _levels(found, where)
    if CLUSTER in found:
        ids[CLUSTER] = found[CLUSTER]
    return Reading(ids=ids, details={"document": TOPOLOGY_PATH}, unknown=unknown)


def _from_path(text: str) -> Reading:
    """``/<block>/<sub-block>/<host>``: exactly three non-empty parts, else garbage."""
    where = f"GCE metadata {HOST_PATH}"
    parts = text.removeprefix("/").split("/")
    if len(parts) != 3 or not all(p.strip() for p in parts):
        raise SourceError(
            f"{where}: expected /<block>/<sub-block>/<host>, got {text[:120]!r}; the metadata "
            "server answered something unexpected, keeping the current labels"
        )
    check_printable(text, "the value", where)
    ids, unknown = _levels(dict(zip(LEVELS, (p.strip() for p in parts), strict=True)), where)
    return Reading(ids=ids, details={"document": HOST_PATH}, unknown=unknown)


def _levels(found: Mapping[str, str], where: str) -> tuple[dict[str, str], dict[str, str]]:
    def missing(role: str) -> str:
        return f"{where}: field {FIELDS[role][0]} is missing; its label is kept"

    return nested_levels(LEVELS, found, missing)
