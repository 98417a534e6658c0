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

    def line(self, text: str) -> None:
        """Print a result line (stdout) without breaking the bar."""
        with self._lock:
            self._clear()
            self.out.write(text + "\n")
            if self.bar:
                # On a terminal the line must be out before the bar is redrawn. Off one, a
                # flush per line is a system call per node (10,000 in a bulk run); the
                # lines go out with the buffer, and with each periodic progress line.
                self.out.flush()
                self._draw()

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            now = time.monotonic()
            if self.bar:
                self._draw()
            elif now - self._last >= self.every and self.done < self.total:
                self._last = now
                self.out.flush()
                self.err.write(f"progress: {self.done}/{self.total} {self.label}".rstrip() + "\n")
                self.err.flush()

    def close(self) -> None:
        with self._lock:
            self._clear()
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
