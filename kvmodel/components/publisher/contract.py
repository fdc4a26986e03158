"""The KV event publisher's adapter contract (docs/contracts.md)."""

from __future__ import annotations

EVENTS = (
    "what the publisher sends to the router, in order: KvCacheEvent JSON (`{event_id, data: "
    "stored|removed|cleared, dp_rank}`) with the publisher's own ids (1, 2, …); compared exactly"
)

MODULES = ("publisher", "events")


NOTES = (
    "An adapter wraps a publisher: each operation is one engine event handed to it; the step's "
    "`events` are the router events it sent in response (none when a Removed is swallowed). "
    "Invariant mode judges them against the engine's copies and the router's view "
    "(`invariants/publisher.py`); the filter's own counts are not read.",
    "The faithful model is revision 6f64a59b6 (the 1.6.1 wheel's rules); `9b3e9249f` clears every "
    "rank's counts on a Cleared and `9b3e9249f^` has no filter.",
)

CONTRACT = (EVENTS, MODULES, NOTES)
