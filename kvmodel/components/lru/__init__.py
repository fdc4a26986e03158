"""The mocker's LRU evictors (``lib/llm/src/mocker/evictor.rs``): the wall-clock evictor with a
lazy queue (revision 0c89c866, the one seed 000 uses) and its counter-based rewrite (f0652d89f).
Model: ``model/lru.py``; invariants: ``invariants/lru.py``; Z3 spec: ``specs/lru.py``."""

from __future__ import annotations

from typing import Any

from kvmodel.components.base import EXPLORE, SPEC, CheckProfile, Component, Option, Ref, World

WALLCLOCK, COUNTER = "lru_evictor_wallclock", "lru_evictor_counter"
_HERE = "kvmodel.components.lru"


def _universe(w: World) -> dict[str, Any]:
    return {"objects": w.space["objects"], "max_queue": w.space["max_queue"], **w.config}


def _manifest(name: str) -> tuple[tuple[str, World, tuple[str, ...]], ...]:
    if name == COUNTER:
        return (("lru-counter-3", World({}, {"objects": 3, "max_queue": 6}), ()),)
    q = ("equal_timestamp_stale_entry",)
    return (
        ("lru-wallclock-ideal-3", World({"cleanup_threshold": 1}, {"objects": 3, "max_queue": 6}), ()),
        ("quirk-equal_timestamp_stale_entry-2-t1", World({"cleanup_threshold": 1}, {"objects": 2, "max_queue": 4}), q),
        ("quirk-equal_timestamp_stale_entry-3-t1", World({"cleanup_threshold": 1}, {"objects": 3, "max_queue": 6}), q),
        (
            "quirk-equal_timestamp_stale_entry-2-t50",
            World({"cleanup_threshold": 50}, {"objects": 2, "max_queue": 4}),
            q,
        ),
    )


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


def _component(name: str, title: str, universe: dict[str, Any]) -> Component:
    kind = "WALLCLOCK" if name == WALLCLOCK else "COUNTER"
    return Component(
        name=name,
        title=title,
        real_code="lib/llm/src/mocker/evictor.rs",
        system=Ref(f"{_HERE}.system:LruSystem", (name,)),
        space=Ref(f"{_HERE}.space:LruSpace", (name,)),
        options=_options(name),
        machine=f"{_HERE}.machine:LruMachine",
        spec=Ref("kvmodel.specs.lru:make_spec", (name,)),
        universe=_universe,
        # threshold 2: the lazy queue keeps stale entries between cleanups (with 1 it never does,
        # and a bug in skipping stale entries would be invisible)
        profile=CheckProfile(
            explore=World({"cleanup_threshold": 2}, {"objects": 2, "max_queue": 4}), bmc_depth=6, z3_universe=universe
        ),
        api_world={"objects": 3, "max_queue": 8},
        queries=("len",),
        contract=f"{_HERE}.contract:{kind}_CONTRACT",
        agreement=Ref(f"{_HERE}.actions:agreement", (name,)),
        vectors=f"{_HERE}.vectors:{kind}_HARNESSES",
        mutants=f"{_HERE}.mutants:{kind}_MUTANTS",
        manifest_worlds=_manifest(name),
        findings=f"{_HERE}.findings" if name == WALLCLOCK else None,
        observer=Ref(f"{_HERE}.observe:LruObserver", (name,)),
    )


COMPONENTS = (
    _component(WALLCLOCK, "LRU evictor, wall-clock lazy queue", {"objects": 2, "max_queue": 4, "cleanup_threshold": 1}),
    _component(COUNTER, "LRU evictor, counter rewrite", {}),
)
