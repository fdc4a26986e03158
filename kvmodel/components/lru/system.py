"""The LRU evictors' system: the wall-clock evictor (lazy queue) and the counter rewrite behind the step interface."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kvmodel import argspec as A
from kvmodel.argspec import OPTIONAL as O
from kvmodel.argspec import REQUIRED as R
from kvmodel.invariants import StepContext, check_all
from kvmodel.invariants.lru import Before, LruMonitor
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.lru import CounterLRU, WallClockLRU
from kvmodel.model.quirks import resolve
from kvmodel.systems import Outcome, System, check_config


class LruSystem(System):
    """One of the two LRU evictors with the exact-LRU ghost monitor."""

    OPS: tuple[str, ...] = ("insert", "push_front", "remove", "evict", "len")

    def __init__(
        self, component: str, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None
    ) -> None:
        if component not in ("lru_evictor_wallclock", "lru_evictor_counter"):
            raise InvalidInput(f"not an LRU component: {component!r}")
        self.component = component
        if component != "lru_evictor_counter":  # push_front exists only on the counter rewrite
            self.OPS = tuple(o for o in LruSystem.OPS if o != "push_front")
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
            raise InvalidInput(f"{op} arguments must be an object, got {args!r}")
        if op == "push_front" and self.component != "lru_evictor_counter":
            raise InvalidInput("push_front exists only on the counter-based evictor")
        if op not in self.OPS:
            raise InvalidInput(f"unknown {self.component} operation {op!r} (known: {list(self.OPS)})")
        spec: A.Spec = {"object": (R, A.anything)} if op in ("push_front", "remove") else {}
        if op == "insert":
            spec = {"object": (R, A.anything), "clock": (O, A.optional(A.u64))}
        A.check(self.component, op, args, spec)
        if op in ("insert", "push_front", "remove"):
            if "object" not in args:
                raise InvalidInput(f"{op} needs an 'object'")
            obj = args["object"]
            if not isinstance(obj, int | str) or isinstance(obj, bool):
                raise InvalidInput(f"object must be an integer or a string, got {obj!r}")
        return dict(args)

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        m = self.model
        out = Outcome(op, args_json if args_json is not None else decoded)
        obj = decoded.get("object")
        pre = Before(frozenset(self.monitor.order))
        try:
            out.result = CALLS[op](m, decoded)
        except ModelError as e:
            out.error = e
        self.monitor.observe(op, obj, out.result, out.error)
        ctx = StepContext(m, self.monitor, op, decoded, out.result, out.error, [], None, pre)
        out.violations = check_all(self.component, ctx)
        out.ctx = ctx
        return out

    def clone(self) -> LruSystem:
        c = LruSystem.__new__(LruSystem)
        c.component, c.config, c.quirks = self.component, self.config, self.quirks
        c.model = self.model.copy()
        c.monitor = self.monitor.copy()
        return c

    def snapshot(self) -> dict[str, Any]:
        return {"order": list(self.model.order())}

    def key(self) -> Any:
        return (tuple(self.model.order()), self.monitor.key())


def _insert(m: WallClockLRU[Any] | CounterLRU[Any], a: dict[str, Any]) -> None:
    m.insert(a["object"], a.get("clock"))


def _push_front(m: WallClockLRU[Any] | CounterLRU[Any], a: dict[str, Any]) -> None:
    assert isinstance(m, CounterLRU)  # decode rejects it on the wall-clock evictor
    m.push_front(a["object"])


# each operation of the trace format: the evictor's method it calls with the decoded arguments
CALLS: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "insert": _insert,
    "push_front": _push_front,
    "remove": lambda m, a: m.remove(a["object"]),
    "evict": lambda m, a: m.evict(),
    "len": lambda m, a: len(m),
}
