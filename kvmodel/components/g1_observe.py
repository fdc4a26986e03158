"""Invariant mode for both G1 components (:mod:`kvmodel.invariant_mode`): the published stream's
ghost (``invariants/g1.py``'s :class:`~kvmodel.invariants.g1.AnnouncedStream`: what each hash's
announcement count is, parent before child, lineage by the hash chain, and for KVBM consecutive
event ids and Removed only of announced hashes) fed with the implementation's events, and the
invariants of its returns. The G1 state invariants read the manager's pool, tables and
reservations, which no snapshot shape of an implementation spells yet: they are not checked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvmodel.actions import Actions
from kvmodel.invariant_mode import Malformed, answer
from kvmodel.invariants import StepContext
from kvmodel.model.errors import InvalidInput
from kvmodel.model.events import event_from_json
from kvmodel.model.g1.vllm_backend import Published


def published(raw: Any) -> list[Published]:
    """The observation's ``events`` as the monitors read them: the router's wire JSON of each
    ``KvCacheEvent`` (docs/contracts.md), exactly; anything else is :class:`Malformed`."""
    if not isinstance(raw, list):
        raise Malformed(f"events must be a list, got {raw!r:.120}")
    out = []
    for e in raw:
        try:
            out.append(Published(event_from_json(e)))
        except InvalidInput as err:
            raise Malformed(f"an event is not a KvCacheEvent ({err.detail}): {e!r:.160}") from None
    return out


class G1Observer:
    """One run of a G1 component's implementation, read event by event."""

    readable = frozenset({"events"})

    def __init__(self, actions: Actions, monitor: Any, feed: Callable[[Any, list[Published]], None]) -> None:
        self.actions, self.monitor, self.feed = actions, monitor, feed
        self.provides = frozenset({"events"})

    def step(self, op: str, args: Any, observation: dict[str, Any]) -> StepContext:
        action = self.actions.decode(op, args)
        error, result, raw = answer(observation)
        events = published(raw)
        self.feed(self.monitor, events)
        return StepContext(None, self.monitor, op, action, result, error, events, None, None)


def native(config: dict[str, Any]) -> G1Observer:
    from kvmodel.components.g1_native.actions import ACTIONS
    from kvmodel.invariants.g1 import G1Monitor

    return G1Observer(ACTIONS, G1Monitor(), lambda m, ev: m.observe(ev))


def kvbm(config: dict[str, Any]) -> G1Observer:
    from kvmodel.components.g1_kvbm.actions import ACTIONS
    from kvmodel.invariants.kvbm import KvbmMonitor

    return G1Observer(ACTIONS, KvbmMonitor(), lambda m, ev: m.observe(ev, frozenset()))
