"""The native ("vLLM") block pool: physical copies, prefix pins, an intrusive LRU, reservations.

Real code: ``lib/mocker/src/cache/vllm_block_pool.rs`` (Dynamo, commit 2ee518f3d948; the same pool
is ``crates/core/src/engine/cache/vllm_block_pool.rs`` of aisimulate-core, the mocker engine
of ``ai-dynamo-runtime==1.6.1``). Semantics reference §2.5.1.

State: ``capacity``; ``copies`` (id → :class:`Copy`: private, or cached under a hash with
``refs`` and ``pins``); ``by_hash`` (hash → copy ids, the first is the *primary* that
lookups return; when it goes, the oldest duplicate takes its place); ``inactive`` (the LRU of
cached copies with no refs and no pins, oldest first); ``reserved`` (fresh capacity promised
to outstanding reservations). A :class:`Reservation` holds prefix pins (root → leaf) and a
count of fresh slots.

Occupancy: ``len(copies) + reserved + free = capacity``. A hash is *visible* (to a router)
while it has at least one cached copy: :meth:`cache_private` reports the 0→1 transition
and eviction reports the 1→0 transition (the ``removed`` list of a reservation).

Quirk ``prefix_hit_first_copy_only`` (§6 #16): ``prefix_hit(h).is_active`` looks at the
primary copy only; ideal: any copy of ``h`` referenced or pinned.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from kvmodel.model.errors import (
    CacheNonPrivate,
    InvalidInput,
    NoFreshCapacity,
    PoolCapacityZero,
    PrefixExceedsLayout,
    PrefixNotResident,
    RefUnderflow,
    UnknownCopy,
)

# The model keeps one record per slot: a pool larger than this is refused, not allocated.
MAX_SLOTS = 1 << 20


@attrs.define
class Copy:
    """One physical block: ``hash`` None while private."""

    hash: int | None = None
    refs: int = 0
    pins: int = 0

    @property
    def idle(self) -> bool:
        """Cached with no reference and no pin: exactly the copies on the inactive LRU."""
        return self.hash is not None and self.refs == 0 and self.pins == 0


@attrs.define
class Reservation:
    """Capacity and prefix pins held before a manager commits ownership (``BlockReservation``)."""

    prefix: list[tuple[int, int]]  # (hash, copy id), root → leaf
    fresh: int

    def __len__(self) -> int:
        return len(self.prefix) + self.fresh

    def copy(self) -> Reservation:
        return Reservation(list(self.prefix), self.fresh)


@attrs.define
class Reserved:
    """``ReserveOutcome``: the reservation and the hashes whose last copy was evicted for it."""

    reservation: Reservation
    removed: list[int]


class NativePool:
    """``VllmBlockPool``."""

    def __init__(self, capacity: int, quirks: Iterable[str] | None = None) -> None:
        from kvmodel.model.quirks import resolve

        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
            raise InvalidInput(f"capacity must be a non-negative integer, got {capacity!r}")
        if capacity == 0:
            raise PoolCapacityZero()
        if capacity > MAX_SLOTS:
            raise InvalidInput(f"capacity {capacity} exceeds the model's limit of {MAX_SLOTS} slots")
        self.capacity = capacity
        self.quirks = resolve("g1_native", quirks)
        self.copies: dict[int, Copy] = {}
        self.by_hash: dict[int, list[int]] = {}
        self.inactive: OrderedDict[int, None] = OrderedDict()  # head (first) is evicted first
        self.reserved = 0
        self.next_id = 0

    def clone(self) -> NativePool:
        c = NativePool.__new__(NativePool)
        c.capacity, c.quirks, c.reserved, c.next_id = self.capacity, self.quirks, self.reserved, self.next_id
        c.copies = {k: Copy(v.hash, v.refs, v.pins) for k, v in self.copies.items()}
        c.by_hash = {k: list(v) for k, v in self.by_hash.items()}
        c.inactive = OrderedDict(self.inactive)
        return c

    # -- queries
    def free_capacity(self) -> int:
        return self.capacity - len(self.copies) - self.reserved

    def num_active(self) -> int:
        """``copies − inactive + reserved``: outstanding reservations count as active (§6 #23)."""
        return len(self.copies) - len(self.inactive) + self.reserved

    def num_active_refs(self) -> int:
        return sum(1 if c.hash is None else c.refs for c in self.copies.values())

    def num_inactive(self) -> int:
        return len(self.inactive)

    def visible(self) -> set[int]:
        return set(self.by_hash)

    def prefix_hit(self, h: int) -> bool | None:
        """None when ``h`` has no cached copy; else whether it counts as *active* reuse."""
        ids = self.by_hash.get(h)
        if not ids:
            return None
        if "prefix_hit_first_copy_only" in self.quirks:
            c = self.copies[ids[0]]
            return c.refs > 0 or c.pins > 0
        return any(self.copies[i].refs > 0 or self.copies[i].pins > 0 for i in ids)

    def lru_hashes(self) -> list[int | None]:
        return [self.copies[i].hash for i in self.inactive]

    # -- reservations
    def reserve(self, prefix: Sequence[int], fresh: int) -> Reserved | None:
        """Pin every ``prefix`` hash (each must be resident) and reserve ``fresh`` slots,
        evicting LRU copies as needed; None (no change) when that cannot be done."""
        _natural(fresh, "fresh")
        hits = []
        for h in prefix:
            ids = self.by_hash.get(h)
            if not ids:
                raise PrefixNotResident(f"hash {h}")
            hits.append((h, ids[0]))
        return self._reserve_hits(hits, fresh)

    def reserve_resident_prefix(self, candidates: Sequence[int], total: int) -> Reserved | None:
        """Pin the longest resident prefix of ``candidates`` and reserve the rest of ``total``."""
        _natural(total, "total")
        hits: list[tuple[int, int]] = []
        for k, h in enumerate(candidates):
            if k and len(hits) >= total:  # asserted before the next lookup
                raise PrefixExceedsLayout(f"{len(candidates)} candidates, total {total}")
            ids = self.by_hash.get(h)
            if not ids:
                break
            if not k and total == 0:
                raise PrefixExceedsLayout(f"{len(candidates)} candidates, total {total}")
            hits.append((h, ids[0]))
        return self._reserve_hits(hits, total - len(hits))

    def _reserve_hits(self, hits: list[tuple[int, int]], fresh: int) -> Reserved | None:
        needed = max(0, fresh - self.free_capacity())
        if needed:
            pinned_idle = len({i for _, i in hits if self.copies[i].idle})
            if needed > len(self.inactive) - pinned_idle:
                return None
        for _, i in hits:
            self._pin(i)
        removed = []
        for _ in range(needed):
            h = self._evict_one()
            if h is not None:
                removed.append(h)
        self.reserved += fresh
        return Reserved(Reservation(list(hits), fresh), removed)

    def _pin(self, i: int) -> None:
        c = self.copies[i]
        if c.idle:
            del self.inactive[i]
        c.pins += 1

    def _evict_one(self) -> int | None:
        """Pop the LRU head; its hash when that was the hash's last copy."""
        i, _ = self.inactive.popitem(last=False)
        c = self.copies.pop(i)
        assert c.hash is not None
        ids = self.by_hash[c.hash]
        ids.remove(i)
        if ids:
            return None
        del self.by_hash[c.hash]
        return c.hash

    def activate_prefix(self, r: Reservation) -> list[tuple[int, int]]:
        """Each prefix pin becomes a reference."""
        prefix, r.prefix = r.prefix, []
        for _, i in prefix:
            c = self.copies[i]
            c.pins -= 1
            c.refs += 1
        return prefix

    def allocate_private(self, r: Reservation) -> int:
        if r.fresh <= 0:
            raise NoFreshCapacity()
        r.fresh -= 1
        self.reserved -= 1
        i = self.next_id
        self.next_id += 1
        self.copies[i] = Copy()
        return i

    def allocate_cached(self, r: Reservation, h: int) -> tuple[int, bool]:
        i = self.allocate_private(r)
        return i, self.cache_private(i, h)

    def cache_private(self, i: int, h: int) -> bool:
        """A private copy enters the cache under ``h`` with one reference; True when it is the
        first copy of ``h`` (the hash became visible)."""
        c = self.copies.get(i)
        if c is None:
            raise UnknownCopy(f"copy {i}")
        if c.hash is not None:
            raise CacheNonPrivate(f"copy {i} holds {c.hash}")
        c.hash, c.refs, c.pins = h, 1, 0
        ids = self.by_hash.setdefault(h, [])
        ids.append(i)
        return len(ids) == 1

    def release(self, i: int) -> None:
        """Private: freed at once. Cached: one reference less; idle copies join the LRU tail."""
        c = self.copies.get(i)
        if c is None:
            raise UnknownCopy(f"copy {i}")
        if c.hash is None:
            del self.copies[i]
            return
        if c.refs <= 0:
            raise RefUnderflow(f"copy {i}")
        c.refs -= 1
        if c.idle:
            self.inactive[i] = None

    def cancel(self, r: Reservation) -> None:
        """Unpin the prefix leaf first (leaves become older LRU entries than parents) and return
        the unused fresh slots."""
        for _, i in reversed(r.prefix):
            c = self.copies[i]
            c.pins -= 1
            if c.idle:
                self.inactive[i] = None
        r.prefix = []
        self.reserved -= r.fresh
        r.fresh = 0

    def snapshot(self) -> dict[str, Any]:
        return {
            "capacity": self.capacity,
            "reserved": self.reserved,
            "copies": {
                str(i): ({"private": True} if c.hash is None else {"hash": c.hash, "refs": c.refs, "pins": c.pins})
                for i, c in sorted(self.copies.items())
            },
            "lru": self.lru_hashes(),
        }


def _natural(v: Any, name: str) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise InvalidInput(f"{name} must be a non-negative integer, got {v!r}")
