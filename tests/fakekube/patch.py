"""Patch formats the API server accepts on PATCH.

- JSON merge patch, RFC 7386 (`application/merge-patch+json`): maps merge recursively,
  `null` deletes, anything else (lists included) replaces.
- Strategic merge patch (`application/strategic-merge-patch+json`), simplified: like merge
  patch, plus merge-by-key for the few list fields our objects use that carry a
  `patchMergeKey` in the Kubernetes Go types (conditions, addresses, containers, ...), the
  `$patch: replace|delete` directive, and `$`-prefixed directives otherwise ignored.
  Every other list is replaced, which is also what real SMP does for lists without a
  patch strategy (e.g. node.spec.taints).
  Docs: https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/
- JSON patch, RFC 6902 (`application/json-patch+json`) with RFC 6901 pointers (`~0`, `~1`).
"""

from __future__ import annotations

import copy
from typing import Any


class PatchError(ValueError):
    """Patch could not be applied; `code` is the HTTP status the server answers with."""

    def __init__(self, message: str, code: int = 422) -> None:
        super().__init__(message)
        self.code = code


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 MergePatch (section 2 pseudo-code)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


# Field name -> patchMergeKey, taken from the `patchMergeKey` struct tags in k8s.io/api/core/v1.
SMP_MERGE_KEYS = {
    "conditions": "type",
    "addresses": "type",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "env": "name",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "tolerations": None,  # atomic in the Go types: replaced
}


def strategic_merge_patch(target: Any, patch: Any, field: str | None = None) -> Any:
    if not isinstance(patch, dict):
        if isinstance(patch, list) and field and SMP_MERGE_KEYS.get(field):
            return _merge_list(target, patch, SMP_MERGE_KEYS[field] or "")
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if not k.startswith("$")}
    if directive == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k.startswith("$"):
            continue  # $setElementOrder/..., $retainKeys: ordering hints we do not model
        if v is None:
            result.pop(k, None)
        else:
            merged = strategic_merge_patch(result.get(k), v, k)
            if merged is None:
                result.pop(k, None)
            else:
                result[k] = merged
    return result


def _merge_list(target: Any, patch: list[Any], key: str) -> list[Any]:
    """Merge by ``key``, then order as apimachinery's normalizeElementOrder does without a
    $setElementOrder: the patch's items in the patch's order and the server-only items in
    the server's order, interleaved by mergeSortedSlice (a server-only item goes first only
    when both are on the server and it came first there)."""
    server = [copy.deepcopy(x) for x in target] if isinstance(target, list) else []
    keyed = [i for i in patch if isinstance(i, dict) and key in i]
    loose = [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and key in i)]
    by_key = {x.get(key): x for x in server if isinstance(x, dict)}
    gone = {i[key] for i in keyed if i.get("$patch") == "delete"}
    right = [
        strategic_merge_patch(by_key.get(i[key]) or {}, i)
        for i in keyed
        if i.get("$patch") != "delete"
    ]
    mentioned = {i[key] for i in keyed}
    left = [x for x in server if not (isinstance(x, dict) and x.get(key) in mentioned | gone)]
    order = [x.get(key) if isinstance(x, dict) else None for x in server]

    def place(item: Any) -> int:
        k = item.get(key) if isinstance(item, dict) else None
        return order.index(k) if k is not None and k in order else -1

    out: list[Any] = []
    while left or right:
        if left and right and 0 <= place(left[0]) < place(right[0]):
            out.append(left.pop(0))
        elif right:
            out.append(right.pop(0))
        else:
            out.append(left.pop(0))
    return out + loose


# ------------------------------------------------------------------ JSON patch


def _decode_pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"JSON pointer must start with '/': {path!r}", 400)
    # RFC 6901 section 4: ~1 first, then ~0, so "~01" decodes to "~1".
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, tokens: list[str], path: str) -> tuple[Any, str]:
    cur = doc
    for t in tokens[:-1]:
        if isinstance(cur, dict):
            if t not in cur:
                raise PatchError(f"doc is missing path: {path!r}: missing value")
            cur = cur[t]
        elif isinstance(cur, list):
            cur = cur[_index(cur, t, path)]
        else:
            raise PatchError(f"doc is missing path: {path!r}: missing value")
    return cur, tokens[-1]


def _index(lst: list[Any], tok: str, path: str, allow_end: bool = False) -> int:
    if tok == "-" and allow_end:
        return len(lst)
    if not tok.isdigit() or (tok != "0" and tok.startswith("0")):
        raise PatchError(f"invalid array index {tok!r} in {path!r}")
    i = int(tok)
    if i > len(lst) or (i == len(lst) and not allow_end):
        raise PatchError(f"index out of range in {path!r}")
    return i


def _get(doc: Any, path: str) -> Any:
    tokens = _decode_pointer(path)
    if not tokens:
        return doc
    parent, last = _parent(doc, tokens, path)
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"doc is missing path: {path!r}: missing value")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, path)]
    raise PatchError(f"doc is missing path: {path!r}: missing value")


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _decode_pointer(path)
    if not tokens:
        return value
    parent, last = _parent(doc, tokens, path)
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, path, allow_end=True), value)
    else:
        raise PatchError(f"doc is missing path: {path!r}: missing value")
    return doc


def _remove(doc: Any, path: str) -> Any:
    tokens = _decode_pointer(path)
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent, last = _parent(doc, tokens, path)
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"Unable to remove nonexistent key: {last}: missing value")
        del parent[last]
    elif isinstance(parent, list):
        parent.pop(_index(parent, last, path))
    else:
        raise PatchError(f"doc is missing path: {path!r}: missing value")
    return doc


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 section 4; the whole patch fails if any operation fails (section 5)."""
    if not isinstance(ops, list):
        raise PatchError("json: cannot unmarshal object into Go value of type jsonpatch.Patch", 400)
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise PatchError("Unexpected kind: missing 'op'", 400)
        kind, path = op["op"], op.get("path")
        if not isinstance(path, str):
            raise PatchError(f"operation {kind!r} missing 'path'", 400)
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            doc = _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)  # replace requires the target to exist (RFC 6902 4.3)
            doc = _remove(doc, path) if _decode_pointer(path) else doc
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise PatchError(f"testing value {path} failed: test failed")
        elif kind in ("move", "copy"):
            src = op.get("from")
            if not isinstance(src, str):
                raise PatchError(f"operation {kind!r} missing 'from'", 400)
            value = copy.deepcopy(_get(doc, src))
            if kind == "move":
                doc = _remove(doc, src)
            doc = _add(doc, path, value)
        else:
            raise PatchError(f"Unexpected kind: {kind}", 400)
    return doc
