"""topology-labeler: keep GPU/NPU topology labels on Kubernetes nodes."""

__version__ = "0.1.0"
