"""Harnesses of the LRU evictors' Rust tests (``evictor.rs``)."""

from __future__ import annotations

from typing import Any

from kvmodel.model.lru import CounterLRU, WallClockLRU
from kvmodel.vectors.harness import Harness
from kvmodel.vectors.notation import Uninterpretable


def _obj(args: dict[str, Any]) -> Any:
    if "object" not in args:
        raise Uninterpretable(f"needs an 'object', got {sorted(args)}")
    return args["object"]


class LruHarness(Harness):
    component = "lru_evictor_wallclock"
    model_component = "lru_evictor_wallclock"

    def __init__(self, vector: dict[str, Any], quirks: frozenset[str]) -> None:
        super().__init__(vector, quirks)
        thr = self.constructor.get("cleanup_threshold", 50)
        self.ev: WallClockLRU[Any] | CounterLRU[Any]
        if vector["component"] == "lru_evictor_wallclock":
            self.ev = WallClockLRU(thr, quirks=quirks)
        else:
            self.ev = CounterLRU()

    def observe(self) -> dict[str, Any]:
        ev = self.ev
        table = {str(k): v for k, v in ev.free_table.items()}
        out: dict[str, Any] = {"len": len(ev), "order": ev.order(), "free_table": table, "keys": sorted(table)}
        if isinstance(ev, CounterLRU):
            out["counters"] = table
            out["positive_counter"], out["negative_counter"] = ev.positive_counter, ev.negative_counter
            for k, v in table.items():
                out[f"counter_of_{k}"] = v
        else:
            out["priority_queue"] = [[str(o), t] for o, t in ev.queue]
        return out

    def op_insert(self, a: dict[str, Any]) -> None:
        self.ev.insert(_obj(a), a.get("clock"))

    def op_push_front(self, a: dict[str, Any]) -> None:
        if not isinstance(self.ev, CounterLRU):
            raise Uninterpretable("push_front exists only on the counter-based evictor")
        self.ev.push_front(_obj(a))

    def op_remove(self, a: dict[str, Any]) -> bool:
        return self.ev.remove(_obj(a))

    def op_evict(self, a: dict[str, Any]) -> Any:
        return self.ev.evict()

    def op_len(self, a: dict[str, Any]) -> int:
        return len(self.ev)

    op_num_objects = op_len

    def op_contains(self, a: dict[str, Any]) -> bool:
        return self.ev.contains(_obj(a))

    def op_keys(self, a: dict[str, Any]) -> list[Any]:
        return sorted(self.ev.keys(), key=str)


class CounterLruHarness(LruHarness):
    component = "lru_evictor_counter"
    model_component = "lru_evictor_counter"


WALLCLOCK_HARNESSES = (LruHarness,)
COUNTER_HARNESSES = (CounterLruHarness,)
