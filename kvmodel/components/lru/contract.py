"""The LRU evictors' adapter contracts (docs/contracts.md)."""

from __future__ import annotations

EVENTS: dict[str, str] = {
    "lru_evictor_counter": "none (`events` is `[]`)",
    "lru_evictor_wallclock": "none (`events` is `[]`)",
}

MODULES: dict[str, tuple[str, ...]] = {"lru_evictor_counter": ("lru",), "lru_evictor_wallclock": ("lru",)}


WALLCLOCK_CONTRACT, COUNTER_CONTRACT = (
    (EVENTS[c], MODULES[c], ()) for c in ("lru_evictor_wallclock", "lru_evictor_counter")
)
