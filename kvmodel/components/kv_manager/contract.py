"""The KV manager's adapter contract (docs/contracts.md): operations, events, where errors come from."""

from __future__ import annotations

# operation -> (arguments: name -> type, '?' marking an optional one; what `returns` holds)
OPERATIONS: dict[str, tuple[dict[str, str], str]] = {
    "process": (
        {
            "Use | Deref | Destroy": "list of {F: u64} | {P: name}",
            "Promote": "{uuid: name, hash: u64, parent_hash?: u64|null}",
        },
        "`true`; `false` when a Use runs out of space (the pool is left as it was)",
    ),
    "probe_new_blocks": (
        {"blocks": "list of {F: u64} | {P: name}"},
        "how many of the listed blocks are not resident (integer)",
    ),
    "get_prefill_cost": (
        {"unique_blocks": "list of {F: u64} | {P: name}", "num_input_tokens": "usize"},
        "`{new_blocks, new_tokens}`: blocks not resident, tokens less `block_size` per resident block",
    ),
    "current_capacity": ({}, "resident blocks, active and inactive (integer)"),
    "num_active_blocks": ({}, "blocks with a reference (integer)"),
    "num_inactive_blocks": ({}, "cached blocks without a reference (integer)"),
}

EVENTS = (
    "`{Store: {blocks: [u64], parent_hash: u64|null}}` and `{Remove: {blocks: [u64]}}` in emission "
    "order; compared exactly"
)

# the model modules (kvmodel.model.*) whose raises the operations reach
MODULES = ("kv_manager", "blocks", "lru")

# operation -> the shape of what `returns` holds (kvmodel.contracts.conforms reads it)
RETURNS: dict[str, str] = {
    "process": "boolean",
    "probe_new_blocks": "usize",
    "get_prefill_cost": "{new_blocks: usize, new_tokens: usize}",
    "current_capacity": "usize",
    "num_active_blocks": "usize",
    "num_inactive_blocks": "usize",
}

CONTRACT = (OPERATIONS, EVENTS, MODULES, RETURNS, ())
