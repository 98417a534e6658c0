"""The real-control-plane tier: etcd, kube-apiserver, kube-scheduler, kubectl and KWOK built
from Go modules (``scripts/control-plane.sh build``) and run on loopback. Tests that use the
``real_kube`` fixture carry the ``realkube`` marker; without Go they skip locally and fail
under ``CI=true``."""
