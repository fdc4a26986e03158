"""The router indexer's findings (docs/findings.md, tools/gen_findings.py)."""

from __future__ import annotations

from typing import Any

NAME = "kv_router_radix_tree"

CONSEQUENCE: dict[str, str] = {
    "compressed_tree_1_6_1": (
        "The router's view of a worker is not what the worker announced: blocks a worker still holds "
        "vanish from the tree when another worker removes their shared ancestor, its lookup keeps "
        "entries for them (per-worker sizes count blocks the tree no longer shows), and two blocks "
        "with one tokens hash under one parent are shown under the first one's hash. A Stored that repeats "
        "a hash ([1, 1]) is accepted and shows block 1 under itself. Found by the explorer while building "
        "this component, and confirmed on the 1.6.1 wheel: four events (worker 0, rank 0 stores [1, 1] "
        "then [2, 1], Cleared, then rank 1 stores [1, 2]) panic the tree's background task in "
        "`split_node` (`radix_tree.rs:566`, `Option::unwrap()` on the lookup table of a worker the "
        'Cleared dropped but the edge still lists): that request answers "RadixTree request was '
        'cancelled" and every later call "RadixTree background task has shut down" — the router '
        "stops indexing (`stateful_tests/test_router.py`)."
    ),
    "per_block_tree_4276866": (
        "The per-block tree of 4276866 can hang a node under itself (a Stored listing its parent among "
        "its blocks), so the tree is no longer a tree; Cleared of one dp_rank clears them all; nodes "
        "whose workers left stay attached."
    ),
}


def binary(q: Any) -> str:
    return "yes, the 1.6.1 wheel's RadixTree" if q.name == "compressed_tree_1_6_1" else "not in the 1.6.1 wheel"


def section(h: Any) -> list[str]:
    """The router's part of docs/findings.md: each revision's shortest counterexample per invariant."""
    lines = ["# The router's indexer (`lib/kv-router/src/indexer/radix_tree.rs`)", ""]
    real = "- On the real binary: the real RadixTree of ai-dynamo-runtime 1.6.1 is the compressed tree."
    return lines + list(h.hypothesis_quirks(NAME, {}, lambda q: real, None))
