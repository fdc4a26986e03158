"""The mocker's KV manager of the single-file era (seed 000, ``lib/llm/src/mocker/kv_manager.rs``,
commit f0652d89f): active blocks with refcounts, an LRU of inactive blocks, Use / Destroy / Deref /
Promote, Store and Remove events. Model: ``model/kv_manager.py``; invariants:
``invariants/kv_manager.py``; Z3 spec: ``specs/kv_manager.py``."""

from __future__ import annotations

from typing import Any

from kvmodel.components.base import EXPLORE, SPEC, CheckProfile, Component, Option, World
from kvmodel.model.quirks import faithful, quirks_of

NAME = "kv_manager"
_HERE = "kvmodel.components.kv_manager"
SMALL = {"n_full": 3, "partials": 1, "max_batch": 2, "max_refcount": 2}


def _universe(w: World) -> dict[str, Any]:
    return {"max_capacity": w.config["max_capacity"], **{k: w.space[k] for k in ("n_full", "partials", "max_batch")}}


def _manifest() -> tuple[tuple[str, World, tuple[str, ...]], ...]:
    c2 = World({"max_capacity": 2}, SMALL)
    out = [
        ("ideal-c2", c2, ()),
        ("ideal-c2-counter-nochannel", World({"max_capacity": 2, "evictor": "counter", "channel": False}, SMALL), ()),
        ("ideal-c3-b4-cli-defaults", World({"max_capacity": 3}, {**SMALL, "n_full": 4}), ()),
        ("ideal-c3", World({"max_capacity": 3}, {**SMALL, "n_full": 4, "partials": 2}), ()),
        ("ideal-c4-b6", World({"max_capacity": 4}, {**SMALL, "n_full": 6}), ()),
        ("ideal-c4-b6-batch3", World({"max_capacity": 4}, {**SMALL, "n_full": 6, "max_batch": 3}), ()),
        ("faithful-c2", c2, tuple(sorted(faithful(NAME)))),
    ]
    out += [(f"quirk-{q.name}-c2", c2, tuple(sorted({q.name, *q.requires}))) for q in quirks_of(NAME)]
    return tuple(out)


OPTIONS = (
    Option("capacity", "max_capacity", (EXPLORE,), lo=1, hi=64, default=2, key="max_capacity", part="config"),
    Option("blocks", "full-block ids", (EXPLORE,), lo=1, hi=12, default=3, key="n_full"),
    Option("partials", "partial-block names", (EXPLORE,), lo=0, hi=6, default=1),
    Option("max_batch", "longest Use/Deref/Destroy list", (EXPLORE,), lo=1, hi=6, default=2),
    Option("max_refcount", "refcount bound", (EXPLORE,), lo=1, hi=8, default=2),
    Option(
        "evictor",
        "the LRU evictor",
        (EXPLORE,),
        kind="choice",
        choices=("wallclock", "counter"),
        default="wallclock",
        part="config",
    ),
    Option("no_channel", "no Store/Remove response channel", kind="flag", key="channel", part="config", invert=True),
    Option("capacity", "max_capacity (spec default 4)", (SPEC,), lo=1, hi=16, key="max_capacity"),
    Option("blocks", "full-block ids (spec default 6)", (SPEC,), lo=1, hi=16, key="n_full"),
    Option("partials", "partial blocks (spec default 1)", (SPEC,), lo=0, hi=8),
    Option("max_batch", "longest Use/Deref/Destroy list (spec default 2)", (SPEC,), lo=1, hi=8),
)


def _merge_steps(a: tuple[str, Any], b: tuple[str, Any]) -> tuple[str, Any] | None:
    """Two Uses (two Derefs, two Destroys) in a row as one signal of both block lists, for the
    trace minimizer: one Use of five new blocks where deletion leaves a Use of two and one of
    three."""
    (op_a, args_a), (op_b, args_b) = a, b
    if op_a != "process" or op_b != "process" or not isinstance(args_a, dict) or not isinstance(args_b, dict):
        return None
    if len(args_a) != 1 or len(args_b) != 1:
        return None
    for kind in ("Use", "Deref", "Destroy"):
        la, lb = args_a.get(kind), args_b.get(kind)
        if isinstance(la, list) and isinstance(lb, list):
            return ("process", {kind: [*la, *lb]})
    return None


COMPONENT = Component(
    name=NAME,
    title="mocker KV manager, single-file era",
    real_code="lib/llm/src/mocker/kv_manager.rs (seed 000)",
    aliases=("kv",),
    system=f"{_HERE}.system:KvManagerSystem",
    space=f"{_HERE}.space:KvSpace",
    options=OPTIONS,
    machine=f"{_HERE}.machine:KvManagerMachine",
    spec="kvmodel.specs.kv_manager:make_spec",
    universe=_universe,
    # the Z3 spec models the MoveBlock signals, not the queries: the prefill cost's quirk is
    # checked by Hypothesis and the explorer
    spec_skips=frozenset({"prefill_cost_counts_any_resident"}),
    profile=CheckProfile(explore=World({"max_capacity": 2}, SMALL), bmc_depth=6),
    api_world={"n_full": 4, "partials": 1, "max_batch": 3, "max_refcount": 3},
    api_ops=f"{_HERE}.workload:api_ops",
    contract=f"{_HERE}.contract:CONTRACT",
    # a pool fills and evicts only through Use and Deref: they get most picks
    api_weights={"Use": 6, "Deref": 4, "GetPrefillCost": 0},  # the api draws its own prefill queries
    agreement=f"{_HERE}.space:agreement",
    vectors=f"{_HERE}.vectors:HARNESSES",
    mutants=f"{_HERE}.mutants:MUTANTS",
    manifest_worlds=_manifest(),
    findings=f"{_HERE}.findings",
    router_stream=True,
    observer=f"{_HERE}.observe:KvObserver",
    merge_steps=_merge_steps,
)
COMPONENTS = (COMPONENT,)
