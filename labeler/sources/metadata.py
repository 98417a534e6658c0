"""The shell every cloud metadata source shares (OCI IMDS, GCE, Azure).

Each of them is one service asked over bounded HTTP (``metadata_http``): the same options
(``HttpOptions``: url, a deadline per document, attempts), the same three flags
(``--<prefix>-url``, ``-timeout``, ``-attempts``) and the same client. ``MetadataSource``
holds that shell; a source module subclasses it with its name, roles and ``Service`` (how
the service is asked and named) and writes only ``read``, what its documents mean.
``metadata_kind`` registers such a class, with any flags of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from labeler.base.flags import positive_int, positive_number
from labeler.core.profiles import Profile, Roles
from labeler.sources import Flag, NoData, Reading, Settings, SourceKind, options
from labeler.sources.metadata_http import HttpOptions, MetadataClient, Service

if TYPE_CHECKING:
    import requests


class MetadataSource:
    """A source read from one metadata service. Thread-compatible, not thread-safe."""

    name: str
    roles: Roles
    service: Service

    def __init__(
        self,
        options: HttpOptions | None = None,
        *,
        stop: threading.Event | None = None,
        session: requests.Session | None = None,
        sleep: Callable[[float], bool] | None = None,
    ) -> None:
        self.options = options or HttpOptions()
        self._client = MetadataClient(
            self.service, self.options, stop=stop, session=session, sleep=sleep
        )

    def read(self) -> Reading | NoData:
        raise NotImplementedError


def http_flags(prefix: str, what: str, defaults: HttpOptions) -> tuple[Flag, ...]:
    """``--<prefix>-url``, ``-timeout`` and ``-attempts``: the fields every service has."""
    return (
        Flag(f"--{prefix}-url", "url", f"default {defaults.url}"),
        Flag(
            f"--{prefix}-timeout",
            "timeout",
            f"deadline in seconds for each {what} document, retries included "
            f"(default {defaults.timeout:g})",
            type=positive_number,
            metavar="S",
        ),
        Flag(
            f"--{prefix}-attempts",
            "attempts",
            f"{what} requests per document, with backoff (default {defaults.attempts})",
            type=positive_int,
            metavar="N",
        ),
    )


def metadata_kind(
    source: type[MetadataSource],
    *,
    title: str,
    what: str,
    defaults: HttpOptions | None = None,
    extra: tuple[Flag, ...] = (),
    build: Callable[[Profile, Settings, threading.Event], MetadataSource] | None = None,
) -> SourceKind:
    """The ``SourceKind`` of a metadata source: its flag group is the three HTTP flags plus
    ``extra``; ``build`` (default: the source from its options) makes it from settings."""
    base = defaults or HttpOptions()

    def from_settings(
        profile: Profile, settings: Settings, stop: threading.Event
    ) -> MetadataSource:
        return source(options(base, settings, source.name), stop=stop)

    flags = http_flags(source.service.flags, what, base) + extra
    return SourceKind(source.name, title, base, flags, build or from_settings)
