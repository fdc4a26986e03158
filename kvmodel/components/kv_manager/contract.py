"""The KV manager's adapter contract (docs/contracts.md): operations, events, where errors come from."""

from __future__ import annotations

EVENTS = (
    "`{Store: {blocks: [u64], parent_hash: u64|null}}` and `{Remove: {blocks: [u64]}}` in emission "
    "order; compared exactly"
)

# the model modules (kvmodel.model.*) whose raises the operations reach
MODULES = ("kv_manager", "blocks", "lru")


CONTRACT = (EVENTS, MODULES, ())
