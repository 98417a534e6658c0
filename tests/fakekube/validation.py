"""Object validation with the API server's own rules and messages.

Follows k8s.io/apimachinery/pkg/util/validation (IsQualifiedName, IsValidLabelValue,
IsDNS1123Subdomain, IsDNS1123Label) and apimachinery/pkg/api/validation/objectmeta.go
(ValidateObjectMeta, ValidateAnnotations).  Messages are reproduced word for word because
callers (and humans reading logs) compare against what a real cluster prints.
"""

from __future__ import annotations

import json
import re
from typing import Any

QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_ERR = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
LABEL_VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL_ERR = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1123_SUBDOMAIN_ERR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

_QUALIFIED_NAME_RE = re.compile(QUALIFIED_NAME_FMT)
_LABEL_VALUE_RE = re.compile(LABEL_VALUE_FMT)
_DNS1123_LABEL_RE = re.compile(DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(DNS1123_SUBDOMAIN_FMT)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """validation.RegexError: note the doubled space after each example's comma."""
    out = msg
    if examples:
        out += " (e.g. " + " or ".join("'" + e + "', " for e in examples)
        out += "regex used for validation is '" + fmt + "')"
    else:
        out += " (regex used for validation is '" + fmt + "')"
    return out


def max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


def max_bytes_error(n: int) -> str:
    # Label keys and values count bytes (the wording of Kubernetes 1.37); names count
    # characters.
    return f"must be no more than {n} bytes"


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        errs.append(regex_error(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append(max_len_error(253))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        elif len(prefix.encode()) > 253:
            errs.append("prefix part " + max_bytes_error(253))
        elif not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
            errs.append(
                "prefix part "
                + regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com")
            )
    else:
        return [
            "a valid label key "
            + regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errs.append("name part " + max_bytes_error(63))
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        errs.append(
            "name part "
            + regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def is_valid_label_value(value: str) -> list[str]:
    errs = []
    if len(value.encode()) > 63:
        errs.append(max_bytes_error(63))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


class FieldError:
    """One field.Error: `reason` is the CauseType that ends up in Status.details.causes."""

    def __init__(self, reason: str, field: str, body: str) -> None:
        self.reason = reason
        self.field = field
        self.body = body

    def __str__(self) -> str:
        return f"{self.field}: {self.body}"

    def cause(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.body, "field": self.field}


def _quote(value: Any) -> str:
    # Go's %q for strings; ensure_ascii=False keeps printable Unicode like Go does.
    return json.dumps(value, ensure_ascii=False)


def invalid(field: str, value: Any, msg: str) -> FieldError:
    return FieldError("FieldValueInvalid", field, f"Invalid value: {_quote(value)}: {msg}")


def required(field: str, msg: str) -> FieldError:
    return FieldError("FieldValueRequired", field, f"Required value: {msg}")


def validate_labels(labels: dict[str, str], field: str = "metadata.labels") -> list[FieldError]:
    errs: list[FieldError] = []
    for k, v in labels.items():
        errs.extend(invalid(field, k, m) for m in is_qualified_name(k))
        errs.extend(invalid(field, v, m) for m in is_valid_label_value(v))
    return errs


def validate_annotations(annotations: dict[str, str]) -> list[FieldError]:
    errs: list[FieldError] = []
    total = 0
    for k, v in annotations.items():
        # ValidateAnnotations lower-cases the key before checking it.
        errs.extend(invalid("metadata.annotations", k, m) for m in is_qualified_name(k.lower()))
        total += len(k) + len(v)
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(
            FieldError(
                "FieldValueTooLong",
                "metadata.annotations",
                f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes",
            )
        )
    return errs


def validate_metadata(meta: dict[str, Any], name_rule: str = "subdomain") -> list[FieldError]:
    """ValidateObjectMeta for the parts the fake models: name, labels, annotations."""
    errs: list[FieldError] = []
    name = meta.get("name") or ""
    if not name:
        errs.append(required("metadata.name", "name or generateName is required"))
    else:
        check = is_dns1123_label if name_rule == "label" else is_dns1123_subdomain
        errs.extend(invalid("metadata.name", name, m) for m in check(name))
    errs.extend(validate_labels(meta.get("labels") or {}))
    errs.extend(validate_annotations(meta.get("annotations") or {}))
    return errs


def type_errors(meta: Any) -> str | None:
    """Decoding errors the real server reports as 400 before validation runs."""
    if not isinstance(meta, dict):
        return "metadata must be an object"
    for fld in ("labels", "annotations"):
        m = meta.get(fld)
        if m is None:
            continue
        if not isinstance(m, dict):
            return f"json: cannot unmarshal into Go struct field ObjectMeta.metadata.{fld}"
        for k, v in m.items():
            if not isinstance(v, str):
                return (
                    f"json: cannot unmarshal {type(v).__name__} into Go struct field "
                    f"ObjectMeta.metadata.{fld} of type string (key {k!r})"
                )
    return None


def _required(field: str) -> FieldError:
    # field.Required with no detail prints without the colon.
    return FieldError("FieldValueRequired", field, "Required value")


_NODE_SELECTION = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
_ONE_OF = (
    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
)
MAX_SLICE_DEVICES = 128  # ResourceSliceMaxDevices


def validate_resource_slice(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """The parts of ValidateResourceSlice(Update) (pkg/apis/resource/validation) that
    readers of slices depend on: driver and pool, one way of selecting nodes, the device
    list, and the fields that may not change."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_required("spec")]
    errs: list[FieldError] = []
    driver = spec.get("driver")
    if not driver:
        errs.append(_required("spec.driver"))
    else:
        errs.extend(invalid("spec.driver", driver, m) for m in is_dns1123_subdomain(str(driver)))
    pool = spec.get("pool") if isinstance(spec.get("pool"), dict) else {}
    if not pool.get("name"):
        errs.append(_required("spec.pool.name"))
    count = pool.get("resourceSliceCount", 0)
    if not isinstance(count, int) or count <= 0:
        errs.append(invalid("spec.pool.resourceSliceCount", count, "must be greater than zero"))
    chosen = [f"`{f}`" for f in _NODE_SELECTION if spec.get(f) not in (None, "", False)]
    if not chosen:
        errs.append(required("spec", _ONE_OF))
    elif len(chosen) > 1:
        errs.append(
            invalid(
                "spec", "{" + ", ".join(chosen) + "}", _ONE_OF + ", but multiple fields are set"
            )
        )
    devices = spec.get("devices") or []
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        errs.append(invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed"))
    if len(devices) > MAX_SLICE_DEVICES:
        errs.append(
            FieldError(
                "FieldValueTooMany",
                "spec.devices",
                f"Too many: {len(devices)}: must have at most {MAX_SLICE_DEVICES} items",
            )
        )
    for i, device in enumerate(devices):
        name = device.get("name") if isinstance(device, dict) else None
        if not name:
            errs.append(_required(f"spec.devices[{i}].name"))
        else:
            errs.extend(invalid(f"spec.devices[{i}].name", name, m) for m in is_dns1123_label(name))
    if old is not None:
        old_spec = old.get("spec") or {}
        for path in (("pool", "name"), ("driver",), ("nodeName",)):
            new_v, old_v = _dig(spec, path), _dig(old_spec, path)
            if new_v != old_v:
                errs.append(invalid("spec." + ".".join(path), new_v, "field is immutable"))
    return errs


def _dig(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj
