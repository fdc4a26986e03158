"""kvmodel.invariants — the declared invariant catalogue, one registry for every engine."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from kvmodel.invariants.core import Invariant, MonitorFault, StepContext, Violation, Witness

# The catalogue: each modelled component's declared invariants and witnesses (this package's
# modules, in the component registry's order), then what :func:`register` added at run time (a
# component registered by a test); :func:`reset` forgets the built tuple.
_CACHE: tuple[tuple[Invariant, ...], tuple[Witness, ...]] | None = None
_EXTRA: list[tuple[tuple[Invariant, ...], tuple[Witness, ...]]] = []


def _declared() -> list[tuple[tuple[Invariant, ...], tuple[Witness, ...]]]:
    from kvmodel.invariants import g1, kv_manager, kvbm, lru, publisher, registry, router

    return [
        (kv_manager.INVARIANTS, kv_manager.WITNESSES),
        (lru.INVARIANTS_WALLCLOCK, lru.WITNESSES_WALLCLOCK),
        (lru.INVARIANTS_COUNTER, lru.WITNESSES_COUNTER),
        (registry.INVARIANTS, registry.WITNESSES),
        (router.INVARIANTS, router.WITNESSES),
        (g1.INVARIANTS, g1.WITNESSES),
        (kvbm.INVARIANTS, kvbm.WITNESSES),
        (publisher.INVARIANTS, publisher.WITNESSES),
    ]


def _built() -> tuple[tuple[Invariant, ...], tuple[Witness, ...]]:
    global _CACHE
    if _CACHE is None:
        inv: list[Invariant] = []
        wit: list[Witness] = []
        for part in _declared() + _EXTRA:
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
    """Forget the built catalogue (it is rebuilt on next use)."""
    global _CACHE
    _CACHE = None
    _BY_COMPONENT.clear()
    _SPLIT.clear()
    _POSITION.clear()


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


_DEFERRED: contextvars.ContextVar[bool] = contextvars.ContextVar("kvmodel_state_checks_deferred", default=False)
_Plan = tuple[tuple[Invariant, ...], tuple[Invariant, ...]]
# per component: (every invariant, those of the state alone, the rest), each as a plan —
# (the invariants, the same without the ``MonitorFault`` checks)
_SPLIT: dict[str, tuple[_Plan, _Plan, _Plan]] = {}
_POSITION: dict[str, dict[str, int]] = {}


def _plan(invariants: tuple[Invariant, ...]) -> _Plan:
    """The invariants, and the same without the checks of monitor faults (``MonitorFault``):
    on a step whose monitor found no fault those all pass, so they need not be asked. When no
    check is one, both are the same tuple."""
    quiet = tuple(i for i in invariants if not isinstance(i.check, MonitorFault))
    return invariants, (invariants if len(quiet) == len(invariants) else quiet)


def _split(component: str) -> tuple[_Plan, _Plan, _Plan]:
    """The component's invariants, those of the state alone (``Invariant.per_state``: every
    ``state`` one and the ``stream`` ones that say so), and the rest, each as a :func:`_plan`."""
    got = _SPLIT.get(component)
    if got is None:
        every = for_component(component)
        got = _SPLIT[component] = (
            _plan(every),
            _plan(tuple(i for i in every if i.per_state)),
            _plan(tuple(i for i in every if not i.per_state)),
        )
    return got


def _run(plan: _Plan, ctx: StepContext) -> list[Violation]:
    invs, quiet = plan
    if quiet is not invs and not ctx.monitor.faults:
        invs = quiet  # no fault found in this step: every MonitorFault check passes
    out = []
    for inv in invs:
        msg = inv.check(ctx)
        if msg is not None:
            out.append(Violation(inv.name, msg))
    return out


def check_all(component: str, ctx: StepContext) -> list[Violation]:
    """Every invariant of ``component`` on one step, in declaration order — except the
    ones of the state alone (``Invariant.per_state``) while :func:`state_checks_deferred` is in
    force (then :func:`check_state`)."""
    return _run(_split(component)[2 if _DEFERRED.get() else 0], ctx)


def check_state(component: str, ctx: StepContext, others: Sequence[Violation] = ()) -> list[Violation]:
    """``component``'s invariants of the state alone (``Invariant.per_state``) on the state a
    step reached; with ``others`` (what :func:`check_all` found on the same step while
    deferring), all of them in declaration order, as :func:`check_all` alone would list them."""
    found = _run(_split(component)[1], ctx)
    if not found or not others:
        return [*others, *found]
    pos = _POSITION.get(component)
    if pos is None:
        pos = _POSITION[component] = {i.name: n for n, i in enumerate(for_component(component))}
    return sorted([*others, *found], key=lambda v: pos[v.invariant])


@contextmanager
def state_checks_deferred() -> Iterator[None]:
    """While in force, :func:`check_all` leaves the invariants of the state alone out
    (``Invariant.per_state``): a caller that meets the same state many times (the explorer)
    checks them once per new state with :func:`check_state`. Such an invariant speaks only of
    the state after the step, so its verdict on a state is the same whichever step reached it."""
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


__all__ = [
    "Invariant",
    "StepContext",
    "Violation",
    "Witness",
    "catalogue",
    "check_all",
    "check_state",
    "components",
    "for_component",
    "register",
    "reset",
    "state_checks_deferred",
    "unregister",
    "witnesses_for",
]
