package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	topologyv1alpha1 "volcano.sh/apis/pkg/apis/topology/v1alpha1"
)

const confKey = "volcano-scheduler.conf"

// inputs is what one session starts from.
type inputs struct {
	nodes      []*v1.Node
	pods       []*v1.Pod
	hyperNodes []*topologyv1alpha1.HyperNode
	queues     []*vcv1beta1.Queue
	podGroups  []*vcv1beta1.PodGroup
	advised    *vcv1beta1.PodGroup
	jobRaw     []byte // the -f file's batch.volcano.sh Job, when it holds one
	confText   string
}

type head struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
	Data       map[string]string `json:"data"`
}

// objects reads every document of a YAML or JSON file, flattening `kind: List`.
func objects(path string) ([]json.RawMessage, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []json.RawMessage
	for {
		var doc any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if doc == nil {
			continue
		}
		js, err := json.Marshal(doc)
		if err != nil {
			return nil, err
		}
		var h head
		if err := json.Unmarshal(js, &h); err != nil {
			return nil, err
		}
		if strings.HasSuffix(h.Kind, "List") {
			out = append(out, h.Items...)
			continue
		}
		out = append(out, js)
	}
}

func readInputs(snapshot, file, confPath string) (*inputs, error) {
	in := &inputs{}
	snap, err := objects(snapshot)
	if err != nil {
		return nil, err
	}
	for _, js := range snap {
		if err := in.add(js, false); err != nil {
			return nil, fmt.Errorf("%s: %w", snapshot, err)
		}
	}
	given, err := objects(file)
	if err != nil {
		return nil, err
	}
	for _, js := range given {
		if err := in.add(js, true); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	if in.advised == nil && in.jobRaw == nil {
		return nil, fmt.Errorf("%s: no scheduling.volcano.sh PodGroup or batch.volcano.sh Job", file)
	}
	if confPath != "" {
		text, err := confFile(confPath)
		if err != nil {
			return nil, err
		}
		in.confText = text
	}
	if in.confText == "" {
		return nil, errors.New("no scheduler configuration: give --scheduler-conf or put the ConfigMap in the snapshot")
	}
	return in, nil
}

func confFile(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var h head
	if err := yaml.Unmarshal(raw, &h); err == nil && h.Kind == "ConfigMap" {
		return h.Data[confKey], nil
	}
	return string(raw), nil
}

// add files one object by kind; the -f file's PodGroup (or Job) is the advised one and
// replaces a PodGroup of the same name in the snapshot.
func (in *inputs) add(js json.RawMessage, given bool) error {
	var h head
	if err := json.Unmarshal(js, &h); err != nil {
		return err
	}
	group := strings.SplitN(h.APIVersion, "/", 2)[0]
	switch {
	case isJob(h.APIVersion, h.Kind) && given:
		in.jobRaw = js
	case h.Kind == "Node":
		n := &v1.Node{}
		in.nodes = append(in.nodes, n)
		return json.Unmarshal(js, n)
	case h.Kind == "Pod":
		p := &v1.Pod{}
		in.pods = append(in.pods, p)
		return json.Unmarshal(js, p)
	case h.Kind == "HyperNode":
		hn := &topologyv1alpha1.HyperNode{}
		in.hyperNodes = append(in.hyperNodes, hn)
		return json.Unmarshal(js, hn)
	case h.Kind == "Queue" && group == "scheduling.volcano.sh":
		q := &vcv1beta1.Queue{}
		in.queues = append(in.queues, q)
		return json.Unmarshal(js, q)
	case h.Kind == "PodGroup" && group == "scheduling.volcano.sh":
		pg := &vcv1beta1.PodGroup{}
		if err := json.Unmarshal(js, pg); err != nil {
			return err
		}
		if given {
			in.advised = pg
		}
		in.podGroups = append(in.podGroups, pg)
		return nil
	case h.Kind == "ConfigMap":
		if text, ok := h.Data[confKey]; ok && in.confText == "" {
			in.confText = text
		}
	}
	return nil
}
