"""The LRU evictors' system: the wall-clock evictor (lazy queue) and the counter rewrite behind the step interface."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kvmodel.actions import Action, ActionSystem
from kvmodel.components.lru.actions import ACTIONS
from kvmodel.invariants.lru import Before, LruMonitor
from kvmodel.model.errors import InvalidInput
from kvmodel.model.lru import CounterLRU, WallClockLRU
from kvmodel.model.quirks import resolve
from kvmodel.systems import Outcome, check_config


class LruSystem(ActionSystem):
    """One of the two LRU evictors with the exact-LRU ghost monitor; its operations are the
    actions of :mod:`kvmodel.components.lru.actions` (``push_front`` on the counter rewrite only)."""

    def __init__(
        self, component: str, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None
    ) -> None:
        if component not in ACTIONS:
            raise InvalidInput(f"not an LRU component: {component!r}")
        self.component = component
        self.ACTIONS = ACTIONS[component]
        self.config = check_config(component, config or {}, {"cleanup_threshold": 50})
        self.quirks = resolve(component, quirks)
        self.model: WallClockLRU[Any] | CounterLRU[Any]
        if component == "lru_evictor_wallclock":
            self.model = WallClockLRU(self.config["cleanup_threshold"], quirks=self.quirks)
        else:
            self.model = CounterLRU(self.config["cleanup_threshold"])
        self.monitor = LruMonitor()

    def decode(self, op: str, args: Any) -> Any:
        args = {} if args is None else args
        if not isinstance(args, dict):
            raise InvalidInput(f"{op} arguments must be an object, got {args!r:.60}")
        if op == "push_front" and self.component != "lru_evictor_counter":
            raise InvalidInput("push_front exists only on the counter-based evictor")
        return self.ACTIONS.decode(op, args)

    def before(self) -> Before:
        return Before(frozenset(self.monitor.order))

    def observe(self, action: Action, out: Outcome) -> list[Any]:
        self.monitor.observe(action.op, getattr(action, "object", None), out.result, out.error)
        return []

    def key(self) -> Any:
        return (tuple(self.model.order()), self.monitor.key())

    def clone(self) -> LruSystem:
        c = LruSystem.__new__(LruSystem)
        c.component, c.config, c.quirks, c.ACTIONS = self.component, self.config, self.quirks, self.ACTIONS
        c.model = self.model.copy()
        c.monitor = self.monitor.copy()
        return c

    def snapshot(self) -> dict[str, Any]:
        return {"order": list(self.model.order())}
