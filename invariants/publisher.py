"""Invariants of the worker-side KV event publisher (``kv_event_publisher``).

The monitor keeps two ghosts fed from outside the publisher: the engine's copies of each block
hash per dp rank (one more per hash a Stored lists, one fewer per hash a Removed lists, none after
the rank's Cleared), and the router's view per dp rank, fed with what the publisher sent. The
publisher is right when the router's view is always the set of hashes the engine holds at least
one copy of (``publisher.router_view_matches_engine``); the step invariants say how: a Stored
passes whole, a Removed keeps exactly the hashes whose last copy went, a Cleared passes, and the
ids of what is sent count up by one.

Real code: ``lib/llm/src/kv_router/publisher/dedup.rs`` (6f64a59b6) and ``BatchingState::flush``
(``publisher/event_processor.rs`` 0d29bd4e6).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from kvmodel.invariants.core import Invariant, StepContext, Witness
from kvmodel.model.events import Cleared, KvCacheEvent, Removed, Stored

NAME = "kv_event_publisher"


class PublisherMonitor:
    """Ghosts: the engine's copies per ``(dp_rank, hash)`` and the router's view per dp rank."""

    def __init__(self) -> None:
        self.copies: dict[tuple[int, int], int] = {}
        self.view: dict[int, set[int]] = {}
        self.next_id = 1

    def copy(self) -> PublisherMonitor:
        m = PublisherMonitor()
        m.copies = dict(self.copies)
        m.view = {r: set(v) for r, v in self.view.items()}
        m.next_id = self.next_id
        return m

    def key(self) -> tuple[Any, ...]:
        """Without the next id: ids only count (the explorer's states would never repeat)."""
        return (
            tuple(sorted(self.copies.items())),
            tuple(sorted((r, tuple(sorted(v))) for r, v in self.view.items() if v)),
        )

    def held(self, dp_rank: int) -> set[int]:
        return {h for (r, h), n in self.copies.items() if r == dp_rank and n > 0}

    def _removal(self, dp_rank: int, hashes: Iterable[int]) -> tuple[tuple[int, ...], dict[tuple[int, int], int]]:
        """A Removed's effect on the copies: the hashes whose last copy it takes (or that the engine
        never held), in order, and the copies left."""
        left = dict(self.copies)
        out = []
        for h in hashes:
            n = left.get((dp_rank, h), 0)
            if n <= 1:
                left.pop((dp_rank, h), None)
                out.append(h)
            else:
                left[(dp_rank, h)] = n - 1
        return tuple(out), left

    def expected_removed(self, dp_rank: int, hashes: Iterable[int]) -> tuple[int, ...]:
        """The hashes of a Removed whose last copy goes (or that the engine never held), in order."""
        return self._removal(dp_rank, hashes)[0]

    def engine(self, op: str, dp_rank: int, hashes: Iterable[int]) -> None:
        """The engine's copies after its event."""
        if op == "stored":
            for h in hashes:
                self.copies[(dp_rank, h)] = self.copies.get((dp_rank, h), 0) + 1
        elif op == "removed":
            self.copies = self._removal(dp_rank, hashes)[1]
        else:
            self.copies = {k: n for k, n in self.copies.items() if k[0] != dp_rank}

    def router(self, events: Iterable[KvCacheEvent]) -> None:
        """The router's view after what was sent (ids counted as they arrive)."""
        for ev in events:
            v = self.view.setdefault(ev.dp_rank, set())
            if isinstance(ev.data, Stored):
                v.update(b.block_hash for b in ev.data.blocks)
            elif isinstance(ev.data, Removed):
                v.difference_update(ev.data.block_hashes)
            else:
                v.clear()
            self.next_id = ev.event_id + 1


@attrs.frozen
class Before:
    """The monitor before a step: the engine's copies and the next id the router expects."""

    copies: tuple[tuple[tuple[int, int], int], ...]
    next_id: int

    def _monitor(self) -> PublisherMonitor:
        m = PublisherMonitor()
        m.copies = dict(self.copies)
        return m

    def held(self, dp_rank: int) -> set[int]:
        return self._monitor().held(dp_rank)

    def expected_removed(self, dp_rank: int, hashes: Iterable[int]) -> tuple[int, ...]:
        return self._monitor().expected_removed(dp_rank, hashes)


def before(mon: PublisherMonitor) -> Before:
    return Before(tuple(sorted(mon.copies.items())), mon.next_id)


def _sent(ctx: StepContext) -> list[KvCacheEvent]:
    return [e for e in ctx.events if isinstance(e, KvCacheEvent)]


def _stored_passes(ctx: StepContext) -> str | None:
    if ctx.op != "stored" or ctx.error is not None:
        return None
    a = ctx.args
    want = [Stored(a.parent, a.blocks)]
    got = [e.data for e in _sent(ctx) if e.dp_rank == a.dp_rank]
    if got == want and len(_sent(ctx)) == 1:
        return None
    return f"a Stored of {[b.block_hash for b in a.blocks]} on rank {a.dp_rank} was sent as {_show(_sent(ctx))}"


def _removed_at_last_copy(ctx: StepContext) -> str | None:
    if ctx.op != "removed" or ctx.error is not None:
        return None
    a = ctx.args
    want = ctx.pre.expected_removed(a.dp_rank, a.block_hashes)
    sent = _sent(ctx)
    got = tuple(h for e in sent if isinstance(e.data, Removed) and e.dp_rank == a.dp_rank for h in e.data.block_hashes)
    shape_ok = (len(sent) == 1 and isinstance(sent[0].data, Removed)) if want else not sent
    if got == want and shape_ok:
        return None
    return (
        f"removed {list(a.block_hashes)} on rank {a.dp_rank}: the router should get {list(want) or 'nothing'} "
        f"(hashes whose last copy went), it got {_show(sent)}"
    )


def _cleared_passes(ctx: StepContext) -> str | None:
    if ctx.op != "cleared" or ctx.error is not None:
        return None
    sent = _sent(ctx)
    if len(sent) == 1 and isinstance(sent[0].data, Cleared) and sent[0].dp_rank == ctx.args.dp_rank:
        return None
    return f"a Cleared on rank {ctx.args.dp_rank} was sent as {_show(sent)}"


def _ids_consecutive(ctx: StepContext) -> str | None:
    ids = [e.event_id for e in _sent(ctx)]
    want = list(range(ctx.pre.next_id, ctx.pre.next_id + len(ids)))
    return None if ids == want else f"event ids {ids} sent, the router expects {want} (one up per event sent)"


def _view_matches(ctx: StepContext) -> str | None:
    mon: PublisherMonitor = ctx.monitor
    for r in sorted({*mon.view, *(k[0] for k in mon.copies)}):
        held, seen = mon.held(r), mon.view.get(r, set())
        if held != seen:
            return (
                f"rank {r}: the router holds {sorted(seen)}, the engine holds copies of {sorted(held)} "
                f"(missing {sorted(held - seen)}, stale {sorted(seen - held)})"
            )
    return None


def _counts_match(ctx: StepContext) -> str | None:
    mon: PublisherMonitor = ctx.monitor
    counts = {(r, h): n for (r, _tier, _dom), hs in ctx.model.filter.counts.items() for h, n in hs.items() if n}
    if counts == {k: n for k, n in mon.copies.items() if n}:
        return None
    return f"the filter counts {sorted(counts.items())}, the engine holds {sorted(mon.copies.items())}"


def _show(events: list[KvCacheEvent]) -> str:
    return "nothing" if not events else str([e.to_json() for e in events])


INVARIANTS = (
    Invariant(
        "publisher.stored_passes",
        NAME,
        "step",
        "A Stored reaches the router whole, once, on its dp rank.",
        _stored_passes,
        witnesses=("publisher.w.second_copy",),
        needs=("events",),
    ),
    Invariant(
        "publisher.removed_at_last_copy",
        NAME,
        "step",
        "A Removed reaches the router with exactly the hashes whose last copy went (and those never "
        "stored), in order; nothing is sent when none is left.",
        _removed_at_last_copy,
        witnesses=("publisher.w.removal_held", "publisher.w.last_copy"),
        needs=("events",),
    ),
    Invariant(
        "publisher.cleared_passes",
        NAME,
        "step",
        "A Cleared reaches the router on its dp rank.",
        _cleared_passes,
        witnesses=("publisher.w.clear_held",),
        needs=("events",),
    ),
    Invariant(
        "publisher.event_ids_consecutive",
        NAME,
        "step",
        "The events sent carry ids 1, 2, 3, … in order: a Removed the filter swallows leaves no gap.",
        _ids_consecutive,
        witnesses=("publisher.w.removal_held",),
        needs=("events",),
    ),
    Invariant(
        "publisher.router_view_matches_engine",
        NAME,
        "state",
        "Per dp rank, the router holds exactly the hashes the engine holds at least one copy of.",
        _view_matches,
        witnesses=("publisher.w.removal_held", "publisher.w.clear_held"),
        needs=("events",),
    ),
    Invariant(
        "publisher.counts_match_copies",
        NAME,
        "state",
        "The filter counts, per dp rank and hash, the engine's copies.",
        _counts_match,
        lemma=True,
        witnesses=("publisher.w.second_copy",),
    ),
)

WITNESSES = (
    Witness(
        "publisher.w.second_copy",
        NAME,
        "A hash the engine already holds is stored again (a second copy).",
        lambda c: c.op == "stored" and any(b.block_hash in c.pre.held(c.args.dp_rank) for b in c.args.blocks),
    ),
    Witness(
        "publisher.w.removal_held",
        NAME,
        "A Removed is held back: a copy of every hash it names is left.",
        lambda c: (
            c.op == "removed"
            and bool(c.args.block_hashes)
            and not c.pre.expected_removed(c.args.dp_rank, c.args.block_hashes)
        ),
    ),
    Witness(
        "publisher.w.last_copy",
        NAME,
        "The last copy of a held hash goes and the Removed reaches the router.",
        lambda c: (
            c.op == "removed"
            and any(
                h in c.pre.held(c.args.dp_rank) for h in c.pre.expected_removed(c.args.dp_rank, c.args.block_hashes)
            )
        ),
    ),
    Witness(
        "publisher.w.clear_held",
        NAME,
        "A rank holding blocks is cleared.",
        lambda c: c.op == "cleared" and bool(c.pre.held(c.args.dp_rank)),
    ),
)
