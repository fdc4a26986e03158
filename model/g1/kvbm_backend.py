"""The KVBM backend of the G1 manager (semantics §2.4, §2.6, §2.7), on the kvbm-logical substrate
of :mod:`kvmodel.model.g1.kvbm_logical`.

Real code: ``lib/mocker/src/kv_manager/kvbm_backend.rs`` commit fa6894c9a (atomic ``Use`` and
``G1Acquire``, matching ``g1_manager.rs`` commit 6125e8260) over ``lib/kvbm-logical``:
``BlockManager<G1>`` with the Reject registration policy, its FIFO reset pool and one of the
inactive indexes in ``pools/inactive/backends/`` (``lineage.rs`` by default, ``lru_backend.rs``,
``multi_lru_backend.rs``).

Manager (:class:`KvbmKvManager`): ``active_partial`` (UUID → slot), ``active_full`` (sequence
hash → one pinned primary and the number of logical owners), ``registered`` (the shadow:
every PLH this manager registered and has not seen evicted, with the metadata its Stored
carried), ``next_event_id``, ``capacity_generation``.

Quirks (``g1_kvbm``): with each on, the real behaviour; off, the ideal one.

* ``failed_use_reorders_inactive`` (§6 #7): a Use or destination reservation that fails after
  matching inactive blocks puts them back as the newest; ideal: the index is left exactly as
  it was.
* ``active_partial_use_noop`` (§6 #8): a Use naming an already active partial is a silent
  no-op for that entry; ideal: rejected before any change.
* ``plh_reuse_keeps_first_name`` (§6 #9): a PLH hit under another sequence hash publishes
  nothing and the eventual Removed names only the first hash; ideal: the new name is published
  (Stored) and removed with the block.
* ``events_for_uncached_sequences`` (§6 #13): blocks of a caching-disabled sequence (random
  hashes) are published; ideal: a signal marked not cacheable publishes nothing.
* ``stored_before_removed`` (§6 #14): a Use publishes its Stored groups, then the Removed of
  what it evicted; ideal: the Removed first.
* ``kvbm_active_counts_reservations`` (§6 #23): ``num_active_blocks`` counts reserved-but-unused
  decode and destination slots; ideal: only blocks held by requests.
* ``commit_asserts_after_partial_commit`` (§6 #24): a Use listing one new partial UUID twice, or
  one sequence hash with two PLHs, panics with the earlier entries committed; ideal: rejected
  before any change.
* ``use_ready_counts_entries`` (§6 #25): a Use returns ``Ready(len(blocks))``; ideal: the number
  of slots it newly took.
* ``deref_releases_before_panic`` (§2.4.3): a Deref panics at the first unknown block with the
  blocks before it released; ideal: rejected before any change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from kvmodel.model.blocks import FullBlock, PartialBlock, UniqueBlock
from kvmodel.model.errors import InvalidInput
from kvmodel.model.events import KvCacheEvent, Removed, Stored, StoredBlock
from kvmodel.model.g1.acquire import CAPACITY_EXHAUSTED, G1Acquire, Ready
from kvmodel.model.g1.kvbm_logical import EVICTION_BACKENDS, Index, KvbmPanic, Substrate
from kvmodel.model.g1.sequence import PLH, G1Deref, G1Promote, G1Signal, G1Use, by_plh
from kvmodel.model.g1.vllm_backend import Published
from kvmodel.model.g1.vllm_block_pool import MAX_SLOTS

# --------------------------------------------------------------------------- manager state


@attrs.define
class ActiveFull:
    block: int
    plh: PLH
    refs: int


@attrs.frozen
class Shadow:
    """``registered_blocks[plh]``: what this manager registered and published. Frozen: the clones
    of a manager share their shadows, and a change replaces one."""

    seq_hash: int
    block_id: int
    parent_hash: int | None
    local_hash: int | None
    token_ids: list[int] | None
    cacheable: bool = True
    aliases: list[int] = attrs.field(factory=list)  # ideal (no plh_reuse_keeps_first_name)

    def names(self) -> list[int]:
        return [self.seq_hash, *self.aliases]


@attrs.define
class KvbmDecodeReservation:
    slots: list[int]
    backend: str = "kvbm"

    def __len__(self) -> int:
        return len(self.slots)

    def copy(self) -> KvbmDecodeReservation:
        return KvbmDecodeReservation(list(self.slots), self.backend)


@attrs.define
class KvbmDestination:
    """A destination reservation: the Use layout, the leading blocks pinned (hash, PLH) and
    the unpublished slots the transfer fills."""

    layout: G1Use | None
    pinned: list[tuple[int, PLH]]
    unpublished: list[int]
    backend: str = "kvbm"
    live: bool = True

    def copy(self) -> KvbmDestination:
        """An independent copy: the lists copied, the layout (never changed once built) shared."""
        return KvbmDestination(self.layout, list(self.pinned), list(self.unpublished), self.backend, self.live)

    def transferable_prompt_tokens(self, block_size: int) -> int:
        """``#unpublished × block_size`` (a partial tail counts as a whole block, §6 #15)."""
        return len(self.unpublished) * block_size


@attrs.define
class _Prepared:
    kind: str  # active, matched, fresh_full, fresh_partial, partial_noop
    block: UniqueBlock
    full_idx: int | None = None
    slot: int | None = None  # matched: the pinned block; fresh: the candidate slot


class _Unwind(Exception):
    """A panic inside ``commit_use``'s walk, with what its frame releases while unwinding."""

    def __init__(self, panic: KvbmPanic, release: Any) -> None:
        super().__init__(panic.id)
        self.panic, self.release = panic, release


def _renamed(d: dict[str, Any], uuid: Callable[[str], str]) -> list[tuple[str, Any]]:
    return [(uuid(u), v) for u, v in d.items()]


class KvbmKvManager:
    """``KvManager`` of ``kvbm_backend.rs`` (fa6894c9a)."""

    def __init__(
        self,
        max_capacity: int,
        block_size: int,
        *,
        eviction_backend: str = "Lineage",
        publishers: bool = True,
        dp_rank: int = 0,
        quirks: Iterable[str] | None = None,
    ) -> None:
        from kvmodel.model.quirks import resolve

        for name, v in (("max_capacity", max_capacity), ("block_size", block_size)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise InvalidInput(f"{name} must be a non-negative integer, got {v!r}")
        if max_capacity > MAX_SLOTS:
            raise InvalidInput(f"max_capacity {max_capacity} exceeds the model's limit of {MAX_SLOTS} slots")
        if max_capacity == 0:
            raise KvbmPanic("max_capacity must be > 0")
        if eviction_backend not in EVICTION_BACKENDS:
            raise InvalidInput(f"unknown eviction backend {eviction_backend!r} (known: {list(EVICTION_BACKENDS)})")
        self.quirks = resolve("g1_kvbm", quirks)
        self.max_capacity, self.block_size, self.dp_rank = max_capacity, block_size, dp_rank
        self.eviction_backend = eviction_backend
        self.publishers = publishers
        self.sub = Substrate(max_capacity, eviction_backend)
        self.active_partial: dict[str, int] = {}
        self.active_full: dict[int, ActiveFull] = {}
        self.registered: dict[PLH, Shadow] = {}
        self.next_event_id = 0
        self.capacity_generation = 0
        self.outbox: list[Published] = []
        # where in the outbox each Use began: one operation of a harness (a decode push that
        # crosses two block boundaries) may run several Uses, each publishing its own events
        self.use_marks: list[int] = []
        self.last_fresh = 0  # slots the last successful Use newly took (for the ideal result)

    def clone(self) -> KvbmKvManager:
        c = KvbmKvManager.__new__(KvbmKvManager)
        c.__dict__.update(self.__dict__)
        c.sub = self.sub.clone()
        c.active_partial = dict(self.active_partial)
        c.active_full = {k: ActiveFull(v.block, v.plh, v.refs) for k, v in self.active_full.items()}
        # the shadows are never changed in place (``_alias`` replaces one): shared with the clone
        c.registered = dict(self.registered)
        c.outbox = list(self.outbox)
        c.use_marks = list(self.use_marks)
        return c

    def q(self, name: str) -> bool:
        return name in self.quirks

    # -- events
    def drain_events(self) -> list[Published]:
        out, self.outbox = self.outbox, []
        return out

    def drain_use_marks(self) -> list[int]:
        """The outbox positions at which each Use since the last drain began (call before
        :meth:`drain_events`)."""
        out, self.use_marks = self.use_marks, []
        return out

    def _publish(self, data: Stored | Removed, token_ids: list[list[int]] | None = None) -> None:
        """``publish_kv_event``: without a publisher nothing is built and the id stays."""
        if not self.publishers:
            return
        self.outbox.append(Published(KvCacheEvent(self.next_event_id, data, self.dp_rank), token_ids))
        self.next_event_id += 1

    def _silent(self, cacheable: bool) -> bool:
        return not cacheable and not self.q("events_for_uncached_sequences")

    def _publish_removed(self, evicted: Sequence[PLH]) -> None:
        """The shadowed PLHs among ``evicted`` leave the shadow; one Removed names their hashes."""
        hashes: list[int] = []
        for plh in evicted:
            s = self.registered.pop(plh, None)
            if s is None:
                continue
            hashes.extend(([] if self._silent(s.cacheable) else [s.seq_hash]) + s.aliases)
        if hashes:
            self._publish(Removed(tuple(hashes)))

    # -- Use
    def _validate_use(self, sig: G1Use) -> list[int]:
        fulls = [i for i, b in enumerate(sig.blocks) if isinstance(b, FullBlock)]
        n = len(fulls)
        if len(sig.plhs) != n:
            raise KvbmPanic("Use: plhs.len() must match FullBlock count in blocks", f"{len(sig.plhs)} vs {n}")
        if sig.local_hashes and len(sig.local_hashes) != n:
            raise KvbmPanic("Use: local_hashes must be empty or match FullBlock count", f"{len(sig.local_hashes)}")
        if sig.token_ids is not None and len(sig.token_ids) != n:
            raise KvbmPanic("Use: token_ids must be absent or match FullBlock count", f"{len(sig.token_ids)}")
        if isinstance(sig.parent, PartialBlock) and not self.q("commit_asserts_after_partial_commit"):
            # faithful: commit_use panics on it after registering the fresh blocks (below)
            raise KvbmPanic("parent block cannot be partial")
        if not self.q("active_partial_use_noop"):
            for b in sig.blocks:
                if isinstance(b, PartialBlock) and b.uuid in self.active_partial:
                    raise KvbmPanic("ideal: Use of an already active partial block", b.uuid)
        if not self.q("commit_asserts_after_partial_commit"):
            seen: set[str] = set()
            plh_of: dict[int, PLH] = {}
            k = 0
            for b in sig.blocks:
                if isinstance(b, PartialBlock):
                    if b.uuid in seen and b.uuid not in self.active_partial:
                        raise KvbmPanic("fresh Use replaced active partial block", b.uuid)
                    seen.add(b.uuid)
                else:
                    plh = sig.plhs[k]
                    k += 1
                    if b.hash in plh_of and plh_of[b.hash] != plh and b.hash not in self.active_full:
                        raise KvbmPanic("active full-block hash resolved to a different physical block", str(b.hash))
                    plh_of.setdefault(b.hash, plh)
        return fulls

    def process_use(self, sig: G1Use, reservation: KvbmDecodeReservation | None = None) -> G1Acquire:
        """Atomic Use: classify, match, reserve, then commit (§2.4.3)."""
        self.use_marks.append(len(self.outbox))
        self._validate_use(sig)
        saved_index = None if self.q("failed_use_reorders_inactive") else self.sub.inactive.clone()
        saved_tick = self.sub.tick
        prepared: list[_Prepared] = []
        k = 0
        pending: list[int] = []
        for b in sig.blocks:
            if isinstance(b, FullBlock):
                if b.hash in self.active_full:
                    prepared.append(_Prepared("active", b, k))
                else:
                    prepared.append(_Prepared("pending", b, k))
                    pending.append(len(prepared) - 1)
                k += 1
            elif b.uuid in self.active_partial:
                prepared.append(_Prepared("partial_noop", b))
            else:
                prepared.append(_Prepared("fresh_partial", b))
        # match_blocks_scattered over the pending PLHs
        for i in pending:
            p = prepared[i]
            assert p.full_idx is not None
            got = self.sub.match(sig.plhs[p.full_idx])
            p.kind, p.slot = ("matched", got) if got is not None else ("fresh_full", None)
        fresh = [p for p in prepared if p.kind in ("fresh_full", "fresh_partial")]
        evicted: list[PLH] = []
        if reservation is not None:
            if len(reservation.slots) < len(fresh):
                return self._fail_use(prepared, sig, saved_index, saved_tick)
            slots = [reservation.slots.pop() for _ in fresh]
        else:
            got2 = self.sub.allocate(len(fresh))
            if got2 is None:
                return self._fail_use(prepared, sig, saved_index, saved_tick)
            slots, evicted = got2
        for p, s in zip(fresh, slots, strict=True):
            p.slot = s
        if not self.q("stored_before_removed"):
            self._publish_removed(evicted)
        taken = self._commit(sig, prepared)
        if self.q("stored_before_removed"):
            self._publish_removed(evicted)
        self.last_fresh = taken
        return Ready(len(sig.blocks) if self.q("use_ready_counts_entries") else taken)

    def _fail_use(self, prepared: list[_Prepared], sig: G1Use, saved: Index | None, tick: int) -> G1Acquire:
        for p in prepared:
            if p.kind == "matched":
                assert p.full_idx is not None
                self.sub.drop(sig.plhs[p.full_idx])
        if saved is not None:
            self.sub.inactive, self.sub.tick = saved, tick
        return CAPACITY_EXHAUSTED

    def _commit(self, sig: G1Use, prepared: list[_Prepared]) -> int:
        """``commit_use``: register the fresh full blocks as one batch, then walk the list with
        the lineage cursor, publishing one Stored per run of fresh registrations. Returns the
        slots taken.

        A panic in the walk (§6 #24, or a partial parent, which Rust finds only after the batch
        registration) leaves the entries before it committed; the rest are dropped as the
        unwinding Rust code drops them: the failing entry's own handle, then the prepared
        entries not yet walked (matched handles released, fresh partial slots back to the reset
        list), then the batch's registrations not yet consumed. The run and the Removed are never
        published (the evicted blocks keep their shadow entries)."""
        canon: dict[int, int] = {}
        for p in prepared:
            if p.kind == "fresh_full":
                assert p.slot is not None and p.full_idx is not None
                canon[id(p)] = self.sub.register(p.slot, sig.plhs[p.full_idx])
        if isinstance(sig.parent, PartialBlock):  # faithful only (the ideal model rejected it)
            self._unwind(sig, prepared, 0, None)
            raise KvbmPanic("parent block cannot be partial")
        cursor: int | None = sig.parent.hash if isinstance(sig.parent, FullBlock) else None
        group: list[tuple[int, int | None, list[int] | None]] = []
        group_parent: list[int | None] = [cursor]
        cacheable = sig.cacheable
        taken = 0

        def flush() -> None:
            if group and not self._silent(cacheable):
                toks = None if sig.token_ids is None else [list(t or []) for _, _, t in group]
                blocks = tuple(StoredBlock(h, lh or 0) for h, lh, _ in group)
                self._publish(Stored(group_parent[0], blocks), toks)
            group.clear()

        def append(h: int, lh: int | None, toks: list[int] | None) -> None:
            if not group:
                group_parent[0] = cursor
            group.append((h, lh, toks))

        for i, p in enumerate(prepared):
            try:
                cursor = self._commit_one(sig, p, canon, cursor, cacheable, flush, append)
            except _Unwind as u:
                unwound: _Unwind | None = u
            else:
                unwound = None
            if unwound is not None:
                # the panic is raised outside the handler, so it carries no context: the unwinding
                # is the model's, and the walk's frames and the ``_Unwind`` would otherwise hold
                # the panic in reference cycles that only Python's collector frees
                panic, release = unwound.panic, unwound.release
                del unwound
                self._unwind(sig, prepared, i + 1, release)
                raise panic
            if p.kind in ("fresh_full", "fresh_partial") and (p.kind == "fresh_partial" or canon[id(p)] == p.slot):
                taken += 1
        flush()
        return taken

    def _unwind(self, sig: G1Use, prepared: list[_Prepared], start: int, release: Any) -> None:
        """Drop what a panicking ``commit_use`` still owns, in Rust's order (see ``_commit``)."""
        if release is not None:
            release()
        for q in prepared[start:]:
            if q.kind == "matched":
                assert q.full_idx is not None
                self.sub.drop(sig.plhs[q.full_idx])
            elif q.kind == "fresh_partial" and q.slot is not None:
                self.sub.release_mutable(q.slot)
        for q in prepared[start:]:
            if q.kind == "fresh_full":
                assert q.full_idx is not None
                self.sub.drop(sig.plhs[q.full_idx])

    def _commit_one(
        self,
        sig: G1Use,
        p: _Prepared,
        canon: dict[int, int],
        cursor: int | None,
        cacheable: bool,
        flush: Any,
        append: Any,
    ) -> int | None:
        b = p.block
        if p.kind in ("active", "matched", "fresh_full"):
            assert isinstance(b, FullBlock) and p.full_idx is not None
            plh = sig.plhs[p.full_idx]
            lh = sig.local_hashes[p.full_idx] if sig.local_hashes else None
            toks = None if sig.token_ids is None else list(sig.token_ids[p.full_idx])
            if p.kind == "active":
                flush()
                self.active_full[b.hash].refs += 1
            elif p.kind == "matched" or canon[id(p)] != p.slot:
                block = p.slot if p.kind == "matched" else canon[id(p)]
                assert block is not None
                e = self.active_full.get(b.hash)
                if e is not None:
                    if e.block != block:
                        # insert_or_retain_active_full's assert_eq!: the handle argument drops
                        raise _Unwind(
                            KvbmPanic("active full-block hash resolved to a different physical block", str(b.hash)),
                            lambda: self.sub.drop(plh),
                        )
                    e.refs += 1
                    self.sub.drop(plh)
                else:
                    self.active_full[b.hash] = ActiveFull(block, plh, 1)
                if self._alias(plh, b.hash, cacheable):
                    append(b.hash, lh, toks)
                else:
                    flush()
            else:
                assert p.slot is not None
                e = self.active_full.get(b.hash)
                if e is not None:  # the same hash with a second PLH, registered fresh
                    raise _Unwind(
                        KvbmPanic("active full-block hash resolved to a different physical block", str(b.hash)),
                        lambda: self.sub.drop(plh),
                    )
                self.active_full[b.hash] = ActiveFull(p.slot, plh, 1)
                stale = self.registered.get(plh)
                self.registered[plh] = Shadow(b.hash, p.slot, cursor, lh, toks, cacheable)
                if stale is not None:
                    # A shadow left by an earlier panic (its eviction never reported): the
                    # insert's is_none assertion fires after the handle moved into active_full.
                    raise _Unwind(KvbmPanic("fresh Use replaced registered block", repr(plh)), None)
                append(b.hash, lh, toks)
            return b.hash
        if p.kind == "fresh_partial":
            assert isinstance(b, PartialBlock) and p.slot is not None
            old = self.active_partial.get(b.uuid)
            self.active_partial[b.uuid] = p.slot
            if old is not None:
                # assert!(active_partial.insert(uuid, mutable).is_none()): the new slot is in the
                # map, the replaced one drops while the panic unwinds
                raise _Unwind(
                    KvbmPanic("fresh Use replaced active partial block", b.uuid),
                    lambda: self.sub.release_mutable(old),
                )
        return cursor

    def _alias(self, plh: PLH, h: int, cacheable: bool) -> bool:
        """A PLH hit under a name the shadow does not know (§6 #9). Faithful: nothing. Ideal:
        the name joins the shadow and is published in the current run."""
        s = self.registered.get(plh)
        if self.q("plh_reuse_keeps_first_name") or s is None or h in s.names() or self._silent(cacheable):
            return False
        # a new shadow, not the old one changed: the clones of a manager share its shadows
        self.registered[plh] = attrs.evolve(s, aliases=[*s.aliases, h])
        return True

    # -- Deref
    def process_deref(self, sig: G1Deref) -> G1Acquire:
        if not self.q("deref_releases_before_panic"):
            need: dict[int, int] = {}
            seen: set[str] = set()
            for b in sig.blocks:
                if isinstance(b, PartialBlock):
                    if b.uuid not in self.active_partial or b.uuid in seen:
                        raise KvbmPanic("Deref: partial block not in active pool", b.uuid)
                    seen.add(b.uuid)
                else:
                    need[b.hash] = need.get(b.hash, 0) + 1
                    e = self.active_full.get(b.hash)
                    if e is None or e.refs < need[b.hash]:
                        raise KvbmPanic("Deref: full block not in active pool", str(b.hash))
        before = self.sub.available()
        for b in sig.blocks:
            if isinstance(b, PartialBlock):
                slot = self.active_partial.pop(b.uuid, None)
                if slot is None:
                    raise KvbmPanic("Deref: partial block not in active pool", b.uuid)
                self.sub.release_mutable(slot)
            else:
                e = self.active_full.get(b.hash)
                if e is None:
                    raise KvbmPanic("Deref: full block not in active pool", str(b.hash))
                if e.refs == 1:
                    del self.active_full[b.hash]
                    self.sub.drop(e.plh)
                else:
                    e.refs -= 1
        self.capacity_generation += max(0, self.sub.available() - before)
        return Ready(1)

    # -- Promote
    def process_promote(self, sig: G1Promote) -> G1Acquire:
        slot = self.active_partial.get(sig.uuid)
        if slot is None:
            raise KvbmPanic("Promote: partial block not found", sig.uuid)
        if sig.plh is None:
            raise KvbmPanic("Promote: missing PLH", sig.uuid)
        del self.active_partial[sig.uuid]
        toks = None if sig.token_ids is None else list(sig.token_ids)
        self._commit_full(sig.seq_hash, sig.plh, slot, sig.parent_hash, sig.local_hash, toks, sig.cacheable)
        return Ready(1)

    def _commit_full(
        self,
        h: int,
        plh: PLH,
        slot: int,
        parent: int | None,
        lh: int | None,
        toks: list[int] | None,
        cacheable: bool,
    ) -> bool:
        """``commit_active_full``: reuse an active entry or a PLH match (the candidate slot is
        freed), else register; returns whether a fresh Stored is due (published here)."""
        e = self.active_full.get(h)
        if e is not None:
            self.sub.release_mutable(slot)
            e.refs += 1
            return False
        got = self.sub.match(plh)
        if got is not None:
            self.sub.release_mutable(slot)
            self.active_full[h] = ActiveFull(got, plh, 1)
            if self._alias(plh, h, cacheable) and not self._silent(cacheable):
                self._publish(Stored(parent, (StoredBlock(h, lh or 0),)), None if toks is None else [toks])
            return False
        block = self.sub.register(slot, plh)
        self.active_full[h] = ActiveFull(block, plh, 1)
        if block != slot:
            return False
        self.registered[plh] = Shadow(h, block, parent, lh, toks, cacheable)
        if not self._silent(cacheable):
            self._publish(Stored(parent, (StoredBlock(h, lh or 0),)), None if toks is None else [toks])
        return True

    def process_decode_signal(self, sig: G1Signal, reservation: KvbmDecodeReservation) -> Ready:
        """``process_decode_signal`` (``kvbm_backend.rs``): a decode step's signal over a decode
        reservation. A Use must come back ``Ready`` ("reserved decode allocation must be
        infallible") and, with ``use_ready_counts_entries`` (the count Rust's ``Ready`` carries),
        name every block (``assert_eq!``: "reserved decode allocation must commit every block");
        any other signal must be ``Ready`` ("non-Use decode signal must be infallible"). Rust
        returns nothing; the ``Ready`` is returned for the facade to pass on."""
        if isinstance(sig, G1Use):
            out = self.process_use(sig, reservation)
            if not isinstance(out, Ready):
                raise KvbmPanic("reserved decode allocation must be infallible")
            if self.q("use_ready_counts_entries") and out.n != len(sig.blocks):
                raise KvbmPanic("reserved decode allocation must commit every block", str(out))
            return out
        got = self.process(sig)
        if not isinstance(got, Ready):
            raise KvbmPanic("non-Use decode signal must be infallible")
        return got

    def process(self, sig: G1Signal, reservation: KvbmDecodeReservation | None = None) -> G1Acquire:
        if isinstance(sig, G1Use):
            return self.process_use(sig, reservation)
        if isinstance(sig, G1Deref):
            return self.process_deref(sig)
        if isinstance(sig, G1Promote):
            return self.process_promote(sig)
        raise InvalidInput(f"not a G1 MoveBlock: {sig!r}")

    # -- decode reservations
    def reserve_decode_blocks(self, n: int) -> KvbmDecodeReservation | None:
        got = self.sub.allocate(n)
        if got is None:
            return None
        self._publish_removed(got[1])
        return KvbmDecodeReservation(list(got[0]))

    def release_decode_reservation(self, res: KvbmDecodeReservation) -> None:
        for s in res.slots:
            self.sub.release_mutable(s)
        res.slots = []

    # -- white-box helpers the Rust tests call directly
    def allocate_unpublished_blocks(self, count: int, eviction_now_ms: float | None = None) -> list[int] | None:
        """``allocate_unpublished_blocks(count, eviction_now_ms)``: ``count`` reset slots (the
        free list first, then evictions, whose Removed is published at once), or None for
        ``CapacityExhausted``. ``eviction_now_ms`` only matters with an offload engine, which is
        not modelled."""
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= self.max_capacity:
            raise InvalidInput(f"count must be a usize within the capacity {self.max_capacity}, got {count!r}")
        got = self.sub.allocate(count)
        if got is None:
            return None
        self._publish_removed(got[1])
        return list(got[0])

    def acquire_existing_full(self, seq_hash: int, plh: PLH) -> bool:
        """``acquire_existing_full``: a handle on the active block of ``seq_hash``, else on the
        block registered under ``plh`` (resurrecting an inactive one). Returns whether one was
        taken (the handle pins the primary until dropped)."""
        e = self.active_full.get(seq_hash)
        if e is not None:
            self.sub.pin(e.plh)
            return True
        return self.sub.match(plh) is not None

    def construct_destination_reservation(
        self, cached_prefix: Sequence[tuple[int, PLH]], unpublished: Sequence[int], layout: G1Use | None
    ) -> KvbmDestination:
        """A ``VllmDestinationReservation { cached_prefix, unpublished_blocks, layout }`` built
        directly, as the Rust tests do: each cached-prefix entry takes a handle through
        ``acquire_existing_full``; ``unpublished`` are slots from ``allocate_unpublished_blocks``."""
        slots = list(unpublished)
        for s_ in slots:
            if s_ not in self.sub.mutable or s_ in self.active_partial.values():
                raise InvalidInput(f"slot {s_} is not an unpublished (allocated, unowned) block")
        pinned: list[tuple[int, PLH]] = []
        for h, plh in cached_prefix:
            e = self.active_full.get(h)
            if not self.acquire_existing_full(h, plh):
                for _, q in pinned:
                    self.sub.drop(q)
                raise InvalidInput(f"cached prefix block {h} is neither active nor registered")
            pinned.append((h, e.plh if e is not None else plh))
        return KvbmDestination(layout, pinned, slots)

    # -- destination reservations
    def reserve_destination(self, lay: G1Use | None, eviction_now_ms: float | None = None) -> KvbmDestination | None:
        if lay is None:
            return KvbmDestination(None, [], [])
        saved = None if self.q("failed_use_reorders_inactive") else (self.sub.inactive.clone(), self.sub.tick)
        pinned: list[tuple[int, PLH]] = []
        k = 0
        for b in lay.blocks:
            if not isinstance(b, FullBlock):
                break
            plh = lay.plhs[k]
            k += 1
            e = self.active_full.get(b.hash)
            if e is not None:
                self.sub.pin(e.plh)
                pinned.append((b.hash, e.plh))
                continue
            if self.sub.match(plh) is None:
                break
            pinned.append((b.hash, plh))
        got = self.sub.allocate(len(lay.blocks) - len(pinned))
        if got is None:
            for _, plh in pinned:
                self.sub.drop(plh)
            if saved is not None:
                self.sub.inactive, self.sub.tick = saved
            return None
        self._publish_removed(got[1])
        return KvbmDestination(lay, pinned, list(got[0]))

    def cancel_destination(self, res: KvbmDestination) -> None:
        if not res.live:
            return
        res.live = False
        for _, plh in res.pinned:
            self.sub.drop(plh)
        for s in res.unpublished:
            self.sub.release_mutable(s)
        res.pinned, res.unpublished = [], []

    def _validate_destination(self, res: KvbmDestination, lay: G1Use) -> None:
        """``activate_destination``'s asserts, in Rust's order, with Rust's messages."""
        n = sum(1 for b in lay.blocks if isinstance(b, FullBlock))
        if len(lay.plhs) != n:
            raise KvbmPanic("destination PLH count must match full block count", f"left: {len(lay.plhs)}, right: {n}")
        if lay.local_hashes and len(lay.local_hashes) != n:
            raise KvbmPanic("destination local hash count must be empty or match full block count")
        if lay.token_ids is not None and len(lay.token_ids) != n:
            raise KvbmPanic("destination token metadata count must match full block count")
        if len(res.pinned) > len(lay.blocks):
            raise KvbmPanic("destination cached prefix exceeds block layout")
        if len(res.unpublished) != len(lay.blocks) - len(res.pinned):
            raise KvbmPanic(
                "destination unpublished block count must cover the uncached layout",
                f"left: {len(res.unpublished)}, right: {len(lay.blocks) - len(res.pinned)}",
            )
        for (h, _), b in zip(res.pinned, lay.blocks, strict=False):
            if not isinstance(b, FullBlock):
                raise KvbmPanic("destination cached prefix cannot contain a partial block")
            if b.hash != h:
                raise KvbmPanic("destination cached prefix hash must match block layout", f"{b.hash} vs {h}")
        if isinstance(lay.parent, PartialBlock):
            raise KvbmPanic("parent block cannot be partial")

    def activate_destination(self, res: KvbmDestination) -> None:
        """``activate_destination``: validate the layout against the reservation (Rust's asserts
        and messages, in order, before any change), then publish the transferred blocks,
        reconciling cache entries that appeared since the reservation."""
        lay = res.layout
        if lay is None or not res.live:
            res.live = False
            return
        try:
            self._validate_destination(res, lay)
        except KvbmPanic:
            # the reservation was moved into the call: unwinding drops it (its slots go back to
            # the reset list, its cached prefix's handles are released)
            self.cancel_destination(res)
            raise
        res.live = False
        cursor = None if not isinstance(lay.parent, FullBlock) else lay.parent.hash
        slots = list(res.unpublished)
        k = 0
        run: list[tuple[int, int | None, list[int] | None]] = []
        run_parent: int | None = None

        def flush() -> None:
            if run and not self._silent(lay.cacheable):
                toks = None if lay.token_ids is None else [list(t or []) for _, _, t in run]
                self._publish(Stored(run_parent, tuple(StoredBlock(h, lh or 0) for h, lh, _ in run)), toks)
            run.clear()

        for i, b in enumerate(lay.blocks):
            if isinstance(b, FullBlock):
                plh = lay.plhs[k]
                lh = lay.local_hashes[k] if lay.local_hashes else None
                toks = None if lay.token_ids is None else list(lay.token_ids[k])
                k += 1
                if i < len(res.pinned):
                    e = self.active_full.get(b.hash)
                    pin_plh = res.pinned[i][1]
                    if e is not None:
                        flush()
                        e.refs += 1
                        self.sub.drop(pin_plh)
                    else:
                        self.active_full[b.hash] = ActiveFull(self.sub.block_of(pin_plh) or 0, pin_plh, 1)
                        if self._alias(pin_plh, b.hash, lay.cacheable):
                            if not run:
                                run_parent = cursor
                            run.append((b.hash, lh, toks))
                        else:
                            flush()
                else:
                    slot = slots.pop(0)
                    e = self.active_full.get(b.hash)
                    got = None if e is not None else self.sub.block_of(plh)
                    if e is not None or got is not None or self.sub.inactive.contains(plh):
                        flush()
                        self._commit_full(b.hash, plh, slot, cursor, lh, toks, lay.cacheable)
                    else:
                        block = self.sub.register(slot, plh)
                        self.active_full[b.hash] = ActiveFull(block, plh, 1)
                        self.registered[plh] = Shadow(b.hash, block, cursor, lh, toks, lay.cacheable)
                        if not run:
                            run_parent = cursor
                        run.append((b.hash, lh, toks))
                cursor = b.hash
            else:
                self.active_partial[b.uuid] = slots.pop(0)
        flush()
        res.pinned, res.unpublished = [], []

    # -- retry witness (offload) and metrics
    def validate_retry_witness(self, attempted: int, retried: bool, witness: int, released: int) -> None:
        """``validate_retry_witness``: the offload retry witness of one atomic reservation. Four
        asserts, in Rust's order, with Rust's messages: not retried before, a positive slot
        delta, a generation newer than the attempted one, and the current generation."""
        for name, v in (("attempted_generation", attempted), ("witness_generation", witness), ("released", released)):
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**64:
                raise InvalidInput(f"{name} must be a u64, got {v!r}")
        if not isinstance(retried, bool):
            raise InvalidInput(f"retried must be a boolean, got {retried!r}")
        if retried:
            raise KvbmPanic("one atomic G1 reservation retried more than once")
        if released == 0:
            raise KvbmPanic("RetryNow released zero G1 slots")
        if witness <= attempted:
            raise KvbmPanic(
                "RetryNow generation {} is not newer than attempted generation {}", f"{witness} vs {attempted}"
            )
        if witness != self.capacity_generation:
            raise KvbmPanic(
                "RetryNow generation does not match current G1 capacity generation",
                f"left: {witness}, right: {self.capacity_generation}",
            )

    def reserved_slots(self) -> int:
        """Mutable slots not held as partials: decode and destination reservations."""
        return len(self.sub.mutable) - len(self.active_partial)

    def num_active_blocks(self) -> int:
        """Faithful (§6 #23): ``total − available``, reserved slots included. Ideal: blocks
        held by requests (pinned primaries and partials)."""
        n = self.max_capacity - self.sub.available()
        if self.q("kvbm_active_counts_reservations"):
            return n
        return n - self.reserved_slots()

    def num_active_block_refs(self) -> int:
        return len(self.active_partial) + sum(e.refs for e in self.active_full.values())

    def num_inactive_blocks(self) -> int:
        return len(self.sub.inactive)

    def inflight_immutable(self) -> int:
        return len(self.sub.primaries)

    def get_prefill_cost(
        self, unique: Sequence[UniqueBlock], plhs: Sequence[PLH], num_tokens: int, caching: bool
    ) -> dict[str, int]:
        """Leading blocks active by hash (active reuse) or registered by PLH (inactive reuse)."""
        overlap = active = 0
        if caching:
            k = 0
            for b in unique:
                if not isinstance(b, FullBlock):
                    break
                plh = plhs[k] if k < len(plhs) else None
                k += 1
                if b.hash in self.active_full:
                    overlap += 1
                    active += 1
                elif plh is not None and plh in self.registered:
                    overlap += 1
                else:
                    break
        cached = min(overlap * self.block_size, num_tokens)
        return {
            "new_blocks": len(unique) - overlap,
            "new_tokens": num_tokens - cached,
            "cached_tokens": cached,
            "active_cached_tokens": min(active * self.block_size, num_tokens),
        }

    def key(self, uuid: Callable[[str], str] | None = None) -> Any:
        """The state (event ids and the capacity generation left out); ``uuid`` renames the
        partial names (the explorer's request symmetry)."""
        full = tuple((h, e.block, e.plh, e.refs) for h, e in sorted(self.active_full.items()))
        reg = tuple(
            (p, s.seq_hash, s.block_id, s.parent_hash, s.cacheable, tuple(s.aliases))
            for p, s in sorted(self.registered.items(), key=by_plh)
        )
        return (
            self.sub.key(),
            tuple(sorted(self.active_partial.items() if uuid is None else _renamed(self.active_partial, uuid))),
            full,
            reg,
        )

    def snapshot(self) -> dict[str, Any]:
        return {
            "free": list(self.sub.free),
            "inactive": [list(p) for p in self.sub.inactive.plhs()],
            "active_partial": dict(sorted(self.active_partial.items())),
            "active_full": {str(h): {"block": e.block, "refs": e.refs} for h, e in sorted(self.active_full.items())},
            "registered": {
                repr(p): {"seq_hash": s.seq_hash, "block_id": s.block_id, "parent_hash": s.parent_hash}
                for p, s in sorted(self.registered.items(), key=lambda kv: repr(kv[0]))
            },
            "next_event_id": self.next_event_id,
            "capacity_generation": self.capacity_generation,
        }
