"""The publisher's Hypothesis machine: it draws the engine's events (ranks, hashes, lists of
blocks with repeats, parents) and shrinks them; the engine never holds more than ``COPIES``
copies of a hash on a rank, as a real pool holds a block once per physical slot."""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import rule

from kvmodel.components.publisher.actions import TOKENS, PublishCleared, PublishRemoved, PublishStored
from kvmodel.machines import Machine
from kvmodel.model.events import StoredBlock

COPIES = 3
ranks = st.integers(0, 1)
hash_lists = st.lists(st.integers(0, 3), min_size=1, max_size=3)


class PublisherMachine(Machine):
    """Rules: stored (1–3 blocks, optionally chained to a parent), removed (1–3 hashes), cleared."""

    component = "kv_event_publisher"
    config: ClassVar[dict[str, Any]] = {}
    quirks = frozenset()

    @rule(r=ranks, hs=hash_lists, parent=st.none() | st.integers(0, 3))
    def stored(self, r: int, hs: list[int], parent: int | None) -> None:
        copies = self.system.monitor.copies
        if any(copies.get((r, h), 0) + hs.count(h) > COPIES for h in hs):
            return
        self._run("stored", PublishStored(r, tuple(StoredBlock(h, TOKENS + h) for h in hs), parent))

    @rule(r=ranks, hs=hash_lists)
    def removed(self, r: int, hs: list[int]) -> None:
        self._run("removed", PublishRemoved(r, tuple(hs)))

    @rule(r=ranks)
    def cleared(self, r: int) -> None:
        self._run("cleared", PublishCleared(r))
