"""KV events and the router's radix tree (``lib/kv-router/src/indexer/radix_tree.rs`` and
``compressed_radix.rs``): the compressed tree of 1.6.1 and the per-block tree of 4276866. Model:
``model/events.py``, ``model/router.py``. Checked by differential conformance with the real
``RadixTree`` of ``ai-dynamo-runtime==1.6.1`` (``docs/router.md``), not by the model checkers."""

from __future__ import annotations

from typing import Any

from kvmodel.components.base import Component, ConformTarget
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

COMPONENT = Component(
    name=NAME,
    title="KV events and the router's radix tree",
    real_code="lib/kv-router/src/indexer/radix_tree.rs, compressed_radix.rs",
    aliases=("router",),
    conform=(RADIX_TREE,),
    vectors=_vectors,
    mutants=_mutants,
)
COMPONENTS = (COMPONENT,)
