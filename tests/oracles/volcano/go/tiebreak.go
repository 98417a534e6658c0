package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"

	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

// tiebreakName is the oracle's own plugin, in a tier after the configuration's.
const tiebreakName = "oracle-tiebreak"

// hyperNodeNudge is far below any difference between two plugin scores: it only orders
// HyperNodes whose scores are equal.
const hyperNodeNudge = 1e-6

// tiebreak makes Volcano's random choices the ones advise made, where advise's choice is
// one Volcano could make (tests/oracles/README.md, "Volcano"). Where several nodes share the
// best score, Volcano picks one at random (util.SelectBestNodeAndScore) unless a plugin's
// BestNodeFn picks. This one knows every node advise picked for the pod and in which
// HyperNode's attempt (dry runs of HyperNodes it did not keep included): it takes the pick
// of the narrowest such HyperNode that holds all the nodes Volcano scored (the latest
// first), when it is among the best; else the node advise placed the pod on, if among the
// best; and otherwise leaves the pick to Volcano. HyperNodes of equal score are picked at
// random too (util.SelectBestHyperNodeAndScore, and a map walk for the job's HyperNode): a
// HyperNode score below a millionth for advise's pods on its nodes, counting only the
// sub-job's pods still pending, the earliest placed weighing most, orders only those that
// tie.
type tiebreak struct {
	prefer map[string]string      // namespace/pod -> the node advise placed it on
	order  map[string]int         // namespace/pod -> its place in advise's placement order
	tried  map[string][][2]string // namespace/pod -> (HyperNode, node) advise picked, in order
}

// preferFile is --prefer's format: advise's placement (and its order) and its picks in
// every attempt.
type preferFile struct {
	Placed map[string]string      `json:"placed"`
	Order  []string               `json:"order"`
	Tried  map[string][][2]string `json:"tried"`
}

// rank is the pod's place in advise's placement order; pods it did not place come last.
func (t *tiebreak) rank(key string) int {
	if r, ok := t.order[key]; ok {
		return r
	}
	return len(t.order)
}

func (t *tiebreak) Name() string { return tiebreakName }

// pick is advise's node among best, given the nodes Volcano scored (all of the attempt's
// HyperNode that passed the predicates) and each HyperNode's nodes.
func (t *tiebreak) pick(key string, scored map[string]bool, best []*api.NodeInfo, members map[string]map[string]bool) *api.NodeInfo {
	among := func(name string) *api.NodeInfo {
		for _, n := range best {
			if n.Name == name {
				return n
			}
		}
		return nil
	}
	// The attempts whose HyperNode holds every scored node, narrowest first, latest first.
	var fits [][2]string
	for _, tr := range t.tried[key] {
		nodes, ok := members[tr[0]]
		if !ok {
			continue
		}
		holds := true
		for name := range scored {
			if !nodes[name] {
				holds = false
				break
			}
		}
		if holds {
			fits = append(fits, tr)
		}
	}
	slices.Reverse(fits) // latest first, then narrowest first (a stable sort keeps that order)
	sort.SliceStable(fits, func(i, j int) bool { return len(members[fits[i][0]]) < len(members[fits[j][0]]) })
	for _, tr := range fits {
		if n := among(tr[1]); n != nil {
			return n
		}
	}
	if node, ok := t.prefer[key]; ok {
		return among(node)
	}
	return nil
}

func (t *tiebreak) OnSessionOpen(ssn *framework.Session) {
	members := make(map[string]map[string]bool, len(ssn.RealNodesList))
	for hn, nodes := range ssn.RealNodesList {
		set := make(map[string]bool, len(nodes))
		for _, n := range nodes {
			set[n.Name] = true
		}
		members[hn] = set
	}
	ssn.AddBestNodeFn(tiebreakName, func(task *api.TaskInfo, scores map[float64][]*api.NodeInfo) *api.NodeInfo {
		key := task.Namespace + "/" + task.Name
		if _, ok := t.tried[key]; !ok {
			if _, placed := t.prefer[key]; !placed {
				return nil
			}
		}
		first, best := true, 0.0
		scored := map[string]bool{} // every node Volcano scored: the attempt's feasible nodes
		for s, nodes := range scores {
			if first || s > best {
				first, best = false, s
			}
			for _, n := range nodes {
				scored[n.Name] = true
			}
		}
		return t.pick(key, scored, scores[best], members)
	})
	ssn.AddHyperNodeOrderFn(tiebreakName, func(subJob *api.SubJobInfo, hyperNodes map[string][]*api.NodeInfo) (map[string]float64, error) {
		out := make(map[string]float64, len(hyperNodes))
		if len(t.prefer) == 0 {
			return out, nil
		}
		// Only the sub-job's pending pods: those allocated in an earlier round of this
		// cycle are where both already put them, and would pull the choice there. Each
		// weighs half the one advise placed before it, so the pods this round places
		// first (a gang ready before all its pods are placed goes round again) decide.
		var pending []string
		for _, task := range subJob.Tasks {
			if task.Status == api.Pending {
				pending = append(pending, task.Namespace+"/"+task.Name)
			}
		}
		sort.SliceStable(pending, func(i, j int) bool { return t.rank(pending[i]) < t.rank(pending[j]) })
		held, w := map[string]float64{}, 1.0
		for _, key := range pending {
			if node, ok := t.prefer[key]; ok {
				held[node] += w
				w /= 2
			}
		}
		for hn, nodes := range hyperNodes {
			n := 0.0
			for _, node := range nodes {
				n += held[node.Name]
			}
			out[hn] = hyperNodeNudge * n / 2
		}
		return out, nil
	})
}

func (t *tiebreak) OnSessionClose(*framework.Session) {}

// readPrefer reads advise's choices: {"placed": {"ns/pod": "node"}, "tried": {"ns/pod":
// [["hyperNode", "node"], ...]}}.
func readPrefer(path string) (*tiebreak, error) {
	t := &tiebreak{prefer: map[string]string{}, tried: map[string][][2]string{}}
	if path == "" {
		return t, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f preferFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.Placed != nil {
		t.prefer = f.Placed
	}
	if f.Tried != nil {
		t.tried = f.Tried
	}
	t.order = make(map[string]int, len(f.Order))
	for i, key := range f.Order {
		t.order[key] = i
	}
	return t, nil
}

// withTiebreak registers the plugin and appends its tier, with only its two functions on.
func withTiebreak(t *tiebreak, tiers []conf.Tier) []conf.Tier {
	framework.RegisterPluginBuilder(tiebreakName, func(framework.Arguments) framework.Plugin { return t })
	on := true
	return append(tiers, conf.Tier{Plugins: []conf.PluginOption{{
		Name: tiebreakName, EnabledBestNode: &on, EnabledHyperNodeOrder: &on,
	}}})
}
