"""The mocker's LRU evictors (``lib/llm/src/mocker/evictor.rs``): the wall-clock evictor with a
lazy queue (revision 0c89c866, the one seed 000 uses) and its counter-based rewrite (f0652d89f).
Model: ``model/lru.py``; invariants: ``invariants/lru.py``; Z3 spec: ``specs/lru.py``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kvmodel.components.base import EXPLORE, SPEC, CheckProfile, Component, Option, World

WALLCLOCK, COUNTER = "lru_evictor_wallclock", "lru_evictor_counter"


def _system(name: str) -> Any:
    def make(config: dict[str, Any] | None, quirks: Iterable[str] | None) -> Any:
        from kvmodel.components.lru.system import LruSystem

        return LruSystem(name, config, quirks)

    return make


def _space(name: str) -> Any:
    def make(**kw: Any) -> Any:
        from kvmodel.components.lru.space import LruSpace

        return LruSpace(name, **kw)

    return make


def _machine() -> type:
    from kvmodel.components.lru.machine import LruMachine

    return LruMachine


def _spec(name: str) -> Any:
    def make(config: dict[str, Any], quirks: Iterable[str]) -> Any:
        from kvmodel.specs.lru import make_spec

        return make_spec(name, config, quirks)

    return make


def _universe(w: World) -> dict[str, Any]:
    return {"objects": w.space["objects"], "max_queue": w.space["max_queue"], **w.config}


def moves(name: str) -> list[Any]:
    """The agreement runs' moves (typed actions; a wall-clock insert one tick or none after the
    evictor's clock, :class:`~kvmodel.components.lru.actions.InsertAfter`)."""
    from kvmodel.components.lru.actions import Evict, Insert, InsertAfter, Len, PushFront, Remove

    out: list[Any] = [Evict(), Len()]
    for o in range(3):
        out += [Remove(o)]
        if name == WALLCLOCK:
            out += [InsertAfter(o, 0), InsertAfter(o, 1)]
        else:
            out += [Insert(o), PushFront(o)]
    return out


def _agreement(name: str) -> Any:
    cfg = {"objects": 3, "cleanup_threshold": 2, "max_queue": 8} if name == WALLCLOCK else {"objects": 3}
    return lambda: (cfg, moves(name))


def _vectors(name: str) -> Any:
    def load() -> tuple[type, ...]:
        from kvmodel.components.lru.vectors import CounterLruHarness, LruHarness

        return (LruHarness,) if name == WALLCLOCK else (CounterLruHarness,)

    return load


def _mutants(name: str) -> Any:
    def load() -> tuple[Any, ...]:
        from kvmodel.components.lru.mutants import MUTANTS

        return tuple(m for m in MUTANTS if m.component == name)

    return load


def _manifest(name: str) -> Any:
    def worlds() -> list[tuple[str, World, list[str]]]:
        if name == COUNTER:
            return [("lru-counter-3", World({}, {"objects": 3, "max_queue": 6}), [])]
        q = ["equal_timestamp_stale_entry"]
        return [
            ("lru-wallclock-ideal-3", World({"cleanup_threshold": 1}, {"objects": 3, "max_queue": 6}), []),
            (
                "quirk-equal_timestamp_stale_entry-2-t1",
                World({"cleanup_threshold": 1}, {"objects": 2, "max_queue": 4}),
                q,
            ),
            (
                "quirk-equal_timestamp_stale_entry-3-t1",
                World({"cleanup_threshold": 1}, {"objects": 3, "max_queue": 6}),
                q,
            ),
            (
                "quirk-equal_timestamp_stale_entry-2-t50",
                World({"cleanup_threshold": 50}, {"objects": 2, "max_queue": 4}),
                q,
            ),
        ]

    return worlds


def _findings() -> Any:
    from kvmodel.components.lru import findings

    return findings


def _options(name: str) -> tuple[Option, ...]:
    out = [
        Option("objects", "interchangeable objects", (EXPLORE,), lo=1, hi=8, default=3),
        Option("objects", "objects (spec default 3)", (SPEC,), lo=1, hi=8),
    ]
    if name == WALLCLOCK:
        out += [
            Option("max_queue", "lazy-queue bound", (EXPLORE,), lo=1, hi=64, default=6),
            Option("cleanup_threshold", "cleanup threshold", (EXPLORE,), lo=1, hi=1000, default=1, part="config"),
            Option("max_queue", "lazy-queue slots (spec default 6)", (SPEC,), lo=1, hi=32),
            Option("cleanup_threshold", "cleanup threshold (spec default 1)", (SPEC,), lo=1, hi=1000),
        ]
    return tuple(out)


def _invariants(name: str) -> Callable[[], tuple[tuple[Any, ...], tuple[Any, ...]]]:
    def load() -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        from kvmodel.invariants import lru

        return lru.invariants_of(name), lru.witnesses_of(name)

    return load


def _api_ops() -> tuple[Any, ...]:
    from kvmodel.workloads import const

    return (const("len"),)


def _contract(name: str) -> Callable[[], tuple[Any, ...]]:
    def load() -> tuple[Any, ...]:
        from kvmodel.components.lru import contract

        return (
            contract.OPERATIONS[name],
            contract.EVENTS[name],
            contract.MODULES[name],
            contract.RETURNS[name],
            (),
        )

    return load


def _observer(name: str) -> Any:
    def make(config: dict[str, Any]) -> Any:
        from kvmodel.components.lru.observe import LruObserver

        return LruObserver(name)

    return make


def _component(name: str, title: str, universe: dict[str, Any]) -> Component:
    return Component(
        name=name,
        title=title,
        real_code="lib/llm/src/mocker/evictor.rs",
        system=_system(name),
        space=_space(name),
        options=_options(name),
        machine=_machine,
        spec=_spec(name),
        universe=_universe,
        # threshold 2: the lazy queue keeps stale entries between cleanups (with 1 it never does,
        # and a bug in skipping stale entries would be invisible)
        profile=CheckProfile(
            explore=World({"cleanup_threshold": 2}, {"objects": 2, "max_queue": 4}), bmc_depth=6, z3_universe=universe
        ),
        api_space=lambda: _space(name)(objects=3, max_queue=8),
        api_ops=_api_ops,
        contract=_contract(name),
        agreement=_agreement(name),
        vectors=_vectors(name),
        mutants=_mutants(name),
        invariants=_invariants(name),
        manifest_worlds=_manifest(name),
        findings=_findings if name == WALLCLOCK else None,
        observer=_observer(name),
    )


COMPONENTS = (
    _component(WALLCLOCK, "LRU evictor, wall-clock lazy queue", {"objects": 2, "max_queue": 4, "cleanup_threshold": 1}),
    _component(COUNTER, "LRU evictor, counter rewrite", {}),
)
