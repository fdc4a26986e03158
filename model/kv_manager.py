"""The mocker's KV manager of the single-file era (semantics §1.2–1.4, tag OLDKV).

Real code: ``lib/llm/src/mocker/kv_manager.rs`` (commit f0652d89f, the version that sends
``MoveBlockResponse::Store/Remove`` on an optional channel). State: ``active_blocks``
(block → manual refcount), ``inactive_blocks`` (an LRU evictor of zero-reference
blocks), ``all_blocks`` (every resident block), and the response channel.

Every defect of §6 that concerns this component is a named quirk (``model/quirks.py``);
the seed's revision (``quirks.faithful``) has them all on and reproduces the Rust code step for step, including
mutations made before a panic. With a quirk off, the model does what the ideal
specification requires (atomic failure, lineage-correct Stores, refcounts conserved);
each such rule is stated where it is implemented below.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Literal

from kvmodel.model.blocks import (
    Deref,
    Destroy,
    FullBlock,
    MoveBlock,
    MoveBlockResponse,
    PartialBlock,
    Promote,
    Remove,
    Store,
    UniqueBlock,
    Use,
    block_from_json,
    block_text,
    check_block,
    check_blocks,
)
from kvmodel.model.errors import (
    DerefNotHeld,
    DestroyNotActive,
    DestroyNotResident,
    InvalidInput,
    ModelError,
    NegativeRefcount,
    ParentBlockPartial,
    PartialNotLast,
    PromoteMissing,
    PromoteNotResident,
    PromoteParentUnknown,
    SubtractOverflow,
)
from kvmodel.model.lru import CounterLRU, WallClockLRU
from kvmodel.model.quirks import resolve

COMPONENT = "kv_manager"

EvictorKind = Literal["wallclock", "counter"]
_Saved = tuple[dict[UniqueBlock, int], Any, set[UniqueBlock], int, bool]


class _CapacityFailure(Exception):
    """Internal: a Use found no block to evict."""


def _usize(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise InvalidInput(f"{what} must be a non-negative integer (usize), got {v!r}")
    return v


class KvManager:
    """``KvManager`` (OLDKV): ``process(MoveBlock) -> bool`` plus probes and metrics.

    ``channel`` stands for ``move_block_response_tx``: when true, the responses the real
    code sends are appended to :attr:`outbox` in send order; when false nothing is
    emitted (``KvManager::new``). Constructor arguments are not validated beyond their
    types, as in Rust (capacity 0 is accepted; every Use of a new block then fails).
    """

    def __init__(
        self,
        max_capacity: int,
        block_size: int = 16,
        *,
        channel: bool = True,
        quirks: Iterable[str] | None = None,
        evictor: EvictorKind = "wallclock",
    ) -> None:
        self.max_capacity = _usize(max_capacity, "max_capacity")
        self.block_size = _usize(block_size, "block_size")
        if not isinstance(channel, bool):
            raise InvalidInput(f"channel must be a bool, got {channel!r}")
        if evictor not in ("wallclock", "counter"):
            raise InvalidInput(f"evictor must be 'wallclock' or 'counter', got {evictor!r}")
        self.channel = channel
        self.evictor_kind: EvictorKind = evictor
        self.quirks = resolve(COMPONENT, quirks)
        self.active: dict[UniqueBlock, int] = {}
        # The manager's logical clock ticks on every insert, so the wall-clock evictor's stale-entry
        # quirk (equal readings) cannot arise here; unique stamps give the same eviction order.
        self.inactive: WallClockLRU[UniqueBlock] | CounterLRU[UniqueBlock] = (
            WallClockLRU(quirks=()) if evictor == "wallclock" else CounterLRU()
        )
        self.all_blocks: set[UniqueBlock] = set()
        self._shared = False  # the three structures above are shared with a clone (``clone``)
        self.outbox: list[MoveBlockResponse] = []

    # ------------------------------------------------------------------ configuration

    def config(self) -> dict[str, Any]:
        return {
            "max_capacity": self.max_capacity,
            "block_size": self.block_size,
            "channel": self.channel,
            "evictor": self.evictor_kind,
        }

    def clone(self) -> KvManager:
        """An independent copy. Copy-on-write: the copy shares the refcounts, the evictor and the
        resident set with this manager until either of them changes them (:meth:`_own`), so a copy
        whose next step is rejected and rolled back (most of an explorer's steps) copies nothing."""
        c = KvManager.__new__(KvManager)
        c.max_capacity, c.block_size, c.channel = self.max_capacity, self.block_size, self.channel
        c.evictor_kind, c.quirks = self.evictor_kind, self.quirks
        c.active, c.inactive, c.all_blocks = self.active, self.inactive, self.all_blocks
        c._shared = self._shared = True
        c.outbox = list(self.outbox)
        return c

    def shares_state(self) -> bool:
        """Whether the refcounts, evictor and resident set are still the ones shared with a
        clone — then nothing has changed them since they were shared (every change copies them
        first, :meth:`_own`)."""
        return self._shared

    def _own(self) -> None:
        """Before a change: stop sharing the structures with a clone (copy them)."""
        if self._shared:
            self.active, self.inactive = dict(self.active), self.inactive.copy()
            self.all_blocks, self._shared = set(self.all_blocks), False

    # ------------------------------------------------------------------ transactions

    def _save(self) -> _Saved:
        """What a step that fails must leave: a copy of the state — or, while the structures are
        shared with a clone, those structures themselves (the step copies them before its first
        change, :meth:`_own`, so a step rejected before any change copies nothing)."""
        if self._shared:
            return (self.active, self.inactive, self.all_blocks, len(self.outbox), True)
        return (dict(self.active), self.inactive.copy(), set(self.all_blocks), len(self.outbox), False)

    def _restore(self, s: _Saved) -> None:
        self.active, self.inactive, self.all_blocks, self._shared = s[0], s[1], s[2], s[4]
        del self.outbox[s[3] :]

    def _send(self, response: MoveBlockResponse) -> None:
        # send_block_response: only when a channel exists and the list is non-empty.
        if self.channel and response.blocks:
            self.outbox.append(response)

    def drain_events(self) -> list[MoveBlockResponse]:
        out, self.outbox = self.outbox, []
        return out

    # ------------------------------------------------------------------ process

    def process(self, signal: MoveBlock) -> bool:
        """``KvManager::process``: apply one MoveBlock; false only when a Use runs out of space.

        A Deref or Destroy that panics leaves no trace (rolled back) unless its quirk says the
        real code's mutations before the panic stay (``deref_ignores_unknown`` skips instead of
        panicking; ``destroy_mutates_before_panic``)."""
        if isinstance(signal, Deref):
            quirk, op = "deref_ignores_unknown", self._deref
        elif isinstance(signal, Destroy):
            quirk, op = "destroy_mutates_before_panic", self._destroy
        elif isinstance(signal, Use):
            return self._use(check_blocks(signal.blocks))
        elif isinstance(signal, Promote):
            self._promote(signal)
            return True
        else:
            raise InvalidInput(f"not a MoveBlock: {signal!r}")
        blocks = check_blocks(signal.blocks)
        if quirk in self.quirks:
            op(blocks)
            return True
        saved = self._save()
        try:
            op(blocks)
        except ModelError:
            self._restore(saved)
            raise
        return True

    # Use ---------------------------------------------------------------------------

    def _use(self, blocks: tuple[UniqueBlock, ...]) -> bool:
        """``MoveBlock::Use``: hit active (refcount+1), hit inactive (reactivate), else insert.

        Real order of effects: walk the list; a miss at capacity evicts the LRU inactive
        block first (``Remove([h])`` sent at once for a full block), or returns false if
        nothing can be evicted. After the loop one ``Store(new full blocks, parent)``.

        * ``use_non_atomic`` off: a false return leaves no trace (state and events rolled back).
        * ``store_parent_last_hit`` off: a PartialBlock may only be the last entry
          (``PartialNotLast``, checked first), and new full blocks are stored as
          contiguous runs, each with the batch predecessor of its first block as parent.
        * ``partial_parent_panic_after_mutation`` off: the "parent block cannot be
          partial" panic leaves no trace.
        """
        lineage = "store_parent_last_hit" not in self.quirks
        if lineage:
            for b in blocks[:-1]:
                if isinstance(b, PartialBlock):
                    raise PartialNotLast(f"{b.to_json()} in {[x.to_json() for x in blocks]}")
        atomic_fail = "use_non_atomic" not in self.quirks
        atomic_panic = "partial_parent_panic_after_mutation" not in self.quirks
        saved = self._save() if (atomic_fail or atomic_panic) else None
        self._own()  # a Use changes the state at its first block
        try:
            self._use_loop(blocks, lineage)
        except _CapacityFailure:
            if atomic_fail:
                assert saved is not None
                self._restore(saved)
            return False
        except ParentBlockPartial:
            if atomic_panic:
                assert saved is not None
                self._restore(saved)
            raise
        return True

    def _use_loop(self, blocks: tuple[UniqueBlock, ...], lineage: bool) -> None:
        stored: list[int] = []  # faithful: one Store of every new full block
        runs: list[tuple[int | None, list[int]]] = []  # lineage: (parent, run)
        prev_new = False
        parent_block: UniqueBlock | None = None
        for i, b in enumerate(blocks):
            if b in self.active:
                self.active[b] += 1
                parent_block = b
                prev_new = False
                continue
            if self.inactive.remove(b):
                self.active[b] = 1
                parent_block = b
                prev_new = False
                continue
            if len(self.active) + len(self.inactive) >= self.max_capacity:
                evicted = self.inactive.evict()
                if evicted is None:
                    raise _CapacityFailure
                self.all_blocks.discard(evicted)
                if isinstance(evicted, FullBlock):
                    self._send(Remove((evicted.hash,)))
            self.active[b] = 1
            self.all_blocks.add(b)
            if isinstance(b, FullBlock) and self.channel:
                if not lineage:
                    stored.append(b.hash)
                elif prev_new:
                    runs[-1][1].append(b.hash)
                else:
                    pred = blocks[i - 1] if i > 0 else None
                    runs.append((pred.hash if isinstance(pred, FullBlock) else None, [b.hash]))
            prev_new = isinstance(b, FullBlock)
        if lineage:
            for parent, run in runs:
                self._send(Store(tuple(run), parent))
            return
        if isinstance(parent_block, PartialBlock):
            raise ParentBlockPartial(f"last hit {parent_block.to_json()}")
        parent = parent_block.hash if isinstance(parent_block, FullBlock) else None
        self._send(Store(tuple(stored), parent))

    # Destroy -----------------------------------------------------------------------

    def _destroy(self, blocks: tuple[UniqueBlock, ...]) -> None:
        """``MoveBlock::Destroy``: walk the list in reverse, drop each block from active.

        Panics (unwrap) on a block that is not active, after the blocks before it in the
        walk were removed; asserts membership of ``all_blocks``. One ``Remove`` of the
        full blocks, in input order, at the end.
        ``destroy_ignores_refcount`` off: Destroy drops one reference; the block leaves
        residency (and is reported removed) only when its count reaches zero.
        """
        destroyed: list[int] = []
        for b in reversed(blocks):
            rc = self.active.get(b)
            if rc is None:
                raise DestroyNotActive(f"{block_text(b)} is not active")
            if self._shared:
                self._own()
            if rc > 1 and "destroy_ignores_refcount" not in self.quirks:
                self.active[b] = rc - 1
                continue
            del self.active[b]
            if b not in self.all_blocks:
                raise DestroyNotResident(f"{b.to_json()}")
            self.all_blocks.remove(b)
            if isinstance(b, FullBlock) and self.channel:
                destroyed.append(b.hash)
        destroyed.reverse()
        self._send(Remove(tuple(destroyed)))

    # Deref -------------------------------------------------------------------------

    def _deref(self, blocks: tuple[UniqueBlock, ...]) -> None:
        """``MoveBlock::Deref``: walk in reverse; decrement; at zero move to the inactive LRU.

        Because of the reverse walk, ``Deref([a, b, c])`` makes ``c`` the oldest of the
        three inactive entries. Non-active blocks are silently skipped (quirk
        ``deref_ignores_unknown``; off: ``DerefNotHeld``, no trace). No events.
        ``deref_caches_partial`` off: a partial reaching zero is freed, not cached.
        """
        for b in reversed(blocks):
            rc = self.active.get(b)
            if rc is None:
                if "deref_ignores_unknown" in self.quirks:
                    continue
                raise DerefNotHeld(f"{block_text(b)} is not active")
            if rc == 0:
                raise NegativeRefcount(f"{b.to_json()}")
            if self._shared:
                self._own()
            if rc > 1:
                self.active[b] = rc - 1
                continue
            del self.active[b]
            if isinstance(b, PartialBlock) and "deref_caches_partial" not in self.quirks:
                self.all_blocks.discard(b)
            else:
                self.inactive.insert(b)

    # Promote -----------------------------------------------------------------------

    def _promote(self, p: Promote) -> None:
        """``MoveBlock::Promote(uuid, hash, parent)``: turn an active partial into a full block.

        Faithful: the partial's refcount moves to ``FullBlock(hash)``, overwriting any
        active entry (``promote_overwrites_refcount``) and leaving an inactive copy in
        place (``promote_leaves_inactive_copy``); ``Store([hash], parent)`` is always
        sent (``promote_always_stores``), with the parent taken verbatim
        (``promote_parent_unchecked``). Capacity is not checked.
        Ideal: refcounts merge, an inactive copy is reactivated, Store only for a hash
        not already resident, and the parent must be a resident full block ≠ hash.
        """
        partial = PartialBlock(p.uuid)
        full = FullBlock(p.hash)
        if partial not in self.active:
            raise PromoteMissing(f"{partial.to_json()}. Block still exists: {str(partial in self.all_blocks).lower()}")
        if "promote_parent_unchecked" not in self.quirks and p.parent_hash is not None:
            parent = FullBlock(p.parent_hash)
            if p.parent_hash == p.hash or parent not in self.all_blocks:
                raise PromoteParentUnknown(f"parent {p.parent_hash} of {p.hash}")
        was_resident = full in self.all_blocks
        self._own()
        rc = self.active.pop(partial)
        if full in self.active and "promote_overwrites_refcount" not in self.quirks:
            self.active[full] += rc
        else:
            self.active[full] = rc
        if "promote_leaves_inactive_copy" not in self.quirks:
            self.inactive.remove(full)
        if partial not in self.all_blocks:
            raise PromoteNotResident(f"{partial.to_json()}")
        self.all_blocks.remove(partial)
        self.all_blocks.add(full)
        if "promote_always_stores" in self.quirks or not was_resident:
            self._send(Store((p.hash,), p.parent_hash))

    # ------------------------------------------------------------------ queries

    def probe_new_blocks(self, blocks: Iterable[UniqueBlock]) -> int:
        """Number of listed blocks not in ``all_blocks`` (not prefix-based)."""
        return sum(1 for b in blocks if check_block(b) not in self.all_blocks)

    def prefill_cost(self, sequence: Any) -> tuple[int, int]:
        """``get_prefill_cost(&ActiveSequence)`` for a :class:`~kvmodel.model.sequence.ActiveSequence`."""
        return self.get_prefill_cost(sequence.unique_blocks, sequence.num_input_tokens)

    def get_prefill_cost(self, unique_blocks: Iterable[UniqueBlock], num_input_tokens: int) -> tuple[int, int]:
        """``get_prefill_cost(sequence)`` → ``(new_blocks, new_tokens)``.

        The seed (f0652d89f, quirk ``prefill_cost_counts_any_resident``): the overlap is every
        listed block that is resident (``probe_new_blocks``) and ``new_tokens = num_input_tokens -
        overlap · block_size`` is plain usize arithmetic, a negative result the Rust
        subtraction-overflow panic. Ideal, as ``kv_manager.rs`` does from d22ca5231 (#5808): the
        overlap is the longest prefix of resident blocks, its tokens clamped to ``num_input_tokens``.
        """
        ub = [check_block(b) for b in unique_blocks]
        n = _usize(num_input_tokens, "num_input_tokens")
        if "prefill_cost_counts_any_resident" not in self.quirks:
            # d22ca5231 (#5808): the longest resident prefix, its tokens clamped to the input
            overlap = 0
            for b in ub:
                if b not in self.all_blocks:
                    break
                overlap += 1
            return len(ub) - overlap, n - min(overlap * self.block_size, n)
        new_blocks = self.probe_new_blocks(ub)
        overlap = len(ub) - new_blocks
        new_tokens = n - overlap * self.block_size
        if new_tokens < 0:
            raise SubtractOverflow(f"{num_input_tokens} - {overlap}*{self.block_size}")
        return new_blocks, new_tokens

    def current_capacity(self) -> int:
        return len(self.active) + len(self.inactive)

    def current_capacity_perc(self) -> float:
        return _div(self.current_capacity(), self.max_capacity)

    def num_active_blocks(self) -> int:
        return len(self.active)

    def get_active_perc(self) -> float:
        return _div(len(self.active), self.max_capacity)

    def num_inactive_blocks(self) -> int:
        return len(self.inactive)

    def get_active_blocks(self) -> frozenset[UniqueBlock]:
        return frozenset(self.active)

    def get_inactive_blocks(self) -> frozenset[UniqueBlock]:
        return self.inactive.keys()

    # ------------------------------------------------------------------ snapshots

    def snapshot(self) -> dict[str, Any]:
        """Canonical JSON view: active (sorted, with refcounts), inactive in eviction order."""
        return {
            "active": [[b.to_json(), rc] for b, rc in sorted(self.active.items(), key=lambda x: x[0].sort_key())],
            "inactive": [b.to_json() for b in self.inactive.order()],
            "all_blocks": [b.to_json() for b in sorted(self.all_blocks, key=lambda x: x.sort_key())],
        }

    @classmethod
    def from_snapshot(cls, config: dict[str, Any], snap: Any) -> KvManager:
        """A manager in the state :meth:`snapshot` spells (an implementation's ``state`` in
        invariant mode): ``active`` as ``[block, refcount]`` pairs, ``inactive`` in eviction
        order, ``all_blocks``; :class:`InvalidInput` for anything else (a block twice, a refcount
        that is not a positive integer, a missing key)."""
        if not isinstance(snap, dict) or set(snap) != {"active", "inactive", "all_blocks"}:
            raise InvalidInput(f"a kv_manager state is {{active, inactive, all_blocks}}, got {snap!r:.120}")
        m = cls(
            config["max_capacity"],
            config["block_size"],
            channel=config["channel"],
            quirks=(),
            evictor=config["evictor"],
        )
        for pair in _list(snap["active"], "active"):
            if not isinstance(pair, list) or len(pair) != 2:
                raise InvalidInput(f"an active entry is [block, refcount], got {pair!r:.80}")
            b, rc = block_from_json(pair[0]), pair[1]
            if isinstance(rc, bool) or not isinstance(rc, int) or rc < 0 or b in m.active:
                raise InvalidInput(f"active entry {pair!r:.80}: a block once, with a refcount >= 0")
            m.active[b] = rc
        for obj in _list(snap["inactive"], "inactive"):
            b = block_from_json(obj)
            if m.inactive.contains(b):
                raise InvalidInput(f"{obj!r:.60} is twice in inactive")
            m.inactive.insert(b)
        m.all_blocks = {block_from_json(b) for b in _list(snap["all_blocks"], "all_blocks")}
        return m

    def key(self) -> tuple[Any, ...]:
        """Hashable canonical state (for the explorer and state comparisons)."""
        return (
            tuple(sorted(((b.sort_key(), rc) for b, rc in self.active.items()))),
            tuple(b.sort_key() for b in self.inactive.ordered()),
            tuple(sorted(b.sort_key() for b in self.all_blocks)),
        )


def _list(v: Any, what: str) -> list[Any]:
    if not isinstance(v, list):
        raise InvalidInput(f"{what} must be a list, got {v!r:.80}")
    return v


def _div(a: int, b: int) -> float:
    """Rust f64 division: x/0 is inf, 0/0 is NaN."""
    if b == 0:
        return math.nan if a == 0 else math.inf
    return a / b
