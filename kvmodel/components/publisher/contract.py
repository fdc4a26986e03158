"""The KV event publisher's adapter contract (docs/contracts.md)."""

from __future__ import annotations

_BLOCKS = "[{block_hash: u64, tokens_hash: u64}]"
# operation -> (arguments: name -> type, '?' marking an optional one; what `returns` holds)
OPERATIONS: dict[str, tuple[dict[str, str], str]] = {
    "stored": (
        {"dp_rank": "u32", "parent_hash?": "u64 | null", "blocks": _BLOCKS},
        "`null`; the engine's BlockStored, passed to the router whole",
    ),
    "removed": (
        {"dp_rank": "u32", "block_hashes": "[u64]"},
        "`null`; the engine's BlockRemoved, passed with the hashes whose last copy went (or not at all)",
    ),
    "cleared": ({"dp_rank": "u32"}, "`null`; the engine's AllBlocksCleared, passed"),
}

EVENTS = (
    "what the publisher sends to the router, in order: KvCacheEvent JSON (`{event_id, data: "
    "stored|removed|cleared, dp_rank}`) with the publisher's own ids (1, 2, …); compared exactly"
)

MODULES = ("publisher", "events")

RETURNS: dict[str, str] = {"stored": "null", "removed": "null", "cleared": "null"}

NOTES = (
    "An adapter wraps a publisher: each operation is one engine event handed to it; the step's "
    "`events` are the router events it sent in response (none when a Removed is swallowed). "
    "Invariant mode judges them against the engine's copies and the router's view "
    "(`invariants/publisher.py`); the filter's own counts are not read.",
    "The faithful model is revision 6f64a59b6 (the 1.6.1 wheel's rules); `9b3e9249f` clears every "
    "rank's counts on a Cleared and `9b3e9249f^` has no filter.",
)

CONTRACT = (OPERATIONS, EVENTS, MODULES, RETURNS, NOTES)
