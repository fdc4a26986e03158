"""``G1Acquire``: what a G1 signal or reservation returns (``lib/mocker/src/kv_manager/g1_manager.rs``,
seed 002): ``Ready(n)`` (the signal was applied; ``n`` blocks taken or touched), ``Ready`` with
no count (a reservation was made: the system returns the reservation's outcome), or
``CapacityExhausted`` (nothing changed).

The values are typed (code tests them by type: ``isinstance(r, Ready)``, ``r.n``) and are not
strings; their JSON form is their text — ``"Ready(3)"``, ``"Ready"``, ``"CapacityExhausted"`` —
so traces, vectors and reports keep the bytes they always had (:func:`plain` turns a result
holding them into JSON values; :meth:`G1Acquire.from_json` reads one back).
"""

from __future__ import annotations

import re
from typing import Any

import attrs

_READY = re.compile(r"Ready(?:\((\d+)\))?\Z")


class G1Acquire:
    """One ``G1Acquire`` value (see the module docstring)."""

    __slots__ = ()

    def to_json(self) -> str:
        raise TypeError("G1Acquire is Ready or CapacityExhausted")

    def __str__(self) -> str:
        return self.to_json()

    @staticmethod
    def from_json(v: Any) -> G1Acquire | None:
        """The value a JSON ``returns`` spells (``"Ready(2)"``, ``"Ready"``,
        ``"CapacityExhausted"``), or ``None`` when it spells none."""
        if not isinstance(v, str):
            return None
        if v == "CapacityExhausted":
            return CAPACITY_EXHAUSTED
        m = _READY.match(v)
        if m is None:
            return None
        return Ready(None if m.group(1) is None else int(m.group(1)))


@attrs.frozen(repr=False)
class Ready(G1Acquire):
    """``G1Acquire::Ready``: ``Ready(n)``, or ``Ready`` for a reservation made."""

    n: int | None = None

    def to_json(self) -> str:
        return "Ready" if self.n is None else f"Ready({self.n})"

    def __repr__(self) -> str:
        return self.to_json()


@attrs.frozen(repr=False)
class CapacityExhausted(G1Acquire):
    """``G1Acquire::CapacityExhausted``: the pool could not take the request; nothing changed."""

    def to_json(self) -> str:
        return "CapacityExhausted"

    def __repr__(self) -> str:
        return self.to_json()


CAPACITY_EXHAUSTED = CapacityExhausted()


def plain(v: Any) -> Any:
    """``v`` with every ``G1Acquire`` in it (at any depth of lists, tuples and dict values)
    replaced by its JSON text; anything else as it is."""
    if isinstance(v, G1Acquire):
        return v.to_json()
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, tuple):
        return tuple(plain(x) for x in v)
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v
