"""Logging set-up: key=value text for people, one JSON object per line for collectors."""

from __future__ import annotations

import json
import logging
import sys
from enum import StrEnum


class LogFormat(StrEnum):
    """``--log-format``: key=value text for people, or one JSON object per line."""

    TEXT = "text"
    JSON = "json"


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


def setup_logging(level: str, fmt: LogFormat) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt is LogFormat.JSON:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # The client logs every retry of urllib3 at WARNING; ours are enough.
    logging.getLogger("urllib3").setLevel(logging.ERROR)
