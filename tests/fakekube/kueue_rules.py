"""The update rules of Kueue's CRDs (x-kubernetes-validations, Kueue v0.19) that a writer of
Topologies and ResourceFlavors meets: a real API server refuses these changes, so the fake
does too, with the same 422 causes. Other schema and CEL checks are not emulated (see
README.md); tests/emit/test_crd_check.py checks emitted objects against the schemas.

A CEL rule's error names no value: its cause reads "Invalid value: <message>".
"""

from __future__ import annotations

from typing import Any

from .validation import FieldError


def _cel(field: str, message: str) -> FieldError:
    return FieldError("FieldValueInvalid", field, f"Invalid value: {message}")


def validate_topology(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """spec.levels: ``self == oldSelf`` ("field is immutable")."""
    if old is None:
        return []
    levels = (obj.get("spec") or {}).get("levels")
    if levels != (old.get("spec") or {}).get("levels"):
        return [_cel("spec.levels", "field is immutable")]
    return []


# spec: once a flavor names a topology, these keys keep their presence and value.
_FROZEN_WITH_TOPOLOGY = ("nodeLabels", "tolerations", "topologyName")


def validate_resource_flavor(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """spec: nodeLabels, tolerations and topologyName are immutable once topologyName is set
    (each its own rule and message, evaluated in the CRD's order)."""
    if old is None:
        return []
    spec, was = obj.get("spec") or {}, old.get("spec") or {}
    if "topologyName" not in was:
        return []
    return [
        _cel("spec", f"{key} are immutable when topologyName is set")
        if key != "topologyName"
        else _cel("spec", "topologyName is immutable when topologyName is set")
        for key in _FROZEN_WITH_TOPOLOGY
        if (key in spec) != (key in was) or spec.get(key) != was.get(key)
    ]
