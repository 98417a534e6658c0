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
// BestNodeFn picks: this one picks the node advise gave the pod when that node is among the
// best, else the first node among the best that advise picked for the pod in one of its
// dry runs (a HyperNode it tried and did not keep), and otherwise leaves the pick to
// Volcano. HyperNodes of equal score are picked at random too
// (util.SelectBestHyperNodeAndScore, and a map walk for the job's HyperNode): a HyperNode
// score of a millionth per advise pod on its nodes, counting only the sub-job's pods still
// pending (the ones this choice places), as a share of advise's pods, orders only those
// that tie.
type tiebreak struct {
	prefer map[string]string   // namespace/pod -> the node advise placed it on
	tried  map[string][]string // namespace/pod -> the nodes advise picked in its dry runs
}

// preferFile is --prefer's format: advise's placement and its dry runs' picks, in order.
type preferFile struct {
	Placed map[string]string   `json:"placed"`
	Tried  map[string][]string `json:"tried"`
}

func (t *tiebreak) Name() string { return tiebreakName }

func (t *tiebreak) OnSessionOpen(ssn *framework.Session) {
	ssn.AddBestNodeFn(tiebreakName, func(task *api.TaskInfo, scores map[float64][]*api.NodeInfo) *api.NodeInfo {
		key := task.Namespace + "/" + task.Name
		want := t.tried[key]
		if node, ok := t.prefer[key]; ok {
			want = append([]string{node}, want...)
		}
		if len(want) == 0 {
			return nil
		}
		first, best := true, 0.0
		for s := range scores {
			if first || s > best {
				first, best = false, s
			}
		}
		for _, name := range want {
			for _, n := range scores[best] {
				if n.Name == name {
					return n
				}
			}
		}
		return nil
	})
	ssn.AddHyperNodeOrderFn(tiebreakName, func(subJob *api.SubJobInfo, hyperNodes map[string][]*api.NodeInfo) (map[string]float64, error) {
		out := make(map[string]float64, len(hyperNodes))
		if len(t.prefer) == 0 {
			return out, nil
		}
		// Only the sub-job's pending pods: those allocated in an earlier round of this
		// cycle are where both already put them, and would pull the choice there.
		held := map[string]int{}
		for _, task := range subJob.Tasks {
			if task.Status != api.Pending {
				continue
			}
			if node, ok := t.prefer[task.Namespace+"/"+task.Name]; ok {
				held[node]++
			}
		}
		for hn, nodes := range hyperNodes {
			n := 0
			for _, node := range nodes {
				n += held[node.Name]
			}
			out[hn] = hyperNodeNudge * float64(n) / float64(len(t.prefer))
		}
		return out, nil
	})
}

func (t *tiebreak) OnSessionClose(*framework.Session) {}

// readPrefer reads advise's choices: {"placed": {"ns/pod": "node"}, "tried": {"ns/pod":
// ["node", ...]}}.
func readPrefer(path string) (*tiebreak, error) {
	t := &tiebreak{prefer: map[string]string{}, tried: map[string][]string{}}
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
