"""Azure IMDS: this VM's interconnect group and subgroup (GB200/GB300 ND v6 and peers).

One document: ``GET /metadata/instance/compute?api-version=...&format=json`` with the
header ``Metadata: true`` (docs/compatibility.md). Fields, all strings:
- ``interconnectGroupId``: the interconnect group (the high-bandwidth domain the VMs were
  placed on together);
- ``interconnectSubgroupId``: the subgroup inside that group (e.g. one NVLink rack);
- ``placementGroupId``: the scale set's placement group.

Before IMDS had the two interconnect fields, Azure put the subgroup in the VM tag
``Platform_Interconnect_Group`` (``tagsList``). Azure's cloud-node-manager reads the fields
when either is present, else that tag for both group and subgroup; so does this source,
so that the values it writes equal the ones cloud-node-manager writes on the same node.

A VM with neither field nor the tag has no interconnect topology ("no data"); the
placement group alone places it in no tree, so it is then not written either. A field
that is present but not a non-empty string is garbage (an error, labels kept).

Roles: levels ``interconnect_group`` ⊃ ``interconnect_subgroup``; extra
``placement_group``: a scale set's placement group is not documented to nest inside an
interconnect group or to hold whole ones, so it is no level of the tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from labeler.core.profiles import Roles
from labeler.sources import NoData, Reading, SourceError, nested_levels
from labeler.sources.metadata import MetadataSource, metadata_kind
from labeler.sources.metadata_http import Service, check_printable

NAME = "azure-imds"
COMPUTE_PATH = "/metadata/instance/compute"
# The first version whose compute document carries the interconnect fields.
API_VERSION = "2025-11-11"
LEGACY_TAG = "Platform_Interconnect_Group"
SERVICE = Service(
    name="Azure IMDS",
    headers={"Metadata": "true"},
    flags="azure-imds",
    query={"api-version": API_VERSION, "format": "json"},
)

GROUP, SUBGROUP, PLACEMENT = "interconnect_group", "interconnect_subgroup", "placement_group"
LEVELS = (GROUP, SUBGROUP)
ROLES = Roles(levels=LEVELS, extras=(PLACEMENT,))
FIELDS = {
    GROUP: "interconnectGroupId",
    SUBGROUP: "interconnectSubgroupId",
    PLACEMENT: "placementGroupId",
}


class AzureSource(MetadataSource):
    """Reads this VM's interconnect group and subgroup from Azure IMDS."""

    name = NAME
    roles = ROLES
    service = SERVICE

    def read(self) -> Reading | NoData:
        doc = self._client.get_json(COMPUTE_PATH)
        where = f"Azure IMDS {COMPUTE_PATH}"
        if doc is None:
            # IMDS always has a compute document; 404 means the api-version or path is
            # not this service's, which a retry will not change.
            raise SourceError(
                f"{where}?api-version={API_VERSION}: not found; is --azure-imds-url the "
                "Azure instance metadata service?"
            )
        if not isinstance(doc, Mapping):
            raise SourceError(
                f"{where}: expected a JSON object, got {type(doc).__name__}; IMDS answered "
                "something unexpected, keeping the current labels"
            )
        found = {role: v for role, f in FIELDS.items() if (v := _field(doc, f, where))}
        document = "interconnect fields"
        if GROUP not in found and SUBGROUP not in found:
            tag = _legacy_tag(doc, where)
            if tag:
                found[GROUP] = found[SUBGROUP] = tag
                document = f"tag {LEGACY_TAG}"
        if GROUP not in found and SUBGROUP not in found:
            return NoData(
                "Azure IMDS has no interconnect group for this VM (no interconnectGroupId, "
                f"interconnectSubgroupId or {LEGACY_TAG} tag): it was not placed in one"
            )

        def missing(role: str) -> str:
            return f"{where}: field {FIELDS[role]} is missing; its label is kept"

        ids, unknown = nested_levels(LEVELS, found, missing)
        if PLACEMENT in found:
            ids[PLACEMENT] = found[PLACEMENT]
        return Reading(ids=ids, details={"source": document}, unknown=unknown)


KIND = metadata_kind(AzureSource, title=f"Azure instance metadata (source {NAME})", what="IMDS")


def _field(doc: Mapping[str, Any], name: str, where: str) -> str:
    """The field's value, '' when absent or empty; anything but a string is garbage."""
    if name not in doc or doc[name] == "":
        return ""
    value = doc[name]
    if not isinstance(value, str) or not value.strip():
        raise SourceError(f"{where}: field {name} must be a non-empty string, got {value!r}")
    check_printable(value, f"field {name}", where)
    return value.strip()


def _legacy_tag(doc: Mapping[str, Any], where: str) -> str:
    """The first ``Platform_Interconnect_Group`` tag's value ('' when none)."""
    tags = doc.get("tagsList") or []
    if not isinstance(tags, list):
        raise SourceError(f"{where}: tagsList must be a list, got {type(tags).__name__}")
    for tag in tags:
        if isinstance(tag, Mapping) and tag.get("name") == LEGACY_TAG:
            return _field(tag, "value", f"{where} tag {LEGACY_TAG}")
    return ""
