"""The G1 KVBM backend's adapter contract (docs/contracts.md)."""

from __future__ import annotations

from kvmodel.components.g1_native.contract import OPERATIONS as NATIVE

# the facade's operations both backends share (as the native backend's contract has them), then
# the KVBM system's own and those whose arguments differ
_SHARED = ("push", "free", "reserve_decode", "release_decode", "activate_destination", "cancel_destination", "counts")

# operation -> (arguments: name -> type, '?' marking an optional one; what `returns` holds)
OPERATIONS: dict[str, tuple[dict[str, str], str]] = {
    **{op: NATIVE[op] for op in _SHARED},
    "new_request": (
        {"owner": "u63", "tokens": "[u32] (at most 4096)", "caching?": "boolean"},
        "`null`; `caching` false gives random hashes (compared up to a consistent renaming: a port draws its own)",
    ),
    "reserve_destination": (
        {"owner": "u63", "tokens": "[u32]", "caching?": "boolean"},
        "`{transferable_prompt_tokens, uncached_prompt_tokens}`, or `CapacityExhausted`",
    ),
    "allocate": ({"owner": "u63"}, "`Ready(n)` or `CapacityExhausted`"),
    "decode_push": ({"owner": "u63", "token": "u32"}, "as `push`, through the outstanding decode reservation"),
    "resend": ({"owner": "u63"}, "the Use's result: the request's held blocks named again"),
    "bad_use": ({"kind": "dup_partial|hash_two_plhs"}, "a malformed Use's result (a panic)"),
    "bad_deref": ({"owner": "u63"}, "the request's Deref with an unknown block at the end (a panic)"),
}

EVENTS = "as g1_native; compared exactly"

# the model modules (kvmodel.model.*) whose raises the operations reach
MODULES = ("g1.g1_manager", "g1.kvbm_backend", "g1.kvbm_logical", "g1.sequence", "blocks")
