package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"sigs.k8s.io/yaml"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/actions/allocate"
	"volcano.sh/volcano/pkg/scheduler/actions/enqueue"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/cache"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/metrics"
	"volcano.sh/volcano/pkg/scheduler/plugins/binpack"
	"volcano.sh/volcano/pkg/scheduler/plugins/capacity"
	"volcano.sh/volcano/pkg/scheduler/plugins/conformance"
	"volcano.sh/volcano/pkg/scheduler/plugins/drf"
	"volcano.sh/volcano/pkg/scheduler/plugins/gang"
	nta "volcano.sh/volcano/pkg/scheduler/plugins/network-topology-aware"
	"volcano.sh/volcano/pkg/scheduler/plugins/nodeorder"
	"volcano.sh/volcano/pkg/scheduler/plugins/overcommit"
	"volcano.sh/volcano/pkg/scheduler/plugins/predicates"
	"volcano.sh/volcano/pkg/scheduler/plugins/priority"
	"volcano.sh/volcano/pkg/scheduler/plugins/proportion"
	"volcano.sh/volcano/pkg/scheduler/util"
)

const schedulerName = "volcano"

// Result is the oracle's answer (tests/oracles/README.md, "Volcano").
type Result struct {
	Version    string            `json:"version"`
	PodGroup   string            `json:"podGroup"`
	Binds      map[string]string `json:"binds"`
	Pipelined  map[string]string `json:"pipelined"`
	Phase      string            `json:"phase"`
	Conditions []Condition       `json:"conditions"`
	Actions    []string          `json:"actions"`
	Skipped    []string          `json:"skippedActions"`
	Plugins    []string          `json:"unknownPlugins"`
	// For a Job: the PodGroup and pods Volcano's webhooks and job controller made of it.
	Converted *Converted `json:"converted,omitempty"`
	// For a Job the admission webhooks refuse: their message (no session is run).
	Refused string `json:"refused,omitempty"`
}

// Condition is one PodGroup condition as the session left it.
type Condition struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

var builders = map[string]framework.PluginBuilder{
	binpack.PluginName:     binpack.New,
	capacity.PluginName:    capacity.New,
	conformance.PluginName: conformance.New,
	drf.PluginName:         drf.New,
	gang.PluginName:        gang.New,
	nta.PluginName:         nta.New,
	nodeorder.PluginName:   nodeorder.New,
	overcommit.PluginName:  overcommit.New,
	predicates.PluginName:  predicates.New,
	priority.PluginName:    priority.New,
	proportion.PluginName:  proportion.New,
}

// parseConf reads the configuration as the scheduler's UnmarshalSchedulerConf does (the
// plugin switches left out default to on), keeping only the actions advise models.
func parseConf(text string) (actions []framework.Action, skipped []string, tiers []conf.Tier, cfgs []conf.Configuration, unknown []string, err error) {
	sc := &conf.SchedulerConfiguration{}
	if err = yaml.Unmarshal([]byte(text), sc); err != nil {
		return
	}
	for i := range sc.Tiers {
		for j := range sc.Tiers[i].Plugins {
			opt := &sc.Tiers[i].Plugins[j]
			for _, f := range []**bool{&opt.EnabledJobOrder, &opt.EnabledJobReady,
				&opt.EnabledJobPipelined, &opt.EnabledJobEnqueued, &opt.EnabledTaskOrder,
				&opt.EnabledPreemptable, &opt.EnabledReclaimable, &opt.EnablePreemptive,
				&opt.EnabledQueueOrder, &opt.EnabledPredicate, &opt.EnabledBestNode,
				&opt.EnabledNodeOrder, &opt.EnabledTargetJob, &opt.EnabledReservedNodes,
				&opt.EnabledVictim, &opt.EnabledJobStarving, &opt.EnabledOverused,
				&opt.EnabledAllocatable, &opt.EnabledHyperNodeOrder, &opt.EnabledSubJobReady,
				&opt.EnabledSubJobPipelined, &opt.EnabledSubJobOrder, &opt.EnabledHyperNodeGradient} {
				if *f == nil {
					on := true
					*f = &on
				}
			}
			if _, ok := builders[opt.Name]; !ok {
				unknown = append(unknown, opt.Name)
			}
		}
	}
	tiers, cfgs = sc.Tiers, sc.Configurations
	for _, name := range strings.Split(sc.Actions, ",") {
		switch name = strings.TrimSpace(name); name {
		case "enqueue":
			actions = append(actions, enqueue.New())
		case "allocate":
			actions = append(actions, allocate.New())
		case "":
		default:
			skipped = append(skipped, name)
		}
	}
	return
}

func key(m metav1.ObjectMeta) string { return m.Namespace + "/" + m.Name }

func newCache(in *inputs) (*cache.SchedulerCache, chan struct{}, error) {
	binder := util.NewFakeBinder(100000)
	sc := cache.NewCustomMockSchedulerCache(schedulerName, binder, util.NewFakeEvictor(100000),
		&util.FakeStatusUpdater{}, nil, nil)
	// Nodes go through the API so that the node lister HyperNode members resolve against
	// (regexMatch, labelMatch) sees them, as in the running scheduler.
	for _, n := range in.nodes {
		if _, err := sc.Client().CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			return nil, nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	// Only the Kubernetes informers are started (the node lister HyperNode members resolve
	// against, the listers the predicates' Kubernetes plugins read). Volcano's own informers
	// are not: every Volcano object is handed to the cache directly, as the scheduler's
	// unit tests do, and the binds are read from the session, so no cache worker is needed.
	stop := make(chan struct{})
	sc.SharedInformerFactory().Start(stop)
	sc.SharedInformerFactory().WaitForCacheSync(stop)
	for _, n := range in.nodes {
		if err := sc.AddOrUpdateNode(n); err != nil {
			return nil, nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	pods := map[string]*v1.Pod{}
	var order []string
	for _, p := range in.pods {
		k := key(p.ObjectMeta)
		if _, seen := pods[k]; !seen {
			order = append(order, k)
		}
		pods[k] = p
	}
	for _, k := range order {
		p := pods[k]
		if p.UID == "" {
			p.UID = types.UID("uid-" + k)
		}
		sc.AddPod(p)
	}
	groups := map[string]*vcv1beta1.PodGroup{}
	for _, pg := range in.podGroups {
		if _, seen := groups[key(pg.ObjectMeta)]; seen && pg != in.advised {
			continue
		}
		groups[key(pg.ObjectMeta)] = pg
	}
	for _, pg := range groups {
		sc.AddPodGroupV1beta1(pg)
	}
	hasDefault := false
	for _, q := range in.queues {
		hasDefault = hasDefault || q.Name == "default"
		sc.AddQueueV1beta1(q)
	}
	if !hasDefault { // the controller always creates it
		sc.AddQueueV1beta1(defaultQueue())
	}
	for _, hn := range in.hyperNodes {
		if err := sc.HyperNodesInfo.UpdateHyperNode(hn); err != nil {
			return nil, nil, fmt.Errorf("HyperNode %s: %w", hn.Name, err)
		}
	}
	return sc, stop, nil
}

func runSession(in *inputs, tb *tiebreak) (*Result, error) {
	// The Kubernetes plugins the predicates run record metrics; the scheduler registers them
	// at start-up.
	metrics.InitKubeSchedulerRelatedMetrics()
	actions, skipped, tiers, cfgs, unknown, err := parseConf(in.confText)
	if err != nil {
		return nil, fmt.Errorf("scheduler configuration: %w", err)
	}
	for name, b := range builders {
		framework.RegisterPluginBuilder(name, b)
	}
	tiers = withTiebreak(tb, tiers)
	sc, stop, err := newCache(in)
	if err != nil {
		return nil, err
	}
	defer close(stop)
	conf.EnabledActionMap = map[string]bool{}
	res := &Result{Version: volcanoVersion, PodGroup: key(in.advised.ObjectMeta),
		Binds: map[string]string{}, Pipelined: map[string]string{}, Skipped: skipped,
		Plugins: unknown, Actions: []string{}, Conditions: []Condition{}}
	for _, a := range actions {
		conf.EnabledActionMap[a.Name()] = true
		res.Actions = append(res.Actions, a.Name())
	}
	ssn := framework.OpenSession(sc, tiers, cfgs)
	for _, a := range actions {
		a.Execute(ssn)
	}
	job := ssn.Jobs[api.JobID(res.PodGroup)]
	if job != nil {
		for _, t := range job.Tasks {
			k := t.Namespace + "/" + t.Name
			switch {
			case t.Status == api.Pipelined:
				res.Pipelined[k] = t.NodeName
			case t.Status == api.Allocated || t.Status == api.Binding || t.Status == api.Bound:
				res.Binds[k] = t.NodeName
			}
		}
	}
	framework.CloseSession(ssn)
	if job == nil {
		res.Phase = "NotInSession"
		return res, nil
	}
	res.Phase = string(job.PodGroup.Status.Phase)
	conds := job.PodGroup.Status.Conditions
	sort.SliceStable(conds, func(i, j int) bool { return conds[i].Type < conds[j].Type })
	for _, c := range conds {
		res.Conditions = append(res.Conditions, Condition{Type: string(c.Type), Reason: c.Reason, Message: c.Message})
	}
	return res, nil
}
