"""Dynamo's worker-side KV event publisher (``lib/llm/src/kv_router/publisher/``): the per-copy
dedup filter and the event ids between an engine and the router (revision 6f64a59b6, as the
ai-dynamo-runtime 1.6.1 wheel runs it; 9b3e9249f and the code before it are named revisions).
Model: ``model/publisher.py``; invariants: ``invariants/publisher.py``; Z3 spec:
``specs/publisher.py``. The real publisher is checked on the deployed paths of the real-engine
targets (``kvmodel conform --path publisher``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kvmodel.components.base import EXPLORE, SPEC, CheckProfile, Component, Option, World
from kvmodel.invariants.publisher import NAME


def _system(config: dict[str, Any] | None, quirks: Iterable[str] | None) -> Any:
    from kvmodel.components.publisher.system import PublisherSystem

    return PublisherSystem(config, quirks)


def _space(**kw: Any) -> Any:
    from kvmodel.components.publisher.space import PublisherSpace

    return PublisherSpace(**kw)


def _machine() -> type:
    from kvmodel.components.publisher.machine import PublisherMachine

    return PublisherMachine


def _spec(config: dict[str, Any], quirks: Iterable[str]) -> Any:
    from kvmodel.specs.publisher import make_spec

    return make_spec(config, quirks)


def _universe(w: World) -> dict[str, Any]:
    return {k: w.space[k] for k in ("ranks", "hashes", "copies") if k in w.space}


def _invariants() -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    from kvmodel.invariants import publisher

    return publisher.INVARIANTS, publisher.WITNESSES


def _observer(config: dict[str, Any]) -> Any:
    from kvmodel.components.publisher.observe import PublisherObserver

    return PublisherObserver(config)


def _contract() -> tuple[Any, ...]:
    from kvmodel.components.publisher import contract as c

    return (c.OPERATIONS, c.EVENTS, c.MODULES, c.RETURNS, c.NOTES)


def _findings() -> Any:
    from kvmodel.components.publisher import findings

    return findings


def _manifest() -> list[tuple[str, World, list[str]]]:
    return [
        ("publisher-ideal-2x2x2", World({}, {"ranks": 2, "hashes": 2, "copies": 2}), []),
        (
            "quirk-removed_passes_every_copy-1x1x2",
            World({}, {"ranks": 1, "hashes": 1, "copies": 2}),
            ["removed_passes_every_copy"],
        ),
        (
            "quirk-cleared_resets_every_rank-2x1x2",
            World({}, {"ranks": 2, "hashes": 1, "copies": 2}),
            ["cleared_resets_every_rank"],
        ),
    ]


_OPTIONS = (
    Option("ranks", "dp ranks", (EXPLORE,), lo=1, hi=8, default=2),
    Option("hashes", "block hashes", (EXPLORE,), lo=1, hi=8, default=2),
    Option("copies", "copies of a hash a rank may hold", (EXPLORE,), lo=1, hi=8, default=2),
    Option("ranks", "dp ranks (spec default 2)", (SPEC,), lo=1, hi=8),
    Option("hashes", "block hashes (spec default 2)", (SPEC,), lo=1, hi=8),
    Option("copies", "copies of a hash a rank may hold (spec default 2)", (SPEC,), lo=1, hi=8),
)

COMPONENT = Component(
    name=NAME,
    title="KV event publisher: per-copy dedup and event ids (engine → router)",
    real_code="lib/llm/src/kv_router/publisher/dedup.rs, event_processor.rs",
    system=_system,
    space=_space,
    options=_OPTIONS,
    machine=_machine,
    spec=_spec,
    universe=_universe,
    profile=CheckProfile(explore=World({}, {"ranks": 2, "hashes": 2, "copies": 2}), bmc_depth=6),
    api_space=lambda: _space(ranks=2, hashes=2, copies=2),
    invariants=_invariants,
    contract=_contract,
    manifest_worlds=_manifest,
    findings=_findings,
    router_stream=True,
    observer=_observer,
)
COMPONENTS = (COMPONENT,)
