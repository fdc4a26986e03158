"""Invariants of the G1 facade with the native backend (semantics §2.3, §2.5.4) and its stream.

The monitor keeps the router's view of the published stream (each hash's Stored count minus
its Removed count) and checks each event as it arrives: a Stored must name a parent that is
announced at that moment. The system keeps the outstanding reservations and, per request,
its sequence and computed-token watermark.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Self

import attrs

from kvmodel.invariants.core import Invariant, MonitorFault, StepContext, Witness, counts_of, post_key
from kvmodel.model.events import Removed, Stored
from kvmodel.model.g1.acquire import CapacityExhausted
from kvmodel.model.g1.vllm_backend import VllmKvManager
from kvmodel.model.hashing import chain_hash

C = "g1_native"


class AnnouncedStream:
    """What both G1 backends' monitors keep of the published stream: each hash's announcement
    count (Stored minus Removed), and what the latest step did wrong."""

    def __init__(self) -> None:
        self.announced: Counter[int] = Counter()
        self.faults: dict[str, str] = {}
        self.stored_with_parent = False
        self.removed = False

    def lineage(self, d: Stored, name: str) -> None:
        """Parent before child in the hash chain: the Stored's first block is the chained hash of
        its parent and its own tokens hash (its tokens hash itself when there is no parent), and
        each further block chains onto the one before it (``lib/llm/src/tokens.rs``: a sequence
        hash is XXH3-64(seed 1337) of the parent's sequence hash and the block's hash, u64 LE) —
        so the parent is the hash immediately before the first block in the sequence that
        stored it. A batch chained to the batch's parent, or a parent that is not the block
        before, breaks it."""
        prev = d.parent_hash
        for i, b in enumerate(d.blocks):
            want = b.tokens_hash if prev is None else chain_hash(prev, b.tokens_hash)
            if b.block_hash != want:
                where = "its parent" if i == 0 else f"block {prev}"
                self.faults.setdefault(
                    name,
                    f"Stored{[x.block_hash for x in d.blocks]} (parent {d.parent_hash}): block {b.block_hash} "
                    f"is not the chained hash of {where} and its tokens hash {b.tokens_hash}",
                )
                return
            prev = b.block_hash

    def copy(self) -> Self:
        """The announced counts copied; the latest step's faults and flags start empty (the
        constructor is not called: its Counter would be thrown away)."""
        m = type(self).__new__(type(self))
        m.announced = counts_of(self.announced.items())
        m.faults, m.stored_with_parent, m.removed = {}, False, False
        return m


class G1Monitor(AnnouncedStream):
    """The native backend's stream ghost."""

    def key(self) -> tuple[Any, ...]:
        return tuple(sorted(self.announced.items()))

    def observe(self, events: list[Any]) -> None:
        self.faults = {}
        self.stored_with_parent = self.removed = False
        for p in events:
            d = p.event.data
            if isinstance(d, Stored):
                self.lineage(d, "g1.stored_lineage")
                if d.parent_hash is not None:
                    self.stored_with_parent = True
                    if self.announced[d.parent_hash] <= 0:
                        self.faults.setdefault(
                            "g1.stored_parent_announced",
                            f"Stored{[b.block_hash for b in d.blocks]} names parent {d.parent_hash}, "
                            "which is not announced",
                        )
                for b in d.blocks:
                    self.announced[b.block_hash] += 1
            elif isinstance(d, Removed):
                self.removed = True
                for h in d.block_hashes:
                    self.announced[h] -= 1
                    if self.announced[h] == 0:
                        del self.announced[h]


@attrs.define
class Before:
    """The native G1 system around a step: the requests holding block tables before it; what the
    step itself noted (the reusable prefix an ``allocate`` authorised, whether a
    ``deref_in_order`` named exactly the table's blocks); and, after it, the fresh slots still
    reserved, the destination reservations' pins and prefix lengths, the sequences and their
    computed token counts."""

    owners: set[int]
    reusable: int = 0
    deref_names_tail: bool = False
    outstanding_fresh: int = 0
    dest_pins: Counter[int] = attrs.field(factory=Counter)
    dest_prefix: dict[int, int] = attrs.field(factory=dict)
    seqs: dict[int, Any] = attrs.field(factory=dict)
    computed: dict[int, int] = attrs.field(factory=dict)


def _vllm(ctx: StepContext) -> VllmKvManager:
    """The native backend's manager (``G1ManagerBackend::Native``), whose state these invariants read."""
    m: VllmKvManager = ctx.model.native
    return m


def _capacity(ctx: StepContext) -> str | None:
    p = _vllm(ctx).pool
    if len(p.copies) + p.reserved > p.capacity or p.reserved < 0:
        return f"{len(p.copies)} copies + {p.reserved} reserved > capacity {p.capacity}"
    return None


def _lru_idle(ctx: StepContext) -> str | None:
    p = _vllm(ctx).pool
    idle = {i for i, c in p.copies.items() if c.idle}
    lru = set(p.inactive)
    if idle != lru or len(lru) != len(p.inactive):
        return f"LRU holds copies {sorted(lru)}, the idle cached copies are {sorted(idle)}"
    refs = sum(1 for c in p.copies.values() if c.hash is not None and (c.refs < 0 or c.pins < 0))
    return f"{refs} copies with a negative count" if refs else None


def _announced_visible(ctx: StepContext) -> str | None:
    m = _vllm(ctx)
    if not (m.caching and m.publishers):
        return None
    ann = {h for h, n in ctx.monitor.announced.items() if n > 0}
    over = {h: n for h, n in ctx.monitor.announced.items() if n != 1}
    vis = m.pool.visible()
    if ann != vis or over:
        return (
            f"the stream announces {sorted(ann)} (counts {over or 'ok'}), the hashes with a cached copy are "
            f"{sorted(vis)}"
        )
    return None


def _failed_no_trace(ctx: StepContext) -> str | None:
    failed = ctx.error is not None or isinstance(ctx.result, CapacityExhausted)
    if not failed:
        return None
    if ctx.events or post_key(ctx) != ctx.pre_key:
        what = "rejected" if ctx.error is not None else "CapacityExhausted"
        return f"{ctx.op} {what} but changed the state or published {len(ctx.events)} event(s)"
    return None


def _reserved_outstanding(ctx: StepContext) -> str | None:
    p = _vllm(ctx).pool
    held = ctx.pre.outstanding_fresh
    if p.reserved != held:
        return f"pool.reserved = {p.reserved}, outstanding reservations hold {held} fresh slot(s)"
    return None


def _active_resident(ctx: StepContext) -> str | None:
    m = _vllm(ctx)
    n = m.num_active_blocks()
    resident = len(m.pool.copies) - m.pool.num_inactive()
    return None if n == resident else f"num_active_blocks = {n}, resident copies in use = {resident}"


def _prefix_exact(ctx: StepContext) -> str | None:
    p = _vllm(ctx).pool
    for h, ids in sorted(p.by_hash.items()):
        exact = any(p.copies[i].refs > 0 or p.copies[i].pins > 0 for i in ids)
        if bool(p.prefix_hit(h)) != exact:
            return f"prefix_hit({h}).is_active = {bool(p.prefix_hit(h))}, but a copy in use: {exact}"
    return None


def _transferable(ctx: StepContext) -> str | None:
    if ctx.op != "reserve_destination" or ctx.error is not None or not isinstance(ctx.result, dict):
        return None
    t, limit = ctx.result.get("transferable_prompt_tokens", 0), ctx.result.get("uncached_prompt_tokens", 0)
    return None if t <= limit else f"transferable_prompt_tokens = {t} but only {limit} prompt tokens need transfer"


def _unknown_rejected(ctx: StepContext) -> str | None:
    if ctx.op != "finalize" or ctx.error is not None:
        return None
    owner = getattr(ctx.args, "owner", None)
    if owner not in ctx.pre.owners:
        return f"finalize_computed_prefix for request {owner}, which owns no block table, was accepted"
    return None


def _tail_accepted(ctx: StepContext) -> str | None:
    if ctx.op != "deref_in_order" or ctx.error is None or not ctx.pre.deref_names_tail:
        return None
    return f"a Deref naming request {getattr(ctx.args, 'owner', None)}'s whole table was rejected: {ctx.error}"


def _copies_match(ctx: StepContext) -> str | None:
    """References and pins are exactly what block tables and destination reservations hold."""
    m = _vllm(ctx)
    p = m.pool
    named: Counter[int] = Counter()
    for o, table in sorted(m.tables.items()):
        for j, e in enumerate(table):
            c = p.copies.get(e.copy)
            if c is None:
                return f"request {o}'s entry {j} names copy {e.copy}, which does not exist"
            named[e.copy] += 1
            cached_entry = m.caching and e.hash is not None and e.pending is None
            if cached_entry and c.hash != e.hash:
                return f"request {o}'s entry {j} is cached block {e.hash} but its copy holds {c.hash}"
            if not cached_entry and c.hash is not None:
                return f"request {o}'s entry {j} is not computed yet but its copy {e.copy} is cached"
    pins: Counter[int] = ctx.pre.dest_pins
    for i, c in sorted(p.copies.items()):
        if c.hash is None and named[i] != 1:
            return f"private copy {i} is named by {named[i]} table entries"
        if c.hash is not None and (c.refs != named[i] or c.pins != pins[i]):
            return (
                f"copy {i}: refs {c.refs} / pins {c.pins}, tables name it {named[i]}x, reservations pin it {pins[i]}x"
            )
    return None


def _computed_cached(ctx: StepContext) -> str | None:
    m = _vllm(ctx)
    bs = m.block_size
    for o, table in sorted(m.tables.items()):
        done = ctx.pre.computed.get(o, 0) // bs
        for j, e in enumerate(table[:done]):
            if e.hash is None or e.pending is not None:
                return f"request {o} computed {done} block(s) but its entry {j} is not cached"
    return None


def _request_shape(ctx: StepContext) -> str | None:
    """A request's table holds its sequence's blocks in order and of the same kind, all but at most
    a trailing partial whose allocation failed; a destination owns no table and pins full blocks."""
    from kvmodel.model.blocks import FullBlock

    m = _vllm(ctx)
    bs = m.block_size
    dest: dict[int, int] = ctx.pre.dest_prefix
    for o, seq in sorted(ctx.pre.seqs.items()):
        table = m.tables.get(o, [])
        n = len(seq.tokens)
        if len(seq.unique) != -(-n // bs):
            return f"request {o}: {len(seq.unique)} unique blocks for {n} tokens"
        if o in dest:
            if table or dest[o] > n // bs:
                return f"destination request {o} owns a table or pins {dest[o]} blocks of {n // bs} full ones"
            continue
        short = len(seq.unique) - len(table)
        if (
            table
            and short
            and not (short == 1 and not isinstance(seq.unique[-1], FullBlock) and n > seq.num_input_tokens)
        ):
            return f"request {o}'s table has {len(table)} entries for {len(seq.unique)} blocks"
        if bool(table) != (seq.num_allocated_tokens > 0):
            return f"request {o}: table of {len(table)} entries, {seq.num_allocated_tokens} tokens allocated"
        for j, e in enumerate(table):
            if (e.hash is not None) != isinstance(seq.unique[j], FullBlock):
                return f"request {o}'s entry {j} and its sequence's block disagree on being full"
    return None


INVARIANTS: tuple[Invariant, ...] = (
    Invariant("g1.capacity", C, "state", "Copies plus reserved slots never exceed the pool's capacity.", _capacity),
    Invariant(
        "g1.lru_exactly_idle",
        C,
        "state",
        "The inactive LRU holds exactly the cached copies with no reference and no pin (free, cached "
        "and referenced copies are disjoint).",
        _lru_idle,
    ),
    Invariant(
        "g1.stored_parent_announced",
        C,
        "stream",
        "Parent before child: every Stored names a parent whose Stored was published (and not Removed) before it.",
        MonitorFault("g1.stored_parent_announced"),
        witnesses=("g1.w.stored_with_parent",),
    ),
    Invariant(
        "g1.stored_lineage",
        C,
        "stream",
        "Lineage: a Stored's parent is the hash immediately before its first block in the sequence "
        "that stored it, and its blocks follow one another in that sequence (each block's hash is "
        "the chained hash of the one before and its own tokens hash).",
        MonitorFault("g1.stored_lineage"),
        witnesses=("g1.w.stored_with_parent",),
    ),
    Invariant(
        "g1.announced_matches_visible",
        C,
        "stream",
        "The stream announces exactly the hashes with a cached copy, each once: Stored on a hash's "
        "first copy, Removed only with its last.",
        _announced_visible,
        witnesses=("g1.w.eviction", "g1.w.duplicate_copy"),
        per_state=True,  # the announced counts (exact) and the hashes with a cached copy are in the key
    ),
    Invariant(
        "g1.failed_no_trace",
        C,
        "step",
        "A rejected operation or a CapacityExhausted acquisition changes nothing and publishes nothing.",
        _failed_no_trace,
        witnesses=("g1.w.exhausted",),
    ),
    Invariant(
        "g1.reserved_matches_outstanding",
        C,
        "state",
        "The pool's reserved slots are exactly the fresh slots outstanding reservations still hold "
        "(activating or cancelling returns everything a reservation took).",
        _reserved_outstanding,
        witnesses=("g1.w.destination_activated",),
    ),
    Invariant(
        "g1.active_count_resident",
        C,
        "state",
        "num_active_blocks counts the resident copies in use, not promised capacity.",
        _active_resident,
    ),
    Invariant(
        "g1.prefix_hit_active_exact",
        C,
        "state",
        "prefix_hit(h).is_active holds iff some copy of h is referenced or pinned.",
        _prefix_exact,
    ),
    Invariant(
        "g1.transferable_within_prompt",
        C,
        "step",
        "A destination reservation announces no more transferable tokens than its prompt has beyond the cached prefix.",
        _transferable,
        needs=("events",),  # its returns
    ),
    Invariant(
        "g1.unknown_request_rejected",
        C,
        "step",
        "finalize_computed_prefix for a request that owns no block table is rejected.",
        _unknown_rejected,
    ),
    Invariant(
        "g1.deref_of_tail_accepted",
        C,
        "step",
        "A Deref naming exactly the blocks of a request's table (in any order) is accepted.",
        _tail_accepted,
    ),
    Invariant(
        "g1.copies_match_tables",
        C,
        "state",
        "Every table entry names an existing copy (cached under its hash once computed, private "
        "before); a private copy belongs to exactly one entry; a cached copy's references and pins "
        "are the table entries and destination reservations that hold it.",
        _copies_match,
        lemma=True,
    ),
    Invariant(
        "g1.computed_prefix_cached",
        C,
        "state",
        "A request's blocks below its computed watermark are cached (full, no Stored pending).",
        _computed_cached,
        lemma=True,
    ),
    Invariant(
        "g1.request_shape",
        C,
        "state",
        "A request's table holds its sequence's blocks in order and of the same kind (all but at most "
        "a trailing partial whose allocation failed); a destination request owns no table and pins "
        "only full blocks.",
        _request_shape,
        lemma=True,
    ),
)


def _w_dup(ctx: StepContext) -> bool:
    return any(len(v) > 1 for v in _vllm(ctx).pool.by_hash.values())


WITNESSES: tuple[Witness, ...] = (
    Witness(
        "g1.w.stored_with_parent", C, "A Stored naming a parent is published.", lambda c: c.monitor.stored_with_parent
    ),
    Witness("g1.w.eviction", C, "A Removed is published (a hash's last copy evicted).", lambda c: c.monitor.removed),
    Witness("g1.w.duplicate_copy", C, "A hash has two physical copies.", _w_dup),
    Witness(
        "g1.w.exhausted",
        C,
        "An acquisition returns CapacityExhausted.",
        lambda c: c.error is None and isinstance(c.result, CapacityExhausted),
    ),
    Witness(
        "g1.w.destination_activated",
        C,
        "A destination reservation is activated.",
        lambda c: c.op == "activate_destination" and c.error is None,
    ),
    Witness(
        "g1.w.prefix_reused",
        C,
        "A request's first allocation reuses a cached prefix.",
        lambda c: c.op == "allocate" and c.error is None and c.pre.reusable > 0,
    ),
)
