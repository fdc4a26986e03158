"""The native ("vLLM") KV manager of the G1 era: per-request block tables over :class:`NativePool`.

Real code: ``lib/mocker/src/kv_manager/vllm_backend.rs``, commit 2ee518f3d948 (the request-table
version that ``g1_manager.rs`` commit 6125e8260 drives); semantics reference §2.5.2–2.5.4, §2.6.
The later lease rewrite (commit 22507053, also aisimulate-core's engine) keeps the same
observable order: Removed when capacity is reserved, Stored when blocks are computed.

State: the pool; ``tables`` (request → list of :class:`Entry` in position order: a partial
with its UUID, or a full block with its hash and, until it is computed, the metadata its
Stored will carry); ``partial_uuids``; ``next_event_id``; configuration (``block_size``,
``enable_prefix_caching``, ``publishers``, ``dp_rank``).

Every rejection is a :class:`NativePanic` whose id is the Rust panic message. Checks are
made before any change, so a rejected call leaves no trace (the real code's validation
block also runs before the reservation).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from kvmodel.model.blocks import FullBlock, PartialBlock, UniqueBlock
from kvmodel.model.errors import InvalidInput, NativePanic
from kvmodel.model.events import KvCacheEvent, Removed, Stored, StoredBlock
from kvmodel.model.g1.acquire import CAPACITY_EXHAUSTED, G1Acquire, Ready
from kvmodel.model.g1.vllm_block_pool import NativePool, Reservation

# panic messages raised through a variable (kvmodel.contracts reads them from here)
PANIC_MESSAGES = ("full-block Deref mismatch", "partial Deref mismatch")


@attrs.define
class Pending:
    """What a fresh full block's Stored will say, recorded when it is allocated."""

    parent: int | None
    local_hash: int | None
    token_ids: list[int] | None


@attrs.define
class Entry:
    """``OwnedBlock``: ``hash`` None for a partial (then ``uuid`` is set)."""

    copy: int
    hash: int | None = None
    uuid: str | None = None
    pending: Pending | None = None

    def matches(self, b: UniqueBlock) -> bool:
        if isinstance(b, FullBlock):
            return self.hash == b.hash
        return self.hash is None and self.uuid == b.uuid


@attrs.define
class Published:
    """One event as a publisher receives it (the raw sink also sees ``block_token_ids``)."""

    event: KvCacheEvent
    block_token_ids: list[list[int]] | None = None

    def to_json(self) -> dict[str, Any]:
        out = self.event.to_json()
        if self.block_token_ids is not None:
            out["block_token_ids"] = self.block_token_ids
        return out


@attrs.define
class NativeDecodeBlockReservation:
    pool: Reservation
    backend: str = "native"

    def copy(self) -> NativeDecodeBlockReservation:
        return NativeDecodeBlockReservation(self.pool.copy(), self.backend)


@attrs.define
class NativeDestinationReservation:
    owner: int
    pool: Reservation
    layout: Any  # the Use layout (blocks, local hashes, token ids, parent) or None
    backend: str = "native"

    prompt_tokens: int = 0
    quirks: frozenset[str] = frozenset()

    def copy(self) -> NativeDestinationReservation:
        """An independent copy: the pool reservation copied, the layout (never changed once
        built) shared."""
        return attrs.evolve(self, pool=self.pool.copy())

    def transferable_prompt_tokens(self, block_size: int) -> int:
        """Faithful (§6 #15, ``transferable_counts_partial_tail``): fresh blocks × block size, a
        partial tail counted as a whole block. Ideal: the prompt tokens those blocks hold."""
        n = self.pool.fresh * block_size
        if "transferable_counts_partial_tail" in self.quirks:
            return n
        return min(n, max(0, self.prompt_tokens - len(self.pool.prefix) * block_size))


@attrs.define
class VllmBlockLayout:
    """A ``MoveBlock::Use`` payload (what the native manager reads of it)."""

    blocks: list[UniqueBlock]
    local_hashes: list[int]
    token_ids: list[list[int]] | None
    parent: UniqueBlock | None

    def fulls(self) -> int:
        return sum(1 for b in self.blocks if isinstance(b, FullBlock))


def _same(x: Any) -> Any:
    return x


def _opt(f: Callable[[str], str], x: str | None) -> str | None:
    return None if x is None else f(x)


def _pending(p: Any) -> Any:
    """A pending Stored's record as the key spells it: its fields (``None``: none pending)."""
    return None if p is None else (p.parent, p.local_hash, None if p.token_ids is None else tuple(p.token_ids))


class VllmKvManager:
    """``VllmKvManager`` (request-table revision)."""

    def __init__(
        self,
        max_capacity: int,
        block_size: int,
        *,
        enable_prefix_caching: bool = True,
        publishers: bool = True,
        dp_rank: int = 0,
        quirks: Iterable[str] | None = None,
    ) -> None:
        from kvmodel.model.quirks import resolve

        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 0:
            raise InvalidInput(f"block_size must be a non-negative integer, got {block_size!r}")
        if block_size == 0:
            raise NativePanic("block_size must be > 0")
        self.quirks = resolve("g1_native", quirks)
        self.pool = NativePool(max_capacity, self.quirks)
        self.block_size = block_size
        self.caching = enable_prefix_caching
        self.publishers = publishers
        self.dp_rank = dp_rank
        self.tables: dict[int, list[Entry]] = {}
        # an immutable value, replaced on a change, so that clones share it
        self.partial_uuids: frozenset[str] = frozenset()
        self.next_event_id = 0
        self.outbox: list[Published] = []

    def clone(self) -> VllmKvManager:
        c = VllmKvManager.__new__(VllmKvManager)
        c.quirks, c.block_size, c.caching, c.publishers, c.dp_rank = (
            self.quirks,
            self.block_size,
            self.caching,
            self.publishers,
            self.dp_rank,
        )
        c.pool = self.pool.clone()
        c.tables = {k: [Entry(e.copy, e.hash, e.uuid, e.pending) for e in v] for k, v in self.tables.items()}
        c.partial_uuids = self.partial_uuids
        c.next_event_id = self.next_event_id
        c.outbox = list(self.outbox)
        return c

    def drain_events(self) -> list[Published]:
        out, self.outbox = self.outbox, []
        return out

    # -- events
    def _publish(self, data: Stored | Removed, token_ids: list[list[int]] | None = None) -> None:
        """``publish_kv_event``: nothing with caching off; without a publisher, nothing and the
        event id does not advance."""
        if not self.caching or not self.publishers:
            return
        self.outbox.append(Published(KvCacheEvent(self.next_event_id, data, self.dp_rank), token_ids))
        self.next_event_id += 1

    def _publish_removed(self, hashes: Sequence[int]) -> None:
        if hashes:
            self._publish(Removed(tuple(hashes)))

    def _publish_groups(self, stores: list[tuple[int, Pending] | None]) -> None:
        """Consecutive visible blocks form one Stored (parent: the first block's recorded
        parent); a None breaks the run, and so does a change in local-hash or token-id presence."""
        group: list[tuple[int, Pending]] = []

        def flush() -> None:
            if not group:
                return
            toks = [p.token_ids for _, p in group] if group[0][1].token_ids is not None else None
            blocks = tuple(StoredBlock(h, p.local_hash or 0) for h, p in group)
            self._publish(Stored(group[0][1].parent, blocks), toks)  # type: ignore[arg-type]
            group.clear()

        for s in stores:
            if s is None:
                flush()
                continue
            if group and (
                (group[0][1].local_hash is None) != (s[1].local_hash is None)
                or (group[0][1].token_ids is None) != (s[1].token_ids is None)
            ):
                flush()
            group.append(s)
        flush()

    # -- validation of a Use layout (use_for_request and destination reservations)
    def _validate(self, owner: int, lay: VllmBlockLayout, reusable: int) -> None:
        n_full = lay.fulls()
        if lay.local_hashes and len(lay.local_hashes) != n_full:
            raise NativePanic(
                "local hashes must be empty or align with full blocks", f"{len(lay.local_hashes)} for {n_full}"
            )
        if lay.token_ids is not None and len(lay.token_ids) != n_full:
            raise NativePanic("token IDs must align with full blocks", f"{len(lay.token_ids)} for {n_full}")
        if isinstance(lay.parent, PartialBlock):
            raise NativePanic("assertion failed: !matches!(parent, Some(UniqueBlock::PartialBlock(_)))")
        seen: set[str] = set()
        for b in lay.blocks:
            if isinstance(b, PartialBlock):
                if b.uuid in self.partial_uuids or b.uuid in seen:
                    raise NativePanic(
                        "partial block {} is already allocated", f"partial block {b.uuid} is already allocated"
                    )
                seen.add(b.uuid)
        if reusable > len(lay.blocks):
            raise NativePanic(
                "assertion failed: reusable_prefix_blocks <= blocks.len()", f"{reusable} > {len(lay.blocks)}"
            )
        if reusable and not self.caching:
            raise NativePanic("assertion failed: self.enable_prefix_caching || reusable_prefix_blocks == 0")
        if reusable and self.tables.get(owner):
            raise NativePanic("only a request's first allocation may reuse a prefix")
        if any(not isinstance(b, FullBlock) for b in lay.blocks[:reusable]):
            raise NativePanic("a reusable prefix can contain only full blocks")

    def _commit(self, owner: int, lay: VllmBlockLayout, r: Reservation, cache_fresh: bool) -> None:
        """``commit_layout``: prefix pins become references; fresh blocks get private copies
        (full ones remember the Stored they will publish), or with ``cache_fresh`` (destination
        activation) enter the cache at once and are published."""
        table = self.tables.setdefault(owner, [])
        prefix = self.pool.activate_prefix(r)
        cursor = lay.parent.hash if isinstance(lay.parent, FullBlock) else None
        stores: list[tuple[int, Pending] | None] = []
        k = 0
        for i, b in enumerate(lay.blocks):
            if i < len(prefix):
                k += 1  # Rust's full_idx counts every full block, the prefix's too
                h, copy = prefix[i]
                table.append(Entry(copy, h))
                cursor = h
                continue
            if isinstance(b, PartialBlock):
                table.append(Entry(self.pool.allocate_private(r), None, b.uuid))
                self.partial_uuids = self.partial_uuids | {b.uuid}
                if cache_fresh:
                    stores.append(None)  # a partial ends the run of published blocks
                continue
            meta = Pending(
                cursor,
                lay.local_hashes[k] if k < len(lay.local_hashes) else None,
                None if lay.token_ids is None else list(lay.token_ids[k]),
            )
            k += 1
            if cache_fresh:
                copy, visible = self.pool.allocate_cached(r, b.hash)
                table.append(Entry(copy, b.hash))
                stores.append((b.hash, meta) if visible else None)
            else:
                table.append(Entry(self.pool.allocate_private(r), b.hash, None, meta if self.caching else None))
            cursor = b.hash
        if cache_fresh:
            self._publish_groups(stores)

    # -- operations
    def use_for_request(self, owner: int, lay: VllmBlockLayout, reusable: int = 0) -> G1Acquire:
        """Reserve (prefix pins + fresh slots; Removed published first), then commit.
        ``Ready(len(blocks))``, or ``CapacityExhausted`` with nothing changed."""
        self._validate(owner, lay, reusable)
        prefix = [b.hash for b in lay.blocks[:reusable] if isinstance(b, FullBlock)]
        out = self.pool.reserve(prefix, len(lay.blocks) - reusable)
        if out is None:
            return CAPACITY_EXHAUSTED
        self._publish_removed(out.removed)
        self._commit(owner, lay, out.reservation, False)
        self.pool.cancel(out.reservation)
        return Ready(len(lay.blocks))

    def finalize_computed_prefix(self, owner: int, before: int, after: int) -> list[int]:
        """The vLLM ``cache_blocks`` boundary: blocks completed by this decision become cached
        and visible ones are published (one Stored per run of consecutive visible blocks).
        Returns the table positions visited."""
        if not self.caching:
            return []
        if before > after:
            raise NativePanic("computed token count cannot move backwards", f"{before} > {after}")
        first, completed = before // self.block_size, after // self.block_size
        table = self.tables.get(owner)
        if table is None and "finalize_skips_owner_check" not in self.quirks:
            raise NativePanic("request {} owns no block table", f"request {owner} owns no block table")
        if first >= completed:
            return []  # faithful: before the table is looked up (§6 #17)
        if table is None:
            raise NativePanic("request {} owns no block table", f"request {owner} owns no block table")
        completed = min(completed, len(table))
        stores: list[tuple[int, Pending] | None] = []
        visited: list[int] = []
        for pos in range(first, completed):
            e = table[pos]
            if e.hash is None:
                break
            visited.append(pos)
            if e.pending is None:
                stores.append(None)
                continue
            meta, e.pending = e.pending, None
            visible = self.pool.cache_private(e.copy, e.hash)
            stores.append((e.hash, meta) if visible else None)
        self._publish_groups(stores)
        return visited

    def deref_for_request(self, owner: int, blocks: Sequence[UniqueBlock]) -> None:
        """Release the named table tail (listed leaf first); no events."""
        table = self.tables.get(owner)
        if table is None:
            raise NativePanic("request {} owns no block table", f"request {owner} owns no block table")
        if len(blocks) > len(table):
            raise NativePanic("request releases too many blocks", f"{len(blocks)} > {len(table)}")
        tail = table[len(table) - len(blocks) :]
        if "deref_exact_reverse_tail" in self.quirks:
            for i, b in enumerate(blocks):
                e = table[len(table) - 1 - i]
                if isinstance(b, FullBlock) != (e.hash is not None):
                    raise NativePanic("Deref block kind disagrees with request table")
                if not e.matches(b):
                    what = PANIC_MESSAGES[0] if isinstance(b, FullBlock) else PANIC_MESSAGES[1]
                    raise NativePanic(what, f"{b.to_json()}")
        else:  # ideal: the tail in any order (it is released leaf first all the same)
            left = list(tail)
            for b in blocks:
                k = next((j for j, e in enumerate(left) if e.matches(b)), None)
                if k is None:
                    raise NativePanic("Deref does not name the request's tail", f"{b.to_json()}")
                del left[k]
        del table[len(table) - len(blocks) :]
        if not table:
            del self.tables[owner]
        for e in reversed(tail):
            if e.hash is None:
                assert e.uuid is not None
                self.partial_uuids = self.partial_uuids - {e.uuid}
            self.pool.release(e.copy)

    def promote_for_request(
        self,
        owner: int,
        uuid: str,
        h: int,
        parent: int | None,
        local_hash: int | None = None,
        token_ids: list[int] | None = None,
    ) -> None:
        """The partial tail becomes full block ``h``: cached (and published if it is the hash's
        first copy) when caching is on, left private otherwise."""
        table = self.tables.get(owner)
        if table is None:
            raise NativePanic("request {} owns no block table", f"request {owner} owns no block table")
        if not table:  # unreachable through the manager (an emptied table is removed), kept as Rust has it
            raise NativePanic("Promote requires a request-owned partial tail", f"request {owner}")
        e = table[-1]
        if e.hash is not None:
            raise NativePanic("Promote requires a partial tail")
        if e.uuid != uuid:
            raise NativePanic("Promote partial UUID mismatch", f"{uuid} != {e.uuid}")
        if self.caching and self.pool.cache_private(e.copy, h):
            self._publish(
                Stored(parent, (StoredBlock(h, local_hash or 0),)), None if token_ids is None else [list(token_ids)]
            )
        self.partial_uuids = self.partial_uuids - {uuid}
        e.hash, e.uuid, e.pending = h, None, None

    # -- decode reservations
    def reserve_decode_blocks(self, n: int) -> NativeDecodeBlockReservation | None:
        out = self.pool.reserve([], n)
        if out is None:
            return None
        self._publish_removed(out.removed)
        return NativeDecodeBlockReservation(out.reservation)

    def use_decode_reservation(self, owner: int, lay: VllmBlockLayout, res: NativeDecodeBlockReservation) -> G1Acquire:
        self._validate(owner, lay, 0)
        if res.pool.fresh < len(lay.blocks):
            return CAPACITY_EXHAUSTED
        self._commit(owner, lay, res.pool, False)
        return Ready(len(lay.blocks))

    def release_decode_reservation(self, res: NativeDecodeBlockReservation) -> None:
        self.pool.cancel(res.pool)

    # -- destination reservations (disaggregated transfer)
    def reserve_destination(
        self, owner: int, lay: VllmBlockLayout | None, prompt_tokens: int = 0
    ) -> NativeDestinationReservation | None:
        if owner in self.tables:
            raise NativePanic("destination request already owns a block table", f"request {owner}")
        if lay is None:
            out = self.pool.reserve([], 0)
            assert out is not None
            return NativeDestinationReservation(owner, out.reservation, None, quirks=self.quirks)
        self._validate(owner, lay, 0)
        prefix: list[int] = []
        if self.caching:
            for b in lay.blocks:
                if not isinstance(b, FullBlock) or self.pool.prefix_hit(b.hash) is None:
                    break
                prefix.append(b.hash)
        res = self.pool.reserve(prefix, len(lay.blocks) - len(prefix))
        if res is None:
            return None
        self._publish_removed(res.removed)
        return NativeDestinationReservation(
            owner, res.reservation, lay, prompt_tokens=prompt_tokens, quirks=self.quirks
        )

    def activate_destination(self, res: NativeDestinationReservation) -> None:
        if res.owner in self.tables:
            raise NativePanic("destination request already owns a block table", f"request {res.owner}")
        if res.layout is None:
            self.pool.cancel(res.pool)
            return
        # Rust validates the layout again: a partial UUID allocated since the reservation panics
        self._validate(res.owner, res.layout, 0)
        self._commit(res.owner, res.layout, res.pool, self.caching)
        if len(res.pool):
            raise NativePanic("destination reservation was not consumed")
        self.pool.cancel(res.pool)

    def cancel_destination(self, res: NativeDestinationReservation) -> None:
        self.pool.cancel(res.pool)

    # -- queries
    def num_active_blocks(self) -> int:
        """Faithful (§6 #23, ``active_counts_reservations``): outstanding reservations count as
        active blocks. Ideal: only resident copies in use."""
        if "active_counts_reservations" in self.quirks:
            return self.pool.num_active()
        return len(self.pool.copies) - self.pool.num_inactive()

    def num_active_block_refs(self) -> int:
        return self.pool.num_active_refs()

    def num_inactive_blocks(self) -> int:
        return self.pool.num_inactive()

    def prefix_hit(self, h: int) -> bool | None:
        return self.pool.prefix_hit(h)

    def get_prefill_cost(
        self, unique: Sequence[UniqueBlock], num_tokens: int, seq_caching: bool = True
    ) -> dict[str, int]:
        """Overlap = leading full blocks with a cached copy (both sides caching); ``active``
        counts those whose hit is active."""
        overlap = active = 0
        if self.caching and seq_caching:
            for b in unique:
                if not isinstance(b, FullBlock):
                    break
                hit = self.pool.prefix_hit(b.hash)
                if hit is None:
                    break
                overlap += 1
                active += 1 if hit else 0
        cached = min(overlap * self.block_size, num_tokens)
        return {
            "new_blocks": len(unique) - overlap,
            "new_tokens": num_tokens - cached,
            "cached_tokens": cached,
            "active_cached_tokens": min(active * self.block_size, num_tokens),
        }

    def key(
        self, owner: Callable[[int], int] | None = None, uuid: Callable[[str], str] | None = None
    ) -> tuple[Any, ...]:
        """The observable state, canonical: copy ids renamed by age, event ids left out; with
        ``owner`` and ``uuid``, the state with its requests (and the partial names they minted)
        renamed — the explorer's owner symmetry."""
        m = self
        p = m.pool
        copies = sorted(p.copies.items())
        rank = {i: k for k, (i, _) in enumerate(copies)}
        if owner is None and uuid is None:
            tables = tuple(
                sorted(
                    (o, tuple((rank[e.copy], e.hash, e.uuid, _pending(e.pending)) for e in t))
                    for o, t in m.tables.items()
                )
            )
            uuids = tuple(sorted(m.partial_uuids))
        else:
            o_ = owner or _same
            u_ = uuid or _same
            tables = tuple(
                sorted(
                    (o_(o), tuple((rank[e.copy], e.hash, _opt(u_, e.uuid), _pending(e.pending)) for e in t))
                    for o, t in m.tables.items()
                )
            )
            uuids = tuple(sorted(u_(x) for x in m.partial_uuids))
        return (
            tuple((k, c.hash, c.refs, c.pins) for k, (_, c) in enumerate(copies)),
            tuple(sorted((h, tuple(rank[i] for i in ids)) for h, ids in p.by_hash.items())),
            tuple(rank[i] for i in p.inactive),
            p.reserved,
            tables,
            uuids,
        )

    def snapshot(self) -> dict[str, Any]:
        return {
            "pool": self.pool.snapshot(),
            "tables": {
                str(o): [{"P": e.uuid, "copy": e.copy} if e.hash is None else {"F": e.hash, "copy": e.copy} for e in t]
                for o, t in sorted(self.tables.items())
            },
            "next_event_id": self.next_event_id,
        }
