"""The KV manager's system: the old mocker ``KvManager`` (seed 000) with its router-view and
held-references monitor behind the step interface."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from kvmodel import argspec as A
from kvmodel.argspec import REQUIRED as R
from kvmodel.invariants import StepContext, check_all
from kvmodel.invariants.kv_manager import Before, KvMonitor
from kvmodel.model.blocks import MoveBlock, blocks_from_json, move_block_from_json
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.kv_manager import KvManager
from kvmodel.model.quirks import resolve
from kvmodel.systems import Outcome, System, check_config


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
        self.config = check_config(self.component, config or {}, self.DEFAULTS)
        self.quirks = resolve(self.component, quirks)
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
            a = A.check(self.component, op, args, {"blocks": (R, A.anything)})
            return blocks_from_json(a["blocks"])
        if op == "get_prefill_cost":
            a = A.check(
                self.component,
                op,
                args,
                {"unique_blocks": (R, A.anything), "num_input_tokens": (R, A.usize)},
            )
            return (blocks_from_json(a["unique_blocks"]), a["num_input_tokens"])
        if op in self.OPS:
            A.check(self.component, op, args, {})
            return None
        raise InvalidInput(f"unknown kv_manager operation {op!r} (known: {list(self.OPS)})")

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        m = self.model
        pre_key = m.key()
        pre = Before(dict(m.active), frozenset(m.active), m.inactive.keys(), frozenset(m.all_blocks))
        out = Outcome(op, args_json if args_json is not None else _args_json(op, decoded))
        try:
            out.result = CALLS[op](m, decoded)
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


def _prefill_cost(m: KvManager, decoded: Any) -> dict[str, int]:
    nb, nt = m.get_prefill_cost(decoded[0], decoded[1])
    return {"new_blocks": nb, "new_tokens": nt}


# each operation of the trace format: the model's method it calls with the decoded arguments
CALLS: dict[str, Callable[[KvManager, Any], Any]] = {
    "process": lambda m, d: m.process(d),
    "probe_new_blocks": lambda m, d: m.probe_new_blocks(d),
    "current_capacity": lambda m, d: m.current_capacity(),
    "num_active_blocks": lambda m, d: m.num_active_blocks(),
    "num_inactive_blocks": lambda m, d: m.num_inactive_blocks(),
    "get_prefill_cost": _prefill_cost,
}


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
