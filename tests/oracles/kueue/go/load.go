package main

// Reading the files `advise` reads: a snapshot (a List as `kubectl get -o yaml|json`
// prints it, or YAML documents) and a Workload file, decoded into Kueue's and
// Kubernetes' own types with Kueue's scheme.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// objects holds what a scenario gives, by kind, in file order.
type objects struct {
	nodes      []corev1.Node
	pods       []corev1.Pod
	topologies []kueue.Topology
	flavors    []kueue.ResourceFlavor
	clusterQs  []kueue.ClusterQueue
	localQs    []kueue.LocalQueue
	workloads  []kueue.Workload
	namespaces map[string]bool
}

func readObjects(scheme *runtime.Scheme, path string, into *objects) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var doc map[string]any
		if err := decoder.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("%s: %w", path, err)
		}
		if doc == nil {
			continue
		}
		if items, ok := doc["items"].([]any); ok {
			for i, item := range items {
				m, ok := item.(map[string]any)
				if !ok {
					return fmt.Errorf("%s: item %d is not an object", path, i)
				}
				if err := add(scheme, m, into); err != nil {
					return fmt.Errorf("%s: item %d: %w", path, i, err)
				}
			}
			continue
		}
		if err := add(scheme, doc, into); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
}

func add(scheme *runtime.Scheme, m map[string]any, into *objects) error {
	u := &unstructured.Unstructured{Object: m}
	gvk := u.GroupVersionKind()
	if ns := u.GetNamespace(); ns != "" {
		into.namespaces[ns] = true
	}
	convert := func(out any) error {
		return runtime.DefaultUnstructuredConverter.FromUnstructured(m, out)
	}
	switch {
	case gvk.Group == "" && gvk.Kind == "Node":
		var o corev1.Node
		if err := convert(&o); err != nil {
			return err
		}
		into.nodes = append(into.nodes, o)
	case gvk.Group == "" && gvk.Kind == "Pod":
		var o corev1.Pod
		if err := convert(&o); err != nil {
			return err
		}
		into.pods = append(into.pods, o)
	case gvk.Group == kueue.SchemeGroupVersion.Group && gvk.Version != kueue.SchemeGroupVersion.Version:
		return fmt.Errorf("%s %s: only %s is read", gvk.Kind, u.GetName(), kueue.SchemeGroupVersion)
	case gvk.Group == kueue.SchemeGroupVersion.Group && gvk.Kind == "Topology":
		var o kueue.Topology
		if err := convert(&o); err != nil {
			return err
		}
		into.topologies = append(into.topologies, o)
	case gvk.Group == kueue.SchemeGroupVersion.Group && gvk.Kind == "ResourceFlavor":
		var o kueue.ResourceFlavor
		if err := convert(&o); err != nil {
			return err
		}
		into.flavors = append(into.flavors, o)
	case gvk.Group == kueue.SchemeGroupVersion.Group && gvk.Kind == "ClusterQueue":
		var o kueue.ClusterQueue
		if err := convert(&o); err != nil {
			return err
		}
		into.clusterQs = append(into.clusterQs, o)
	case gvk.Group == kueue.SchemeGroupVersion.Group && gvk.Kind == "LocalQueue":
		var o kueue.LocalQueue
		if err := convert(&o); err != nil {
			return err
		}
		into.localQs = append(into.localQs, o)
	case gvk.Group == kueue.SchemeGroupVersion.Group && gvk.Kind == "Workload":
		var o kueue.Workload
		if err := convert(&o); err != nil {
			return err
		}
		into.workloads = append(into.workloads, o)
	}
	// Any other kind (ResourceSlices, Namespaces, Events) is not Kueue's input.
	_ = scheme
	return nil
}
