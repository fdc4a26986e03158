"""kvmodel.invariants — the declared invariant catalogue, one registry for every engine."""

from __future__ import annotations

from kvmodel.invariants.core import Invariant, StepContext, Violation, Witness
from kvmodel.invariants.g1 import INVARIANTS as _G1
from kvmodel.invariants.g1 import WITNESSES as _G1_W
from kvmodel.invariants.kv_manager import INVARIANTS as _KV
from kvmodel.invariants.kv_manager import WITNESSES as _KV_W
from kvmodel.invariants.kvbm import INVARIANTS as _KVBM
from kvmodel.invariants.kvbm import WITNESSES as _KVBM_W
from kvmodel.invariants.lru import INVARIANTS_COUNTER as _LRU_C
from kvmodel.invariants.lru import INVARIANTS_WALLCLOCK as _LRU_W
from kvmodel.invariants.lru import WITNESSES_COUNTER as _LRU_C_W
from kvmodel.invariants.lru import WITNESSES_WALLCLOCK as _LRU_W_W
from kvmodel.invariants.registry import INVARIANTS as _REG
from kvmodel.invariants.registry import WITNESSES as _REG_W

ALL: tuple[Invariant, ...] = _LRU_W + _LRU_C + _KV + _REG + _G1 + _KVBM
REGISTRY: dict[tuple[str, str], Invariant] = {(i.component, i.name): i for i in ALL}
WITNESSES: tuple[Witness, ...] = _LRU_W_W + _LRU_C_W + _KV_W + _REG_W + _G1_W + _KVBM_W


def witnesses_for(component: str) -> tuple[Witness, ...]:
    return tuple(w for w in WITNESSES if w.component == component)


_BY_COMPONENT: dict[str, tuple[Invariant, ...]] = {}


def for_component(component: str) -> tuple[Invariant, ...]:
    got = _BY_COMPONENT.get(component)
    if got is None:
        got = _BY_COMPONENT[component] = tuple(i for i in ALL if i.component == component)
    return got


def components() -> list[str]:
    seen: list[str] = []
    for i in ALL:
        if i.component not in seen:
            seen.append(i.component)
    return seen


def check_all(component: str, ctx: StepContext) -> list[Violation]:
    out = []
    for inv in for_component(component):
        msg = inv.check(ctx)
        if msg is not None:
            out.append(Violation(inv.name, msg))
    return out


__all__ = [
    "ALL",
    "REGISTRY",
    "WITNESSES",
    "Invariant",
    "StepContext",
    "Violation",
    "Witness",
    "check_all",
    "components",
    "for_component",
    "witnesses_for",
]
