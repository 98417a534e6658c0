package main

// Kueue's cache, queue manager and scheduler over a fake client, set up as
// pkg/scheduler/scheduler_tas_test.go sets them up.

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	tasindexer "sigs.k8s.io/kueue/pkg/controller/tas/indexer"
	"sigs.k8s.io/kueue/pkg/scheduler"
	preemptexpectations "sigs.k8s.io/kueue/pkg/scheduler/preemption/expectations"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing"
	"sigs.k8s.io/kueue/pkg/workload"
)

type env struct {
	client   client.Client
	cache    *schdcache.Cache
	queues   *qcache.Manager
	clock    *testingclock.FakeClock
	recorder *recorder
	log      logr.Logger
}

func newEnv(ctx context.Context, objs *objects) (*env, error) {
	log := logr.Discard()
	namespaces := make([]string, 0, len(objs.namespaces))
	for ns := range objs.namespaces {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	builder := utiltesting.NewClientBuilder().
		WithLists(
			&kueue.WorkloadList{Items: objs.workloads},
			&kueue.TopologyList{Items: objs.topologies},
			&corev1.PodList{Items: objs.pods},
			&corev1.NodeList{Items: objs.nodes},
			&kueue.LocalQueueList{Items: objs.localQs},
			&kueue.ResourceFlavorList{Items: objs.flavors}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: utiltesting.TreatSSAAsStrategicMerge}).
		WithStatusSubresource(&kueue.Workload{}, &kueue.ClusterQueue{}, &kueue.LocalQueue{}, &corev1.Pod{})
	for _, ns := range namespaces {
		builder = builder.WithObjects(utiltesting.MakeNamespace(ns))
	}
	if err := tasindexer.SetupIndexes(ctx, utiltesting.AsIndexer(builder)); err != nil {
		return nil, err
	}
	cl := builder.Build()
	cache := schdcache.New(cl)
	clk := testingclock.NewFakeClock(time.Now())
	queues := qcache.NewManagerForUnitTests(cl, cache, qcache.WithClock(clk))
	e := &env{client: cl, cache: cache, queues: queues, clock: clk, recorder: &recorder{}, log: log}

	topologies := map[string]*kueue.Topology{}
	for i := range objs.topologies {
		topologies[objs.topologies[i].Name] = &objs.topologies[i]
	}
	for i := range objs.nodes {
		cache.TASCache().SyncNode(&objs.nodes[i])
	}
	for i := range objs.flavors {
		flavor := &objs.flavors[i]
		cache.AddOrUpdateResourceFlavor(log, flavor)
		if flavor.Spec.TopologyName != nil {
			if t, ok := topologies[string(*flavor.Spec.TopologyName)]; ok {
				cache.AddOrUpdateTopology(log, t)
			}
		}
	}
	for i := range objs.clusterQs {
		cq := &objs.clusterQs[i]
		if err := cache.AddClusterQueue(ctx, cq); err != nil {
			return nil, fmt.Errorf("ClusterQueue %s: %w", cq.Name, err)
		}
		if err := queues.AddClusterQueue(ctx, cq); err != nil {
			return nil, fmt.Errorf("ClusterQueue %s: %w", cq.Name, err)
		}
		if err := cl.Create(ctx, cq.DeepCopy()); err != nil {
			return nil, fmt.Errorf("ClusterQueue %s: %w", cq.Name, err)
		}
	}
	for i := range objs.localQs {
		lq := &objs.localQs[i]
		if err := queues.AddLocalQueue(ctx, lq); err != nil {
			return nil, fmt.Errorf("LocalQueue %s/%s: %w", lq.Namespace, lq.Name, err)
		}
	}
	for i := range objs.pods {
		cache.TASCache().Update(&objs.pods[i], log)
	}
	// Admitted (quota-reserved) Workloads hold their usage in the cache, as in Kueue.
	for i := range objs.workloads {
		if workload.HasQuotaReservation(&objs.workloads[i]) {
			cache.AddOrUpdateWorkload(log, &objs.workloads[i])
		}
	}
	return e, nil
}

// start runs Kueue's scheduler loop until ctx ends.
func (e *env) start(ctx context.Context) error {
	s := scheduler.New(e.queues, e.cache, e.client, e.recorder, scheduler.WithPreemptionExpectations(preemptexpectations.New()))
	go e.queues.CleanUpOnContext(ctx)
	return s.Start(ctx)
}

// waitFor polls the Workload in the fake client until done says Kueue has decided.
func (e *env) waitFor(ctx context.Context, key client.ObjectKey, done func(*kueue.Workload) bool) (*kueue.Workload, error) {
	for {
		var wl kueue.Workload
		if err := e.client.Get(ctx, key, &wl); err != nil {
			return nil, err
		}
		if done(&wl) {
			return &wl, nil
		}
		select {
		case <-ctx.Done():
			return &wl, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func condition(wl *kueue.Workload, kind string) *metav1.Condition {
	for i := range wl.Status.Conditions {
		if wl.Status.Conditions[i].Type == kind {
			return &wl.Status.Conditions[i]
		}
	}
	return nil
}

// recorder keeps the events Kueue records, for the oracle to read while the scheduler runs.
type recorder struct {
	mu     sync.Mutex
	events []utiltesting.EventRecord
}

var _ events.EventRecorder = (*recorder)(nil)

func (r *recorder) Eventf(regarding runtime.Object, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := types.NamespacedName{}
	if obj, ok := regarding.(client.Object); ok {
		key = client.ObjectKeyFromObject(obj)
	}
	r.events = append(r.events, utiltesting.EventRecord{Key: key, EventType: eventtype, Reason: reason, Message: fmt.Sprintf(note, args...)})
}

func (r *recorder) has(key types.NamespacedName, reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.Key == key && e.Reason == reason {
			return true
		}
	}
	return false
}
