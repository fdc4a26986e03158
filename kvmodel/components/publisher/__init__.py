"""Dynamo's worker-side KV event publisher (``lib/llm/src/kv_router/publisher/``): the per-copy
dedup filter and the event ids between an engine and the router (revision 6f64a59b6, as the
ai-dynamo-runtime 1.6.1 wheel runs it; 9b3e9249f and the code before it are named revisions).
Model: ``model/publisher.py``; invariants: ``invariants/publisher.py``; Z3 spec:
``specs/publisher.py``. The real publisher is checked on the deployed paths of the real-engine
targets (``kvmodel conform --path publisher``)."""

from __future__ import annotations

from typing import Any

from kvmodel.components.base import EXPLORE, SPEC, CheckProfile, Component, Option, World
from kvmodel.invariants.publisher import NAME

_HERE = "kvmodel.components.publisher"


def _universe(w: World) -> dict[str, Any]:
    return {k: w.space[k] for k in ("ranks", "hashes", "copies") if k in w.space}


_MANIFEST = (
    ("publisher-ideal-2x2x2", World({}, {"ranks": 2, "hashes": 2, "copies": 2}), ()),
    (
        "quirk-removed_passes_every_copy-1x1x2",
        World({}, {"ranks": 1, "hashes": 1, "copies": 2}),
        ("removed_passes_every_copy",),
    ),
    (
        "quirk-cleared_resets_every_rank-2x1x2",
        World({}, {"ranks": 2, "hashes": 1, "copies": 2}),
        ("cleared_resets_every_rank",),
    ),
)


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
    system=f"{_HERE}.system:PublisherSystem",
    space=f"{_HERE}.space:PublisherSpace",
    options=_OPTIONS,
    machine=f"{_HERE}.machine:PublisherMachine",
    spec="kvmodel.specs.publisher:make_spec",
    universe=_universe,
    profile=CheckProfile(explore=World({}, {"ranks": 2, "hashes": 2, "copies": 2}), bmc_depth=6),
    api_world={"ranks": 2, "hashes": 2, "copies": 2},
    contract=f"{_HERE}.contract:CONTRACT",
    manifest_worlds=_MANIFEST,
    findings=f"{_HERE}.findings",
    router_stream=True,
    observer=f"{_HERE}.observe:PublisherObserver",
)
COMPONENTS = (COMPONENT,)
