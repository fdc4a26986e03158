"""Invariants of the LRU evictors (semantics §1.4): they evict exactly in LRU order.

The monitor keeps a ghost list of the live objects, least recently inserted first
(``push_front`` puts an object at the head), and each step is checked against it.
"""

from __future__ import annotations

from typing import Any

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


def _evicts_least_recent(ctx: StepContext) -> str | None:
    mon: LruMonitor = ctx.monitor
    if ctx.op == "evict" and ctx.error is None and ctx.result != mon.expected.get("evict"):
        return f"evict() returned {ctx.result!r}, the least recently inserted object is {mon.expected.get('evict')!r}"
    if ctx.op == "remove" and ctx.error is None and ctx.result != mon.expected.get("remove"):
        return f"remove() returned {ctx.result!r} but presence was {mon.expected.get('remove')!r}"
    return None


def _len_matches(ctx: StepContext) -> str | None:
    mon: LruMonitor = ctx.monitor
    n = len(ctx.model)
    return None if n == len(mon.order) else f"len() = {n} but {len(mon.order)} objects are live"


def _make(component: str) -> tuple[Invariant, ...]:
    return (
        Invariant(
            "lru.evicts_least_recent",
            component,
            "step",
            "evict() returns the live object inserted least recently (None when empty), and remove() reports presence.",
            _evicts_least_recent,
            witnesses=("lru.w.evict_nonempty", "lru.w.reinsert"),
        ),
        Invariant(
            "lru.len_matches",
            component,
            "state",
            "len() equals the number of live objects.",
            _len_matches,
            witnesses=("lru.w.remove_live",),
        ),
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
            lambda c: c.op == "insert" and c.args.get("object") in c.pre.get("live", ()),
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
