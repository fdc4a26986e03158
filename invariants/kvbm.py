"""Invariants of the G1 manager with the KVBM backend (semantics §2.4.4, §5) and its stream.

The monitor keeps the router's view of the published stream (each hash's Stored count minus
its Removed count) and checks each event as it arrives. The system (``G1KvbmSystem``) keeps
what each request holds (the blocks its successful signals named), the hashes of
caching-disabled sequences, and the state before the step (``ctx.pre``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import attrs

from kvmodel.invariants.core import Invariant, MonitorFault, StepContext, Witness, post_key
from kvmodel.invariants.g1 import AnnouncedStream
from kvmodel.model.events import Removed, Stored
from kvmodel.model.g1.acquire import CapacityExhausted, G1Acquire, Ready

C = "g1_kvbm"


class KvbmMonitor(AnnouncedStream):
    """The published stream's ghost (:class:`~kvmodel.invariants.g1.AnnouncedStream`), with the
    next event id the stream must carry."""

    def __init__(self) -> None:
        super().__init__()
        self.next_id = 0

    def copy(self) -> KvbmMonitor:
        m = super().copy()
        m.next_id = self.next_id
        return m

    def key(self) -> tuple[Any, ...]:
        """Counts above 2 are folded into 2: a stream that announces a hash again and again
        (possible only once it is already wrong) would otherwise make the state space infinite."""
        return tuple(sorted((h, min(c, 2)) for h, c in self.announced.items()))

    def observe(self, events: list[Any], uncached: frozenset[int], use_marks: Iterable[int] = ()) -> None:
        """One operation's events; ``use_marks``: where each Use of the operation began (the
        Removed-before-Stored order holds per Use: ``process_use`` publishes its own events)."""
        self.faults = {}
        self.stored_with_parent = self.removed = False
        stored_seen = False
        starts = set(use_marks)
        for i, p in enumerate(events):
            if i in starts:
                stored_seen = False
            e = p.event
            if e.event_id != self.next_id:
                self.faults.setdefault("kvbm.event_ids_consecutive", f"event id {e.event_id}, expected {self.next_id}")
            self.next_id = e.event_id + 1
            d = e.data
            if isinstance(d, Stored):
                stored_seen = True
                self.lineage(d, "kvbm.stored_lineage")
                if d.parent_hash is not None:
                    self.stored_with_parent = True
                    if self.announced[d.parent_hash] <= 0:
                        self.faults.setdefault(
                            "kvbm.stored_parent_announced",
                            f"Stored{[b.block_hash for b in d.blocks]} names parent {d.parent_hash}, "
                            "which is not announced",
                        )
                names = [b.block_hash for b in d.blocks]
            elif isinstance(d, Removed):
                self.removed = True
                names = list(d.block_hashes)
                if stored_seen:
                    self.faults.setdefault(
                        "kvbm.removed_before_stored",
                        f"Removed{names} follows a Stored of the same operation",
                    )
            else:
                continue
            bad = [h for h in names if h in uncached]
            if bad:
                self.faults.setdefault("kvbm.uncached_silent", f"{type(d).__name__} names uncached hashes {bad}")
            if isinstance(d, Stored):
                for h in names:
                    self.announced[h] += 1
            else:
                for h in names:
                    if self.announced[h] <= 0:
                        self.faults.setdefault(
                            "kvbm.removed_only_announced", f"Removed names {h}, which is not announced"
                        )
                        continue
                    self.announced[h] -= 1
                    if self.announced[h] == 0:
                        del self.announced[h]


@attrs.define
class Before:
    """The KVBM system around a step: the manager's parts, its inactive index and the index's
    size before it; after it, what each request holds, the hashes of caching-disabled sequences,
    and the live destination reservations' pins."""

    parts: Any
    index_key: Any
    inactive_before: int
    holdings: dict[int, list[Any]] = attrs.field(factory=dict)
    uncached: frozenset[int] = attrs.field(factory=frozenset)
    dest_pins: Counter[Any] = attrs.field(factory=Counter)


def _kv(ctx: StepContext) -> Any:
    return ctx.model.kvbm


def _slots(ctx: StepContext) -> str | None:
    m = _kv(ctx)
    s = m.sub
    primaries = [v[0] for v in s.primaries.values()]
    inactive = [b for b in _inactive_blocks(s.inactive)]
    parts = list(s.free) + inactive + sorted(s.mutable) + primaries
    if len(parts) != s.total or set(parts) != set(range(s.total)):
        return (
            f"free {list(s.free)} + inactive {inactive} + mutable {sorted(s.mutable)} + primaries {primaries} "
            f"is not a partition of the {s.total} slots"
        )
    if m.num_active_blocks() + s.available() > m.max_capacity:
        return f"num_active_blocks {m.num_active_blocks()} + available {s.available()} > capacity {m.max_capacity}"
    return None


def _inactive_blocks(index: Any) -> list[int]:
    if hasattr(index, "nodes"):
        return [n.block for n in index.nodes.values() if n.plh is not None]
    if hasattr(index, "levels"):
        return [b for lv in index.levels for b in lv.values()]
    return list(index.order.values())


def _one_primary(ctx: StepContext) -> str | None:
    s = _kv(ctx).sub
    inactive = s.inactive.plhs()
    both = sorted(set(inactive) & set(s.primaries), key=repr)
    if both or len(set(inactive)) != len(inactive):
        return f"PLHs {both or inactive} are registered twice (active and inactive, or twice inactive)"
    return None


def _shadow(ctx: StepContext) -> str | None:
    m = _kv(ctx)
    s = m.sub
    live = {p: v[0] for p, v in s.primaries.items()}
    if hasattr(s.inactive, "nodes"):
        live.update({n.plh: n.block for n in s.inactive.nodes.values() if n.plh is not None})
    elif hasattr(s.inactive, "levels"):
        live.update({p: b for lv in s.inactive.levels for p, b in lv.items()})
    else:
        live.update(s.inactive.order)
    if set(live) != set(m.registered):
        extra = sorted(set(m.registered) - set(live), key=repr)
        missing = sorted(set(live) - set(m.registered), key=repr)
        return f"shadow without a registered block: {extra}; registered blocks without a shadow: {missing}"
    for p, sh in m.registered.items():
        if sh.block_id != live[p]:
            return f"shadow of {p} says block {sh.block_id}, the registry holds block {live[p]}"
    return None


def _refs(ctx: StepContext) -> str | None:
    m = _kv(ctx)
    for h, e in sorted(m.active_full.items()):
        p = m.sub.primaries.get(e.plh)
        if e.refs < 1 or p is None or p[0] != e.block:
            return f"active_full[{h}] = block {e.block} refs {e.refs}, its PLH's primary is {p}"
    for u, slot in sorted(m.active_partial.items()):
        if slot not in m.sub.mutable:
            return f"active partial {u} holds slot {slot}, which is not a mutable block"
    return None


def _holders(ctx: StepContext) -> str | None:
    m = _kv(ctx)
    held: dict[Any, list[Any]] = ctx.pre.holdings
    full: Counter[int] = Counter()
    partial: Counter[str] = Counter()
    for blocks in held.values():
        for b in blocks:
            if hasattr(b, "hash"):
                full[b.hash] += 1
            else:
                partial[b.uuid] += 1
    have = {h: e.refs for h, e in m.active_full.items()}
    if dict(full) != have:
        return f"logical references {dict(sorted(have.items()))}, requests hold {dict(sorted(full.items()))}"
    if dict(partial) != dict.fromkeys(m.active_partial, 1):
        return f"active partials {sorted(m.active_partial)}, requests hold {dict(sorted(partial.items()))}"
    return None


def _active_held(ctx: StepContext) -> str | None:
    m = _kv(ctx)
    want = len(m.sub.primaries) + len(m.active_partial)
    if m.num_active_blocks() != want:
        return f"num_active_blocks {m.num_active_blocks()}, blocks held: {want}"
    return None


def _names_announced(ctx: StepContext) -> str | None:
    m = _kv(ctx)
    ann = ctx.monitor.announced
    uncached = ctx.pre.uncached
    for h, e in sorted(m.active_full.items()):
        sh = m.registered.get(e.plh)
        if sh is not None and h not in uncached and ann[h] <= 0:
            return f"block {h} is active (PLH {e.plh}, registered as {sh.seq_hash}) but never announced under {h}"
    return None


def _announced_registered(ctx: StepContext) -> str | None:
    m = _kv(ctx)
    names = {h for sh in m.registered.values() for h in sh.names()}
    extra = sorted(h for h in ctx.monitor.announced if h not in names)
    return f"announced hashes {extra} name no registered block" if extra else None


def _failed(ctx: StepContext) -> Any:
    return ctx.error is None and (
        isinstance(ctx.result, CapacityExhausted)
        or (isinstance(ctx.result, list) and any(isinstance(r, CapacityExhausted) for r in ctx.result))
    )


def _atomic_failure(ctx: StepContext) -> str | None:
    if not _failed(ctx) or not isinstance(ctx.result, G1Acquire):
        return None
    pre = ctx.pre.parts
    now = _parts(_kv(ctx))
    if pre != now or ctx.events:
        return f"a CapacityExhausted {ctx.op} changed the state or published {len(ctx.events)} event(s)"
    return None


def _parts(m: Any) -> Any:
    """What a failed acquisition must not change: everything but the inactive order."""
    return (
        tuple(m.sub.free),
        tuple(sorted(m.sub.mutable)),
        tuple(sorted(m.sub.inactive.plhs(), key=repr)),
        tuple((h, e.block, e.refs) for h, e in sorted(m.active_full.items())),
        tuple(sorted(m.active_partial.items())),
        tuple(sorted(((p, s.seq_hash) for p, s in m.registered.items()), key=repr)),
    )


def _eviction_order(ctx: StepContext) -> str | None:
    if not _failed(ctx) or not isinstance(ctx.result, G1Acquire):
        return None
    if ctx.pre.index_key != _kv(ctx).sub.inactive.key():
        return f"a CapacityExhausted {ctx.op} changed the inactive index's eviction order"
    return None


def _rejection(ctx: StepContext) -> str | None:
    if ctx.error is None:
        return None
    if post_key(ctx) != ctx.pre_key or ctx.events:
        return f"the rejected {ctx.op} ({ctx.error}) changed the state or published {len(ctx.events)} event(s)"
    return None


def _ready_new(ctx: StepContext) -> str | None:
    if ctx.op not in ("allocate", "resend") or ctx.error is not None or not isinstance(ctx.result, Ready):
        return None
    n = ctx.result.n
    if n is None:
        return None
    fresh = _kv(ctx).last_fresh
    if n != fresh:
        return f"{ctx.op} returned {ctx.result} but newly took {fresh} slot(s)"
    return None


def _primaries_held(ctx: StepContext) -> str | None:
    m = _kv(ctx)
    pins: Counter[Any] = ctx.pre.dest_pins
    held: Counter[Any] = Counter(e.plh for e in m.active_full.values())
    for plh, (block, handles) in sorted(m.sub.primaries.items(), key=repr):
        if handles != held[plh] + pins[plh]:
            return f"primary {plh} (block {block}) has {handles} handles, held {held[plh]}x, pinned {pins[plh]}x"
    if hasattr(m.sub.inactive, "nodes"):
        ticks = [n.tick for n in m.sub.inactive.nodes.values() if n.plh is not None]
        if len(set(ticks)) != len(ticks) or any(t >= m.sub.tick for t in ticks):
            return f"inactive ticks {sorted(ticks)} are not distinct or not below the clock {m.sub.tick}"
    return None


def _announced_exact(ctx: StepContext) -> str | None:
    m = _kv(ctx)
    want: dict[int, int] = {}
    for s in m.registered.values():
        if not m._silent(s.cacheable):
            want[s.seq_hash] = want.get(s.seq_hash, 0) + 1
        for h in s.aliases:
            want[h] = want.get(h, 0) + 1
    ann = ctx.monitor.announced
    # the positive counts of the view are exactly ``want`` (every count in it is positive): the
    # same hashes, as many, with the same counts — without building the view's positive part
    if all(ann.get(h) == n for h, n in want.items()) and sum(1 for c in ann.values() if c > 0) == len(want):
        return None
    have = +ann
    return f"announced {dict(sorted(have.items()))}, published names of registered blocks {dict(sorted(want.items()))}"


def _active_named(ctx: StepContext) -> str | None:
    m = _kv(ctx)
    uncached = ctx.pre.uncached
    for h, e in sorted(m.active_full.items()):
        sh = m.registered.get(e.plh)
        if h not in uncached and (sh is None or h not in sh.names()):
            return f"active block {h} (PLH {e.plh}) is not a name of its PLH's shadow"
    return None


def _stream_position(ctx: StepContext) -> str | None:
    have, want = ctx.monitor.next_id, _kv(ctx).next_event_id
    return None if have == want else f"the monitor expects event id {have}, the publisher's next is {want}"


INVARIANTS: tuple[Invariant, ...] = (
    Invariant(
        "kvbm.slot_conservation",
        C,
        "state",
        "Reset + inactive + mutable (partials, reservations) + primaries partition the slots, and "
        "num_active_blocks + available_blocks never exceeds the capacity.",
        _slots,
    ),
    Invariant(
        "kvbm.one_primary_per_plh",
        C,
        "state",
        "A PLH is registered at most once: never both active and inactive, never twice inactive.",
        _one_primary,
    ),
    Invariant(
        "kvbm.shadow_matches_registry",
        C,
        "state",
        "registered_blocks shadows exactly the registered PLHs (active or inactive), each with its block.",
        _shadow,
        witnesses=("kvbm.w.eviction",),
    ),
    Invariant(
        "kvbm.refs_positive",
        C,
        "state",
        "Every active_full entry has refs ≥ 1 and pins its PLH's primary; every active partial holds a mutable slot.",
        _refs,
    ),
    Invariant(
        "kvbm.refs_match_holders",
        C,
        "state",
        "Logical references are exactly what requests hold: refs per hash, one active partial per held UUID.",
        _holders,
        witnesses=("kvbm.w.shared_block",),
    ),
    Invariant(
        "kvbm.active_count_held",
        C,
        "state",
        "num_active_blocks counts the blocks requests hold (primaries and partials), not reserved slots.",
        _active_held,
        witnesses=("kvbm.w.reservation",),
    ),
    Invariant(
        "kvbm.stored_parent_announced",
        C,
        "stream",
        "Parent before child: every Stored names a parent that is announced when it arrives.",
        MonitorFault("kvbm.stored_parent_announced"),
        witnesses=("kvbm.w.stored_with_parent",),
    ),
    Invariant(
        "kvbm.stored_lineage",
        C,
        "stream",
        "Lineage: a Stored's parent is the hash immediately before its first block in the sequence "
        "that stored it, and its blocks follow one another in that sequence (each block's hash is "
        "the chained hash of the one before and its own tokens hash).",
        MonitorFault("kvbm.stored_lineage"),
        witnesses=("kvbm.w.stored_with_parent",),
    ),
    Invariant(
        "kvbm.removed_only_announced",
        C,
        "stream",
        "Stored before Removed per identity: a Removed names only announced hashes.",
        MonitorFault("kvbm.removed_only_announced"),
        witnesses=("kvbm.w.eviction",),
    ),
    Invariant(
        "kvbm.event_ids_consecutive",
        C,
        "stream",
        "Published event ids run 0, 1, 2, … without gaps.",
        MonitorFault("kvbm.event_ids_consecutive"),
    ),
    Invariant(
        "kvbm.removed_before_stored",
        C,
        "stream",
        "Within one Use the Removed of evicted blocks precedes the Stored of the blocks that took their slots.",
        MonitorFault("kvbm.removed_before_stored"),
        witnesses=("kvbm.w.eviction",),
        # where each Use of an operation begins is the model's own knowledge (an operation may run
        # several Uses): not read from an implementation's observations
        needs=("events", "snapshot"),
    ),
    Invariant(
        "kvbm.uncached_silent",
        C,
        "stream",
        "No event names a hash of a sequence with prefix caching off.",
        MonitorFault("kvbm.uncached_silent"),
        witnesses=("kvbm.w.uncached_block",),
        needs=("events", "snapshot"),  # the random hashes of caching-off sequences are the state's
    ),
    Invariant(
        "kvbm.active_names_announced",
        C,
        "stream",
        "Every active block of a caching sequence is announced under the hash its requester uses.",
        _names_announced,
        witnesses=("kvbm.w.alias",),
        # the active blocks, their shadows, the uncached hashes and whether the router's view
        # holds a hash (the key folds counts above 2, never a count's sign) are all in the key
        per_state=True,
    ),
    Invariant(
        "kvbm.announced_registered",
        C,
        "stream",
        "Every announced hash names a registered block (the router's view is never stale).",
        _announced_registered,
        per_state=True,  # the hashes the router's view holds and the shadows' names are in the key
    ),
    Invariant(
        "kvbm.atomic_failure",
        C,
        "step",
        "A CapacityExhausted acquisition changes no reference, slot, shadow entry or inactive membership, "
        "and publishes nothing.",
        _atomic_failure,
        witnesses=("kvbm.w.exhausted",),
    ),
    Invariant(
        "kvbm.failure_keeps_eviction_order",
        C,
        "step",
        "A CapacityExhausted acquisition leaves the inactive index's eviction order as it was.",
        _eviction_order,
        witnesses=("kvbm.w.exhausted_after_hit",),
    ),
    Invariant(
        "kvbm.rejection_no_trace",
        C,
        "step",
        "A rejected operation (a panic) changes nothing and publishes nothing.",
        _rejection,
    ),
    Invariant(
        "kvbm.primaries_held",
        C,
        "state",
        "Lemma: every primary's handles are exactly the active_full entries and destination pins on its "
        "PLH, and inactive ticks are distinct and older than the clock.",
        _primaries_held,
        lemma=True,
    ),
    Invariant(
        "kvbm.announced_exact",
        C,
        "stream",
        "Lemma: the router's view is exactly the published names of the registered blocks, each announced once.",
        _announced_exact,
        lemma=True,
    ),
    Invariant(
        "kvbm.active_named",
        C,
        "state",
        "Lemma: every active block of a caching sequence is a name of its PLH's shadow entry.",
        _active_named,
        lemma=True,
    ),
    Invariant(
        "kvbm.stream_position",
        C,
        "stream",
        "Lemma: the monitor's next expected event id is the publisher's next id.",
        _stream_position,
        lemma=True,
    ),
    Invariant(
        "kvbm.use_reports_new_blocks",
        C,
        "step",
        "A successful Use returns Ready(n) with n the number of slots it newly took.",
        _ready_new,
    ),
)


def _w_shared(ctx: StepContext) -> bool:
    return any(e.refs > 1 for e in _kv(ctx).active_full.values())


def _w_alias(ctx: StepContext) -> bool:
    m = _kv(ctx)
    return any((s := m.registered.get(e.plh)) is not None and s.seq_hash != h for h, e in m.active_full.items())


def _w_exhausted_after_hit(ctx: StepContext) -> bool:
    return bool(_failed(ctx) and ctx.pre.inactive_before > 0)


WITNESSES: tuple[Witness, ...] = (
    Witness("kvbm.w.eviction", C, "A Removed is published (a shadowed block evicted).", lambda c: c.monitor.removed),
    Witness("kvbm.w.shared_block", C, "A block has two logical owners.", _w_shared),
    Witness(
        "kvbm.w.reservation",
        C,
        "A decode or destination reservation holds slots.",
        lambda c: _kv(c).reserved_slots() > 0,
    ),
    Witness(
        "kvbm.w.stored_with_parent",
        C,
        "A Stored names a parent.",
        lambda c: c.monitor.stored_with_parent,
    ),
    Witness(
        "kvbm.w.uncached_block",
        C,
        "A block of a caching-disabled sequence is registered.",
        lambda c: any(not s.cacheable for s in _kv(c).registered.values()),
    ),
    Witness("kvbm.w.alias", C, "A block is active under a name other than the one it was registered with.", _w_alias),
    Witness("kvbm.w.exhausted", C, "An acquisition returns CapacityExhausted.", lambda c: bool(_failed(c))),
    Witness(
        "kvbm.w.exhausted_after_hit",
        C,
        "An acquisition fails while the inactive index holds blocks.",
        _w_exhausted_after_hit,
    ),
)
