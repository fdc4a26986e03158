"""The G1 native backend's adapter contract (docs/contracts.md)."""

from __future__ import annotations

# operation -> (arguments: name -> type, '?' marking an optional one; what `returns` holds)
OPERATIONS: dict[str, tuple[dict[str, str], str]] = {
    "new_request": (
        {"owner": "u63", "tokens": "[u32] (at most 4096)"},
        "`null`; the request's sequence (no signal yet)",
    ),
    "push": ({"owner": "u63", "token": "u32"}, "the signals' results, one per signal the token caused (list)"),
    "free": ({"owner": "u63"}, "the terminal Deref's result (`Ready(n)`)"),
    "reserve_decode": ({"count": "usize"}, "`Ready`, or `CapacityExhausted`"),
    "release_decode": ({}, "`null`; the oldest outstanding decode reservation goes back"),
    "reserve_destination": (
        {"owner": "u63", "tokens": "[u32]"},
        "`{transferable_prompt_tokens, uncached_prompt_tokens}`, or `CapacityExhausted`",
    ),
    "activate_destination": ({"owner": "u63"}, "`null`; the transfer landed: the request runs"),
    "cancel_destination": ({"owner": "u63"}, "`null`; the reservation goes back"),
    "counts": ({}, "`{num_active_blocks, num_inactive_blocks, num_active_block_refs}`"),
    "allocate": (
        {"owner": "u63", "reuse?": "boolean"},
        "`Ready(n)` (n blocks newly allocated) or `CapacityExhausted`; `reuse` authorises the cached "
        "prefix, at most `(len-1)//block_size` blocks",
    ),
    "finalize": ({"owner": "u63"}, "`null`; everything pushed is computed (Stored per newly visible run)"),
    "deref_in_order": ({"owner": "u63"}, "the Deref's result, blocks named in table order"),
}

EVENTS = (
    "Dynamo's `KvCacheEvent`s (`{event_id, data: {stored: {...}} | {removed: {block_hashes}} | "
    '"cleared", dp_rank}`) as the publisher sends them; none when `publishers` is false; '
    "compared exactly"
)

# the model modules (kvmodel.model.*) whose raises the operations reach
MODULES = ("g1.g1_manager", "g1.vllm_backend", "g1.vllm_block_pool", "g1.sequence", "blocks")
