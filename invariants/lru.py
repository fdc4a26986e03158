"""Invariants of the LRU evictors (semantics §1.4): they evict exactly in LRU order.

The monitor keeps a ghost list of the live objects, least recently inserted first
(``push_front`` puts an object at the head), and each step is checked against it.
"""

from __future__ import annotations

import itertools
from typing import Any

import attrs

from kvmodel.invariants.core import Invariant, StepContext, Witness


class LruMonitor:
    def __init__(self) -> None:
        self.order: list[Any] = []  # ghost: least recent first
        self.expected: dict[str, Any] = {}

    def copy(self) -> LruMonitor:
        m = LruMonitor()
        m.order = list(self.order)
        return m

    def key(self) -> tuple[Any, ...]:
        return tuple(self.order)

    def observe(self, op: str, obj: Any, result: Any, error: Exception | None) -> None:
        self.expected = {}
        if error is not None:
            return
        if op == "insert":
            if obj in self.order:
                self.order.remove(obj)
            self.order.append(obj)
        elif op == "push_front":
            if obj in self.order:
                self.order.remove(obj)
            self.order.insert(0, obj)
        elif op == "remove":
            self.expected["remove"] = obj in self.order
            if obj in self.order:
                self.order.remove(obj)
        elif op == "evict":
            self.expected["evict"] = self.order.pop(0) if self.order else None
        elif op == "len":
            self.expected["len"] = len(self.order)


@attrs.frozen
class Before:
    """The evictor before a step: the objects live in it."""

    live: frozenset[Any]


def _evicts_least_recent(ctx: StepContext) -> str | None:
    mon: LruMonitor = ctx.monitor
    if ctx.op == "evict" and ctx.error is None and ctx.result != mon.expected.get("evict"):
        return f"evict() returned {ctx.result!r}, the least recently inserted object is {mon.expected.get('evict')!r}"
    if ctx.op == "remove" and ctx.error is None and ctx.result != mon.expected.get("remove"):
        return f"remove() returned {ctx.result!r} but presence was {mon.expected.get('remove')!r}"
    return None


def _len_matches(ctx: StepContext) -> str | None:
    mon: LruMonitor = ctx.monitor
    if ctx.model is None:  # invariant mode without a state: what a len() call answers
        if ctx.op != "len" or ctx.error is not None:
            return None
        n = ctx.result
    else:
        n = len(ctx.model)
    return None if n == len(mon.order) else f"len() = {n!r} but {len(mon.order)} objects are live"


# --- lemmas: the strengthening that makes the ideal evictors 1-inductive (specs/lru.py) ---


def _table_matches_live(ctx: StepContext) -> str | None:
    live, table = set(ctx.monitor.order), set(ctx.model.free_table)
    if live == table:
        return None
    return f"free_table holds {sorted(map(str, table - live))} not live, misses live {sorted(map(str, live - table))}"


def _table_order(ctx: StepContext) -> str | None:
    table = ctx.model.free_table
    stamps = list(table.values())
    if len(set(stamps)) != len(stamps):
        return f"live objects share a stamp: {sorted(table.items(), key=lambda x: str(x))}"
    by_stamp = sorted(table, key=table.__getitem__)
    live = [o for o in ctx.monitor.order if o in table]
    return None if by_stamp == live else f"stamp order {by_stamp} differs from recency order {live}"


def _latest_stamp(m: Any) -> Any:
    return m.clock if m.stale_quirk else (m.clock, m._n)


def _queue_increase(ctx: StepContext) -> str | None:
    m = ctx.model
    q = [t for _, t in m.queue]
    for a, b in itertools.pairwise(q):
        if not a < b:
            return f"queue stamps not strictly increasing: {a!r} then {b!r}"
    if q and q[-1] > _latest_stamp(m):
        return f"queue stamp {q[-1]!r} is later than the latest handed out {_latest_stamp(m)!r}"
    return None


def _queue_covers(ctx: StepContext) -> str | None:
    m = ctx.model
    entries = set(m.queue)
    missing = [o for o, t in m.free_table.items() if (o, t) not in entries]
    return f"table entries with no queue entry of the same stamp: {missing}" if missing else None


def _recency_bounds(ctx: StepContext) -> str | None:
    m = ctx.model
    if hasattr(m, "positive_counter"):
        bad = [o for o, c in m.free_table.items() if not m.negative_counter <= c <= m.positive_counter]
        if m.negative_counter > 0 or m.positive_counter < 0:
            bad.append("counters")
        return f"counters outside [negative_counter, positive_counter]: {bad}" if bad else None
    latest = _latest_stamp(m)
    bad = [o for o, t in m.free_table.items() if t > latest]
    return f"stamps later than the latest handed out: {bad}" if bad else None


def _lemmas(component: str) -> tuple[Invariant, ...]:
    out = [
        Invariant(
            "lru.table_matches_live",
            component,
            "state",
            "The table holds exactly the live objects.",
            _table_matches_live,
            lemma=True,
            witnesses=("lru.w.remove_live",),
        ),
        Invariant(
            "lru.table_order_matches_recency",
            component,
            "state",
            "Objects in the table are live, have distinct stamps, and are ordered by stamp as by recency.",
            _table_order,
            lemma=True,
            witnesses=("lru.w.reinsert",),
        ),
    ]
    if component == "lru_evictor_wallclock":
        out += [
            Invariant(
                "lru.queue_stamps_increase",
                component,
                "state",
                "Lazy-queue stamps strictly increase from front to back, up to the latest stamp handed out.",
                _queue_increase,
                lemma=True,
                witnesses=("lru.w.reinsert",),
            ),
            Invariant(
                "lru.queue_covers_table",
                component,
                "state",
                "Every table entry has a queue entry with the same object and stamp.",
                _queue_covers,
                lemma=True,
                witnesses=("lru.w.evict_nonempty",),
            ),
        ]
    out.append(
        Invariant(
            "lru.recency_bounds",
            component,
            "state",
            "Live stamps lie within the range handed out so far (counter evictor: between "
            "negative_counter and positive_counter).",
            _recency_bounds,
            lemma=True,
            witnesses=("lru.w.evict_nonempty",),
        )
    )
    return tuple(out)


def _make(component: str) -> tuple[Invariant, ...]:
    return (
        Invariant(
            "lru.evicts_least_recent",
            component,
            "step",
            "evict() returns the live object inserted least recently (None when empty), and remove() reports presence.",
            _evicts_least_recent,
            witnesses=("lru.w.evict_nonempty", "lru.w.reinsert"),
            needs=("events",),
        ),
        Invariant(
            "lru.len_matches",
            component,
            "state",
            "len() equals the number of live objects.",
            _len_matches,
            witnesses=("lru.w.remove_live",),
            needs=("events",),  # without a state: the answers of len()
        ),
        *_lemmas(component),
    )


def _witnesses(component: str) -> tuple[Witness, ...]:
    return (
        Witness(
            "lru.w.evict_nonempty",
            component,
            "evict() returns an object.",
            lambda c: c.op == "evict" and c.result is not None,
        ),
        Witness(
            "lru.w.reinsert",
            component,
            "An object that is live is inserted again (recency refreshed).",
            lambda c: c.op == "insert" and getattr(c.args, "object", None) in c.pre.live,
        ),
        Witness(
            "lru.w.remove_live",
            component,
            "remove() takes out a live object.",
            lambda c: c.op == "remove" and c.result is True,
        ),
    )


INVARIANTS_WALLCLOCK = _make("lru_evictor_wallclock")
INVARIANTS_COUNTER = _make("lru_evictor_counter")
WITNESSES_WALLCLOCK = _witnesses("lru_evictor_wallclock")
WITNESSES_COUNTER = _witnesses("lru_evictor_counter")
