package main

import (
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	utiltas "sigs.k8s.io/kueue/pkg/util/tas"
)

// result is the oracle's answer; tests/oracles/README.md describes each field.
type result struct {
	Kueue       string   `json:"kueue"`
	Workload    string   `json:"workload"`
	Outcome     string   `json:"outcome"`
	Message     string   `json:"message"`
	FailedNodes []string `json:"failedNodes"`
	PodSets     []podSet `json:"podSets"`
}

type podSet struct {
	Name    string            `json:"name"`
	Count   int32             `json:"count"`
	Flavors map[string]string `json:"flavors"`
	Levels  []string          `json:"levels"`
	Domains []domain          `json:"domains"`
}

type domain struct {
	Values []string `json:"values"`
	Count  int32    `json:"count"`
}

func describe(wl *kueue.Workload) *result {
	r := &result{Workload: wl.Namespace + "/" + wl.Name, FailedNodes: []string{}, PodSets: []podSet{}}
	if wl.Status.Admission == nil {
		return r
	}
	for _, psa := range wl.Status.Admission.PodSetAssignments {
		ps := podSet{Name: string(psa.Name), Flavors: map[string]string{}, Levels: []string{}, Domains: []domain{}}
		if psa.Count != nil {
			ps.Count = *psa.Count
		}
		for res, flavor := range psa.Flavors {
			ps.Flavors[string(res)] = string(flavor)
		}
		if psa.TopologyAssignment != nil {
			ps.Levels = psa.TopologyAssignment.Levels
			for d := range utiltas.InternalSeqFrom(psa.TopologyAssignment) {
				ps.Domains = append(ps.Domains, domain{Values: d.Values, Count: d.Count})
			}
		}
		r.PodSets = append(r.PodSets, ps)
	}
	return r
}
