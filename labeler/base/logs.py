"""Logging set-up: key=value text for people, one JSON object per line for collectors.

Loading the logging package (with traceback, threading, weakref and string under it) is a
few ms of every start, and most runs of the offline commands log nothing. So our modules
take their logger from ``logger(__name__)``, which loads logging when the module first
logs, and the command line's settings (``setup_logging``) are applied then. Libraries that
log on their own (the Kubernetes client, urllib3, requests) are loaded by code that calls
``configure()`` first, so their messages are formatted and filtered like ours.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import logging


class LogFormat(StrEnum):
    """``--log-format``: key=value text for people, or one JSON object per line."""

    TEXT = "text"
    JSON = "json"


# The settings of the command line, until they are applied.
_pending: tuple[str, LogFormat] | None = None


def setup_logging(level: str, fmt: LogFormat) -> None:
    """Log at ``level`` and above, in ``fmt``, to stderr: from now on if logging is loaded
    already, else from when it is."""
    global _pending
    _pending = (level, fmt)
    if "logging" in sys.modules:
        configure()


def configure() -> None:
    """Apply the command line's settings now (nothing when there are none left to apply)."""
    global _pending
    if _pending is None:
        return
    level, fmt = _pending
    _pending = None
    import logging

    handler = logging.StreamHandler(sys.stderr)
    if fmt is LogFormat.JSON:
        handler.setFormatter(_json_formatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # The client logs every retry of urllib3 at WARNING; ours are enough.
    logging.getLogger("urllib3").setLevel(logging.ERROR)


def _json_formatter() -> logging.Formatter:
    import json
    import logging

    class JsonFormatter(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            doc = {
                "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
                "level": record.levelname.lower(),
                "logger": record.name,
                "msg": record.getMessage(),
            }
            if record.exc_info:
                doc["exc"] = self.formatException(record.exc_info)
            return json.dumps(doc, ensure_ascii=False)

    return JsonFormatter()


# The levels of --log-level, by the name of the Logger method that logs at each.
_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "exception": 40}


class _Logger:
    """Stands for ``logging.getLogger(name)`` until first used: each attribute read is the
    real logger's (so a call is the real logger's own, and names the caller's line)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._real: logging.Logger | None = None

    def __getattr__(self, attr: str) -> object:
        if self._real is None:
            if _below_the_level(attr):
                return _dropped
            configure()
            import logging

            self._real = logging.getLogger(self._name)
        return getattr(self._real, attr)


def _below_the_level(method: str) -> bool:
    """Whether logging would drop what ``method`` logs, known without loading logging:
    until logging is loaded no logger has a level of its own, only the command line's."""
    if _pending is None or "logging" in sys.modules:
        return False
    return _LEVELS.get(method, 99) < _LEVELS.get(_pending[0].lower(), 0)


def _dropped(*args: object, **kwargs: object) -> None:
    pass


def logger(name: str) -> logging.Logger:
    """A module's logger, for ``log = logger(__name__)``: logging is loaded, and the
    command line's settings applied, when the module first logs."""
    return _Logger(name)  # type: ignore[return-value]  # it answers as a Logger does


def shutdown() -> None:
    """Flush and close the handlers, if anything was logged."""
    if "logging" in sys.modules:
        import logging

        logging.shutdown()
