"""The LRU evictors' Hypothesis machine."""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import (
    rule,
)

from kvmodel.machines import Machine


class LruMachine(Machine):
    """Rules: insert (same or later clock), remove, evict, len, push_front (counter only)."""

    component = "lru_evictor_wallclock"
    config: ClassVar[dict[str, Any]] = {"cleanup_threshold": 2}  # stale queue entries survive a while
    quirks = frozenset()

    def __init__(self) -> None:
        super().__init__()
        self.clock = 0

    objs = st.integers(0, 4)

    @rule(obj=objs, tick=st.booleans())
    def insert(self, obj: int, tick: bool) -> None:
        self.clock += int(tick)
        self._run("insert", {"object": obj, "clock": self.clock})

    @rule(obj=objs)
    def remove(self, obj: int) -> None:
        self._run("remove", {"object": obj})

    @rule()
    def evict(self) -> None:
        self._run("evict", {})

    @rule()
    def length(self) -> None:
        self._run("len", {})

    @rule(obj=objs)
    def push_front(self, obj: int) -> None:
        if self.component == "lru_evictor_counter":
            self._run("push_front", {"object": obj})
