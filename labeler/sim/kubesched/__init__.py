"""Simulator of kube-scheduler's own topology-aware scheduling of PodGroups and
CompositePodGroups (``scheduling.k8s.io``; Kubernetes 1.37).

``objects`` reads the API objects; ``state`` is the cluster as one cycle sees it;
``filters`` and ``score`` are the per-pod and per-placement plugins; ``schedule`` is the
pod-group cycle, with ``pick`` and ``memo`` its exact shortcuts (per-node caches, one try
reused for identical children) and ``results`` what it found; ``report`` prints it and
``overlay`` is what ``advise --html`` draws. All pure: the command reads the cluster.
"""

KUBERNETES = "v1.37.2"
"""The kube-scheduler release modelled, the one the oracle in tests/oracles/kubesched runs."""
