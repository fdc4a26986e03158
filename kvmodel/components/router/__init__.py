"""KV events and the router's indexer (``lib/kv-router/src/indexer/radix_tree.rs`` and
``compressed_radix.rs``): the ideal index, and the compressed tree of 1.6.1 and the per-block tree
of 4276866 as its two revisions (one quirk each). Model: ``model/events.py``, ``model/router.py``;
invariants of the tree's own structure: ``invariants/router.py``. Checked by Hypothesis and the
explorer, and by differential conformance with the real ``RadixTree`` of
``ai-dynamo-runtime==1.6.1`` (``docs/router.md``), whose dump is also checked against the
invariants after every step. No Z3 spec: the tree's content is a map of unbounded chains."""

from __future__ import annotations

from kvmodel.components.base import EXPLORE, CheckProfile, Component, ConformTarget, Option, World

NAME = "kv_router_radix_tree"
_HERE = "kvmodel.components.router"

RADIX_TREE = ConformTarget(
    name="dynamo-radix-tree",
    title="vs real RadixTree (ai-dynamo-runtime)",
    available="kvmodel.conformance.radix:real_available",
    run=f"{_HERE}.conform:run",
    describe=f"{_HERE}.conform:describe",
    revisions=("1.6.1", "4276866"),
    diverges=f"{_HERE}.conform:diverges",
)

# The ideal index with three worker keys; each tree revision in the smallest world where it
# breaks every invariant (their states grow fast with the nodes they may allocate: the per-block
# tree has 1,556 states at 2 nodes and 35,720 at 3).
_SMALL = World({}, {"workers": 2, "hashes": 2, "max_nodes": 2})
_MANIFEST = (
    ("router-ideal-3w", World({}, {"workers": 3, "hashes": 2, "conflict": True, "max_nodes": 5}), ()),
    ("quirk-compressed_tree_1_6_1-n2", _SMALL, ("compressed_tree_1_6_1",)),
    ("quirk-per_block_tree_4276866-n2", _SMALL, ("per_block_tree_4276866",)),
)

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
    system=f"{_HERE}.system:RouterSystem",
    space=f"{_HERE}.space:RouterSpace",
    options=OPTIONS,
    machine=f"{_HERE}.space:RouterMachine",
    profile=CheckProfile(explore=World({}, {"workers": 2, "hashes": 3, "conflict": True, "max_nodes": 5})),
    api_world={"workers": 3, "hashes": 3, "conflict": True, "max_blocks": 3, "max_nodes": 1_000},
    queries=("dump_tree",),
    api_steps=40,
    contract=f"{_HERE}.contract:CONTRACT",
    conform=(RADIX_TREE,),
    vectors=f"{_HERE}.vectors:HARNESSES",
    mutants=f"{_HERE}.mutants:MUTANTS",
    manifest_worlds=_MANIFEST,
    findings=f"{_HERE}.findings",
    observer=f"{_HERE}.observe:RouterObserver",
)
COMPONENTS = (COMPONENT,)
