// Command kueue-oracle runs Kueue's own scheduler (and, for failed nodes, its TAS node
// controller) over the files `topology-labeler advise` reads, and prints what Kueue
// decided as JSON. The JSON shape is described in tests/oracles/README.md.
//
// It is fed the way Kueue's scheduler unit tests feed it (pkg/scheduler/scheduler_tas_test.go):
// a fake controller-runtime client holding the objects, Kueue's cache and queue manager
// filled from them, and the real scheduler loop started on top.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// KueueVersion is the release this oracle imports (go.mod pins the same); the Python
// side names it in kueue_version.py and a test checks the two agree.
const KueueVersion = "v0.19.2"

type nodeList []string

func (n *nodeList) String() string     { return strings.Join(*n, ",") }
func (n *nodeList) Set(v string) error { *n = append(*n, v); return nil }

func main() {
	snapshot := flag.String("snapshot", "", "snapshot file: nodes, pods, Kueue objects (List or YAML documents)")
	workloadFile := flag.String("f", "", "a pending Workload to place")
	admitted := flag.String("workload", "", "NS/NAME of an admitted Workload in the snapshot, for --failed-node")
	gates := flag.String("feature-gates", "", "Kueue feature gates, in Kueue's --feature-gates syntax")
	verbosity := flag.Int("v", 0, "log Kueue's own log lines at this verbosity to stderr (0: none)")
	timeout := flag.Duration("timeout", 20*time.Second, "how long to wait for Kueue's decision")
	var failed nodeList
	flag.Var(&failed, "failed-node", "a node that is gone (repeatable)")
	flag.Parse()
	if *verbosity > 0 {
		ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.Level(-*verbosity))))
	}
	if err := run(*snapshot, *workloadFile, *admitted, *gates, failed, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "kueue-oracle:", err)
		os.Exit(1)
	}
}

func run(snapshot, workloadFile, admitted, gates string, failed []string, timeout time.Duration) error {
	if snapshot == "" || (workloadFile == "") == (admitted == "") {
		return fmt.Errorf("give --snapshot and either -f WORKLOAD or --workload NS/NAME")
	}
	if gates != "" {
		if err := utilfeature.DefaultMutableFeatureGate.Set(gates); err != nil {
			return fmt.Errorf("--feature-gates: %w", err)
		}
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = kueue.AddToScheme(scheme)
	objs := &objects{namespaces: map[string]bool{}}
	if err := readObjects(scheme, snapshot, objs); err != nil {
		return err
	}
	var answer *result
	var err error
	ctx, cancel := context.WithTimeout(ctrl.LoggerInto(context.Background(), ctrl.Log), timeout)
	defer cancel()
	if workloadFile != "" {
		answer, err = place(ctx, objs, scheme, workloadFile)
	} else {
		answer, err = failNodes(ctx, objs, admitted, failed)
	}
	if err != nil {
		return err
	}
	answer.Kueue = KueueVersion
	out, err := json.MarshalIndent(answer, "", "  ")
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}
