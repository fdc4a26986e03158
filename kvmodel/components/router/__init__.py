"""KV events and the router's indexer (``lib/kv-router/src/indexer/radix_tree.rs`` and
``compressed_radix.rs``): the ideal index, and the compressed tree of 1.6.1 and the per-block tree
of 4276866 as its two revisions (one quirk each). Model: ``model/events.py``, ``model/router.py``;
invariants of the tree's own structure: ``invariants/router.py``. Checked by Hypothesis and the
explorer, and by differential conformance with the real ``RadixTree`` of
``ai-dynamo-runtime==1.6.1`` (``docs/router.md``), whose dump is also checked against the
invariants after every step. No Z3 spec: the tree's content is a map of unbounded chains."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kvmodel.components.base import EXPLORE, CheckProfile, Component, ConformTarget, Option, World
from kvmodel.components.router import conform

NAME = "kv_router_radix_tree"


def _vectors() -> tuple[type, ...]:
    from kvmodel.components.router.vectors import RadixTreeHarness

    return (RadixTreeHarness,)


def _mutants() -> tuple[Any, ...]:
    from kvmodel.components.router.mutants import MUTANTS

    return MUTANTS


RADIX_TREE = ConformTarget(
    name="dynamo-radix-tree",
    title="vs real RadixTree (ai-dynamo-runtime)",
    available=conform.available,
    run=conform.run,
    describe=conform.describe,
    revisions=("1.6.1", "4276866"),
    diverges=conform.diverges,
)


def _system(config: dict[str, Any] | None, quirks: Iterable[str] | None) -> Any:
    from kvmodel.components.router.system import RouterSystem

    return RouterSystem(config, quirks)


def _space(**kw: Any) -> Any:
    from kvmodel.components.router.space import RouterSpace

    return RouterSpace(**kw)


def _machine() -> type:
    from kvmodel.components.router.actions import ACTIONS, world

    return ACTIONS.machine("RouterMachine", world(workers=3, hashes=3, conflict=True, max_blocks=3, probe_length=3))


def _invariants() -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    from kvmodel.invariants import router

    return router.INVARIANTS, router.WITNESSES


def _observer(config: dict[str, Any]) -> Any:
    from kvmodel.components.router.observe import RouterObserver

    return RouterObserver(config)


def _contract() -> tuple[Any, ...]:
    from kvmodel.components.router import contract

    return (contract.OPERATIONS, contract.EVENTS, contract.MODULES, contract.RETURNS, contract.NOTES)


def _findings() -> Any:
    from kvmodel.components.router import findings

    return findings


def _manifest() -> list[tuple[str, World, list[str]]]:
    """The ideal index with three worker keys; each tree revision in the smallest world where it
    breaks every invariant (their states grow fast with the nodes they may allocate: the per-block
    tree has 1,556 states at 2 nodes and 35,720 at 3)."""
    small = {"workers": 2, "hashes": 2, "max_nodes": 2}
    return [
        ("router-ideal-3w", World({}, {"workers": 3, "hashes": 2, "conflict": True, "max_nodes": 5}), []),
        ("quirk-compressed_tree_1_6_1-n2", World({}, small), ["compressed_tree_1_6_1"]),
        ("quirk-per_block_tree_4276866-n2", World({}, small), ["per_block_tree_4276866"]),
    ]


def _api_ops() -> tuple[Any, ...]:
    from kvmodel.workloads import const

    return (const("dump_tree"),)


OPTIONS = (
    Option(
        "router_workers", "worker keys (two dp ranks per worker id)", (EXPLORE,), lo=1, hi=6, default=2, key="workers"
    ),
    Option("hashes", "block hashes", (EXPLORE,), lo=1, hi=5, default=2),
    Option("max_blocks", "blocks in one Stored", (EXPLORE,), lo=1, hi=4, default=2),
    Option("max_nodes", "nodes a tree may allocate", (EXPLORE,), lo=1, hi=32, default=6),
    Option("conflict", "the last hash shares the first's tokens hash", (EXPLORE,), kind="flag"),
)

COMPONENT = Component(
    name=NAME,
    title="KV events and the router's radix tree",
    real_code="lib/kv-router/src/indexer/radix_tree.rs, compressed_radix.rs",
    aliases=("router",),
    system=_system,
    space=_space,
    options=OPTIONS,
    machine=_machine,
    profile=CheckProfile(explore=World({}, {"workers": 2, "hashes": 3, "conflict": True, "max_nodes": 5})),
    api_space=lambda: _space(workers=3, hashes=3, conflict=True, max_blocks=3, max_nodes=1_000),
    api_ops=_api_ops,
    api_steps=40,
    contract=_contract,
    conform=(RADIX_TREE,),
    vectors=_vectors,
    mutants=_mutants,
    manifest_worlds=_manifest,
    findings=_findings,
    invariants=_invariants,
    observer=_observer,
)
COMPONENTS = (COMPONENT,)
