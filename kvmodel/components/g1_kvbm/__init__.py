"""The G1 manager with its KVBM backend, the facade's default (``lib/mocker/src/kv_manager/kvbm_backend.rs``
fa6894c9a on ``lib/kvbm-logical/src/``): reset list, Reject registration by PLH, Lineage / Lru / MultiLru
inactive indexes, atomic Use, reservations. Model: ``model/g1/kvbm_backend.py``; invariants:
``invariants/kvbm.py``; Z3 spec: ``specs/kvbm.py``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kvmodel.components.base import EXPLORE, SPEC, CheckProfile, Component, Option, World

NAME = "g1_kvbm"
# The world `kvmodel check` explores (capacity 2, PLH fragments modulo 2: 648 states ideal).
CHECK_SPACE: dict[str, Any] = {"owners": 1, "prompts": 5, "pushes": 0, "decode": 0}
CHECK_CONFIG: dict[str, Any] = {"max_capacity": 2}


def _system(config: dict[str, Any] | None, quirks: Iterable[str] | None) -> Any:
    from kvmodel.components.g1_kvbm.system import G1KvbmSystem

    return G1KvbmSystem(config, quirks)


def _space(**kw: Any) -> Any:
    from kvmodel.components.g1_kvbm.space import KvbmSpace

    return KvbmSpace(**kw)


def _machine() -> type:
    from kvmodel.components.g1_kvbm.machine import KvbmMachine

    return KvbmMachine


def _spec(config: dict[str, Any], quirks: Iterable[str]) -> Any:
    from kvmodel.specs.kvbm import make_spec

    return make_spec(config, quirks)


def _spec_quirks() -> frozenset[str]:
    """The spec's world reaches every quirk but §6 #24 (``commit_asserts_after_partial_commit``)."""
    from kvmodel.specs.kvbm import MODELLED

    return MODELLED


def _universe(w: World) -> dict[str, Any]:
    return {"owners": w.space.get("owners", 2), "capacity": w.config.get("max_capacity", 2)}


def _vectors() -> tuple[type, ...]:
    from kvmodel.components.g1_kvbm.vectors import KvbmBackendHarness

    return (KvbmBackendHarness,)


def _manifest() -> list[tuple[str, World, list[str]]]:
    from kvmodel.model.quirks import quirks_of

    w = World(CHECK_CONFIG, CHECK_SPACE)
    out: list[tuple[str, World, list[str]]] = [
        ("kvbm-ideal", w, []),
        ("kvbm-ideal-2-owners", World(CHECK_CONFIG, {**CHECK_SPACE, "owners": 2}), []),
    ]
    out += [(f"quirk-{q.name}-kvbm", w, [q.name]) for q in quirks_of(NAME)]
    return out


def _findings() -> Any:
    from kvmodel.components.g1_kvbm import findings

    return findings


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


def _invariants() -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    from kvmodel.invariants import kvbm as inv

    return inv.INVARIANTS, inv.WITNESSES


def _api_ops() -> tuple[Any, ...]:
    from kvmodel.workloads import const

    return (const("counts"),)


def _contract() -> tuple[Any, ...]:
    from kvmodel.components.g1_kvbm import contract

    return contract.OPERATIONS, contract.EVENTS, contract.MODULES, contract.RETURNS, contract.NOTES


def _observer(config: dict[str, Any]) -> Any:
    from kvmodel.components.g1_observe import kvbm

    return kvbm(config)


COMPONENT = Component(
    name=NAME,
    title="G1 manager, KVBM backend",
    real_code="lib/mocker/src/kv_manager/kvbm_backend.rs (fa6894c9a), lib/kvbm-logical/src/",
    aliases=("kvbm",),
    system=_system,
    space=_space,
    options=OPTIONS,
    machine=_machine,
    spec=_spec,
    universe=_universe,
    spec_quirks=_spec_quirks,
    # a chain, a partial and an eviction (§6 #7 in 6 steps)
    profile=CheckProfile(
        explore=World(CHECK_CONFIG, CHECK_SPACE), bmc_depth=6, z3_universe={"owners": 1, "capacity": 3}
    ),
    api_space=lambda: _space(owners=3, prompts=6, pushes=2, decode=2, drivers=True),
    api_ops=_api_ops,
    contract=_contract,
    # freeing often and few decode reservations keep cached blocks inactive, so that a failed
    # admission's reordering meets a later eviction (benchmarks/planted_bugs.py --component g1_kvbm)
    api_weights={"decode_push": 8, "allocate": 4, "push": 4, "free": 6, "reserve_decode": 1, "release_decode": 1},
    # a Use that both evicts and stores needs the pool full of released, registered blocks first
    # (benchmarks/planted_bugs.py --component g1_kvbm: stored_before_removed is reached with 60)
    api_steps=60,
    vectors=_vectors,
    invariants=_invariants,
    observer=_observer,
    manifest_worlds=_manifest,
    findings=_findings,
)
COMPONENTS = (COMPONENT,)
