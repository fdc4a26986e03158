"""Invariant mode for the KV event publisher (:mod:`kvmodel.invariant_mode`): a user's publisher
is fed the engine's events and its answers' ``events`` are what it sent to the router; the
monitor's ghosts (the engine's copies, the router's view) judge them. The filter's counts are the
model's own structure, so the lemma ``publisher.counts_match_copies`` is not checked."""

from __future__ import annotations

from typing import Any

from kvmodel.components.publisher.actions import ACTIONS
from kvmodel.invariant_mode import Malformed, answer
from kvmodel.invariants import StepContext
from kvmodel.invariants.publisher import PublisherMonitor, before
from kvmodel.model.errors import InvalidInput
from kvmodel.model.events import event_from_json


class PublisherObserver:
    readable = frozenset({"events"})

    def __init__(self, config: dict[str, Any]) -> None:
        self.monitor = PublisherMonitor()
        self.provides = frozenset({"events"})

    def step(self, op: str, args: Any, observation: dict[str, Any]) -> StepContext:
        action = ACTIONS.decode(op, args)
        error, result, raw = answer(observation)
        try:
            sent = [event_from_json(e) for e in raw]
        except InvalidInput as e:
            raise Malformed(f"an event the router cannot read: {e}") from None
        pre = before(self.monitor)
        if error is None:
            self.monitor.engine(op, action.dp_rank, action.hashes)  # type: ignore[attr-defined]
        self.monitor.router(sent)
        return StepContext(None, self.monitor, op, action, result, error, list(sent), None, pre)
