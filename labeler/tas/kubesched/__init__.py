"""Simulator of kube-scheduler's own topology-aware scheduling of PodGroups and
CompositePodGroups (``scheduling.k8s.io``; Kubernetes 1.37).

``objects`` reads the API objects, ``filters`` and ``score`` are the per-pod and
per-placement plugins, ``schedule`` is the pod-group cycle, ``report`` prints it and
``overlay`` is what ``advise --html`` draws. All pure: the command reads the cluster.
"""
