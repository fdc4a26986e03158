"""Systems: a component's model, its monitor and its invariants behind one step interface.

Every engine drives a component through a :class:`System`: ``step(op, args)`` applies
one operation given in the JSON form that traces and vectors use, records what was
observed (return value, events in order, error) and checks the component's invariants.
Hypothesis machines call :meth:`System.apply` with decoded arguments to skip the JSON.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

import attrs

from kvmodel.invariants import StepContext, Violation, check_all
from kvmodel.invariants.kv_manager import KvMonitor
from kvmodel.invariants.lru import LruMonitor
from kvmodel.model.blocks import MoveBlock, blocks_from_json, move_block_from_json
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.kv_manager import KvManager
from kvmodel.model.lru import CounterLRU, WallClockLRU
from kvmodel.model.quirks import faithful, validate


@attrs.define
class Outcome:
    """What one step did: its result or error, the events it emitted, the violations found."""

    op: str
    args_json: Any
    result: Any = None
    error: ModelError | None = None
    events: list[Any] = attrs.field(factory=list)
    violations: list[Violation] = attrs.field(factory=list)
    ctx: StepContext | None = None

    def observation(self, state: dict[str, Any] | None) -> dict[str, Any]:
        obs: dict[str, Any] = {}
        if self.error is not None:
            obs["error"] = self.error.to_json()
        else:
            obs["returns"] = self.result
        obs["events"] = [e.to_json() for e in self.events]
        if state is not None:
            obs["state"] = state
        return obs


class System:
    component: str

    def clone(self) -> System:
        raise NotImplementedError

    config: dict[str, Any]
    quirks: frozenset[str]
    model: Any
    monitor: Any

    def step(self, op: str, args: Any) -> Outcome:
        """Apply ``op`` with JSON ``args``; malformed arguments are an ``InvalidInput`` error."""
        try:
            decoded = self.decode(op, args)
        except InvalidInput as e:
            return Outcome(op, args, error=e)
        return self.apply(op, decoded, args)

    def decode(self, op: str, args: Any) -> Any:
        raise NotImplementedError

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        raise NotImplementedError

    def snapshot(self) -> dict[str, Any]:
        raise NotImplementedError

    def key(self) -> Any:
        raise NotImplementedError


def _check_config(component: str, config: dict[str, Any], allowed: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(config, dict):
        raise InvalidInput(f"{component}: config must be an object, got {config!r}")
    for k in config:
        if k not in allowed:
            raise InvalidInput(f"{component}: unknown config key {k!r} (known: {sorted(allowed)})")
    return {**allowed, **config}


class KvManagerSystem(System):
    """The old mocker KV manager with its router-view / held-references monitor."""

    OPS = (
        "process",
        "probe_new_blocks",
        "current_capacity",
        "num_active_blocks",
        "num_inactive_blocks",
        "get_prefill_cost",
    )
    DEFAULTS: ClassVar[dict[str, Any]] = {"max_capacity": 4, "block_size": 16, "channel": True, "evictor": "wallclock"}

    def __init__(self, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> None:
        self.component = "kv_manager"
        self.config = _check_config(self.component, config or {}, self.DEFAULTS)
        self.quirks = faithful(self.component) if quirks is None else validate(self.component, quirks)
        self.model = KvManager(
            self.config["max_capacity"],
            self.config["block_size"],
            channel=self.config["channel"],
            quirks=self.quirks,
            evictor=self.config["evictor"],
        )
        self.monitor = KvMonitor(self.model.channel)

    def decode(self, op: str, args: Any) -> Any:
        if op == "process":
            return move_block_from_json(args)
        if op == "probe_new_blocks":
            if not isinstance(args, dict) or "blocks" not in args:
                raise InvalidInput(f"probe_new_blocks needs {{'blocks': [...]}}, got {args!r}")
            return blocks_from_json(args["blocks"])
        if op == "get_prefill_cost":
            if not isinstance(args, dict) or not {"unique_blocks", "num_input_tokens"} <= set(args):
                raise InvalidInput(f"get_prefill_cost needs unique_blocks and num_input_tokens, got {args!r}")
            return (blocks_from_json(args["unique_blocks"]), args["num_input_tokens"])
        if op in self.OPS:
            return None
        raise InvalidInput(f"unknown kv_manager operation {op!r} (known: {list(self.OPS)})")

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        m = self.model
        pre_key = m.key()
        pre = {
            "active": dict(m.active),
            "active_keys": frozenset(m.active),
            "inactive": m.inactive.keys(),
            "all": frozenset(m.all_blocks),
        }
        out = Outcome(op, args_json if args_json is not None else _args_json(op, decoded))
        try:
            if op == "process":
                out.result = m.process(decoded)
            elif op == "probe_new_blocks":
                out.result = m.probe_new_blocks(decoded)
            elif op == "get_prefill_cost":
                nb, nt = m.get_prefill_cost(decoded[0], decoded[1])
                out.result = {"new_blocks": nb, "new_tokens": nt}
            else:
                out.result = getattr(m, op)()
        except ModelError as e:
            out.error = e
        out.events = m.drain_events()
        signal = decoded if op == "process" else None
        self.monitor.observe(signal, out.result, out.error, out.events)
        ctx = StepContext(m, self.monitor, op, signal, out.result, out.error, out.events, pre_key, pre)
        out.violations = check_all(self.component, ctx)
        out.ctx = ctx
        return out

    def snapshot(self) -> dict[str, Any]:
        return self.model.snapshot()  # type: ignore[no-any-return]

    def key(self) -> Any:
        return (self.model.key(), self.monitor.key())

    def clone(self) -> KvManagerSystem:
        """An independent copy (model and monitor), for the explorer's frontier."""
        c = KvManagerSystem.__new__(KvManagerSystem)
        c.component, c.config, c.quirks = self.component, self.config, self.quirks
        c.model = self.model.clone()
        c.monitor = self.monitor.copy()
        return c


def _args_json(op: str, decoded: Any) -> Any:
    if op == "process":
        sig: MoveBlock = decoded
        return sig.to_json()
    if op == "probe_new_blocks":
        return {"blocks": [b.to_json() for b in decoded]}
    if op == "get_prefill_cost":
        return {"unique_blocks": [b.to_json() for b in decoded[0]], "num_input_tokens": decoded[1]}
    if isinstance(decoded, dict):
        return decoded
    return {}


class LruSystem(System):
    """One of the two LRU evictors with the exact-LRU ghost monitor."""

    OPS = ("insert", "push_front", "remove", "evict", "len")

    def __init__(
        self, component: str, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None
    ) -> None:
        if component not in ("lru_evictor_wallclock", "lru_evictor_counter"):
            raise InvalidInput(f"not an LRU component: {component!r}")
        self.component = component
        self.config = _check_config(component, config or {}, {"cleanup_threshold": 50})
        self.quirks = faithful(component) if quirks is None else validate(component, quirks)
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
        if op not in self.OPS:
            raise InvalidInput(f"unknown {self.component} operation {op!r} (known: {list(self.OPS)})")
        if op == "push_front" and self.component != "lru_evictor_counter":
            raise InvalidInput("push_front exists only on the counter-based evictor")
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
        pre = {"live": frozenset(self.monitor.order)}
        try:
            if op == "insert":
                m.insert(obj, decoded.get("clock"))
            elif op == "push_front":
                assert isinstance(m, CounterLRU)
                m.push_front(obj)
            elif op == "remove":
                out.result = m.remove(obj)
            elif op == "evict":
                out.result = m.evict()
            else:
                out.result = len(m)
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


COMPONENTS = ("kv_manager", "lru_evictor_wallclock", "lru_evictor_counter")


def make_system(component: str, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> System:
    """Build a system; ``quirks=None`` means faithful (all of the component's quirks on)."""
    if component == "kv_manager":
        return KvManagerSystem(config, quirks)
    if component in ("lru_evictor_wallclock", "lru_evictor_counter"):
        return LruSystem(component, config, quirks)
    raise InvalidInput(f"unknown component {component!r} (known: {list(COMPONENTS)})")
