"""The LRU evictors' bounded world for the explorer (objects renamed in order of first appearance)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import attrs

from kvmodel.actions import ActionMoves
from kvmodel.components.lru.actions import Evict, Insert, PushFront, Remove
from kvmodel.components.lru.system import LruSystem
from kvmodel.model.errors import InvalidInput
from kvmodel.model.lru import WallClockLRU
from kvmodel.systems import System


@attrs.frozen
class LruSpace(ActionMoves):
    """Bounded LRU evictor: ``objects`` interchangeable objects; insert at the current clock
    reading or one tick later (the wall-clock evictor's clock is explicit), remove, evict,
    push_front (counter evictor only); the wall-clock evictor's queue holds at most
    ``max_queue`` entries."""

    component: str = "lru_evictor_wallclock"
    objects: int = 3
    max_queue: int = 6

    def __attrs_post_init__(self) -> None:
        if self.component not in ("lru_evictor_wallclock", "lru_evictor_counter"):
            raise InvalidInput(f"not an LRU component: {self.component!r}")
        if isinstance(self.objects, bool) or not isinstance(self.objects, int) or self.objects < 1:
            raise InvalidInput(f"objects must be a positive integer, got {self.objects!r}")

    def to_json(self) -> dict[str, int]:
        return {"objects": self.objects, "max_queue": self.max_queue}

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System:
        return LruSystem(self.component, config, list(quirks))

    def moves(self) -> list[Any]:
        """The world's action instances, in the order the search tries them. A wall-clock insert
        names its tick past the evictor's clock (0 or 1), made a clock reading when it runs
        (:meth:`concrete`); the counter evictor has no clock, so one insert per object."""
        wall = self.component == "lru_evictor_wallclock"
        out: list[Any] = [
            Insert(o, t) if wall else Insert(o) for o in range(self.objects) for t in ((0, 1) if wall else (0,))
        ]
        out += [Remove(o) for o in range(self.objects)] + [Evict()]
        if not wall:
            out += [PushFront(o) for o in range(self.objects)]
        return out

    def concrete(self, s: System, move: Any) -> tuple[str, Any, Any]:
        """The move in state ``s``: the wall-clock insert at the evictor's clock plus the move's tick."""
        if isinstance(move, Insert) and move.clock is not None:
            assert isinstance(s.model, WallClockLRU)
            move = Insert(move.object, s.model.clock + move.clock)
        return super().concrete(s, move)

    def bounds(self) -> list[str]:
        """What the world bounds that the real code does not (``kvmodel explore`` reports it)."""
        return [
            f"objects={self.objects} (interchangeable)",
            f"the wall-clock evictor's lazy queue holds at most max_queue={self.max_queue} entries: an insert "
            "that would pass it is disabled (with equal timestamps the real queue grows without limit)",
        ]

    def _queue_room(self, s: System, a: Any) -> bool:
        """The wall-clock evictor's lazy queue is bounded: with equal timestamps its cleanup keeps
        every duplicate entry, so repeated inserts within one tick grow it without limit (a leak
        of the real code, §6 #12)."""
        m = s.model
        return not isinstance(m, WallClockLRU) or len(m.queue) < self.max_queue

    def _always(self, s: System, a: Any) -> bool:
        return True

    def key(self, s: System, symmetry: bool) -> Any:
        """Objects in eviction order, plus, for the wall-clock evictor, its lazy queue and table
        with timestamps replaced by their ranks among all timestamps and the clock (only
        equality and order of timestamps are observable). With symmetry, objects are renamed
        in order of first appearance."""
        m, mon = s.model, s.monitor
        if isinstance(m, WallClockLRU) and m.stale_quirk:
            stamps = sorted({*m.free_table.values(), *(t for _, t in m.queue), m.clock}, key=_stamp_key)
            rank = {t: i for i, t in enumerate(stamps)}
            body: tuple[Any, ...] = (
                tuple((o, rank[t]) for o, t in m.queue),
                tuple(sorted((o, rank[t]) for o, t in m.free_table.items())),
                rank[m.clock],
            )
        else:
            body = (tuple(m.order()),)
        ghost = tuple(mon.order)
        if not symmetry:
            return (body, ghost)
        names: dict[Any, int] = {}
        for o in [*_objects(body), *ghost]:
            names.setdefault(o, len(names))
        return (_rename(body, names), tuple(names[o] for o in ghost))

    def orbit(self, key: Any) -> int:
        used = len({o for o in [*_objects(key[0]), *key[1]]})
        return math.perm(self.objects, used)


LruSpace.GUARDS = {
    Insert: LruSpace._queue_room,
    Remove: LruSpace._always,
    Evict: LruSpace._always,
    PushFront: LruSpace._always,
}


def _stamp_key(t: Any) -> tuple[int, int]:
    return (t, 0) if isinstance(t, int) else (t[0], t[1])


def _objects(body: tuple[Any, ...]) -> list[Any]:
    out: list[Any] = []
    for part in body:
        if isinstance(part, tuple):
            for x in part:
                out.append(x[0] if isinstance(x, tuple) else x)
    return out


def _rename(body: tuple[Any, ...], names: dict[Any, int]) -> tuple[Any, ...]:
    out: list[Any] = []
    for part in body:
        if isinstance(part, tuple):
            out.append(tuple((names[x[0]], *x[1:]) if isinstance(x, tuple) else names[x] for x in part))
        else:
            out.append(part)
    if len(out) >= 2 and isinstance(out[1], tuple):
        out[1] = tuple(sorted(out[1]))
    return tuple(out)
