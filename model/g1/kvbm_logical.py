"""The kvbm-logical substrate the G1 manager's KVBM backend runs on (semantics §2.4).

Real code: ``lib/kvbm-logical`` — ``BlockManager<G1>`` with the Reject registration policy, its
FIFO reset pool and one of the inactive indexes in ``pools/inactive/backends/`` (``lineage.rs``
by default, ``lru_backend.rs``, ``multi_lru_backend.rs``); the backend itself is
:mod:`kvmodel.model.g1.kvbm_backend`.

Substrate (:class:`Substrate`): ``total`` slots ``0..N-1``; a FIFO ``free`` list (allocation
pops the front, every release pushes the back); ``mutable`` slots held by the manager
(partials, decode and destination reservations, candidates being registered); ``primaries``
(a registered PLH → its block and the number of live handles); the inactive index (registered,
unreferenced). Dropping the last handle of a primary inserts it into the index with the next
logical tick. A PLH is modelled as the triple ``(sequence hash, parent, position)``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import attrs

from kvmodel.model.errors import InvalidInput, NativePanic
from kvmodel.model.g1.sequence import PLH, by_plh


class KvbmPanic(NativePanic):
    """A panic of KVBM code (``kvbm_backend.rs`` or kvbm-logical); the id is the Rust message."""


EVICTION_BACKENDS = ("Lineage", "Lru", "MultiLru")
# multi_lru_backend.rs: four LRU levels split by TinyLFU frequency at these thresholds.
MULTI_LRU_THRESHOLDS = (2, 6, 15)

# --------------------------------------------------------------------------- inactive indexes


@attrs.define
class _Node:
    plh: PLH | None  # None: a ghost (a parent that is not itself inactive)
    block: int | None
    tick: int
    parent: tuple[int, int] | None
    children: set[tuple[int, int]] = attrs.field(factory=set)


def _key(plh: PLH) -> tuple[int, int]:
    return (plh[2], plh[0])


def _parent_key(plh: PLH) -> tuple[int, int] | None:
    return None if plh[1] is None or plh[2] == 0 else (plh[2] - 1, plh[1])


class LineageIndex:
    """``lineage.rs``: nodes keyed by (position, fragment) linked to (position−1, parent
    fragment); a missing parent is a ghost. Only real leaves are candidates, oldest
    ``(tick, position, fragment)`` first; evicting a leaf prunes empty ghost ancestors, and a
    real parent that becomes a leaf competes with its original tick. Lookups compare the whole
    PLH (the slab rewrite's behaviour; with full triples the older key-only lookup agrees)."""

    name = "Lineage"

    def __init__(self) -> None:
        self.nodes: dict[tuple[int, int], _Node] = {}
        self.count = 0

    def clone(self) -> LineageIndex:
        c = LineageIndex()
        c.nodes = {k: _Node(n.plh, n.block, n.tick, n.parent, set(n.children)) for k, n in self.nodes.items()}
        c.count = self.count
        return c

    def __len__(self) -> int:
        return self.count

    def contains(self, plh: PLH) -> bool:
        n = self.nodes.get(_key(plh))
        return n is not None and n.plh == plh

    def insert(self, plh: PLH, block: int, tick: int) -> None:
        k = _key(plh)
        n = self.nodes.get(k)
        if n is not None and n.plh is not None:
            raise KvbmPanic("lineage: duplicate insert", repr(plh))
        pk = _parent_key(plh)
        if n is None:
            n = self.nodes[k] = _Node(plh, block, tick, pk)
        else:
            n.plh, n.block, n.tick, n.parent = plh, block, tick, pk
        if pk is not None:
            p = self.nodes.get(pk)
            if p is None:
                p = self.nodes[pk] = _Node(None, None, 0, None)
            p.children.add(k)
        self.count += 1

    def _detach(self, k: tuple[int, int]) -> None:
        """Node ``k`` (no children, no block) leaves the graph; empty ghosts above it go too."""
        n = self.nodes.pop(k)
        pk = n.parent
        while pk is not None:
            p = self.nodes[pk]
            p.children.discard(k)
            if p.plh is not None or p.children:
                return
            self.nodes.pop(pk)
            k, pk = pk, p.parent

    def _remove(self, k: tuple[int, int]) -> int:
        n = self.nodes[k]
        assert n.block is not None
        b = n.block
        self.count -= 1
        if n.children:
            n.plh, n.block, n.tick = None, None, 0  # now a ghost
        else:
            self._detach(k)
        return b

    def take(self, plh: PLH, touch: bool = True) -> int | None:
        if not self.contains(plh):
            return None
        return self._remove(_key(plh))

    def candidates(self) -> list[tuple[int, int, int]]:
        return sorted((n.tick, k[0], k[1]) for k, n in self.nodes.items() if n.plh is not None and not n.children)

    def evict(self) -> tuple[PLH, int] | None:
        c = self.candidates()
        if not c:
            return None
        k = (c[0][1], c[0][2])
        plh = self.nodes[k].plh
        assert plh is not None
        return plh, self._remove(k)

    def plhs(self) -> list[PLH]:
        return [n.plh for n in self.nodes.values() if n.plh is not None]

    def key(self) -> Any:
        """Ticks by rank: only their order matters, so the key stays finite."""
        rank = {t: r for r, t in enumerate(sorted(n.tick for n in self.nodes.values() if n.plh is not None))}
        return tuple(
            sorted((k, n.plh, n.block, rank.get(n.tick) if n.plh else None, n.parent) for k, n in self.nodes.items())
        )


class LruIndex:
    """``lru_backend.rs``: the ``lru`` crate — insert at the recent end, evict the least
    recently inserted, a lookup removes."""

    name = "Lru"

    def __init__(self) -> None:
        self.order: OrderedDict[PLH, int] = OrderedDict()

    def clone(self) -> LruIndex:
        c = type(self)()
        c.order = OrderedDict(self.order)
        return c

    def __len__(self) -> int:
        return len(self.order)

    def contains(self, plh: PLH) -> bool:
        return plh in self.order

    def insert(self, plh: PLH, block: int, tick: int) -> None:
        if plh in self.order:
            raise KvbmPanic("lru: duplicate insert", repr(plh))
        self.order[plh] = block

    def take(self, plh: PLH, touch: bool = True) -> int | None:
        return self.order.pop(plh, None)

    def evict(self) -> tuple[PLH, int] | None:
        if not self.order:
            return None
        return self.order.popitem(last=False)

    def plhs(self) -> list[PLH]:
        return list(self.order)

    def key(self) -> Any:
        return tuple(self.order.items())


class MultiLruIndex:
    """``multi_lru_backend.rs``: four LRU levels chosen at insertion by the TinyLFU frequency
    of the PLH (levels split at 2, 6, 15); eviction takes the least recent entry of the
    coldest non-empty level; a lookup removes and touches the frequency. The TinyLFU tracker is
    modelled as an exact counter saturating at 15, without the periodic halving (reached
    only after as many touches as its sample size)."""

    name = "MultiLru"

    def __init__(self) -> None:
        self.levels: list[OrderedDict[PLH, int]] = [OrderedDict() for _ in range(4)]
        self.freq: dict[PLH, int] = {}

    def clone(self) -> MultiLruIndex:
        c = MultiLruIndex()
        c.levels = [OrderedDict(lv) for lv in self.levels]
        c.freq = dict(self.freq)
        return c

    def __len__(self) -> int:
        return sum(len(lv) for lv in self.levels)

    def contains(self, plh: PLH) -> bool:
        return any(plh in lv for lv in self.levels)

    def _level(self, plh: PLH) -> int:
        f = self.freq.get(plh, 0)
        return sum(1 for t in MULTI_LRU_THRESHOLDS if f >= t)

    def insert(self, plh: PLH, block: int, tick: int) -> None:
        if self.contains(plh):
            raise KvbmPanic("multi-lru: duplicate insert", repr(plh))
        self.levels[self._level(plh)][plh] = block

    def take(self, plh: PLH, touch: bool = True) -> int | None:
        for lv in self.levels:
            if plh in lv:
                if touch:
                    self.freq[plh] = min(15, self.freq.get(plh, 0) + 1)
                return lv.pop(plh)
        return None

    def evict(self) -> tuple[PLH, int] | None:
        for lv in self.levels:
            if lv:
                return lv.popitem(last=False)
        return None

    def plhs(self) -> list[PLH]:
        return [p for lv in self.levels for p in lv]

    def key(self) -> Any:
        return (tuple(tuple(lv.items()) for lv in self.levels), tuple(sorted(self.freq.items(), key=repr)))


Index = LineageIndex | LruIndex | MultiLruIndex


def make_index(name: str) -> Index:
    if name == "Lineage":
        return LineageIndex()
    if name == "Lru":
        return LruIndex()
    if name == "MultiLru":
        return MultiLruIndex()
    raise InvalidInput(f"unknown eviction backend {name!r} (known: {list(EVICTION_BACKENDS)})")


# --------------------------------------------------------------------------- substrate

COUNTERS = (
    "allocations",
    "allocations_from_reset",
    "evictions",
    "registrations",
    "stagings",
    "match_hashes_requested",
    "match_blocks_returned",
)


class Substrate:
    """kvbm-logical ``BlockManager<G1>`` with the Reject policy (KL-MGR, KL-STORE)."""

    def __init__(self, total: int, backend: str = "Lineage") -> None:
        self.total = total
        # the free list and the mutable slots are immutable values, replaced on every change, so
        # that a clone shares them (the explorer holds thousands of clones; a deque costs 600
        # bytes, an empty set 216)
        self.free: tuple[int, ...] = tuple(range(total))
        self.mutable: frozenset[int] = frozenset()
        # plh -> (block, handles): immutable pairs, replaced on a change, so that a clone shares them
        self.primaries: dict[PLH, tuple[int, int]] = {}
        self.inactive: Index = make_index(backend)
        self.tick = 0
        self.dedup = 0
        # kvbm-logical's BlockPoolMetrics counters (metrics/pool_metrics.rs); not part of the key.
        # Copy-on-write: a clone shares them until it counts (:meth:`_count`)
        self.counters: dict[str, int] = dict.fromkeys(COUNTERS, 0)
        self._own_counters = True

    def clone(self) -> Substrate:
        c = Substrate.__new__(Substrate)
        c.total, c.free, c.mutable = self.total, self.free, self.mutable
        c.primaries = dict(self.primaries)
        c.inactive = self.inactive.clone()
        c.tick, c.dedup = self.tick, self.dedup
        c.counters, c._own_counters = self.counters, False
        self._own_counters = False
        return c

    def _count(self, name: str, n: int = 1) -> None:
        """Add ``n`` to a metrics counter, first copying counters shared with a clone."""
        if not self._own_counters:
            self.counters, self._own_counters = dict(self.counters), True
        self.counters[name] += n

    def available(self) -> int:
        return len(self.free) + len(self.inactive)

    def allocate(self, n: int) -> tuple[list[int], list[PLH]] | None:
        """``allocate_blocks_with_evictions``: all or nothing; the free list first, then
        evictions in the index's order. Returns the slots and the evicted PLHs."""
        if self.available() < n:
            return None
        from_reset = min(n, len(self.free))
        out = list(self.free[:from_reset])
        self.free = self.free[from_reset:]
        evicted: list[PLH] = []
        while len(out) < n:
            got = self.inactive.evict()
            assert got is not None
            evicted.append(got[0])
            out.append(got[1])
        self.mutable = self.mutable.union(out)
        self._count("allocations", n)
        self._count("allocations_from_reset", from_reset)
        self._count("evictions", len(evicted))
        return out, evicted

    def release_mutable(self, block: int) -> None:
        self.mutable = self.mutable - {block}
        self.free = (*self.free, block)

    def register(self, block: int, plh: PLH) -> int:
        """Reject policy: an active primary or an inactive block (resurrected) with this PLH
        wins and the candidate slot goes to the back of the free list."""
        self._count("stagings")
        got = self.match(plh, count=False)
        if got is not None:
            self.dedup += 1
            self.release_mutable(block)
            return got
        self.mutable = self.mutable - {block}
        self.primaries[plh] = (block, 1)
        self._count("registrations")
        return block

    def match(self, plh: PLH, count: bool = True) -> int | None:
        """One handle on the block registered under ``plh`` (resurrecting an inactive one)."""
        if count:
            self._count("match_hashes_requested")
        p = self.primaries.get(plh)
        if p is not None:
            self.primaries[plh] = (p[0], p[1] + 1)
            if count:
                self._count("match_blocks_returned")
            return p[0]
        b = self.inactive.take(plh)
        if b is None:
            return None
        self.primaries[plh] = (b, 1)
        if count:
            self._count("match_blocks_returned")
        return b

    def drop(self, plh: PLH) -> None:
        """Drop one handle; the last one sends the block to the index as its newest entry."""
        block, handles = self.primaries[plh]
        handles -= 1
        if handles != 0:
            self.primaries[plh] = (block, handles)
            return
        del self.primaries[plh]
        self.inactive.insert(plh, block, self.tick)
        self.tick += 1

    def pin(self, plh: PLH) -> None:
        """One more handle on the active primary of ``plh`` (a clone of its ``ImmutableBlock``)."""
        block, handles = self.primaries[plh]
        self.primaries[plh] = (block, handles + 1)

    def block_of(self, plh: PLH) -> int | None:
        p = self.primaries.get(plh)
        return None if p is None else p[0]

    def key(self) -> Any:
        return (
            tuple(self.free),
            tuple(sorted(self.mutable)),
            tuple((k, tuple(v)) for k, v in sorted(self.primaries.items(), key=by_plh)),
            self.inactive.key(),
        )
