// Command volcano-oracle runs one session of Volcano's own scheduler (volcano.sh/volcano,
// the version in go.mod) over the files `topology-labeler advise` reads for a Volcano
// PodGroup, and prints what the scheduler decided as JSON (tests/oracles/README.md).
//
//	volcano-oracle --snapshot SNAP.yaml -f PODGROUP.yaml [--scheduler-conf CONF] [--seed N] [--prefer PLACEMENT.json]
//
// A batch.volcano.sh Job given with -f is first made into its PodGroup and pods by
// Volcano's own code: the Job admission webhooks' handlers (mutate, validate), then the job
// controller run over fake clientsets (jobs.go).
//
// The session is the scheduler's own: OpenSession over a scheduler cache fed with the
// snapshot's nodes, pods, HyperNodes, Queues and PodGroups, then the configuration's
// enqueue and allocate actions in its order, then CloseSession (gang writes the PodGroup's
// conditions there). Other actions (backfill, preempt, reclaim) are not run: advise does not
// model them.
package main

//go:debug randseednop=0

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

func main() {
	snapshot := flag.String("snapshot", "", "the cluster: nodes, pods, HyperNodes, Queues, PodGroups, ConfigMap")
	file := flag.String("f", "", "the advised PodGroup with its pods, or a batch.volcano.sh Job")
	confPath := flag.String("scheduler-conf", "", "volcano-scheduler.conf or its ConfigMap")
	seed := flag.Int64("seed", 1, "seed for Volcano's random choice among equal scores")
	prefer := flag.String("prefer", "", `advise's choices, {"placed": {"ns/pod": "node"}, "tried": {"ns/pod": ["node"]}}: taken where Volcano would pick at random among equal scores`)
	flag.Parse()
	if *snapshot == "" || *file == "" {
		fmt.Fprintln(os.Stderr, "usage: volcano-oracle --snapshot FILE -f FILE [--scheduler-conf FILE] [--seed N] [--prefer FILE]")
		os.Exit(2)
	}
	// The fake clientsets the Job conversion runs on send no watch-list bookmark, which
	// client-go's informers otherwise wait for without end (Kubernetes' feature gates,
	// which client-go's are routed to once the scheduler's packages are linked in).
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{"WatchListClient": false}); err != nil {
		fmt.Fprintln(os.Stderr, "volcano-oracle:", err)
		os.Exit(1)
	}
	rand.Seed(*seed) //nolint:staticcheck // Volcano breaks ties with the global source
	in, err := readInputs(*snapshot, *file, *confPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "volcano-oracle:", err)
		os.Exit(1)
	}
	tb, err := readPrefer(*prefer)
	if err != nil {
		fmt.Fprintln(os.Stderr, "volcano-oracle:", err)
		os.Exit(1)
	}
	var conv *Converted
	if in.jobRaw != nil {
		var refused *RefusedError
		conv, err = convertJob(in)
		switch {
		case errors.As(err, &refused):
			emit(&Result{Version: volcanoVersion, Refused: refused.Message})
			return
		case err != nil:
			fmt.Fprintln(os.Stderr, "volcano-oracle:", err)
			os.Exit(1)
		}
		// The session works on copies: the output shows the objects as converted.
		in.advised = conv.PodGroup.DeepCopy()
		in.podGroups = append(in.podGroups, in.advised)
		for _, p := range conv.Pods {
			in.pods = append(in.pods, p.DeepCopy())
		}
	}
	out, err := runSession(in, tb)
	if err != nil {
		fmt.Fprintln(os.Stderr, "volcano-oracle:", err)
		os.Exit(1)
	}
	out.Converted = conv
	emit(out)
}

func emit(out *Result) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		os.Exit(1)
	}
}
