"""The block registry's adapter contract (docs/contracts.md)."""

from __future__ import annotations

# operation -> (arguments: name -> type, '?' marking an optional one; what `returns` holds)
OPERATIONS: dict[str, tuple[dict[str, str], str]] = {
    "new_registry": (
        {"as": "name", "tier?": "Device|HostPinned|Disk", "global_registry?": "name"},
        "`null`; a registry (pool) sharing the named global registry (default `G`)",
    ),
    "new_state": ({"as?": "name"}, "the name of a new Reset block state"),
    "state_from_reset_apply_token_block": (
        {
            "block": "{hash: u64, parent: u64|null, block_hash?: u64, external?: [u64|null, u64|null], tokens?: [u32]}",
            "as?": "name",
        },
        "the name of a new Complete block state",
    ),
    "apply_token_block": (
        {
            "state": "name",
            "block": "{hash: u64, parent: u64|null, block_hash?: u64, external?: [u64|null, u64|null], tokens?: [u32]}",
        },
        "`null`; Reset -> Complete",
    ),
    "initialize_sequence": (
        {"state": "name", "page_size": "usize", "salt?": "u64"},
        "`null`; Reset -> Partial (an empty block of `page_size as u32` tokens)",
    ),
    "add_token": ({"state": "name", "token": "u32"}, "`null`"),
    "add_tokens": ({"state": "name", "tokens": "[u32]"}, "the tokens that did not fit (list)"),
    "pop_token": ({"state": "name"}, "`null`"),
    "pop_tokens": ({"state": "name", "count": "usize"}, "`null`"),
    "commit": ({"state": "name"}, "`null`; Partial -> Complete (a root block hashed with the salt)"),
    "state_query": (
        {"state": "name", "query": "len|remaining|is_empty|tokens|is_reset|is_complete|is_registered"},
        "the accessor's value (integer, boolean, list or `null`). `len` and `tokens` of a Complete "
        "state are its block's token count and tokens (a Rust `TokenBlock` always holds them; the "
        "generated workloads always give them); of a block given without `tokens` (a hand-written "
        "trace) they are `null`, where Rust would answer `Some(..)`",
    ),
    "register_block": (
        {"registry": "name", "state": "name", "as?": "name", "event_hashes?": "[u64|null, u64|null] (e3d00b899)"},
        "the name of the new publish handle, or `null` when the registration already existed",
    ),
    "create_publish_handle": (
        {
            "block": "{hash: u64, parent: u64|null, block_hash?: u64, external?: [u64|null, u64|null], tokens?: [u32]}",
            "as?": "name",
            "tier?": "Device|HostPinned|Disk",
        },
        "the name of a new publish handle (the Rust tests' helper)",
    ),
    "remove_handle": ({"publish_handle": "name", "as?": "name"}, "the name of the registration Arc it gives up"),
    "new_publisher": ({"as?": "name"}, "the name of a new publisher"),
    "take_handle": (
        {"publisher": "name", "publish_handle": "name", "as?": "name"},
        "the name of the Arc kept, or `null`",
    ),
    "publish": ({"publisher": "name"}, "`null`; one message: a Register per taken handle, in take order"),
    "clone_publisher": ({"publisher": "name", "as?": "name"}, "the name of the clone"),
    "drop": ({"value": "name"}, "`null`; Rust's drop of the named value (a last Arc sends its Remove)"),
    "drain": ({"registry": "name"}, "the hash the unregister task received and handled, or `null`"),
    "is_registered": ({"registry": "name", "hash": "u64"}, "whether the registry holds a live handle (boolean)"),
}

EVENTS = (
    "`{kind: Register|Remove, sequence_hash: u64, tier: Device|HostPinned|Disk|null, handle: int, "
    "batch: int}` — `tier` is `null` in the untiered revisions (1.0.2, 403dd259: the wire event has "
    "none); `batch` is the 0-based index, within the step, of the event-manager message the event "
    "belongs to (one message per `publish`, one per released registration); `handle` names the "
    "registration handle and is compared up to a one-to-one renaming kept over the whole workload "
    "(number them any way you like, consistently); every other field exactly"
)

# the model modules (kvmodel.model.*) whose raises the operations reach
MODULES = ("registry",)

# operation -> the shape of what `returns` holds (kvmodel.contracts.conforms reads it)
RETURNS: dict[str, str] = {
    "new_registry": "null",
    "new_state": "name",
    "state_from_reset_apply_token_block": "name",
    "apply_token_block": "null",
    "initialize_sequence": "null",
    "add_token": "null",
    "add_tokens": "[u32]",
    "pop_token": "null",
    "pop_tokens": "null",
    "commit": "null",
    "state_query": "usize | boolean | [u32] | null",
    "register_block": "name | null",
    "create_publish_handle": "name",
    "remove_handle": "name",
    "new_publisher": "name",
    "take_handle": "name | null",
    "publish": "null",
    "clone_publisher": "name",
    "drop": "null",
    "drain": "u64 | null",
    "is_registered": "boolean",
}

CONTRACT = (OPERATIONS, EVENTS, MODULES, RETURNS, ())
