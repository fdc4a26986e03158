"""The two LRU evictors of the old mocker (semantics §1.4), on a logical clock.

Real code: ``lib/llm/src/mocker/evictor.rs``. Two implementations exist in its history:

* :class:`WallClockLRU` (commits 0c89c866 / e9226a26): a ``free_table`` of object →
  timestamp plus a lazily cleaned FIFO ``priority_queue`` of ``(object, timestamp)``.
  The timestamp is seconds since construction (``Instant``); here it is a logical clock,
  either passed explicitly (vectors) or advanced by one on every insert.
* :class:`CounterLRU` (commit f0652d89f): a table of object → i64 counter and an ordered set
  by counter, with ``push_front`` giving negative counters.

Both expose ``insert``, ``remove``, ``evict``, ``contains``, ``len`` and ``keys``, plus
``order()`` (the objects in the order ``evict`` would return them) for snapshots.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable
from typing import Any, Generic, Protocol, TypeVar

from kvmodel.model.errors import InvalidInput

T = TypeVar("T", bound=Hashable)

DEFAULT_CLEANUP_THRESHOLD = 50


class Evictor(Protocol[T]):
    def insert(self, obj: T) -> None: ...
    def remove(self, obj: T) -> bool: ...
    def evict(self) -> T | None: ...
    def contains(self, obj: T) -> bool: ...
    def __len__(self) -> int: ...
    def order(self) -> list[T]: ...
    def copy(self) -> Evictor[T]: ...


Stamp = int | tuple[int, int]


class _Table(Generic[T]):
    """What both evictors answer from their ``free_table`` alone."""

    free_table: dict[T, Any]
    _order: tuple[T, ...] | None = None  # ``order()`` until the next change; every mutator drops it

    def ordered(self) -> tuple[T, ...]:
        """``order()`` as a tuple, computed once between two changes (a search compares the
        eviction order of one state with many steps' results)."""
        got = self._order
        if got is None:
            got = self._order = tuple(self.order())  # type: ignore[attr-defined]
        return got

    def remove(self, obj: T) -> bool:
        self._order = None
        return self.free_table.pop(obj, None) is not None

    def contains(self, obj: T) -> bool:
        return obj in self.free_table

    def __contains__(self, obj: object) -> bool:
        return obj in self.free_table

    def __len__(self) -> int:
        return len(self.free_table)

    def keys(self) -> frozenset[T]:
        """``free_table.keys()``: hash-map order in Rust, so a set here."""
        return frozenset(self.free_table)


class WallClockLRU(_Table[T]):
    """``LRUEvictor`` with a ``free_table`` and a lazy ``priority_queue`` (EVA).

    * ``insert`` overwrites the table's timestamp and appends to the queue (the old queue
      entry goes stale), then rebuilds the queue when it is longer than
      ``cleanup_threshold · len(table)``, keeping entries whose timestamp equals the table's.
    * ``remove`` deletes from the table only.
    * ``evict`` pops the queue front, skipping entries that are absent from the table or
      whose timestamp differs from it.

    Quirk ``equal_timestamp_stale_entry`` (§6 #12): with it on, a timestamp is the clock
    reading alone, so an object re-inserted at the same reading as its stale entry is
    evicted at the stale entry's (older) position. With it off, every insert gets a
    unique stamp ``(clock, n)`` and eviction is exact LRU.
    """

    def __init__(
        self,
        cleanup_threshold: int = DEFAULT_CLEANUP_THRESHOLD,
        *,
        quirks: Iterable[str] | None = None,
    ) -> None:
        if not isinstance(cleanup_threshold, int) or cleanup_threshold < 0:
            raise InvalidInput(f"cleanup_threshold must be a usize, got {cleanup_threshold!r}")
        self.cleanup_threshold = cleanup_threshold
        from kvmodel.model.quirks import resolve

        self.stale_quirk = "equal_timestamp_stale_entry" in resolve("lru_evictor_wallclock", quirks)
        self.free_table: dict[T, Stamp] = {}
        self.queue: deque[tuple[T, Stamp]] = deque()
        self.clock = 0
        self._n = 0

    def copy(self) -> WallClockLRU[T]:
        c: WallClockLRU[T] = WallClockLRU.__new__(WallClockLRU)
        c.cleanup_threshold = self.cleanup_threshold
        c.stale_quirk = self.stale_quirk
        c.free_table = dict(self.free_table)
        c.queue = deque(self.queue)
        c.clock = self.clock
        c._n = self._n
        c._order = self._order
        return c

    def insert(self, obj: T, clock: int | None = None) -> None:
        """Insert or refresh ``obj`` at ``clock`` (default: the next logical instant)."""
        self._order = None
        if clock is None:
            self.clock += 1
        else:
            if not isinstance(clock, int) or isinstance(clock, bool):
                raise InvalidInput(f"clock must be an integer, got {clock!r}")
            if clock < self.clock:
                raise InvalidInput(f"clock went backwards: {clock} < {self.clock} (Instant is monotonic)")
            self.clock = clock
        self._n += 1
        stamp: Stamp = self.clock if self.stale_quirk else (self.clock, self._n)
        self.free_table[obj] = stamp
        self.queue.append((obj, stamp))
        if len(self.queue) > self.cleanup_threshold * len(self.free_table):
            self.queue = deque((o, s) for (o, s) in self.queue if self.free_table.get(o, None) == s)

    def evict(self) -> T | None:
        self._order = None
        if not self.free_table:
            return None
        while self.queue:
            obj, stamp = self.queue.popleft()
            cur = self.free_table.get(obj)
            if cur is None or cur != stamp:
                continue
            del self.free_table[obj]
            return obj
        return None

    def order(self) -> list[T]:
        """Objects in the order successive ``evict`` calls would return them."""
        if not self.stale_quirk:  # unique stamps: the queue order is the stamp order
            return sorted(self.free_table, key=self.free_table.__getitem__)
        c = self.copy()
        out: list[T] = []
        while (o := c.evict()) is not None:
            out.append(o)
        return out


class CounterLRU(_Table[T]):
    """Counter-based ``LRUEvictor`` rewrite (EVB, commit f0652d89f).

    ``insert`` gives ``++positive_counter`` (refreshing recency), ``push_front`` gives
    ``--negative_counter`` (next to be evicted), ``evict`` pops the smallest counter,
    ``remove`` is eager. Counters are unique, so there are no ties and no stale entries.
    """

    def __init__(self, cleanup_threshold: int | None = None) -> None:
        # The rewrite keeps a threshold argument for API compatibility and ignores it.
        self.free_table: dict[T, int] = {}
        self.positive_counter = 0
        self.negative_counter = 0

    def copy(self) -> CounterLRU[T]:
        c: CounterLRU[T] = CounterLRU()
        c.free_table = dict(self.free_table)
        c.positive_counter = self.positive_counter
        c.negative_counter = self.negative_counter
        c._order = self._order
        return c

    def insert(self, obj: T, clock: int | None = None) -> None:
        self._order = None
        self.positive_counter += 1
        self.free_table.pop(obj, None)
        self.free_table[obj] = self.positive_counter

    def push_front(self, obj: T) -> None:
        self._order = None
        self.negative_counter -= 1
        self.free_table.pop(obj, None)
        self.free_table[obj] = self.negative_counter

    def evict(self) -> T | None:
        self._order = None
        if not self.free_table:
            return None
        obj = min(self.free_table, key=self.free_table.__getitem__)
        del self.free_table[obj]
        return obj

    def order(self) -> list[T]:
        return sorted(self.free_table, key=self.free_table.__getitem__)
