// Command clientgo labels nodes from a label CSV with k8s.io/client-go: the reference that
// topology-labeler's bulk apply is measured against (bench/realkube.py).
//
//	clientgo --kubeconfig KC --config-path CSV --concurrency N
//
// The CSV is the one `topology-labeler apply` reads (MindCluster's format): the first header
// is nodeName, every other header a label key, one row per node; an empty cell leaves that key
// alone. Each node gets one JSON merge patch of metadata.labels holding its row's values, sent
// by one of N workers; no LIST, no resourceVersion guard and no diff first, so it is the least
// a client can send for this work. It prints one line: "labeled N nodes in S s".
package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

type row struct {
	node  string
	patch []byte
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path to the kubeconfig (default: client-go's rules, $KUBECONFIG)")
	csvPath := flag.String("config-path", "", "the label CSV (nodeName, then one column per label key)")
	concurrency := flag.Int("concurrency", 16, "how many nodes are patched at once")
	flag.Parse()
	if *csvPath == "" || *concurrency < 1 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: clientgo --kubeconfig KC --config-path CSV --concurrency N (N >= 1)")
		os.Exit(2)
	}
	rows, err := readCSV(*csvPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "clientgo: %v\n", err)
		os.Exit(1)
	}
	client, err := newClient(*kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "clientgo: %v\n", err)
		os.Exit(1)
	}
	start := time.Now()
	failed := patchAll(client, rows, *concurrency)
	elapsed := time.Since(start).Seconds()
	fmt.Printf("labeled %d nodes in %.2f s\n", len(rows)-failed, elapsed)
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "clientgo: %d nodes failed\n", failed)
		os.Exit(1)
	}
}

func newClient(kubeconfig string) (*kubernetes.Clientset, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	// client-go's default token bucket (QPS 5, burst 10) would make this a measurement of
	// the limiter, not of the client or the server: set it far above what N workers can
	// send, so the server (and its API Priority and Fairness) alone decides the pace.
	config.QPS = 100000
	config.Burst = 100000
	// Answers in protobuf, as Kubernetes' own components ask for them: the cheapest
	// decoding client-go has. The patch body itself stays JSON (its content type is the
	// patch type).
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	config.ContentType = "application/vnd.kubernetes.protobuf"
	// The transport is client-go's default: over TLS, one HTTP/2 connection carries every
	// worker's requests as streams.
	return kubernetes.NewForConfig(config)
}

// readCSV returns one merge patch per row, in the file's order.
func readCSV(path string) ([]row, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	reader := csv.NewReader(file)
	header, err := reader.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: no header: %w", path, err)
	}
	header[0] = strings.TrimPrefix(header[0], "\ufeff")
	if header[0] != "nodeName" || len(header) < 2 {
		return nil, fmt.Errorf("%s:1: the header must be nodeName followed by label keys", path)
	}
	var rows []row
	for line := 2; ; line++ {
		cells, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if cells[0] == "" {
			return nil, fmt.Errorf("%s:%d: the node name is empty", path, line)
		}
		labels := map[string]string{}
		for i, key := range header[1:] {
			if value := cells[i+1]; value != "" {
				labels[key] = value
			}
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
		if err != nil {
			return nil, err
		}
		rows = append(rows, row{cells[0], body})
	}
}

// patchAll sends every row's patch with `workers` goroutines; it returns how many failed
// (each named on stderr).
func patchAll(client *kubernetes.Clientset, rows []row, workers int) int {
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	nodes := client.CoreV1().Nodes()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(rows) {
					return
				}
				r := rows[i]
				_, err := nodes.Patch(context.Background(), r.node, types.MergePatchType, r.patch, metav1.PatchOptions{})
				if err != nil {
					failed.Add(1)
					fmt.Fprintf(os.Stderr, "clientgo: node %s: %v\n", r.node, err)
				}
			}
		}()
	}
	wg.Wait()
	return int(failed.Load())
}
