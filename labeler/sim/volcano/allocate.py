"""The ``allocate`` action for one job (``pkg/scheduler/actions/allocate/allocate.go``).

A job with a hard network topology or sub-groups (after the session turned soft mode into
hard mode with the cluster-top tier, that is every job with a ``networkTopology``) is
placed HyperNode by HyperNode: the gradients from the lowest tier up; in each gradient every
HyperNode is tried as a dry run, each sub-job inside it in its own HyperNodes (its own
gradients); the HyperNodes where the job would be ready (or pipelined) are kept, the one
whose sub-jobs scored highest wins, and the first gradient with a solution ends the search.
Other jobs are placed task by task over the whole cluster. Either way the placement is
committed only when the gang is ready; a job with tasks left over (``minAvailable`` below
the replicas) goes round again.

Inside a HyperNode, tasks are taken in order; a task whose role already failed is skipped;
when a task fits no node, the job goes on only while its gang can still be complete
(``NeedContinueAllocating``). A task takes the best-scored node among those where it fits
now, else among those where it fits once releasing pods are gone (pipelined).
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from labeler.core.volcano import TopologyMode
from labeler.sim.volcano import resources as R
from labeler.sim.volcano.ascend import NPU, MultiLevel
from labeler.sim.volcano.cycle import Cycle
from labeler.sim.volcano.hypernodes import TOP
from labeler.sim.volcano.model import PENDING
from labeler.sim.volcano.predicates import FitErrors, fit_reasons, shape_key
from labeler.sim.volcano.scoring import best_of, binpack, nodeorder
from labeler.sim.volcano.session import JobState, NodeState, Op, Statement, SubJob, TaskState

Saved = list[tuple[str, TaskState, NodeState]]
Failed = dict[str, dict[str, list[str]]]  # role -> node -> the reasons it failed there


@dataclass
class Worksheet:
    """Pending tasks per sub-job, and the sub-jobs still to place (``JobWorksheet``)."""

    subjobs: list[SubJob]
    tasks: dict[str, deque[TaskState]]
    required: frozenset[str] = frozenset()

    def clone(self) -> Worksheet:
        return Worksheet(
            list(self.subjobs), {k: deque(v) for k, v in self.tasks.items()}, self.required
        )

    def empty(self) -> bool:
        return not self.subjobs

    def pop(self, cy: Cycle) -> SubJob:
        def cmp(a: SubJob, b: SubJob) -> int:
            ra, rb = a.uid in self.required, b.uid in self.required
            return (-1 if ra else 1) if ra != rb else cy.subjob_cmp(a, b)

        best = min(self.subjobs, key=functools.cmp_to_key(cmp))
        self.subjobs.remove(best)
        return best


def organize(cy: Cycle, job: JobState) -> Worksheet:
    """``organizeJobWorksheet``."""
    ready: dict[str, int] = {}
    waiting: list[SubJob] = []
    for sj in job.subjobs.values():
        if cy.subjob_ready(job, sj):
            ready[sj.gid] = ready.get(sj.gid, 0) + 1
        else:
            waiting.append(sj)
    waiting.sort(key=functools.cmp_to_key(cy.subjob_cmp))
    required = set()
    for sj in waiting:
        if ready.get(sj.gid, 0) < job.min_subjobs.get(sj.gid, 0):
            required.add(sj.uid)
            ready[sj.gid] = ready.get(sj.gid, 0) + 1
    ws = Worksheet([], {}, frozenset(required))
    for sj in job.subjobs.values():
        tasks = [
            t for t in sj.tasks if t.status == PENDING and not t.task.gated and not t.best_effort
        ]
        if tasks:
            ws.subjobs.append(sj)
            ws.tasks[sj.uid] = deque(cy.sort_tasks(tasks))
    return ws


MIN_NODES_TO_FIND, MIN_PERCENTAGE = 100, 5  # the scheduler's defaults


def nodes_to_find(total: int) -> int:
    """``CalculateNumOfFeasibleNodesToFind`` with Volcano's default options."""
    if total <= MIN_NODES_TO_FIND:
        return total
    percentage = max(50 - total // 125, MIN_PERCENTAGE)
    return max(total * percentage // 100, MIN_NODES_TO_FIND)


def _hard_tier(job: JobState) -> int | None:
    nt = job.network_topology
    return nt.highest_tier if nt is not None and nt.mode is TopologyMode.HARD else None


@dataclass
class Allocator:
    cy: Cycle
    job: JobState
    first_fit: bool = False  # counting copies: the first node that fits, no scores
    multilevel: MultiLevel | None = None  # ascend-for-volcano's rules for an Ascend job
    decisions: dict[str, dict[str, str]] = field(default_factory=dict)
    committed: list[Op] = field(default_factory=list)
    waiting: list[Op] = field(default_factory=list)  # pipelined: placed, not committed
    notes: list[str] = field(default_factory=list)
    cursor: dict[object, int] = field(default_factory=dict)  # first fit: where to go on

    def statement(self) -> Statement:
        return Statement(self.job, [self.cy.on_place])

    # --- the action --------------------------------------------------------------------

    def run(self, root: str = TOP, highest: int | None = None) -> None:
        """Place the job until it is ready and nothing is left (or nothing more fits)."""
        ws = organize(self.cy, self.job)
        while not ws.empty():
            if self.cy.overused():
                self.notes.append("the queue is overused: its deserved share is all allocated")
                return
            if self._by_hypernode():
                stmt = self.for_job(ws, root, highest)
                if stmt is None or not self._ready(stmt):
                    return
                self._commit(stmt)
                if ws.empty():
                    return
            else:
                sj = self.job.default_subjob()
                tasks = ws.tasks.get(sj.uid) if sj is not None else None
                if sj is None or tasks is None:
                    return
                stmt = self.tasks(sj, tasks, root)
                if stmt is None or not self._ready(stmt):
                    return
                self._commit(stmt)
                if not tasks:
                    return

    def _by_hypernode(self) -> bool:
        """``ContainsHardTopology`` or ``ContainsSubJobPolicy``."""
        return (
            _hard_tier(self.job) is not None
            or any(sj.hard_tier() is not None for sj in self.job.subjobs.values())
            or self.job.has_subgroup_policy()
        )

    def _ready(self, stmt: Statement) -> bool:
        """Commit only a ready gang; a pipelined one keeps its places uncommitted."""
        if self.cy.job_ready(self.job):
            return True
        self.waiting = list(stmt.ops)
        return False

    def _commit(self, stmt: Statement) -> None:
        self.committed += stmt.commit()
        choice = self.decisions.pop("", None)
        if choice is None:
            return
        tree = self.cy.tree
        best = choice.pop("", "")
        if best:
            self.job.allocated_hypernode = tree.lca(self.job.allocated_hypernode, best)
        for uid, hn in choice.items():
            sj = self.job.subjobs[uid]
            sj.allocated_hypernode = tree.lca(sj.allocated_hypernode, hn)

    # --- HyperNode by HyperNode ----------------------------------------------------------

    def for_job(self, ws: Worksheet, root: str, highest: int | None) -> Statement | None:
        """``allocateForJob``."""
        job, cy = self.job, self.cy
        saved_hn = {sj.uid: sj.allocated_hypernode for sj in ws.subjobs}
        tier = highest if highest is not None else _hard_tier(job)
        grads = cy.gradients(root, tier, job.allocated_hypernode, job.podgroup.min_resources or {})
        if isinstance(grads, str):
            self.notes.append(grads)
            return None
        for gradient in grads:
            found: dict[str, tuple[Saved, Worksheet, float, dict[str, str]]] = {}
            for hn in gradient:
                job.reset_fit_errors()
                copy = ws.clone()
                stmts: list[Statement] = []
                score = 0.0
                picked: dict[str, str] = {}
                while not copy.empty():
                    sj = copy.pop(cy)
                    stmt, s = self.for_subjob(sj, copy.tasks[sj.uid], hn, picked)
                    if stmt is not None and stmt.ops:
                        stmts.append(stmt)
                        score += s
                        if copy.tasks[sj.uid]:
                            copy.subjobs.append(sj)
                        if cy.job_ready(job):
                            break
                for sj in ws.subjobs:
                    sj.allocated_hypernode = saved_hn[sj.uid]
                ops = [o for st in stmts for o in st.saved()]
                if ops and (cy.job_ready(job) or cy.job_pipelined(job)):
                    found[hn] = (ops, copy, score, picked)
                for st in stmts:
                    st.discard()
            if not found:
                continue
            best = best_of({h: v[2] for h, v in found.items()}, gradient)
            ops, copy, _, picked = found[best]
            stmt = self.statement()
            stmt.replay(ops)
            ws.subjobs, ws.tasks = copy.subjobs, copy.tasks
            self.decisions[""] = {"": best, **picked}
            return stmt
        return None

    def for_subjob(
        self, sj: SubJob, tasks: deque[TaskState], hn_for_job: str, picked: dict[str, str]
    ) -> tuple[Statement | None, float]:
        """``allocateForSubJob``: the sub-job in the best HyperNode of its lowest gradient."""
        job, cy = self.job, self.cy
        need = R.total(t.task.requests for t in sj.tasks if t.status == PENDING)
        grads = cy.gradients(hn_for_job, sj.hard_tier(), sj.allocated_hypernode, need)
        if isinstance(grads, str):
            self.notes.append(f"sub-group {sj.uid}: {grads}")
            return None, 0.0
        for gradient in grads:
            found: dict[str, tuple[Saved, deque[TaskState]]] = {}
            for hn in gradient:
                job.reset_fit_errors(sj.uid)
                copy = deque(tasks)
                stmt = self.tasks(sj, copy, hn)
                if stmt is not None and stmt.ops:
                    found[hn] = (stmt.saved(), copy)
                    stmt.discard()
            if not found:
                continue
            scores = self._hypernode_scores(sj, list(found))
            best = best_of(scores, gradient)
            stmt = self.statement()
            stmt.replay(found[best][0])
            sj.allocated_hypernode = cy.tree.lca(sj.allocated_hypernode, best)
            tasks.clear()
            tasks.extend(found[best][1])
            picked[sj.uid] = sj.allocated_hypernode
            return stmt, scores[best]
        return None, 0.0

    def _hypernode_scores(self, sj: SubJob, hns: Sequence[str]) -> dict[str, float]:
        s = self.cy.hn_scores
        if s is None or not self.cy.weights.hypernode_order:
            return {h: 0.0 for h in hns}
        request = R.total(t.task.requests for t in sj.tasks)
        return s.order(request, hns, [(t.name, t.node) for t in sj.tasks])

    # --- task by task --------------------------------------------------------------------

    def tasks(self, sj: SubJob, tasks: deque[TaskState], hn: str) -> Statement | None:
        """``allocateResourcesForTasks``: place ``sj``'s tasks on the nodes of ``hn``."""
        job, cy = self.job, self.cy
        nodes = cy.nodes_of(hn)
        if not nodes:
            return None
        stmt = self.statement()
        allocated = sj.allocated_hypernode
        failed: Failed = {}  # the predicate error cache of this call, by role
        if self.multilevel is not None:
            self.multilevel.chosen = None  # chosen again among this HyperNode's nodes
        while tasks:
            ts = tasks.popleft()
            if not cy.allocatable(ts):
                continue
            role = ts.task.role
            if role and role in job.failed_roles(sj.uid):
                job.fit_errors[ts.name] = FitErrors(
                    err=f"Task {ts.name} with role spec {role} has already predicated failed, skip"
                )
                continue
            fits, errors = self._feasible(ts, nodes, failed)
            fits = self._ascend(ts, fits, errors)
            if not fits:
                if hn != TOP:
                    errors.hypernode = hn
                job.fit_errors[ts.name] = errors
                if job.need_continue(sj.uid):
                    continue
                break
            node = fits[0] if self.first_fit else self._best(ts, sj, fits, allocated)
            self._place(stmt, ts, node)
            if sj.network_topology is not None:
                leaf = cy.tree.leaf_of.get(node.name, "")
                allocated = cy.tree.lca(leaf, allocated) if leaf else allocated
            if cy.subjob_ready(job, sj):
                break
        if cy.subjob_ready(job, sj) or cy.subjob_pipelined(job, sj):
            return stmt
        stmt.discard()
        return None

    def _feasible(
        self, ts: TaskState, nodes: Sequence[NodeState], failed: Failed
    ) -> tuple[list[NodeState], FitErrors]:
        """``PredicateNodes``: nodes where the task fits now or once releasing ends.

        Like Volcano, the search starts where the previous one stopped and ends once enough
        nodes are found (``percentageOfNodesToFind``): on a big cluster only those are
        scored. Counting copies takes the first node that fits, remembering per task shape
        where the search got to (nodes only fill up while counting).

        Volcano's predicate error cache: once a task of a role (``volcano.sh/task-spec``)
        failed on a node, later tasks of that role in the same HyperNode attempt are
        refused there with the same reasons, unchecked, even when their own nodeSelector,
        tolerations or requests differ; tasks without a role are always checked."""
        cy, task = self.cy, ts.task
        role = task.role if not self.first_fit else ""
        cached = failed.get(role) if role else None
        switches, static = cy.static.switches, cy.static.for_task(task)
        order = R.order(task.requests)
        fits: list[NodeState] = []
        errors = FitErrors()
        total = len(nodes)
        if self.first_fit:
            key = (id(nodes), order, shape_key(task))
            start, want = self.cursor.get(key, 0), 1
            span = range(start, total)
        else:
            start, want = cy.last_index % total, nodes_to_find(total)
            span = range(start, start + total)
        seen = 0
        for i in span:
            ns = nodes[i % total]
            seen += 1
            if cached is not None and ns.name in cached:
                errors.nodes[ns.name] = cached[ns.name]
                continue
            short = ns.short(order)
            reason = static(ns.node)
            if short is not None:
                errors.nodes[ns.name] = [f"Insufficient {short}"]
            elif reason is not None or (switches.enabled and ns.pods >= ns.max_pods):
                errors.nodes[ns.name] = fit_reasons(
                    task.requests, ns.future_idle(), ns.pods < ns.max_pods, reason, switches
                )
            else:
                fits.append(ns)
                if len(fits) >= want:
                    break
                continue
            if role:
                failed.setdefault(role, {})[ns.name] = errors.nodes[ns.name]
        if self.first_fit:
            self.cursor[key] = start + seen - (1 if fits else 0)
        else:
            cy.last_index = (start + seen) % total
        return fits, errors

    def _ascend(self, ts: TaskState, fits: list[NodeState], errors: FitErrors) -> list[NodeState]:
        """An Ascend multi-level job's NPU pods go to the nodes ascend-for-volcano selects
        (its node check first, then the level-by-level selection among those left)."""
        ml, want = self.multilevel, ts.task.requests.get(NPU, 0)
        if ml is None or want <= 0:
            return fits
        ok = []
        for ns in fits:
            why = ml.node_reason(want, ns.node, ns.idle.get(NPU, 0))
            if why is None:
                ok.append(ns)
            else:
                errors.nodes[ns.name] = [why]
        if ok and ml.chosen is None:
            got = ml.choose([ns.node for ns in ok])
            if isinstance(got, str):
                errors.err = f"ascend-for-volcano: select nodes failed: {got}"
                return []
            ml.chosen = got
        return [ns for ns in ok if ml.chosen is not None and ns.name in ml.chosen]

    def _best(self, ts: TaskState, sj: SubJob, fits: list[NodeState], allocated: str) -> NodeState:
        """``prioritizeNodes``: nodes with idle room first, then those with future room."""
        req = ts.task.requests
        now = [n for n in fits if R.less_equal(req, n.idle)]
        later = [n for n in fits if not R.less_equal(req, n.idle)]
        group = now or later
        if len(group) == 1:
            return group[0]
        scores = self._scores(ts, sj, group, allocated)
        return group[[n.name for n in group].index(best_of(scores, [n.name for n in group]))]

    def _scores(
        self, ts: TaskState, sj: SubJob, nodes: list[NodeState], allocated: str
    ) -> dict[str, float]:
        w, task = self.cy.weights, ts.task
        out = {n.name: 0.0 for n in nodes}
        if w.binpack:
            for n in nodes:
                out[n.name] += binpack(task, n, w.binpack_resources, w.binpack)
        if w.least or w.most or w.balanced or w.node_affinity or w.taints:
            for k, v in nodeorder(task, nodes, w).items():
                out[k] += v
        s = self.cy.hn_scores
        if s is not None and w.nta_nodes:
            if sj.network_topology is not None:
                tasks = [(t.name, t.node) for t in sj.tasks]
                for k, v in s.network_aware(allocated, nodes, tasks).items():
                    out[k] += v
            else:
                for n in nodes:
                    out[n.name] += s.normal_pod(task, n.name)
        return out

    def _place(self, stmt: Statement, ts: TaskState, ns: NodeState) -> None:
        if R.less_equal(ts.task.requests, ns.idle):
            stmt.allocate(ts, ns)
        elif R.less_equal(ts.task.requests, ns.future_idle()):
            stmt.pipeline(ts, ns)
