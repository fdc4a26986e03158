"""The KVBM block registry of ``dynamo-llm`` 1.0.2 (seed 004,
``lib/llm/src/block_manager/block/registry.rs`` and ``events.rs``): block states, per-pool and
global registries, registration and publish handles, publishers, the unregister task. Model:
``model/registry.py``; invariants: ``invariants/registry.py``; Z3 spec: ``specs/registry.py``."""

from __future__ import annotations

from typing import Any

from kvmodel.components.base import EXPLORE, SPEC, CheckProfile, Component, Option, World
from kvmodel.model.quirks import faithful, quirks_of, revision

NAME = "kvbm_block_registry"
_HERE = "kvmodel.components.registry"

# The world `kvmodel check` explores exhaustively (seconds on 2 cores).
CHECK_SPACE: dict[str, Any] = {
    "hashes": 1,
    "states": 2,
    "publish_handles": 1,
    "arcs": 0,
    "publishers": 2,
    "max_pending": 1,
}


def _universe(w: World) -> dict[str, Any]:
    out = {k: v for k, v in w.space.items() if k != "shared"}
    if w.space.get("shared"):
        out["registries"] = COMPONENT.explore_space(w).registries()  # type: ignore[attr-defined]
    return out


def _manifest() -> tuple[tuple[str, World, tuple[str, ...]], ...]:
    reg = World({}, CHECK_SPACE)
    out = [
        ("registry-ideal", reg, ()),
        ("registry-ideal-arcs", World({}, {**CHECK_SPACE, "arcs": 1}), ()),
        ("registry-ideal-shared-3", World({}, {**CHECK_SPACE, "states": 3, "publishers": 1, "shared": 1}), ()),
        ("registry-faithful", reg, tuple(sorted(faithful(NAME)))),
        ("registry-revision-403dd259", reg, tuple(sorted(revision(NAME, "403dd259").quirks))),
    ]
    out += [(f"quirk-{q.name}-registry", reg, (q.name,)) for q in quirks_of(NAME)]
    return tuple(out)


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


COMPONENT = Component(
    name=NAME,
    title="KVBM block registry",
    real_code="lib/llm/src/block_manager/block/registry.rs, events.rs (seed 004, dynamo-llm 1.0.2)",
    aliases=("registry",),
    system=f"{_HERE}.system:RegistrySystem",
    space=f"{_HERE}.space:RegSpace",
    options=OPTIONS,
    machine=f"{_HERE}.machine:RegistryMachine",
    spec="kvmodel.specs.registry:make_spec",
    universe=_universe,
    # the registry's quirks need more steps (its deepest BFS minimum is 8: a third registration)
    profile=CheckProfile(explore=World({}, CHECK_SPACE), bmc_depth=8),
    api_world={
        "hashes": 2,
        "states": 3,
        "publish_handles": 2,
        "arcs": 1,
        "publishers": 2,
        "max_pending": 3,
        "shared": True,
    },
    api_ops=f"{_HERE}.workload:api_ops",
    # publication and the unregister task need several handles and drops first: drawn more
    # a re-registration seen by the unregister task, a publish of several taken handles, a
    # salted commit announced: 8-12 steps of set-up each, reached in 80-step workloads
    api_steps=80,
    api_weights={"register": 4, "take": 3, "publish": 3, "drain": 3, "drop": 3},
    contract=f"{_HERE}.contract:CONTRACT",
    renamed_fields=("handle",),
    vectors=f"{_HERE}.vectors:HARNESSES",
    mutants=f"{_HERE}.mutants:MUTANTS",
    observer=f"{_HERE}.observe:RegistryObserver",
    manifest_worlds=_manifest(),
    findings=f"{_HERE}.findings",
)
COMPONENTS = (COMPONENT,)
