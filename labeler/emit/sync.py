"""Put generated objects into the cluster: create or update, and prune this topology's stale
HyperNodes — never touching a HyperNode that belongs to someone else.

HyperNode names come from level names and values, so two topologies (two Ascend trees
whose groupids both start at 0, or a hand-made HyperNode) can want the same name;
replacing it would silently move it to this topology. So before the first write, one LIST
finds every HyperNode we would write that carries another owner (or none), and the run
stops. Pruning deletes only HyperNodes labeled with this topology's owner value.

The requests go through :class:`labeler.kube.custom.CustomObjects`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from labeler.base.errors import LabelerError
from labeler.base.text import a_few
from labeler.emit import Output, hypernodes

if TYPE_CHECKING:
    from labeler.kube.custom import CustomObjects

HYPERNODE = "HyperNode"
MAX_NAMES = 10  # names listed in the ownership error


def _hypernode_names(outputs: Sequence[Output]) -> set[str]:
    return {d["metadata"]["name"] for o in outputs for d in o.docs if d.get("kind") == HYPERNODE}


def refuse_foreign_hypernodes(objs: CustomObjects, outputs: Sequence[Output], owner: str) -> None:
    """Raise, before any write, if a HyperNode we would write belongs to someone else."""
    wanted = _hypernode_names(outputs)
    if not wanted:
        return
    selector = f"{hypernodes.OWNER_LABEL}!={owner}"
    taken = sorted(wanted & set(objs.list_names(hypernodes.API_VERSION, HYPERNODE, selector)))
    if taken:
        raise LabelerError(
            f"{len(taken)} HyperNode(s) with the names this topology needs already exist and "
            f"are not labeled {hypernodes.OWNER_LABEL}={owner}: {a_few(taken, MAX_NAMES)}. "
            "Nothing was written. Give this topology its own names with --hypernode-prefix, "
            "or delete those HyperNodes if they are stale"
        )


def sync(
    api: Any,
    outputs: Sequence[Output],
    owner: str,
    *,
    dry_run: bool = False,
    prune: bool = False,
    report: Callable[[str], None],
) -> None:
    """Create or update every applicable object of ``outputs``; with ``prune``, delete this
    topology's HyperNodes that were not generated. ``report`` gets one line per object as
    it is done (``Kind/name created``, ``… (dry run)``)."""
    from labeler.kube.custom import DELETED, CustomObjects

    objs = CustomObjects(api)
    suffix = " (dry run)" if dry_run else ""
    refuse_foreign_hypernodes(objs, outputs, owner)
    for o in outputs:
        if not o.applicable:
            report(f"skipped {o.filename}: a config snippet, not an object ({o.title})")
            continue
        for doc in o.docs:
            result = objs.apply(doc, dry_run=dry_run)
            report(f"{result.kind}/{result.name} {result.action}{suffix}")
    if not prune:
        return
    wanted = _hypernode_names(outputs)
    if not wanted:
        raise LabelerError("--prune: no HyperNodes were generated, so none are deleted")
    selector = ",".join(
        f"{k}={v}" for k, v in {**hypernodes.MANAGED_BY, hypernodes.OWNER_LABEL: owner}.items()
    )
    for name in objs.list_names(hypernodes.API_VERSION, HYPERNODE, selector):
        if name not in wanted:
            objs.delete(hypernodes.API_VERSION, HYPERNODE, name, dry_run=dry_run)
            report(f"{HYPERNODE}/{name} {DELETED}{suffix}")
