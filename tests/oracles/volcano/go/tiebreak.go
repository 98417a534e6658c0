package main

import (
	"encoding/json"
	"fmt"
	"os"

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
// BestNodeFn picks: this one picks the node advise gave the pod, when that node is among
// the best, and otherwise leaves the pick to Volcano. HyperNodes of equal score are picked
// at random too (util.SelectBestHyperNodeAndScore, and a map walk for the job's
// HyperNode); a HyperNode score of a millionth per advise pod on its nodes, as a share of
// advise's pods, orders only those that tie.
type tiebreak struct {
	prefer map[string]string // namespace/pod -> node
	nodes  map[string]int    // node -> how many of advise's pods it holds
}

func (t *tiebreak) Name() string { return tiebreakName }

func (t *tiebreak) OnSessionOpen(ssn *framework.Session) {
	ssn.AddBestNodeFn(tiebreakName, func(task *api.TaskInfo, scores map[float64][]*api.NodeInfo) *api.NodeInfo {
		want, ok := t.prefer[task.Namespace+"/"+task.Name]
		if !ok {
			return nil
		}
		first, best := true, 0.0
		for s := range scores {
			if first || s > best {
				first, best = false, s
			}
		}
		for _, n := range scores[best] {
			if n.Name == want {
				return n
			}
		}
		return nil
	})
	ssn.AddHyperNodeOrderFn(tiebreakName, func(_ *api.SubJobInfo, hyperNodes map[string][]*api.NodeInfo) (map[string]float64, error) {
		out := make(map[string]float64, len(hyperNodes))
		if len(t.prefer) == 0 {
			return out, nil
		}
		for hn, nodes := range hyperNodes {
			held := 0
			for _, n := range nodes {
				held += t.nodes[n.Name]
			}
			out[hn] = hyperNodeNudge * float64(held) / float64(len(t.prefer))
		}
		return out, nil
	})
}

func (t *tiebreak) OnSessionClose(*framework.Session) {}

// readPrefer reads advise's placement: a JSON object of "namespace/pod": "node".
func readPrefer(path string) (*tiebreak, error) {
	t := &tiebreak{prefer: map[string]string{}, nodes: map[string]int{}}
	if path == "" {
		return t, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &t.prefer); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, node := range t.prefer {
		t.nodes[node]++
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
