"""Progress lines for long runs (explorer, BMC, conformance, mutation benchmark, check).

A :class:`Progress` rewrites one status line on standard error while the run goes on, at
most every ``interval`` seconds, and clears it at the end. It writes nothing at all when
the stream is not a terminal, so CI logs and ``--json`` output stay clean and byte-stable.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO


class Progress:
    """``with Progress("explore") as p: p.update("1200 states")`` — quiet unless a TTY."""

    def __init__(self, label: str, stream: TextIO | None = None, interval: float = 0.2) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self.active = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last = -1e9
        self._width = 0

    def update(self, text: str, *, force: bool = False) -> None:
        if not self.active:
            return
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        line = f"{self.label}: {text}"
        pad = " " * max(0, self._width - len(line))
        self._width = len(line)
        self.stream.write(f"\r{line}{pad}")
        self.stream.flush()

    def close(self) -> None:
        if self.active and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
