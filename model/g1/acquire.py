"""``G1Acquire``: what a G1 signal or reservation returns (``lib/mocker/src/kv_manager/g1_manager.rs``,
seed 002): ``Ready(n)`` (the signal was applied; ``n`` blocks taken or touched), ``Ready`` with
no count (a reservation was made: the system returns the reservation's outcome), or
``CapacityExhausted`` (nothing changed).

The values are strings as well — ``Ready(3) == "Ready(3)"`` — so that traces, vectors and the
JSON forms stay byte for byte what they were when the model spelled them as strings; code tests
them by type (``isinstance(r, Ready)``), never by their text.
"""

from __future__ import annotations

import re
from typing import Any

_READY = re.compile(r"Ready(?:\((\d+)\))?\Z")


class G1Acquire(str):
    """One ``G1Acquire`` value (see the module docstring)."""

    __slots__ = ()

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


class Ready(G1Acquire):
    """``G1Acquire::Ready``: ``Ready(n)``, or ``Ready`` for a reservation made."""

    __slots__ = ()

    def __new__(cls, n: int | str | None = None) -> Ready:
        if isinstance(n, str):  # a copy or unpickling passes the text
            m = _READY.match(n)
            if m is None:
                raise ValueError(f"not a Ready value: {n!r}")
            return str.__new__(cls, n)
        return str.__new__(cls, "Ready" if n is None else f"Ready({int(n)})")

    @property
    def n(self) -> int | None:
        """``n`` of ``Ready(n)``; ``None`` for a bare ``Ready``."""
        m = _READY.match(self)
        assert m is not None
        return None if m.group(1) is None else int(m.group(1))


class CapacityExhausted(G1Acquire):
    """``G1Acquire::CapacityExhausted``: the pool could not take the request; nothing changed."""

    __slots__ = ()

    def __new__(cls, _text: str = "CapacityExhausted") -> CapacityExhausted:
        return str.__new__(cls, "CapacityExhausted")


CAPACITY_EXHAUSTED = CapacityExhausted()
