"""Seeded bugs of this component's ideal model (the mutation benchmark, :mod:`kvmodel.mutants`)."""

from __future__ import annotations

from kvmodel.mutants import Mutant

ROUTER = "kvmodel.model.router"

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "router_self_parent_accepted",
        "kv_router_radix_tree",
        ROUTER,
        "        if parent_hash is not None and any(b.block_hash == parent_hash for b in blocks):",
        "        if False:",
        "a Stored that lists its own parent among its blocks is not rejected",
    ),
    Mutant(
        "router_removed_unknown_ignored",
        "kv_router_radix_tree",
        ROUTER,
        '            raise BlockNotFound(f"some of {hashes} unknown for worker {w}")',
        "            pass",
        "a Removed naming blocks the worker does not hold is silently accepted",
    ),
    Mutant(
        "router_cleared_all_ranks",
        "kv_router_radix_tree",
        ROUTER,
        "        self._clear(w, keep_entry=False)  # the event's (worker_id, dp_rank) only",
        "        for key in [k for k in self.lookup if k[0] == w[0]]:\n            self._clear(key, keep_entry=False)",
        "Cleared wipes every dp_rank of the worker (what the semantics reference says; 1.6.1 does not)",
    ),
    Mutant(
        "router_final_score_plus_one",
        "kv_router_radix_tree",
        ROUTER,
        "        for w in active:\n            scores[w] = depth\n        return scores",
        "        for w in active:\n            scores[w] = depth + 1\n        return scores",
        "find_matches over-scores the workers still matching at the end of the walk",
    ),
)
