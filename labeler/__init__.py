"""topology-labeler: keep GPU/NPU topology labels on Kubernetes nodes.

Layers, lowest first (docs/architecture.md; the contracts in .importlinter enforce them):
``base`` → ``core`` → ``kube`` | ``sources`` → the features → ``commands`` → ``cli``.
"""

from labeler.base.version import __version__

__all__ = ["__version__"]
