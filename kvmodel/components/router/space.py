"""The router indexer's bounded world for the explorer and the workload generator."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from kvmodel.actions import ActionMoves
from kvmodel.components.router.actions import (
    ACTIONS,
    ApplyEvent,
    ClearAllBlocks,
    DumpTree,
    FindMatches,
    RemoveWorker,
    world,
)
from kvmodel.components.router.system import RouterSystem
from kvmodel.explorer import NoSymmetry
from kvmodel.model.errors import InvalidInput
from kvmodel.model.events import Stored
from kvmodel.systems import System


@attrs.frozen
class RouterSpace(NoSymmetry, ActionMoves):
    """``workers`` worker keys (two dp ranks per worker id), block hashes ``1 .. hashes`` (with
    ``conflict``, the last shares the first's tokens hash), Stored of up to ``max_blocks`` blocks
    under no parent or any hash (self-parents and repeats included), Removed of up to two hashes,
    Cleared, worker removal and clearing, ``find_matches`` over every probe up to two tokens
    hashes long (with and without early exit) and ``dump_tree``. A tree that has allocated
    ``max_nodes`` nodes takes no further Stored (the per-block tree of 4276866 never frees one)."""

    component: str = "kv_router_radix_tree"
    workers: int = 2
    hashes: int = 2
    conflict: bool = False
    max_blocks: int = 2
    max_nodes: int = 6

    def __attrs_post_init__(self) -> None:
        for k in ("workers", "hashes", "max_blocks", "max_nodes"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InvalidInput(f"{k} must be a positive integer, got {v!r}")

    def world(self) -> dict[str, Any]:
        return world(self.workers, self.hashes, self.conflict, self.max_blocks)

    def to_json(self) -> dict[str, Any]:
        return {
            "workers": self.workers,
            "hashes": self.hashes,
            "conflict": self.conflict,
            "max_blocks": self.max_blocks,
            "max_nodes": self.max_nodes,
        }

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System:
        return RouterSystem(config, list(quirks))

    def moves(self) -> list[Any]:
        return ACTIONS.moves(self.world())

    def bounds(self) -> list[str]:
        return [
            f"workers={self.workers} (worker ids 0.. with dp ranks 0 and 1), hashes={self.hashes}"
            + (" (the last shares the first's tokens hash)" if self.conflict else ""),
            f"Stored of at most max_blocks={self.max_blocks} blocks; a tree that has allocated "
            f"max_nodes={self.max_nodes} nodes takes no further Stored",
        ]

    def move_kind(self, move: Any) -> str:
        """Each kind of event is its own kind of move (the generator then draws Stored, Removed and
        Cleared as often as each query)."""
        if isinstance(move, ApplyEvent):
            return "apply_event:" + type(move.event.data).__name__.lower()
        return str(move.op)

    def _room(self, s: System, a: Any) -> bool:
        assert isinstance(s, RouterSystem)
        return not isinstance(a.event.data, Stored) or s.node_count() < self.max_nodes

    def _always(self, s: System, a: Any) -> bool:
        return True


RouterSpace.GUARDS = {
    ApplyEvent: RouterSpace._room,
    RemoveWorker: RouterSpace._always,
    ClearAllBlocks: RouterSpace._always,
    FindMatches: RouterSpace._always,
    DumpTree: RouterSpace._always,
}
