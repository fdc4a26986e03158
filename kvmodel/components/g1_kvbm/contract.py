"""The G1 KVBM backend's adapter contract (docs/contracts.md)."""

from __future__ import annotations

# operation -> (arguments: name -> type, '?' marking an optional one; what `returns` holds)
OPERATIONS: dict[str, tuple[dict[str, str], str]] = {
    "new_request": (
        {"owner": "u63", "tokens": "[u32] (at most 4096)", "caching?": "boolean"},
        "`null`; `caching` false gives random hashes",
    ),
    "push": ({"owner": "u63", "token": "u32"}, "the signals' results, one per signal the token caused (list)"),
    "free": ({"owner": "u63"}, "the terminal Deref's result (`Ready(n)`)"),
    "reserve_decode": ({"count": "usize"}, "`Ready`, or `CapacityExhausted`"),
    "release_decode": ({}, "`null`; the oldest outstanding decode reservation goes back"),
    "reserve_destination": (
        {"owner": "u63", "tokens": "[u32]", "caching?": "boolean"},
        "`{transferable_prompt_tokens, uncached_prompt_tokens}`, or `CapacityExhausted`",
    ),
    "activate_destination": ({"owner": "u63"}, "`null`; the transfer landed: the request runs"),
    "cancel_destination": ({"owner": "u63"}, "`null`; the reservation goes back"),
    "counts": ({}, "`{num_active_blocks, num_inactive_blocks, num_active_block_refs}`"),
    "allocate": ({"owner": "u63"}, "`Ready(n)` or `CapacityExhausted`"),
    "decode_push": ({"owner": "u63", "token": "u32"}, "as `push`, through the outstanding decode reservation"),
    "resend": ({"owner": "u63"}, "the Use's result: the request's held blocks named again"),
    "bad_use": ({"kind": "dup_partial|hash_two_plhs"}, "a malformed Use's result (a panic)"),
    "bad_deref": ({"owner": "u63"}, "the request's Deref with an unknown block at the end (a panic)"),
}

EVENTS = "as g1_native; compared exactly"

# the model modules (kvmodel.model.*) whose raises the operations reach
MODULES = ("g1.facade", "g1.kvbm", "g1.sequence", "blocks")
