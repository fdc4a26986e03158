"""Invariant mode for the KVBM block registry (:mod:`kvmodel.invariant_mode`): the Register/Remove
stream's ghost (:class:`~kvmodel.invariants.registry.RegMonitor`) fed with the implementation's
events, per handle in its own numbering. Which handles a successful ``register_block`` created,
and every state invariant, read the registry's internals: not checked."""

from __future__ import annotations

from typing import Any

import attrs

from kvmodel.components.registry.actions import ACTIONS
from kvmodel.invariant_mode import Malformed, answer
from kvmodel.invariants import StepContext
from kvmodel.invariants.registry import RegMonitor
from kvmodel.model.registry import RegEvent


@attrs.frozen
class _NoState:
    """What the monitor looks a handle up in when the state is unknown: no handle."""

    handles: dict[int, Any] = attrs.field(factory=dict)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def event(obj: Any) -> RegEvent:
    """``{kind: Register | Remove, sequence_hash: u64, tier: string | null, handle: int, batch: int}``,
    exactly (docs/contracts.md); anything else is :class:`Malformed`."""
    keys = {"kind", "sequence_hash", "tier", "handle", "batch"}
    if (
        isinstance(obj, dict)
        and set(obj) == keys
        and obj["kind"] in ("Register", "Remove")
        and _int(obj["sequence_hash"])
        and obj["sequence_hash"] < 2**64
        and (obj["tier"] is None or isinstance(obj["tier"], str))
        and _int(obj["handle"])
        and _int(obj["batch"])
    ):
        return RegEvent(obj["kind"], obj["sequence_hash"], obj["tier"], obj["handle"], obj["batch"])
    raise Malformed(f"an event is not a registry Register/Remove: {obj!r:.160}")


class RegistryObserver:
    readable = frozenset({"events"})

    def __init__(self, config: dict[str, Any]) -> None:
        self.monitor = RegMonitor()
        self.provides = frozenset({"events"})

    def step(self, op: str, args: Any, observation: dict[str, Any]) -> StepContext:
        action = ACTIONS.decode(op, args)
        error, result, raw = answer(observation)
        events = [event(e) for e in raw]
        self.monitor.observe(_NoState(), events)  # type: ignore[arg-type]
        return StepContext(None, self.monitor, op, action, result, error, events, None, None)
