"""The LRU evictors' operations as typed actions (:mod:`kvmodel.actions`).

``lib/llm/src/mocker/evictor.rs`` (the wall-clock ``LRUEvictor``, seed 000's revision) and the
counter-based rewrite: ``insert(object[, clock])``, ``push_front(object)`` (the counter rewrite
only), ``remove(object)``, ``evict()`` and ``len()``. Objects are integers or strings (the
generic ``T`` of the Rust, as traces name it); the wall-clock insert takes the caller's clock
reading (``Instant`` in Rust: explicit here, so traces replay). Each class's Z3 effect is the
spec's (``specs/lru.py``) under the same name.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from kvmodel import argspec as A
from kvmodel.actions import Action, Actions
from kvmodel.argspec import OPTIONAL as O
from kvmodel.argspec import REQUIRED as R
from kvmodel.model.errors import InvalidInput

WALLCLOCK, COUNTER = "lru_evictor_wallclock", "lru_evictor_counter"


@A.typed("u64 | string")
def _object(v: Any, what: str) -> int | str:
    if not isinstance(v, int | str) or isinstance(v, bool):
        raise InvalidInput(f"object must be an integer or a string, got {v!r:.60}")
    return v


@attrs.frozen
class Insert(Action):
    """``insert(object, clock)``: make ``object`` the most recent (the wall-clock evictor stamps
    it with ``clock``, default its own clock plus one)."""

    op = "insert"
    RETURNS = "null"
    MEANS = (
        "`null`; the object becomes the most recently freed: the wall-clock evictor stamps it with "
        "`clock` (default: the model's logical clock, which never goes back), the counter evictor "
        "ignores `clock`"
    )
    ARGS: ClassVar[A.Spec] = {"object": (R, _object), "clock": (O, A.optional(A.u64))}
    object: int | str
    clock: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"object": self.object} if self.clock is None else {"object": self.object, "clock": self.clock}

    def run(self, model: Any) -> None:
        model.insert(self.object, self.clock)

    @classmethod
    def params(cls, spec: Any) -> tuple[tuple[str, str], ...]:
        return (("o", "int"), ("tick", "int")) if spec.wall else (("o", "int"),)

    @classmethod
    def effect(cls, spec: Any, s: Any, p: Any) -> Any:
        return spec._insert(s, p)


@attrs.frozen
class PushFront(Action):
    """``push_front(object)`` (the counter rewrite): make ``object`` the least recent."""

    op = "push_front"
    RETURNS = "null"
    MEANS = "`null`; the object becomes the next to be evicted"
    ARGS: ClassVar[A.Spec] = {"object": (R, _object)}
    object: int | str

    def run(self, model: Any) -> None:
        model.push_front(self.object)

    PARAMS = (("o", "int"),)

    @classmethod
    def effect(cls, spec: Any, s: Any, p: Any) -> Any:
        return spec._push_front(s, p)


@attrs.frozen
class Remove(Action):
    """``remove(object) -> bool``: whether ``object`` was live."""

    op = "remove"
    RETURNS = "boolean"
    MEANS = "whether the object was held (boolean)"
    ARGS: ClassVar[A.Spec] = {"object": (R, _object)}
    object: int | str

    def run(self, model: Any) -> bool:
        return model.remove(self.object)  # type: ignore[no-any-return]

    PARAMS = (("o", "int"),)

    @classmethod
    def effect(cls, spec: Any, s: Any, p: Any) -> Any:
        return spec._remove(s, p)


@attrs.frozen
class Evict(Action):
    """``evict() -> Option<T>``: the least recent live object, removed."""

    op = "evict"
    RETURNS = "u64 | string | null"
    MEANS = (
        "the wall-clock evictor's object with the oldest stamp, the counter evictor's least recently "
        "freed object, removed; `null` when empty"
    )

    def run(self, model: Any) -> Any:
        return model.evict()

    @classmethod
    def effect(cls, spec: Any, s: Any, p: Any) -> Any:
        return spec._evict(s, p)


@attrs.frozen
class Len(Action):
    """``len() -> usize``: the live objects."""

    op = "len"
    RETURNS = "usize"
    MEANS = "how many objects are held (integer)"

    def run(self, model: Any) -> int:
        return len(model)

    @classmethod
    def effect(cls, spec: Any, s: Any, p: Any) -> Any:
        return spec._len(s, p)


@attrs.frozen
class InsertAfter:
    """A move, not an operation: ``insert(object, clock)`` at the wall-clock evictor's clock
    plus ``tick`` in the state it is made in (random runs over a list of moves cannot name an
    absolute clock reading ahead of time)."""

    object: int | str
    tick: int

    def at(self, system: Any) -> Insert:
        return Insert(self.object, system.model.clock + self.tick)


ACTIONS: dict[str, Actions] = {
    WALLCLOCK: Actions(WALLCLOCK, (Insert, Remove, Evict, Len)),
    COUNTER: Actions(COUNTER, (Insert, PushFront, Remove, Evict, Len)),
}


def agreement(component: str) -> tuple[dict[str, Any], list[Action]]:
    """The Z3 agreement runs of the mutation benchmark: a three-object world and its moves (a
    wall-clock insert one tick or none after the evictor's clock, :class:`InsertAfter`)."""
    wall = component == "lru_evictor_wallclock"
    out: list[Action] = [Evict(), Len()]
    for o in range(3):
        out += [Remove(o), *((InsertAfter(o, 0), InsertAfter(o, 1)) if wall else (Insert(o), PushFront(o)))]
    return ({"objects": 3, "cleanup_threshold": 2, "max_queue": 8} if wall else {"objects": 3}), out
