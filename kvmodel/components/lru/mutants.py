"""Seeded bugs of this component's ideal model (the mutation benchmark, :mod:`kvmodel.mutants`)."""

from __future__ import annotations

from kvmodel.mutants import Mutant

LRU = "kvmodel.model.lru"

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "lru_counter_evicts_most_recent",
        "lru_evictor_counter",
        LRU,
        "obj = min(self.free_table, key=self.free_table.__getitem__)",
        "obj = max(self.free_table, key=self.free_table.__getitem__)",
        "eviction from the wrong end of the LRU",
    ),
    Mutant(
        "lru_counter_push_front_to_back",
        "lru_evictor_counter",
        LRU,
        "        self.free_table[obj] = self.negative_counter",
        "        self.free_table[obj] = -self.negative_counter",
        "push_front puts the object at the most-recent end",
    ),
    Mutant(
        "lru_counter_insert_no_refresh",
        "lru_evictor_counter",
        LRU,
        "        self.free_table.pop(obj, None)\n        self.free_table[obj] = self.positive_counter",
        "        self.free_table.setdefault(obj, self.positive_counter)",
        "re-inserting an object does not refresh its recency",
    ),
    Mutant(
        "lru_wall_evict_takes_stale",
        "lru_evictor_wallclock",
        LRU,
        "            if cur is None or cur != stamp:",
        "            if cur is None:",
        "evict trusts a queue entry whose timestamp is stale",
    ),
    Mutant(
        "lru_wall_cleanup_drops_live",
        "lru_evictor_wallclock",
        LRU,
        "if self.free_table.get(o, None) == s)",
        "if self.free_table.get(o, None) != s)",
        "the queue cleanup keeps the stale entries and drops the live ones",
    ),
    Mutant(
        "lru_wall_evict_keeps_table",
        "lru_evictor_wallclock",
        LRU,
        "            del self.free_table[obj]\n            return obj",
        "            return obj",
        "evict returns an object but leaves it in the table",
    ),
    Mutant(
        "lru_remove_keeps_object",
        "lru_evictor_wallclock",
        LRU,
        "return self.free_table.pop(obj, None) is not None",
        "return obj in self.free_table",
        "remove reports the object as removed but keeps it",
    ),
)

WALLCLOCK_MUTANTS = tuple(m for m in MUTANTS if m.component == "lru_evictor_wallclock")
COUNTER_MUTANTS = tuple(m for m in MUTANTS if m.component == "lru_evictor_counter")
