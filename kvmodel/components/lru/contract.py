"""The LRU evictors' adapter contracts (docs/contracts.md)."""

from __future__ import annotations

# per component: operation -> (arguments, what `returns` holds), events, model modules raised from
OPERATIONS: dict[str, dict[str, tuple[dict[str, str], str]]] = {
    "lru_evictor_counter": {
        "insert": ({"object": "u64 | string"}, "`null`; the object becomes the most recently freed"),
        "push_front": ({"object": "u64 | string"}, "`null`; the object becomes the next to be evicted"),
        "remove": ({"object": "u64 | string"}, "whether the object was held (boolean)"),
        "evict": ({}, "the least recently freed object, removed; `null` when empty"),
        "len": ({}, "how many objects are held (integer)"),
    },
    "lru_evictor_wallclock": {
        "insert": (
            {"object": "u64 | string", "clock?": "u64"},
            "`null`; stamped with `clock` (default: the model's logical clock, which never goes back)",
        ),
        "remove": ({"object": "u64 | string"}, "whether the object was held (boolean)"),
        "evict": ({}, "the object with the oldest stamp, removed; `null` when empty"),
        "len": ({}, "how many objects are held (integer)"),
    },
}

EVENTS: dict[str, str] = {
    "lru_evictor_counter": "none (`events` is `[]`)",
    "lru_evictor_wallclock": "none (`events` is `[]`)",
}

MODULES: dict[str, tuple[str, ...]] = {"lru_evictor_counter": ("lru",), "lru_evictor_wallclock": ("lru",)}

_QUERIES = {"remove": "boolean", "evict": "u64 | string | null", "len": "usize"}
# per component: operation -> the shape of what `returns` holds (kvmodel.contracts.conforms)
RETURNS: dict[str, dict[str, str]] = {
    "lru_evictor_counter": {"insert": "null", "push_front": "null", **_QUERIES},
    "lru_evictor_wallclock": {"insert": "null", **_QUERIES},
}

WALLCLOCK_CONTRACT, COUNTER_CONTRACT = (
    (OPERATIONS[c], EVENTS[c], MODULES[c], RETURNS[c], ()) for c in ("lru_evictor_wallclock", "lru_evictor_counter")
)
