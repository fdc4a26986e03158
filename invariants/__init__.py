"""kvmodel.invariants — the declared invariant catalogue, one registry for every engine."""

from __future__ import annotations

from typing import Any

from kvmodel.invariants.core import Invariant, StepContext, Violation, Witness

# The catalogue is read from the component records (``Component.invariants``) on first use,
# in registry order, plus what :func:`register` added; :func:`reset` forgets it (the component
# registry calls it when a component is registered or removed).
_CACHE: tuple[tuple[Invariant, ...], tuple[Witness, ...]] | None = None
_EXTRA: list[tuple[tuple[Invariant, ...], tuple[Witness, ...]]] = []


def _built() -> tuple[tuple[Invariant, ...], tuple[Witness, ...]]:
    global _CACHE
    if _CACHE is None:
        from kvmodel import components

        inv: list[Invariant] = []
        wit: list[Witness] = []
        for part in [c.invariants() for c in components.registered() if c.invariants is not None] + _EXTRA:
            inv += part[0]
            wit += part[1]
        seen: set[tuple[str, str]] = set()
        for x in inv:
            if (x.component, x.name) in seen:
                raise ValueError(f"invariant {x.name!r} of {x.component!r} is declared twice")
            seen.add((x.component, x.name))
        _CACHE = (tuple(inv), tuple(wit))
    return _CACHE


def reset() -> None:
    """Forget the built catalogue (it is rebuilt from the registry on next use)."""
    global _CACHE
    _CACHE = None
    _BY_COMPONENT.clear()


def __getattr__(name: str) -> Any:
    if name == "ALL":
        return _built()[0]
    if name == "WITNESSES":
        return _built()[1]
    if name == "REGISTRY":
        return {(i.component, i.name): i for i in _built()[0]}
    raise AttributeError(name)


def catalogue() -> tuple[Invariant, ...]:
    """Every declared invariant (the components' and those registered at run time), in registry order."""
    return _built()[0]


def register(invariants: tuple[Invariant, ...], witnesses: tuple[Witness, ...] = ()) -> None:
    """Add invariants and witnesses that no component record declares."""
    have = {(i.component, i.name) for i in _built()[0]}
    for i in invariants:
        if (i.component, i.name) in have:
            raise ValueError(f"invariant {i.name!r} of {i.component!r} exists")
    _EXTRA.append((tuple(invariants), tuple(witnesses)))
    reset()


def unregister(component: str) -> None:
    """Remove the invariants and witnesses :func:`register` added for ``component``."""
    _EXTRA[:] = [
        (tuple(i for i in inv if i.component != component), tuple(w for w in wit if w.component != component))
        for inv, wit in _EXTRA
    ]
    reset()


def witnesses_for(component: str) -> tuple[Witness, ...]:
    return tuple(w for w in _built()[1] if w.component == component)


_BY_COMPONENT: dict[str, tuple[Invariant, ...]] = {}


def for_component(component: str) -> tuple[Invariant, ...]:
    got = _BY_COMPONENT.get(component)
    if got is None:
        got = _BY_COMPONENT[component] = tuple(i for i in _built()[0] if i.component == component)
    return got


def components() -> list[str]:
    seen: list[str] = []
    for i in _built()[0]:
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
    "Invariant",
    "StepContext",
    "Violation",
    "Witness",
    "catalogue",
    "check_all",
    "components",
    "for_component",
    "register",
    "reset",
    "unregister",
    "witnesses_for",
]
