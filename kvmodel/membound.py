"""A bound on the memory a search may hold (``kvmodel explore --max-memory``).

An explicit-state search stores every state it has met and holds a level of live states; the
faithful KVBM world holds about 4 KB per stored state in one process and, with ``--workers``,
about three times that, so a large ``--max-states`` can take a machine's whole memory. A
:class:`Watch` samples the resident set of the search's processes (the main one and its
workers) every quarter of a second on a thread of its own and trips once their sum passes the
bound; the search then stops where it stands and reports itself incomplete (``stopped_by:
"memory"``), never a pass. A worker's pages shared with the main process since the fork count
in both sums, so the bound errs on the safe side.

Where ``/proc`` is missing (not Linux) resident sizes cannot be read: no bound is kept there,
and the result says so (``max_memory_bytes`` is ``None``).
"""

from __future__ import annotations

import gc
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# the share of the memory available when the search starts that ``--max-memory auto`` allows
AUTO_SHARE = 0.75
# how often the watch samples the resident sizes (seconds)
PERIOD = 0.25
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# the smallest bound ``--max-memory`` accepts (a smaller one would stop every search at once)
MIN_BOUND = 1 << 20


def _meminfo(field: str) -> int | None:
    """A field of ``/proc/meminfo`` in bytes (``None`` where there is none)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name == field:
                    return int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def physical_bytes() -> int | None:
    """The machine's memory in bytes (``None`` where unknown)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return _meminfo("MemTotal")


def auto_bound() -> int | None:
    """``--max-memory auto``: three quarters of the memory available now (``MemAvailable``),
    ``None`` where that cannot be read."""
    avail = _meminfo("MemAvailable")
    return None if avail is None else int(avail * AUTO_SHARE)


def resident_bytes(pid: int) -> int | None:
    """Process ``pid``'s resident set size in bytes (``/proc/<pid>/statm``; ``None`` where the
    process or ``/proc`` is gone)."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def readable() -> bool:
    """Whether resident sizes can be read here."""
    return resident_bytes(os.getpid()) is not None


# at most 18 digits and 9 decimals: every size it admits is a float without overflow, and any
# longer number is past every machine's memory anyway
_SIZE = re.compile(r"(\d{1,18}(?:\.\d{1,9})?)\s*([KMGT]?)(?:i?B)?", re.IGNORECASE)


def parse_size(text: str) -> int | None:
    """A size as ``--max-memory`` takes it: ``auto`` (:func:`auto_bound`), or a number of bytes
    with an optional unit ``K``, ``M``, ``G`` or ``T`` (powers of 1024; ``KB``, ``KiB`` alike),
    ``6G`` or ``1.5G`` say. Raises ``ValueError`` with the reason for anything else, for a size
    under 1 MiB and for one above the machine's memory."""
    t = text.strip()
    if t.lower() == "auto":
        return auto_bound()
    m = _SIZE.fullmatch(t)
    if m is None:
        raise ValueError(f"{text!r:.40} is not a size (a number with an optional K, M, G or T, or 'auto')")
    n = int(float(m.group(1)) * UNITS[m.group(2).upper()])
    if n < MIN_BOUND:
        raise ValueError(f"{text.strip()!r:.40} is under the smallest bound, 1M")
    phys = physical_bytes()
    if phys is not None and n > phys:
        raise ValueError(f"{text.strip()!r:.40} is more than this machine's {phys / (1 << 30):.1f} GiB of memory")
    return n


def event(workers: int) -> Any:
    """What a :class:`Watch` sets when it trips: a ``multiprocessing`` event the forked workers of
    a search over ``workers`` processes see, or a thread's event for one process."""
    if workers > 1:
        import multiprocessing

        return multiprocessing.get_context("fork").Event()
    return threading.Event()


class Watch:
    """Samples the resident sizes of the processes ``pids()`` names (the caller's own first)
    every :data:`PERIOD` seconds; :attr:`tripped` is set, and :attr:`seen` holds the sum, once
    the sum passes ``bound``. ``event`` is what :attr:`tripped` is: a ``threading.Event`` or,
    for forked workers to see, a ``multiprocessing`` one."""

    def __init__(self, bound: int, pids: Callable[[], list[int]], event: Any) -> None:
        self.bound, self.pids, self.tripped = bound, pids, event
        self.seen = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kvmodel-memory-watch", daemon=True)

    def total(self) -> int:
        """The resident sizes of the watched processes, summed (a process gone counts 0)."""
        return sum(resident_bytes(p) or 0 for p in self.pids())

    def _over(self) -> bool:
        """Sample once; trip and say so if the sum is past the bound."""
        total = self.total()
        if total > self.bound:
            self.seen = total
            self.tripped.set()
        return bool(self.tripped.is_set())

    def _run(self) -> None:
        while not self._done.wait(PERIOD):
            if self._over():
                return

    def start(self) -> None:
        """The first sample now, before the search takes its first state (a bound the process
        is already past stops every search, however small its world); then every
        :data:`PERIOD` seconds on the watch's thread."""
        if not self._over():
            self._thread.start()

    def stop(self) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()


@contextmanager
def watching(bound: int | None, event: Any, pids: Callable[[], list[int]]) -> Iterator[Watch | None]:
    """A :class:`Watch` over ``pids()`` with ``bound`` for the duration of the block (``None``:
    no bound, or none can be kept here)."""
    if bound is None or not readable():
        yield None
        return
    w = Watch(bound, pids, event)
    w.start()
    try:
        yield w
    finally:
        w.stop()


# the stored states at which a search with the collector paused first runs it (then at twice
# the count of the run before)
FIRST_COLLECT = 100_000


class PausedCollector:
    """Python's cycle collector, paused for a search (:func:`collector_paused`).

    A search allocates containers by the million and keeps most of them (the stored keys, the
    level of live states), so the collector runs often and each run finds nothing: a state, a
    step and a rejection of the shipped models are freed by reference counting alone (a test
    walks every world, ideal and faithful, to check it). Paused, the faithful KVBM search spends
    14 % less CPU; the ideal G1 searches of 15,000 states, whose states are smaller, show no
    change beyond noise (``benchmarks/collector.py``). A model that did leave cycles (a seeded bug, a new component)
    must not make the search grow without bound: :meth:`tick` runs a full collection each time
    the stored states double from ``FIRST_COLLECT``, a cost that sums to about twice the last
    one."""

    def __init__(self) -> None:
        self.next = FIRST_COLLECT
        self.collections = 0

    def tick(self, stored: int) -> None:
        """The search holds ``stored`` states: collect if that is twice as many as last time."""
        if stored >= self.next:
            gc.collect()
            self.collections += 1
            self.next = 2 * stored


@contextmanager
def collector_paused() -> Iterator[PausedCollector]:
    """Pause Python's cycle collector for the block (restored as it was on the way out, however
    the block ends); the block calls ``tick`` with the states it holds."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield PausedCollector()
    finally:
        if was:
            gc.enable()
