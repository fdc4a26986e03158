"""The publisher's system: :class:`~kvmodel.model.publisher.KvEventPublisher` behind the step
interface, with the engine and router ghosts of :mod:`kvmodel.invariants.publisher`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kvmodel.actions import Action, ActionSystem
from kvmodel.components.publisher.actions import ACTIONS
from kvmodel.invariants.publisher import NAME, Before, PublisherMonitor, before
from kvmodel.model.publisher import KvEventPublisher
from kvmodel.model.quirks import resolve
from kvmodel.systems import Outcome, check_config


class PublisherSystem(ActionSystem):
    """One worker's KV event publisher; its operations are the engine's events."""

    ACTIONS = ACTIONS

    def __init__(self, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> None:
        self.component = NAME
        self.config = check_config(NAME, config or {}, {})
        self.quirks = resolve(NAME, quirks)
        self.model = KvEventPublisher(self.quirks)
        self.monitor = PublisherMonitor()

    def before(self) -> Before:
        return before(self.monitor)

    def observe(self, action: Action, out: Outcome) -> list[Any]:
        sent = self.model.take()
        if out.error is None:
            self.monitor.engine(action.op, action.dp_rank, action.hashes)  # type: ignore[attr-defined]
        self.monitor.router(sent)
        return list(sent)

    def key(self) -> Any:
        counts = tuple(sorted((k, tuple(sorted(v.items()))) for k, v in self.model.filter.counts.items() if v))
        return (counts, self.monitor.key())

    def clone(self) -> PublisherSystem:
        c = PublisherSystem.__new__(PublisherSystem)
        c.component, c.config, c.quirks = self.component, self.config, self.quirks
        c.model = self.model.clone()
        c.monitor = self.monitor.copy()
        return c

    def snapshot(self) -> dict[str, Any]:
        return {
            "counts": [
                {"dp_rank": r, "tier": t, "domain": d, "hashes": sorted([h, n] for h, n in hs.items())}
                for (r, t, d), hs in sorted(self.model.filter.counts.items())
                if hs
            ],
            "next_publish_id": self.model.next_publish_id,
        }
