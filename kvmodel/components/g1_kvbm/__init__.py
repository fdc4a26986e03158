"""The G1 manager with its KVBM backend, the facade's default (``lib/mocker/src/kv_manager/kvbm_backend.rs``
fa6894c9a on ``lib/kvbm-logical/src/``): reset list, Reject registration by PLH, Lineage / Lru / MultiLru
inactive indexes, atomic Use, reservations. Model: ``model/g1/kvbm_backend.py``; invariants:
``invariants/kvbm.py``; Z3 spec: ``specs/kvbm.py``."""

from __future__ import annotations

from typing import Any

from kvmodel.components.base import EXPLORE, SPEC, CheckProfile, Component, Option, World
from kvmodel.model.quirks import quirks_of

NAME = "g1_kvbm"
_HERE = "kvmodel.components.g1_kvbm"
# The world `kvmodel check` explores (capacity 2, PLH fragments modulo 2: 648 states ideal).
CHECK_SPACE: dict[str, Any] = {"owners": 1, "prompts": 5, "pushes": 0, "decode": 0}
CHECK_CONFIG: dict[str, Any] = {"max_capacity": 2}


def _universe(w: World) -> dict[str, Any]:
    return {"owners": w.space.get("owners", 2), "capacity": w.config.get("max_capacity", 2)}


def _manifest() -> tuple[tuple[str, World, tuple[str, ...]], ...]:
    w = World(CHECK_CONFIG, CHECK_SPACE)
    out: list[tuple[str, World, tuple[str, ...]]] = [
        ("kvbm-ideal", w, ()),
        ("kvbm-ideal-2-owners", World(CHECK_CONFIG, {**CHECK_SPACE, "owners": 2}), ()),
    ]
    out += [(f"quirk-{q.name}-kvbm", w, (q.name,)) for q in quirks_of(NAME)]
    return tuple(out)


OPTIONS = (
    Option("capacity", "max_capacity", (EXPLORE,), lo=1, hi=64, default=3, key="max_capacity", part="config"),
    Option("owners", "requests", (EXPLORE,), lo=1, hi=6, default=2),
    Option("prompts", "prompts", (EXPLORE,), lo=1, hi=5, default=2),
    Option("pushes", "decode tokens per request", (EXPLORE,), lo=0, hi=8, default=1),
    Option("decode", "decode-reservation slots", (EXPLORE,), lo=0, hi=8, default=1),
    Option("owners", "requests (spec default 2)", (SPEC,), lo=1, hi=4),
    Option("prompts", "prompts (spec default 4)", (SPEC,), lo=1, hi=4),
    Option("capacity", "pool capacity (spec default 3)", (SPEC,), lo=1, hi=16),
)


COMPONENT = Component(
    name=NAME,
    title="G1 manager, KVBM backend",
    real_code="lib/mocker/src/kv_manager/kvbm_backend.rs (fa6894c9a), lib/kvbm-logical/src/",
    aliases=("kvbm",),
    system=f"{_HERE}.system:G1KvbmSystem",
    space=f"{_HERE}.space:KvbmSpace",
    options=OPTIONS,
    machine=f"{_HERE}.space:KvbmMachine",
    spec="kvmodel.specs.kvbm:make_spec",
    universe=_universe,
    # the spec's world reaches every quirk but §6 #24
    spec_skips=frozenset({"commit_asserts_after_partial_commit"}),
    # a chain, a partial and an eviction (§6 #7 in 6 steps)
    profile=CheckProfile(
        explore=World(CHECK_CONFIG, CHECK_SPACE), bmc_depth=6, z3_universe={"owners": 1, "capacity": 3}
    ),
    api_world={"owners": 3, "prompts": 6, "pushes": 2, "decode": 2, "drivers": True},
    queries=("counts",),
    contract=f"{_HERE}.contract:CONTRACT",
    # freeing often and few decode reservations keep cached blocks inactive, so that a failed
    # admission's reordering meets a later eviction (benchmarks/planted_bugs.py --component g1_kvbm)
    api_weights={"decode_push": 8, "allocate": 4, "push": 4, "free": 6, "reserve_decode": 1, "release_decode": 1},
    # a Use that both evicts and stores needs the pool full of released, registered blocks first
    # (benchmarks/planted_bugs.py --component g1_kvbm: stored_before_removed is reached with 60)
    api_steps=60,
    vectors=f"{_HERE}.vectors:HARNESSES",
    observer="kvmodel.components.g1_observe:kvbm",
    manifest_worlds=_manifest(),
    findings=f"{_HERE}.findings",
)
COMPONENTS = (COMPONENT,)
