"""The publisher's bounded world for the explorer: ``ranks`` dp ranks, ``hashes`` block hashes,
one-block events, at most ``copies`` copies of a hash on a rank."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from kvmodel.actions import ActionMoves
from kvmodel.components.publisher.actions import PublishCleared, PublishRemoved, PublishStored, world_moves
from kvmodel.components.publisher.system import PublisherSystem
from kvmodel.explorer import NoSymmetry
from kvmodel.model.errors import InvalidInput
from kvmodel.systems import System


@attrs.frozen
class PublisherSpace(NoSymmetry, ActionMoves):
    """Engine events on ``ranks`` ranks over ``hashes`` hashes; a Stored is disabled once the
    engine holds ``copies`` copies of its hash on its rank (vLLM holds a hash once per physical
    block, so a world bounds the blocks). A Removed of a hash the engine does not hold is allowed:
    the filter passes it through."""

    component: str = "kv_event_publisher"
    ranks: int = 2
    hashes: int = 2
    copies: int = 2

    def __attrs_post_init__(self) -> None:
        for f in ("ranks", "hashes", "copies"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 8:
                raise InvalidInput(f"{f} must be an integer in 1 .. 8, got {v!r}")

    def to_json(self) -> dict[str, int]:
        return {"ranks": self.ranks, "hashes": self.hashes, "copies": self.copies}

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System:
        return PublisherSystem(config, list(quirks))

    def moves(self) -> list[Any]:
        return world_moves(self.ranks, self.hashes)

    def bounds(self) -> list[str]:
        return [
            f"ranks={self.ranks}, hashes={self.hashes}, one block per event",
            f"at most copies={self.copies} copies of a hash on a rank",
            "states compared without the next event id (ids only count up; the id invariant is checked per step)",
        ]

    def _room(self, s: System, a: Any) -> bool:
        return all(s.monitor.copies.get((a.dp_rank, h), 0) < self.copies for h in a.hashes)

    def _always(self, s: System, a: Any) -> bool:
        return True


PublisherSpace.GUARDS = {
    PublishStored: PublisherSpace._room,
    PublishRemoved: PublisherSpace._always,
    PublishCleared: PublisherSpace._always,
}
