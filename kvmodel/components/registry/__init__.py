"""The KVBM block registry of ``dynamo-llm`` 1.0.2 (seed 004,
``lib/llm/src/block_manager/block/registry.rs`` and ``events.rs``): block states, per-pool and
global registries, registration and publish handles, publishers, the unregister task. Model:
``model/registry.py``; invariants: ``invariants/registry.py``; Z3 spec: ``specs/registry.py``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kvmodel.components.base import EXPLORE, SPEC, CheckProfile, Component, Option, World

NAME = "kvbm_block_registry"

# The world `kvmodel check` explores exhaustively (seconds on 2 cores).
CHECK_SPACE: dict[str, Any] = {
    "hashes": 1,
    "states": 2,
    "publish_handles": 1,
    "arcs": 0,
    "publishers": 2,
    "max_pending": 1,
}


def _system(config: dict[str, Any] | None, quirks: Iterable[str] | None) -> Any:
    from kvmodel.components.registry.system import RegistrySystem

    return RegistrySystem(config, quirks)


def _space(**kw: Any) -> Any:
    from kvmodel.components.registry.space import RegSpace

    return RegSpace(**kw)


def _machine() -> type:
    from kvmodel.components.registry.machine import RegistryMachine

    return RegistryMachine


def _spec(config: dict[str, Any], quirks: Iterable[str]) -> Any:
    from kvmodel.specs.registry import make_spec

    return make_spec(config, quirks)


def _universe(w: World) -> dict[str, Any]:
    out = {k: v for k, v in w.space.items() if k != "shared"}
    if w.space.get("shared"):
        out["registries"] = _space(**w.space).registries()
    return out


def _vectors() -> tuple[type, ...]:
    from kvmodel.components.registry.vectors import RegistryHarness

    return (RegistryHarness,)


def _mutants() -> tuple[Any, ...]:
    from kvmodel.components.registry.mutants import MUTANTS

    return MUTANTS


def _manifest() -> list[tuple[str, World, list[str]]]:
    from kvmodel.model.quirks import faithful, quirks_of, revision

    reg = CHECK_SPACE
    out = [
        ("registry-ideal", World({}, reg), []),
        ("registry-ideal-arcs", World({}, {**reg, "arcs": 1}), []),
        ("registry-ideal-shared-3", World({}, {**reg, "states": 3, "publishers": 1, "shared": 1}), []),
        ("registry-faithful", World({}, reg), sorted(faithful(NAME))),
        ("registry-revision-403dd259", World({}, reg), sorted(revision(NAME, "403dd259").quirks)),
    ]
    out += [(f"quirk-{q.name}-registry", World({}, reg), [q.name]) for q in quirks_of(NAME)]
    return out


def _findings() -> Any:
    from kvmodel.components.registry import findings

    return findings


_WHAT = {
    "hashes": ("sequence hashes", 1, 4, 1, 4, 1),
    "states": ("block-state slots", 1, 6, 1, 6, 2),
    "publish_handles": ("publish-handle slots", 0, 4, 0, 4, 1),
    "arcs": ("caller Arc slots", 0, 4, 0, 4, 1),
    "publishers": ("publisher slots", 0, 4, 0, 4, 2),
    "max_pending": ("undrained drops per registry", 0, 8, 0, 4, 1),
}
OPTIONS = (
    *(
        o
        for name, (what, lo, hi, slo, shi, default) in _WHAT.items()
        for o in (
            Option(name, what, (EXPLORE,), lo=lo, hi=hi, default=default),
            Option(name, what, (SPEC,), lo=slo, hi=shi),
        )
    ),
    Option("shared", "a second Device registry", (EXPLORE,), kind="flag", default=False),
)


def _invariants() -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    from kvmodel.invariants import registry as inv

    return inv.INVARIANTS, inv.WITNESSES


def _api_ops() -> tuple[Any, ...]:
    from kvmodel.components.registry import workload

    return workload.api_ops()


def _contract() -> tuple[Any, ...]:
    from kvmodel.components.registry import contract

    return contract.OPERATIONS, contract.EVENTS, contract.MODULES, contract.RETURNS, ()


def _observer(config: dict[str, Any]) -> Any:
    from kvmodel.components.registry.observe import RegistryObserver

    return RegistryObserver(config)


COMPONENT = Component(
    name=NAME,
    title="KVBM block registry",
    real_code="lib/llm/src/block_manager/block/registry.rs, events.rs (seed 004, dynamo-llm 1.0.2)",
    aliases=("registry",),
    system=_system,
    space=_space,
    options=OPTIONS,
    machine=_machine,
    spec=_spec,
    universe=_universe,
    # the registry's quirks need more steps (its deepest BFS minimum is 8: a third registration)
    profile=CheckProfile(explore=World({}, CHECK_SPACE), bmc_depth=8),
    api_space=lambda: _space(hashes=2, states=3, publish_handles=2, arcs=1, publishers=2, max_pending=3, shared=True),
    api_ops=_api_ops,
    # publication and the unregister task need several handles and drops first: drawn more
    # a re-registration seen by the unregister task, a publish of several taken handles, a
    # salted commit announced: 8-12 steps of set-up each, reached in 80-step workloads
    api_steps=80,
    api_weights={"register": 4, "take": 3, "publish": 3, "drain": 3, "drop": 3},
    contract=_contract,
    renamed_fields=("handle",),
    vectors=_vectors,
    mutants=_mutants,
    invariants=_invariants,
    observer=_observer,
    manifest_worlds=_manifest,
    findings=_findings,
)
COMPONENTS = (COMPONENT,)
