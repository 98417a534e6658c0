"""Running an audit exporter in a test, and stopping every thread it started.

A thread that outlives its test logs after pytest has closed that test's capture, which
prints "--- Logging error --- ValueError: I/O operation on closed file" into the run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from labeler.audit.serve import AuditExporter
from labeler.base.http import ProbeServer
from tests.fakekube import FakeKube

JOIN_TIMEOUT = 5.0


@contextmanager
def running(fake: FakeKube, exp: AuditExporter, *, serve: bool = True) -> Iterator[str]:
    """Start ``exp`` (and, with ``serve``, its /metrics, /healthz, /readyz and /topology on
    a free loopback port, whose base URL is yielded; else ""). At the end the exporter is
    stopped and every one of its threads joined, or the test fails."""
    # A stopped watch ends at its next event; a real server sends a BOOKMARK about every
    # minute, the fake every 5 s unless told otherwise.
    fake.bookmark_interval = 0.2
    server = None
    if serve:
        pages = {"/topology": exp.topology_page} if exp.page is not None else {}
        server = ProbeServer(
            exp.registry,
            healthz=exp.healthz,
            readyz=exp.readyz,
            port=0,
            address="127.0.0.1",
            pages=pages,
        ).start()
    exp.start()
    try:
        yield f"http://127.0.0.1:{server.port}" if server is not None else ""
    finally:
        exp.stop()
        if server is not None:
            server.close()
        joined = exp.join(JOIN_TIMEOUT)
    assert joined, f"exporter threads still running {JOIN_TIMEOUT:.0f} s after stop()"
