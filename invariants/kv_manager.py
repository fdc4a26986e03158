"""Invariants of the old mocker KV manager (semantics §1.7 and §5) and its event stream.

The monitor keeps two pieces of ghost state that the real code does not have:

* the *router's view*: the set of hashes Stored and not Removed since, as a consumer
  of the Store/Remove responses would hold it (only with a response channel);
* the *held references*: how many references the callers hold on each block, by the
  contract of the signals — a successful Use takes one per listed block, a Deref or
  Destroy gives one back, a Promote moves the partial's references to the full block,
  and a Use that returns false or an operation that raised takes nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import attrs

from kvmodel.invariants.core import Invariant, MonitorFault, StepContext, Witness, counts_of
from kvmodel.model.blocks import (
    Deref,
    Destroy,
    FullBlock,
    PartialBlock,
    Promote,
    Remove,
    Store,
    UniqueBlock,
    Use,
)
from kvmodel.model.kv_manager import KvManager

C = "kv_manager"


def _b(b: UniqueBlock) -> str:
    return f"F{b.hash}" if isinstance(b, FullBlock) else f"P:{b.uuid}"


class KvMonitor:
    """Ghost bookkeeping over a KV manager run (router view, held references, stream faults)."""

    def __init__(self, channel: bool, block_size: int = 16) -> None:
        self.channel, self.block_size = channel, block_size
        self.view: set[int] = set()
        self.held: Counter[UniqueBlock] = Counter()
        self.faults: dict[str, str] = {}  # stream faults found in the latest step
        self._shared = False  # view and held are shared with a copy (``copy``)

    def copy(self) -> KvMonitor:
        """An independent copy, copy-on-write: the view and the held counts are shared until a
        step that changes them (``observe``) copies them."""
        m = KvMonitor.__new__(KvMonitor)
        m.channel, m.block_size, m.faults = self.channel, self.block_size, {}
        m.view, m.held = self.view, self.held
        m._shared = self._shared = True
        return m

    def key(self) -> tuple[Any, ...]:
        return (tuple(sorted(self.view)), tuple(sorted((b.sort_key(), n) for b, n in self.held.items() if n)))

    def observe(self, signal: Any, result: Any, error: Exception | None, events: list[Any]) -> None:
        if error is not None and not events:  # a rejected step that emitted nothing moves nothing
            if self.faults:
                self.faults = {}
            return
        self.faults = {}
        if self._shared and (events or (error is None and not (isinstance(signal, Use) and result is not True))):
            # this step changes the view or the held counts: stop sharing them with a copy
            self.view, self.held, self._shared = set(self.view), counts_of(self.held.items()), False
        for ev in events:
            self._event(ev)
        if error is not None:
            return
        if isinstance(signal, Use) and result is True:
            for b in signal.blocks:
                self.held[b] += 1  # counts only grow: no zero to drop
        elif isinstance(signal, Deref | Destroy):
            held = self.held  # no zero count is kept: a count reaching zero leaves
            for b in signal.blocks:
                n = held.get(b, 0)
                if n > 1:
                    held[b] = n - 1
                elif n == 1:
                    del held[b]
        elif isinstance(signal, Promote):
            moved = self.held.pop(PartialBlock(signal.uuid), 0)
            if moved:
                f = FullBlock(signal.hash)
                self.held[f] = self.held.get(f, 0) + moved

    def _fault(self, name: str, msg: str) -> None:
        self.faults.setdefault(name, msg)

    def _event(self, ev: Any) -> None:
        if isinstance(ev, Store):
            if ev.parent_hash is not None and ev.parent_hash not in self.view:
                self._fault(
                    "kv.store_parent_stored",
                    f"Store({list(ev.blocks)}, parent={ev.parent_hash}): parent not in the router's view",
                )
            for h in ev.blocks:
                if h in self.view:
                    self._fault("kv.store_only_new", f"Store of {h}, already Stored and not Removed")
                self.view.add(h)
        elif isinstance(ev, Remove):
            for h in ev.blocks:
                if h not in self.view:
                    self._fault("kv.remove_only_stored", f"Remove of {h}, which is not in the router's view")
                self.view.discard(h)


# --- state invariants -----------------------------------------------------------------


def _refcount_positive(ctx: StepContext) -> str | None:
    m: KvManager = ctx.model
    bad = [f"{_b(b)}={rc}" for b, rc in m.active.items() if rc < 1]
    return f"active refcounts below 1: {bad}" if bad else None


def _disjoint(ctx: StepContext) -> str | None:
    m: KvManager = ctx.model
    both = sorted(_b(b) for b in m.active if m.inactive.contains(b))
    return f"blocks both active and inactive: {both}" if both else None


def _union(ctx: StepContext) -> str | None:
    m: KvManager = ctx.model
    union = set(m.active) | set(m.inactive.keys())
    if union == m.all_blocks:
        return None
    extra = sorted(_b(b) for b in m.all_blocks - union)
    missing = sorted(_b(b) for b in union - m.all_blocks)
    return f"all_blocks != active ∪ inactive: extra {extra}, missing {missing}"


def _capacity(ctx: StepContext) -> str | None:
    m: KvManager = ctx.model
    n = len(m.active) + len(m.inactive)
    return f"len(active)+len(inactive) = {n} > max_capacity {m.max_capacity}" if n > m.max_capacity else None


def _inactive_full_only(ctx: StepContext) -> str | None:
    m: KvManager = ctx.model
    bad = sorted(_b(b) for b in m.inactive.keys() if isinstance(b, PartialBlock))
    return f"partial blocks cached in the inactive pool: {bad}" if bad else None


# --- stream invariants ----------------------------------------------------------------


def _view_matches(ctx: StepContext) -> str | None:
    m: KvManager = ctx.model
    mon: KvMonitor = ctx.monitor
    if not mon.channel:
        return None
    resident = {b.hash for b in m.all_blocks if isinstance(b, FullBlock)}
    if resident == mon.view:
        return None
    return (
        f"router view != resident full blocks: resident but not Stored {sorted(resident - mon.view)}, "
        f"Stored but not resident {sorted(mon.view - resident)}"
    )


def _conservation(ctx: StepContext) -> str | None:
    m: KvManager = ctx.model
    mon: KvMonitor = ctx.monitor
    bad = []
    for b in sorted(set(m.active) | set(mon.held), key=lambda x: x.sort_key()):
        if m.active.get(b, 0) != mon.held.get(b, 0):
            bad.append(f"{_b(b)}: refcount {m.active.get(b, 0)}, held {mon.held.get(b, 0)}")
    return f"refcounts differ from references held: {bad}" if bad else None


# --- step invariants ------------------------------------------------------------------


def _lineage(ctx: StepContext) -> str | None:
    if isinstance(ctx.args, Promote):  # its Store names the promoted hash under the Promote's parent
        p = ctx.args
        for ev in ctx.events:
            if isinstance(ev, Store) and (ev.blocks != (p.hash,) or ev.parent_hash != p.parent_hash):
                what = f"Promote of {p.uuid} to {p.hash} (parent {p.parent_hash})"
                return f"{what} stored {list(ev.blocks)} under {ev.parent_hash}"
        return None
    if not isinstance(ctx.args, Use):
        return None
    blocks = ctx.args.blocks
    for ev in ctx.events:
        if not isinstance(ev, Store):
            continue
        n = len(ev.blocks)
        ok = False
        for i in range(len(blocks) - n + 1):
            window = blocks[i : i + n]
            if all(isinstance(b, FullBlock) and b.hash == h for b, h in zip(window, ev.blocks, strict=True)):
                pred = blocks[i - 1] if i > 0 else None
                want = pred.hash if isinstance(pred, FullBlock) else None
                if want == ev.parent_hash and (pred is None or isinstance(pred, FullBlock)):
                    ok = True
                    break
        if not ok:
            return (
                f"Store({list(ev.blocks)}, parent={ev.parent_hash}) is not a run of "
                f"{[_b(b) for b in blocks]} under its predecessor"
            )
    return None


def _no_trace(ctx: StepContext) -> str | None:
    failed = ctx.error is not None or (isinstance(ctx.args, Use) and ctx.result is False)
    if not failed:
        return None
    m: KvManager = ctx.model
    what = f"raised {ctx.error.id!r}" if ctx.error is not None and hasattr(ctx.error, "id") else "returned false"
    pre: Before = ctx.pre
    # the model's whole state (what ``KvManager.key`` spells): refcounts, residency, eviction order
    if m.active != pre.active or m.all_blocks != pre.all or m.inactive.ordered() != pre.order:
        return f"{ctx.op} {what} but changed the state"
    if ctx.events:
        return f"{ctx.op} {what} but emitted {[e.to_json() for e in ctx.events]}"
    return None


def _never_below_zero(ctx: StepContext) -> str | None:
    if not isinstance(ctx.args, Deref) or ctx.error is not None:
        return None
    pre_active: dict[UniqueBlock, int] = ctx.pre.active
    for b, n in Counter(ctx.args.blocks).items():
        if pre_active.get(b, 0) < n:
            return f"Deref of {_b(b)} x{n} with refcount {pre_active.get(b, 0)} was accepted silently"
    return None


def _held_release_accepted(ctx: StepContext) -> str | None:
    if not isinstance(ctx.args, Deref | Destroy) or ctx.error is None:
        return None
    held = ctx.monitor.held  # a rejected step moved no reference: these are the counts before it
    need = Counter(ctx.args.blocks)
    if all(held.get(b, 0) >= n for b, n in need.items()):
        what = getattr(ctx.error, "id", ctx.error)
        return (
            f"{type(ctx.args).__name__} of {[_b(b) for b in ctx.args.blocks]}, references the callers hold, "
            f"was rejected ({what!r})"
        )
    return None


def _resident(ctx: StepContext) -> Callable[[UniqueBlock], bool]:
    """Whether a block is resident after the step: the model's ``all_blocks`` where the state is
    known; in invariant mode without a snapshot, what the events and the references say — a full
    block is resident iff it is in the router's view (``kv.router_view_matches_resident``), a
    partial iff a caller holds it (an ideal manager never caches a partial)."""
    m: KvManager | None = ctx.model
    if m is not None:
        return m.all_blocks.__contains__
    mon: KvMonitor = ctx.monitor
    return lambda b: b.hash in mon.view if isinstance(b, FullBlock) else mon.held.get(b, 0) > 0


def _prefill_longest_prefix(ctx: StepContext) -> str | None:
    a = ctx.args
    if getattr(a, "op", None) != "get_prefill_cost":
        return None
    resident = _resident(ctx)
    overlap = 0
    for b in a.unique_blocks:
        if not resident(b):
            break
        overlap += 1
    bs = ctx.model.block_size if ctx.model is not None else ctx.monitor.block_size
    n = a.num_input_tokens
    want = {"new_blocks": len(a.unique_blocks) - overlap, "new_tokens": n - min(overlap * bs, n)}
    got = f"the rejection {getattr(ctx.error, 'id', ctx.error)!r}" if ctx.error is not None else ctx.result
    if got == want:
        return None
    return (
        f"get_prefill_cost of {[_b(b) for b in a.unique_blocks]} ({n} tokens) answered {got}; the longest "
        f"resident prefix is {overlap} block(s): {want}"
    )


INVARIANTS: tuple[Invariant, ...] = (
    Invariant(
        "kv.refcount_positive",
        C,
        "state",
        "Every active block has a reference count of at least 1.",
        _refcount_positive,
        witnesses=("kv.w.shared", "kv.w.deref_to_zero"),
    ),
    Invariant(
        "kv.active_inactive_disjoint",
        C,
        "state",
        "No block is both active and in the inactive pool.",
        _disjoint,
        witnesses=("kv.w.inactive_reuse", "kv.w.cached"),
    ),
    Invariant(
        "kv.all_blocks_union",
        C,
        "state",
        "all_blocks is exactly the active blocks plus the inactive blocks.",
        _union,
        witnesses=("kv.w.eviction", "kv.w.destroy_removes"),
    ),
    Invariant(
        "kv.capacity_bound",
        C,
        "state",
        "Active plus inactive blocks never exceed max_capacity.",
        _capacity,
        witnesses=("kv.w.full_cache", "kv.w.eviction"),
    ),
    Invariant(
        "kv.inactive_full_only",
        C,
        "state",
        "The inactive pool caches only full blocks (a partial with no reference is garbage).",
        _inactive_full_only,
        witnesses=("kv.w.cached",),
    ),
    Invariant(
        "kv.store_parent_stored",
        C,
        "stream",
        "A Store's parent was Stored earlier and not Removed since (parent before child).",
        MonitorFault("kv.store_parent_stored"),
        witnesses=("kv.w.store_with_parent",),
        needs=("events", "router_view"),
    ),
    Invariant(
        "kv.store_only_new",
        C,
        "stream",
        "A Store names only hashes that are not in the router's view already.",
        MonitorFault("kv.store_only_new"),
        witnesses=("kv.w.promote_known",),
        needs=("events", "router_view"),
    ),
    Invariant(
        "kv.remove_only_stored",
        C,
        "stream",
        "A Remove names only hashes that were Stored and not Removed since.",
        MonitorFault("kv.remove_only_stored"),
        witnesses=("kv.w.eviction", "kv.w.destroy_removes"),
        needs=("events", "router_view"),
    ),
    Invariant(
        "kv.router_view_matches_resident",
        C,
        "stream",
        "After every step the router's view (Stored minus Removed) equals the full blocks resident in the manager.",
        _view_matches,
        per_state=True,  # the router's view and the resident blocks are both in the state key
        witnesses=("kv.w.store_with_parent", "kv.w.eviction"),
    ),
    Invariant(
        "kv.refcount_conservation",
        C,
        "stream",
        "Each block's refcount equals the references callers hold on it (Uses that "
        "succeeded minus Derefs and Destroys, moved by Promote); a block nobody holds is not active.",
        _conservation,
        per_state=True,  # the refcounts and the references held are both in the state key
        witnesses=("kv.w.shared", "kv.w.promote_known"),
    ),
    Invariant(
        "kv.store_lineage",
        C,
        "step",
        "Each Store of a Use is a contiguous run of the Use's new full blocks whose parent is "
        "the block just before the run (None at the start); a Promote's Store names the promoted "
        "hash under the Promote's parent.",
        _lineage,
        witnesses=("kv.w.store_with_parent",),
        needs=("events", "router_view"),
    ),
    Invariant(
        "kv.failed_op_no_trace",
        C,
        "step",
        "A Use that returns false, or an operation that raises, leaves the state unchanged and emits nothing.",
        _no_trace,
        witnesses=("kv.w.use_fails", "kv.w.rejected"),
    ),
    Invariant(
        "kv.prefill_cost_longest_prefix",
        C,
        "step",
        "get_prefill_cost counts as cached the longest prefix of the sequence's blocks that is "
        "resident, and the tokens of those blocks (block_size each, at most the input's tokens) as "
        "not new.",
        _prefill_longest_prefix,
        witnesses=("kv.w.prefix_hit",),
        needs=("events", "router_view"),
    ),
    Invariant(
        "kv.held_release_accepted",
        C,
        "step",
        "A Deref or Destroy naming only references the callers hold (each block at most as often as it "
        "is held) is accepted: the manager never loses a reference a caller still holds.",
        _held_release_accepted,
        witnesses=("kv.w.deref_to_zero",),
        needs=("events",),
    ),
    Invariant(
        "kv.deref_never_below_zero",
        C,
        "step",
        "A Deref that would take a block's reference count below zero is rejected, not silently ignored.",
        _never_below_zero,
        witnesses=("kv.w.deref_rejected",),
        needs=("events",),  # without a state: the references callers hold (invariant mode)
    ),
)


# --- reachability witnesses -------------------------------------------------------------


@attrs.frozen
class Before:
    """The KV manager before a step: its refcounts, the active and inactive blocks, every
    resident block, and the inactive blocks in eviction order (with the refcounts and the
    resident blocks, the whole of its state)."""

    active: dict[UniqueBlock, int]
    active_keys: frozenset[UniqueBlock]
    inactive: Any
    all: frozenset[UniqueBlock]
    order: tuple[UniqueBlock, ...]


WITNESSES: tuple[Witness, ...] = (
    Witness(
        "kv.w.eviction",
        C,
        "A Use evicts an inactive block (it leaves residency).",
        lambda c: (
            isinstance(c.args, Use)
            and c.error is None
            and any(b not in c.model.all_blocks and b in c.pre.inactive for b in c.pre.all)
        ),
    ),
    Witness(
        "kv.w.use_fails",
        C,
        "A Use runs out of space and returns false.",
        lambda c: isinstance(c.args, Use) and c.result is False,
    ),
    Witness(
        "kv.w.shared",
        C,
        "A block is held twice (refcount at least 2).",
        lambda c: any(rc >= 2 for rc in c.model.active.values()),
    ),
    Witness(
        "kv.w.inactive_reuse",
        C,
        "A Use reactivates a block from the inactive pool.",
        lambda c: (
            isinstance(c.args, Use)
            and c.error is None
            and any(b in c.pre.inactive and b in c.model.active for b in c.args.blocks)
        ),
    ),
    Witness("kv.w.cached", C, "The inactive pool holds a block.", lambda c: len(c.model.inactive) > 0),
    Witness(
        "kv.w.store_with_parent",
        C,
        "A Store names a parent.",
        lambda c: any(isinstance(e, Store) and e.parent_hash is not None for e in c.events),
    ),
    Witness(
        "kv.w.promote_known",
        C,
        "A Promote lands on a hash that is already resident.",
        lambda c: isinstance(c.args, Promote) and c.error is None and FullBlock(c.args.hash) in c.pre.all,
    ),
    Witness(
        "kv.w.destroy_removes",
        C,
        "A Destroy takes a full block out of residency.",
        lambda c: (
            isinstance(c.args, Destroy)
            and c.error is None
            and any(isinstance(b, FullBlock) and b not in c.model.all_blocks for b in c.args.blocks)
        ),
    ),
    Witness("kv.w.rejected", C, "An operation is rejected with an error.", lambda c: c.error is not None),
    Witness(
        "kv.w.deref_to_zero",
        C,
        "A Deref takes a block's count to zero.",
        lambda c: (
            isinstance(c.args, Deref)
            and c.error is None
            and any(b in c.pre.active_keys and b not in c.model.active for b in c.args.blocks)
        ),
    ),
    Witness(
        "kv.w.deref_rejected",
        C,
        "A Deref of a block with no reference is rejected.",
        lambda c: isinstance(c.args, Deref) and c.error is not None,
    ),
    Witness(
        "kv.w.prefix_hit",
        C,
        "get_prefill_cost finds a resident prefix (fewer new blocks than listed).",
        lambda c: (
            getattr(c.args, "op", None) == "get_prefill_cost"
            and c.error is None
            and c.result["new_blocks"] < len(c.args.unique_blocks)
        ),
    ),
    Witness(
        "kv.w.full_cache",
        C,
        "The cache is full (active + inactive = max_capacity > 0).",
        lambda c: c.model.max_capacity > 0 and c.model.current_capacity() == c.model.max_capacity,
    ),
)
