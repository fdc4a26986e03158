"""The mocker's KV manager of the single-file era (seed 000, ``lib/llm/src/mocker/kv_manager.rs``,
commit f0652d89f): active blocks with refcounts, an LRU of inactive blocks, Use / Destroy / Deref /
Promote, Store and Remove events. Model: ``model/kv_manager.py``; invariants:
``invariants/kv_manager.py``; Z3 spec: ``specs/kv_manager.py``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kvmodel.components.base import EXPLORE, SPEC, CheckProfile, Component, Option, World

NAME = "kv_manager"


def _system(config: dict[str, Any] | None, quirks: Iterable[str] | None) -> Any:
    from kvmodel.components.kv_manager.system import KvManagerSystem

    return KvManagerSystem(config, quirks)


def _space(**kw: Any) -> Any:
    from kvmodel.components.kv_manager.space import KvSpace

    return KvSpace(**kw)


def _machine() -> type:
    from kvmodel.components.kv_manager.machine import KvManagerMachine

    return KvManagerMachine


def _spec(config: dict[str, Any], quirks: Iterable[str]) -> Any:
    from kvmodel.specs.kv_manager import make_spec

    return make_spec(config, quirks)


def _universe(w: World) -> dict[str, Any]:
    return {"max_capacity": w.config["max_capacity"], **{k: w.space[k] for k in ("n_full", "partials", "max_batch")}}


def _agreement() -> tuple[dict[str, Any], list[Any]]:
    from kvmodel.components.kv_manager.actions import Process
    from kvmodel.components.kv_manager.space import KvSpace

    moves = [Process(a) for a in KvSpace(3, 1, 2, 2).actions()]
    return {"max_capacity": 2, "n_full": 3, "partials": 1, "max_batch": 2}, moves


def _vectors() -> tuple[type, ...]:
    from kvmodel.components.kv_manager.vectors import (
        OldActiveSequenceHarness,
        OldKvManagerHarness,
        TokenBlockSequenceHarness,
    )

    return (OldKvManagerHarness, OldActiveSequenceHarness, TokenBlockSequenceHarness)


def _mutants() -> tuple[Any, ...]:
    from kvmodel.components.kv_manager.mutants import MUTANTS

    return MUTANTS


def _observer(config: dict[str, Any]) -> Any:
    from kvmodel.components.kv_manager.observe import KvObserver

    return KvObserver(config)


def _spec_quirks() -> frozenset[str]:
    """The Z3 spec models the MoveBlock signals, not the queries: every quirk but the prefill
    cost's (``prefill_cost_counts_any_resident``, checked by Hypothesis and the explorer)."""
    from kvmodel.model.quirks import quirks_of

    return frozenset(q.name for q in quirks_of(NAME)) - {"prefill_cost_counts_any_resident"}


SMALL = {"n_full": 3, "partials": 1, "max_batch": 2, "max_refcount": 2}


def _manifest() -> list[tuple[str, World, list[str]]]:
    from kvmodel.model.quirks import faithful, quirks_of

    c2 = World({"max_capacity": 2}, SMALL)
    out = [
        ("ideal-c2", c2, []),
        ("ideal-c2-counter-nochannel", World({"max_capacity": 2, "evictor": "counter", "channel": False}, SMALL), []),
        ("ideal-c3-b4-cli-defaults", World({"max_capacity": 3}, {**SMALL, "n_full": 4}), []),
        ("ideal-c3", World({"max_capacity": 3}, {**SMALL, "n_full": 4, "partials": 2}), []),
        ("ideal-c4-b6", World({"max_capacity": 4}, {**SMALL, "n_full": 6}), []),
        ("ideal-c4-b6-batch3", World({"max_capacity": 4}, {**SMALL, "n_full": 6, "max_batch": 3}), []),
        ("faithful-c2", c2, sorted(faithful(NAME))),
    ]
    out += [(f"quirk-{q.name}-c2", c2, sorted({q.name, *q.requires})) for q in quirks_of(NAME)]
    return out


def _findings() -> Any:
    from kvmodel.components.kv_manager import findings

    return findings


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


def _invariants() -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    from kvmodel.invariants import kv_manager as inv

    return inv.INVARIANTS, inv.WITNESSES


def _api_ops() -> tuple[Any, ...]:
    from kvmodel.components.kv_manager import workload

    return workload.api_ops()


def _contract() -> tuple[Any, ...]:
    from kvmodel.components.kv_manager import contract

    return contract.OPERATIONS, contract.EVENTS, contract.MODULES, contract.RETURNS, ()


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
    system=_system,
    space=_space,
    options=OPTIONS,
    machine=_machine,
    spec=_spec,
    universe=_universe,
    profile=CheckProfile(explore=World({"max_capacity": 2}, SMALL), bmc_depth=6),
    api_space=lambda: _space(n_full=4, partials=1, max_batch=3, max_refcount=3),
    api_ops=_api_ops,
    contract=_contract,
    # a pool fills and evicts only through Use and Deref: they get most picks
    api_weights={"Use": 6, "Deref": 4, "GetPrefillCost": 0},  # the api draws its own prefill queries
    agreement=_agreement,
    vectors=_vectors,
    mutants=_mutants,
    invariants=_invariants,
    manifest_worlds=_manifest,
    findings=_findings,
    router_stream=True,
    observer=_observer,
    spec_quirks=_spec_quirks,
    merge_steps=_merge_steps,
)
COMPONENTS = (COMPONENT,)
