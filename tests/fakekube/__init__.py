"""A faithful fake Kubernetes API server for tests; see README.md."""

from .journal import Fault, Faults, Record
from .server import FakeKube

__all__ = ["FakeKube", "Fault", "Faults", "Record"]
