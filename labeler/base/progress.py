"""Progress for long bulk runs: a redrawn bar on a terminal, plain lines otherwise.

On a terminal the bar lives on stderr's last line; result lines are printed above it
(the bar is cleared, the line printed, the bar redrawn), so per-node output and the bar
do not interleave. Off a terminal (CI logs, pipes) there is no bar, only the lines and
an occasional ``progress: n/total`` line, because carriage returns make logs unreadable.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

_BATCH = 500  # result lines per write off a terminal


class Progress:
    def __init__(
        self,
        total: int,
        *,
        label: str = "",
        out: TextIO | None = None,
        err: TextIO | None = None,
        bar: bool | None = None,
        every: float = 5.0,
    ) -> None:
        self.total = total
        self.label = label
        self.done = 0
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.bar = self.err.isatty() if bar is None else bar
        self.every = every
        self._start = time.monotonic()
        self._last = self._start
        self._lock = threading.Lock()
        self._lines: list[str] = []  # result lines not yet written (no bar)

    def line(self, text: str) -> None:
        """Print a result line (stdout) without breaking the bar."""
        with self._lock:
            if self.bar:
                # On a terminal the line must be out before the bar is redrawn.
                self._clear()
                self.out.write(text + "\n")
                self.out.flush()
                self._draw()
                return
            # Off a terminal, lines are written in batches: a write per line is a system
            # call per node (10,000 in a bulk run) when Python's output is unbuffered
            # (PYTHONUNBUFFERED, as CI systems and containers often set it).
            self._lines.append(text)
            if len(self._lines) >= _BATCH:
                self._write_lines()

    def _write_lines(self) -> None:
        if self._lines:
            self.out.write("\n".join(self._lines) + "\n")
            self._lines = []

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            now = time.monotonic()
            if self.bar:
                self._draw()
            elif now - self._last >= self.every and self.done < self.total:
                self._last = now
                self._write_lines()
                self.out.flush()
                self.err.write(f"progress: {self.done}/{self.total} {self.label}".rstrip() + "\n")
                self.err.flush()

    def close(self) -> None:
        with self._lock:
            self._clear()
            self._write_lines()
            self.out.flush()

    def _clear(self) -> None:
        """Erase the bar's line (nothing to erase without a bar)."""
        if self.bar:
            self.err.write("\r\033[K")
            self.err.flush()

    def _draw(self) -> None:
        width = 30
        frac = self.done / self.total if self.total else 1.0
        filled = int(width * frac)
        elapsed = time.monotonic() - self._start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        self.err.write(
            f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] "
            f"{self.done}/{self.total} {rate:.0f}/s"
        )
        self.err.flush()
