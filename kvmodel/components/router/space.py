"""The router indexer's bounded world for the explorer and the workload generator."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import attrs
from hypothesis import strategies as st

from kvmodel.actions import Action, ActionMoves
from kvmodel.components.router.actions import ApplyEvent, ClearAllBlocks, DumpTree, FindMatches, RemoveWorker
from kvmodel.components.router.system import RouterSystem
from kvmodel.explorer import NoSymmetry
from kvmodel.machines import world_machine
from kvmodel.model.errors import InvalidInput
from kvmodel.model.events import Cleared, KvCacheEvent, Removed, Stored, StoredBlock
from kvmodel.systems import System


def world(
    workers: int = 2,
    hashes: int = 2,
    conflict: bool = False,
    max_blocks: int = 2,
    max_removed: int = 2,
    probe_length: int = 2,
) -> dict[str, Any]:
    """A bounded world: ``workers`` worker keys, ``(0, 0), (0, 1), (1, 0), (1, 1), ...`` (two dp
    ranks of each worker id, so that Cleared and ``clear_all_blocks`` differ); block hashes
    ``1 .. hashes`` with tokens hash ``10 + hash`` (with ``conflict`` the last hash has the first
    one's tokens hash: two blocks a tree indexed by tokens cannot tell apart); every probe of
    those tokens hashes up to ``probe_length`` long."""
    ws = [(i // 2, i % 2) for i in range(workers)]
    hs = list(range(1, hashes + 1))
    tok = {h: 10 + h for h in hs}
    if conflict and hashes > 1:
        tok[hs[-1]] = tok[hs[0]]
    locals_ = sorted(set(tok.values()))
    probes = [list(p) for n in range(1, probe_length + 1) for p in itertools.product(locals_, repeat=n)]
    return {
        "workers": ws,
        "hashes": hs,
        "tokens": tok,
        "max_blocks": max_blocks,
        "max_removed": max_removed,
        "probes": probes,
    }


def moves(w: dict[str, Any]) -> list[Action]:
    """The world's action instances, in the order the search tries them: per worker key every
    Stored (no parent or any hash; every list of hashes up to ``max_blocks`` long), every
    Removed of up to ``max_removed`` hashes and Cleared; per worker id removal and clearing;
    ``find_matches`` of every probe with and without early exit; ``dump_tree``."""
    out: list[Action] = []
    hashes, tok = list(w["hashes"]), w["tokens"]
    for wid, r in w["workers"]:
        for parent in [None, *hashes]:
            for n in range(1, w["max_blocks"] + 1):
                for seq in itertools.product(hashes, repeat=n):
                    blocks = tuple(StoredBlock(h, tok[h]) for h in seq)
                    out.append(ApplyEvent(wid, KvCacheEvent(0, Stored(parent, blocks), r)))
        for n in range(1, w["max_removed"] + 1):
            for seq in itertools.combinations(hashes, n):
                out.append(ApplyEvent(wid, KvCacheEvent(0, Removed(tuple(seq)), r)))
        out.append(ApplyEvent(wid, KvCacheEvent(0, Cleared(), r)))
    ids = sorted({wid for wid, _ in w["workers"]})
    out += [RemoveWorker(wid) for wid in ids]
    out += [ClearAllBlocks(wid) for wid in ids]
    out += [FindMatches(tuple(p), e) for p in w["probes"] for e in (False, True)]
    out.append(DumpTree())
    return out


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
        return moves(self.world())

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


# the Hypothesis machine's worlds: one to three worker keys, one to three hashes (with or without
# a tokens-hash conflict), Stored of up to three blocks, a tree without a node bound
WORLDS = st.builds(
    RouterSpace,
    workers=st.integers(1, 3),
    hashes=st.integers(1, 3),
    conflict=st.booleans(),
    max_blocks=st.integers(1, 3),
    max_nodes=st.just(1 << 30),
)
RouterMachine = world_machine("RouterMachine", WORLDS, by_kind=True)
