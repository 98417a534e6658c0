"""The agent's decisions as pure functions: what a node's labels should be for a source
outcome, which labels a reading could not tell (and why), whether a node counts as labeled,
and what one reconcile means for ``--once``'s exit code. No I/O here, so every rule is
unit-tested without a server (tests/agent/test_agent_desired.py); reconcile.py acts on them,
and ``--dry-run`` prints the plan with ``labeler.core.plan.describe``, as ``plan`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from labeler.base.errors import Exit
from labeler.core.labels import Encoding, check_value, digest
from labeler.core.model import PLACEHOLDERS
from labeler.core.plan import Desired, LabelPlan
from labeler.core.profiles import Profile, Roles
from labeler.sources import MISSING, WIDER_UNKNOWN, NoData, Reading


class OnMissing(StrEnum):
    """What the agent does when the source has definitely no topology data."""

    SKIP = "skip"  # write nothing
    ISOLATE = "isolate"  # a unique value per node on each missing level


ISOLATED_PREFIX = "isolated-"


def isolated_value(node: str) -> str:
    """A value unique to one node, so an isolated node never looks close to another."""
    return ISOLATED_PREFIX + digest(node, 16)


def desired_from_outcome(
    profile: Profile,
    outcome: Reading | NoData,
    encoding: Encoding,
    node: str,
    on_missing: OnMissing = OnMissing.SKIP,
    *,
    keys: Mapping[str, str],
) -> Desired | None:
    """What this node's labels should be, or None for "write nothing at all".

    ``keys``: the label key of each role the source reports (``Profile.keys_for``); they
    are the agent's scope.

    - A reading: every ID is written to its role's key and encoded (raises a LabelError if
      the encoding cannot make a valid value); a role without a key is not written. The
      scope is pruned, so an owned key the reading no longer has goes away. Every full ID
      is recorded in ``source_ids`` (also for ``raw``: the annotation then lists exactly
      the keys the source set, which is simpler to read than a partial list).
    - A wanted value already on the node is claimed when no writer of ours owns it.
    - ``values`` are written as they are (checked as label values); a role in ``unknown``
      is neither written nor pruned: the read could not tell it, so its label stays.
    - A label holding a known placeholder of another labeler (``PLACEHOLDERS``) counts as
      absent: it is replaced without ``--adopt``.
    - The profile's tree label is only a default (``fill``): the planning sheet (lld/apply)
      decides tree membership, so an agent started with another --topotree-name never
      moves a node to another tree, and the two writers never rewrite each other.
    - No data with ``skip``: None. No data never removes labels set earlier.
    - No data with ``isolate``: each level without a value gets a per-node unique value
      (``fill``: levels already present are kept, no data never overwrites); nothing is
      pruned.
    """
    tree_label = profile.topology.tree_label
    tree = {tree_label: profile.topology.name} if tree_label else {}
    if isinstance(outcome, Reading):
        ids = {keys[role]: sid for role, sid in outcome.ids.items() if role in keys}
        wanted = {key: encoding.encode(key, sid) for key, sid in sorted(ids.items())}
        for role, value in outcome.values.items():
            if role in keys:
                wanted[keys[role]] = check_value(keys[role], value, hint="check the source")
        unknown = {keys[role] for role in outcome.unknown if role in keys}
        scope = frozenset(keys.values()) - set(tree) - unknown
        # claim: a value already equal (set by oci-hpc-oke's labeler, Ascend's device plugin,
        # an earlier version of ours) becomes ours, so a later change of the host is ours
        # to make rather than a conflict forever.
        return Desired(
            set=wanted,
            fill=tree,
            prune=scope,
            source_ids=ids,
            placeholders=PLACEHOLDERS,
            claim=True,
        )
    if on_missing == OnMissing.SKIP:
        return None
    fill = {key: isolated_value(node) for key in profile.level_keys}
    return Desired(fill={**fill, **tree}, placeholders=PLACEHOLDERS)


def unknown_levels(profile: Profile, outcome: Reading | NoData, keys: Mapping[str, str]) -> str:
    """Why some level of the profile is unknown in this reading; '' when none is."""
    if not isinstance(outcome, Reading):
        return ""
    levels = set(profile.level_keys)
    return "; ".join(reason for role, reason in outcome.unknown.items() if keys.get(role) in levels)


def unknown_labels(
    roles: Roles, outcome: Reading | NoData, keys: Mapping[str, str]
) -> dict[str, tuple[str, str]]:
    """The label keys in scope that ``outcome`` could not tell: key → (cause, reason). The
    cause is the source's code for it, else ``wider-unknown`` for a level under an unknown
    level, else ``missing``."""
    if not isinstance(outcome, Reading):
        return {}
    levels = roles.levels
    found: dict[str, tuple[str, str]] = {}
    for role, reason in outcome.unknown.items():
        if role not in keys:
            continue
        cause = outcome.causes.get(role)
        if cause is None:
            wider = levels[: levels.index(role)] if role in levels else ()
            cause = WIDER_UNKNOWN if any(r in outcome.unknown for r in wider) else MISSING
        found[keys[role]] = (cause, reason)
    return found


def node_is_labeled(profile: Profile, labels: Mapping[str, str], desired: Desired | None) -> bool:
    """Every level label present, and equal to the wanted value when there is one."""
    for key in profile.level_keys:
        if key not in labels or labels[key] in PLACEHOLDERS:
            return False
        if desired is not None and key in desired.set and labels[key] != desired.set[key]:
            return False
    return True


class Status(StrEnum):
    """The outcome of one reconcile."""

    LABELED = "labeled"  # labels written or already current
    NO_DATA = "no_data"  # the source has definitely none; nothing removed
    CONFLICT = "conflict"  # a value we do not own was left in place
    ERROR = "error"
    INCOMPLETE = "incomplete"  # what is known is written; a level is unknown
    WAITING = "waiting"  # no source outcome yet


@dataclass(frozen=True)
class ReconcileResult:
    """What one reconcile did. ``exit_code`` is ``--once``'s: 0 labeled or definite no
    data, 1 error (also "incomplete": what was known is written, a level is not), 3 a
    conflict was left in place."""

    status: Status
    message: str = ""
    plan: LabelPlan | None = None
    written: bool = False
    text: str = ""  # the plan as --dry-run prints it

    @property
    def exit_code(self) -> int:
        if self.status in (Status.LABELED, Status.NO_DATA):
            return Exit.OK
        if self.status == Status.CONFLICT:
            return Exit.INCOMPLETE
        return Exit.ERROR
