"""What an answer of the API server may weigh, and whether it holds the object asked for.

How an answer is framed (status line, fields, chunks) is urllib3's and http.client's to
read; the whole answer's deadline and the body's cap are labeler.base.httpclient's. Here
are the bounds, the one check of how an answer is framed that urllib3 leaves to us (that
it says where it ends), and the one check that needs the body: an answer that must hold a
named object (a GET of a node, a PATCH's echo) holds that one, else the connection is out
of step with its requests and is dropped.
"""

from __future__ import annotations

import json
import re
from typing import Any

# A LIST page of 500 full Nodes with 50 images each is ~30 MB; metadata only, ~1 MB.
MAX_BODY = 64 << 20
# One object (a GET of a node, a PATCH's echo): etcd stores at most 1.5 MiB of it.
MAX_OBJECT = 8 << 20
ERROR_KEPT = 64 << 10  # a Status is < 1 KB; a 422 with many causes a few KB
# What one read of a stream (a watch) asks for: a few events, or part of a large one.
RECV = 65536


class BadAnswer(ConnectionError):
    """An answer no API server gives to this request; its connection is dropped. Like a
    cut-off answer it says nothing about whether a write took effect."""


class WrongAnswer(BadAnswer):
    """A whole answer, but for another object than the one asked for: the connection is out
    of step with its requests."""


def unframed(resp: Any) -> BadAnswer | None:
    """An answer (urllib3's) with neither a length nor chunks, which only a close would end:
    never the API server's, and waiting for the close would last until the deadline."""
    if resp.length_remaining is None and not resp.chunked:
        return BadAnswer(f"a {resp.status} answer with no Content-Length and not chunked")
    return None


def body_limit(name: str) -> int:
    """The bound of a 2xx body: one object's when the answer must hold the object ``name``,
    else a LIST page's."""
    return MAX_OBJECT if name else MAX_BODY


# An API server writes an object's metadata with its name first: found without parsing the
# whole answer (a PATCH's echo is parsed for nothing else).
_META_NAME = re.compile(rb'"metadata"\s*:\s*\{\s*"name"\s*:\s*"([^"\\]*)"')


def check_object(body: bytes, name: str) -> None:
    """WrongAnswer unless ``body`` is the object named ``name``."""
    found = _META_NAME.search(body)
    if found is not None and found.group(1) == name.encode():
        return
    try:  # parsed only when the quick look did not find the name
        doc = json.loads(body)
    except (ValueError, RecursionError):
        doc = None
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    actual = meta.get("name") if isinstance(meta, dict) else None
    if actual != name:
        what = f"object {actual!r}" if isinstance(actual, str) else "no named object"
        raise WrongAnswer(
            f"the answer holds {what}, not {name!r}: the connection was out of step with "
            "its requests (a proxy or load balancer in between?) and was dropped"
        )
