"""Invariant mode for the LRU evictors (:mod:`kvmodel.invariant_mode`): the exact-LRU ghost
(:class:`~kvmodel.invariants.lru.LruMonitor`) fed with the implementation's answers. Its state
invariants are lemmas of the model's own structures (the wall-clock queue, the free table): no
implementation has those, so they are not checked; ``evict``/``remove`` answers and ``len`` are."""

from __future__ import annotations

from typing import Any

from kvmodel.components.lru.actions import ACTIONS
from kvmodel.invariant_mode import answer
from kvmodel.invariants import StepContext
from kvmodel.invariants.lru import Before, LruMonitor


class LruObserver:
    readable = frozenset({"events"})  # the state invariants are lemmas of the model's own structures

    def __init__(self, component: str, config: dict[str, Any] | None = None) -> None:
        self.actions = ACTIONS[component]
        self.monitor = LruMonitor()
        self.provides = frozenset({"events"})

    def step(self, op: str, args: Any, observation: dict[str, Any]) -> StepContext:
        action = self.actions.decode(op, {} if args is None else args)
        error, result, _ = answer(observation)
        pre = Before(frozenset(self.monitor.order))
        self.monitor.observe(op, getattr(action, "object", None), result, error)
        return StepContext(None, self.monitor, op, action, result, error, [], None, pre)
