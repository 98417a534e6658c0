"""What the three simulators share: a snapshot's nodes and pods (``cluster``; snapshot
files read fast by ``kubeyaml``), a pod's shape (``shape``), required node affinity
(``affinity``), checked field access (``fields``), and ``inputs``, the only I/O: a snapshot
file, or the cluster through ``labeler.kube``.
"""
