"""The router indexer's adapter contract (docs/contracts.md)."""

from __future__ import annotations

EVENTS = "none (`events` is `[]`): the indexer consumes events; its answers are `returns` and `error`"

# the model modules (kvmodel.model.*) whose raises the operations reach
MODULES = ("router", "events")


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

CONTRACT = (EVENTS, MODULES, NOTES)
