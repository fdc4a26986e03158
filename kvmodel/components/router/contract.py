"""The router indexer's adapter contract (docs/contracts.md)."""

from __future__ import annotations

# operation -> (arguments: name -> type, '?' marking an optional one; what `returns` holds)
OPERATIONS: dict[str, tuple[dict[str, str], str]] = {
    "apply_event": (
        {"worker_id": "u64", "event": "KvCacheEvent JSON ({event_id, data: stored|removed|cleared, dp_rank})"},
        "`null`; a rejected event is the error `ParentBlockNotFound`, `BlockNotFound` or `InvalidBlockSequence`",
    ),
    "remove_worker": ({"worker_id": "u64"}, "`null`; every dp_rank of the worker leaves the tree"),
    "clear_all_blocks": ({"worker_id": "u64"}, "`null`; every dp_rank of the worker loses its blocks"),
    "find_matches": (
        {"local_hashes": "[u64]", "early_exit?": "boolean"},
        "`[[worker_id, dp_rank, score], ...]`, sorted, workers with a positive score only",
    ),
    "dump_tree": (
        {},
        "`[[worker_id, dp_rank, parent_hash|null, block_hash, tokens_hash], ...]` sorted (a null parent "
        "first): one row per block a worker holds, as `dump_tree_as_events` lists them",
    ),
}

EVENTS = "none (`events` is `[]`): the indexer consumes events; its answers are `returns` and `error`"

# the model modules (kvmodel.model.*) whose raises the operations reach
MODULES = ("router", "events")

RETURNS: dict[str, str] = {
    "apply_event": "null",
    "remove_worker": "null",
    "clear_all_blocks": "null",
    "find_matches": "[[u64]]",
    "dump_tree": "[[u64 | null]]",
}

NOTES = (
    "Invariant mode reads the indexer from its answers: the error of each event and the scores of "
    "`find_matches` are checked against the stream's ghost at every step; the content (no block its "
    "own ancestor, the Stored minus Removed per worker) at every `dump_tree`. An observation may also "
    "carry `state`: `{content: <dump_tree rows>, lookup?: [[worker_id, dp_rank, block_hash], ...], "
    "dead_nodes?: usize}`, the rows of every worker's lookup table and the number of nodes that hold "
    "no worker and have no descendant that does; with `lookup` and `dead_nodes` in every state, the "
    "two invariants of the tree's own structure are checked too.",
    "The faithful model is the compressed tree of ai-dynamo-runtime 1.6.1 (`compressed_tree_1_6_1`); "
    "revision `4276866` is the per-block tree; the ideal model holds every invariant "
    "(`invariants/router.py`).",
)

CONTRACT = (OPERATIONS, EVENTS, MODULES, RETURNS, NOTES)
