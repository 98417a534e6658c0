package main

// The two questions: place a pending Workload; or, for an admitted one, fail nodes and
// let Kueue's node controller and scheduler react.

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/controller/tas"
	"sigs.k8s.io/kueue/pkg/util/roletracker"
	utiltas "sigs.k8s.io/kueue/pkg/util/tas"
	"sigs.k8s.io/kueue/pkg/workload"
)

// Kueue's TAS node controller is unexported; the manager builds it with
// newNodeReconciler and calls its Reconcile for every Node event. We call the same two
// functions by their linker names (the receiver is a pointer, passed as the first
// argument), so the node controller's own code decides which nodes have failed.
//
//go:linkname newNodeReconciler sigs.k8s.io/kueue/pkg/controller/tas.newNodeReconciler
func newNodeReconciler(c client.Client, recorder events.EventRecorder, cache *schdcache.Cache, rt *roletracker.RoleTracker, opts ...tas.NodeReconcilerOption) unsafe.Pointer

//go:linkname nodeReconcile sigs.k8s.io/kueue/pkg/controller/tas.(*nodeReconciler).Reconcile
func nodeReconcile(r unsafe.Pointer, ctx context.Context, req ctrl.Request) (ctrl.Result, error)

func place(ctx context.Context, objs *objects, scheme *runtime.Scheme, path string) (*result, error) {
	pending := &objects{namespaces: objs.namespaces}
	if err := readObjects(scheme, path, pending); err != nil {
		return nil, err
	}
	if len(pending.workloads) != 1 {
		return nil, fmt.Errorf("%s: give exactly one Workload (found %d)", path, len(pending.workloads))
	}
	wl := pending.workloads[0]
	objs.workloads = append(objs.workloads, wl)
	e, err := newEnv(ctx, objs)
	if err != nil {
		return nil, err
	}
	if err := e.start(ctx); err != nil {
		return nil, err
	}
	got, err := e.waitFor(ctx, client.ObjectKeyFromObject(&wl), func(w *kueue.Workload) bool {
		return workload.HasQuotaReservation(w) || condition(w, kueue.WorkloadQuotaReserved) != nil
	})
	if err != nil {
		return nil, fmt.Errorf("no decision from Kueue for %s/%s: %w", wl.Namespace, wl.Name, err)
	}
	r := describe(got)
	if workload.HasQuotaReservation(got) {
		r.Outcome = "admitted"
	} else {
		r.Outcome = "pending"
		r.Message = condition(got, kueue.WorkloadQuotaReserved).Message
	}
	return r, nil
}

func failNodes(ctx context.Context, objs *objects, admitted string, failed []string) (*result, error) {
	ns, name, ok := strings.Cut(admitted, "/")
	if !ok {
		return nil, fmt.Errorf("--workload %q: give NS/NAME", admitted)
	}
	key := types.NamespacedName{Namespace: ns, Name: name}
	var target *kueue.Workload
	for i := range objs.workloads {
		if objs.workloads[i].Namespace == ns && objs.workloads[i].Name == name {
			target = &objs.workloads[i]
		}
	}
	if target == nil || !workload.IsAdmitted(target) {
		return nil, fmt.Errorf("--workload %s: no admitted Workload of that name in the snapshot", admitted)
	}
	gone := map[string]bool{}
	for _, n := range failed {
		gone[n] = true
	}
	kept := objs.nodes[:0]
	for _, n := range objs.nodes {
		if !gone[n.Name] {
			kept = append(kept, n)
		}
	}
	objs.nodes = kept
	e, err := newEnv(ctx, objs)
	if err != nil {
		return nil, err
	}
	// The node controller reconciles every node the assignment names, in the
	// assignment's order, then each failed node not in it.
	rec := newNodeReconciler(e.client, e.recorder, e.cache, nil)
	for _, node := range assignedNodes(target, failed) {
		if _, err := nodeReconcile(rec, ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: node}}); err != nil {
			return nil, fmt.Errorf("node controller, node %s: %w", node, err)
		}
	}
	var wl kueue.Workload
	if err := e.client.Get(ctx, key, &wl); err != nil {
		return nil, err
	}
	recorded := workload.UnhealthyNodeNames(&wl)
	if ev := condition(&wl, kueue.WorkloadEvicted); ev != nil && ev.Status == "True" {
		r := describe(&wl)
		r.Outcome, r.Message, r.FailedNodes = "evicted", ev.Message, recorded
		return r, nil
	}
	if len(recorded) == 0 {
		r := describe(&wl)
		r.Outcome = "unaffected"
		return r, nil
	}
	// The Workload controller queues the second pass when unhealthyNodes changes.
	e.cache.AddOrUpdateWorkload(e.log, &wl)
	if !e.queues.QueueSecondPassIfNeeded(ctx, &wl, 0) {
		r := describe(&wl)
		r.Outcome, r.FailedNodes = "waiting", recorded
		return r, nil
	}
	e.clock.Step(time.Minute)
	before := wl.ResourceVersion
	if err := e.start(ctx); err != nil {
		return nil, err
	}
	// The scheduler either writes the Workload (re-admitted, kept, evicted) or, with no
	// replacement and without fail-fast, queues it for another second pass and says so in
	// a SecondPassFailed event, writing nothing.
	got, err := e.waitFor(ctx, key, func(w *kueue.Workload) bool {
		return w.ResourceVersion != before || e.recorder.has(key, "SecondPassFailed")
	})
	if err != nil {
		return nil, fmt.Errorf("no decision from Kueue for %s: %w", admitted, err)
	}
	r := describe(got)
	r.FailedNodes = recorded
	// The fake client merges the scheduler's server-side apply as a strategic merge, so
	// status.unhealthyNodes, which the apply leaves out, stays in it; the re-admission is
	// read from the new assignment instead (the same one when the Workload is kept).
	switch ev := condition(got, kueue.WorkloadEvicted); {
	case ev != nil && ev.Status == "True":
		r.Outcome, r.Message = "evicted", ev.Message
	case got.ResourceVersion != before:
		r.Outcome = "replaced"
	default:
		r.Outcome = "waiting"
	}
	return r, nil
}

// assignedNodes lists the lowest-level values of the Workload's topology assignments
// (node names where the lowest level is the hostname), then the failed nodes not among them.
func assignedNodes(wl *kueue.Workload, failed []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, psa := range wl.Status.Admission.PodSetAssignments {
		if psa.TopologyAssignment == nil {
			continue
		}
		for v := range utiltas.LowestLevelValues(psa.TopologyAssignment) {
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	for _, n := range failed {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
