"""Invariant mode for the KV manager (:mod:`kvmodel.invariant_mode`): an implementation's
observations read as the invariants of ``invariants/kv_manager.py`` read the model's steps."""

from __future__ import annotations

from typing import Any

from kvmodel.components.kv_manager.actions import ACTIONS, Process
from kvmodel.invariant_mode import Malformed, answer
from kvmodel.invariants import StepContext
from kvmodel.invariants.kv_manager import Before, KvMonitor
from kvmodel.model.blocks import Remove, Store
from kvmodel.model.errors import InvalidInput
from kvmodel.model.kv_manager import KvManager


def _u64(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**64


def _event(obj: Any) -> Store | Remove:
    """``{"Store": {"blocks": [u64], "parent_hash": u64 | null}}`` or ``{"Remove": {"blocks": [u64]}}``,
    exactly (docs/contracts.md); anything else is :class:`Malformed`."""
    if isinstance(obj, dict) and len(obj) == 1:
        ((kind, body),) = obj.items()
        want = {"Store": {"blocks", "parent_hash"}, "Remove": {"blocks"}}.get(kind)
        if want is not None and isinstance(body, dict) and set(body) == want:
            blocks = body["blocks"]
            if isinstance(blocks, list) and all(_u64(b) for b in blocks):
                if kind == "Remove":
                    return Remove(tuple(blocks))
                parent = body["parent_hash"]
                if parent is None or _u64(parent):
                    return Store(tuple(blocks), parent)
    raise Malformed(f"an event is not a Store or a Remove: {obj!r:.160}")


def _before(m: KvManager) -> Before:
    return Before(dict(m.active), frozenset(m.active), m.inactive.keys(), frozenset(m.all_blocks), m.inactive.ordered())


class KvObserver:
    """The router's view and the references callers hold, from the implementation's events and
    returns (:class:`KvMonitor`); its state from each observation's ``state`` while every one
    carries it (a fresh manager is empty, so the state before the first step is known)."""

    readable = frozenset({"events", "snapshot", "router_view"})

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = dict(config)
        self.monitor = KvMonitor(config["channel"], config["block_size"])
        self.state: KvManager | None = KvManager.from_snapshot(
            self.config, {"active": [], "inactive": [], "all_blocks": []}
        )
        self.provides = frozenset({"events", "snapshot"} | ({"router_view"} if config["channel"] else set()))

    def step(self, op: str, args: Any, observation: dict[str, Any]) -> StepContext:
        action = ACTIONS.decode(op, args)  # the workload's own arguments: they decode
        signal = action.signal if isinstance(action, Process) else None
        error, result, raw = answer(observation)
        events = [_event(e) for e in raw]
        held = dict(self.monitor.held)
        self.monitor.observe(signal, result, error, events)
        # without a state, the references callers held before the step stand for the refcounts
        # (what ``kv.deref_never_below_zero`` reads; ``kv.refcount_conservation`` equates them)
        pre = (
            _before(self.state)
            if self.state is not None
            else Before(held, frozenset(held), frozenset(), frozenset(), ())
        )
        self.state = None
        if "state" in observation and pre is not None:
            try:
                self.state = KvManager.from_snapshot(self.config, observation["state"])
            except InvalidInput as e:
                raise Malformed(f"the state is not a kv_manager snapshot: {e}") from None
        if self.state is None:
            self.provides = self.provides - {"snapshot"}
        return StepContext(
            self.state, self.monitor, op, signal if signal is not None else action, result, error, events, None, pre
        )
