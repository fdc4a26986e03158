"""The KV manager's findings (docs/findings.md, tools/gen_findings.py)."""

from __future__ import annotations

from typing import Any

NAME = "kv_manager"

CONSEQUENCE: dict[str, str] = {
    "use_non_atomic": (
        "The scheduler preempts on `false`, believing nothing was allocated, but the earlier blocks of "
        "the batch stay resident and referenced with no owner, and the router never hears of them: its "
        "view and the manager's cache differ, prefix-aware routing under-counts this worker, and a later "
        "eviction sends a Remove for a hash the router never saw Stored."
    ),
    "store_parent_last_hit": (
        "The router attaches the new blocks under the wrong parent (or under themselves, as in the trace:"
        " `Use([0, 1, 0])` announces 0 and 1 with parent 0). The radix tree then describes a prefix that "
        "no request has, so matches are scored on a wrong lineage."
    ),
    "partial_parent_panic_after_mutation": (
        "The panic unwinds after the batch was applied: refcounts bumped and new blocks inserted, with no"
        " Store. Anything that catches the panic (a supervisor restarting the task, a test harness) "
        "continues with leaked references."
    ),
    "promote_overwrites_refcount": (
        "Two requests that complete the same block (same prompt, same next token) share one hash; the "
        "second Promote sets the count to 1. When the first request frees, the block goes inactive and "
        "can be evicted while the second request still uses it (see "
        "`test_same_prompt_same_token_trips_promote_overwrite`)."
    ),
    "promote_leaves_inactive_copy": (
        "The block is both active and cached: current_capacity double counts it, and evicting the "
        "inactive copy removes it from all_blocks while it is active, after which Destroy of it panics on"
        " the all_blocks assert and a Remove is sent for a block in use."
    ),
    "promote_always_stores": (
        "The router receives a second Stored for a hash it already holds; harmless to a set, but any "
        "consumer that counts Stored/Removed pairs (or a KV-event replay) drifts."
    ),
    "promote_parent_unchecked": (
        "A Stored whose parent the router has not seen is rejected whole by the real RadixTree "
        "(ParentBlockNotFound), so the block is missing from the router's view."
    ),
    "destroy_ignores_refcount": (
        "Destroying a shared block drops every holder's reference; the other holders' later Derefs are "
        "silently ignored (see deref_ignores_unknown) and the block is gone while in use."
    ),
    "destroy_mutates_before_panic": (
        "Blocks walked before the offending one are removed with no Remove event: the router keeps hashes"
        " the manager no longer has."
    ),
    "deref_ignores_unknown": (
        "A double free is invisible: no error, no counter. Combined with promote or destroy defects it "
        "hides refcount corruption instead of surfacing it."
    ),
    "deref_caches_partial": (
        "A partial block (fresh UUID, never shareable) occupies a cache slot until it is evicted, "
        "reducing the effective cache size."
    ),
    "prefill_cost_counts_any_resident": (
        "The scheduler's cost of a prompt credits blocks it cannot reuse: KV states are computed in "
        "order, so a resident block after the first miss saves nothing, yet it lowers `new_blocks` and "
        "`new_tokens`; admission and watermark decisions then under-estimate the prefill. A prompt whose "
        "resident blocks hold more tokens than it has (a partial last block) panics on the usize "
        "subtraction. Fixed upstream in d22ca5231 (#5808): the longest resident prefix, clamped."
    ),
}

# The KV manager's events fed to the real RadixTree of ai-dynamo-runtime 1.6.1, 6 seeds x 500 random
# steps per quirk (kvmodel.conformance.radix.kv_manager_to_router; docs/router.md has the table; pinned
# by stateful_tests/test_router.py::test_kv_manager_streams_in_the_real_router).
ROUTER: dict[str, str] = {
    "store_parent_last_hit": (
        "yes — its self-parented Stored (`Store([h], parent=h)`) is rejected by the real RadixTree as "
        "`InvalidBlockSequence` (18 times in 6 × 500 steps; never in ideal runs)."
    ),
    "partial_parent_panic_after_mutation": (
        "yes — as with `store_parent_last_hit`, which it requires: `InvalidBlockSequence` from the real "
        "RadixTree (17 times in 6 × 500 steps)."
    ),
    "promote_parent_unchecked": (
        "yes — the real RadixTree rejects Stored events whose parent it never saw (`ParentBlockNotFound` "
        "26 times against 17 in ideal runs, and 3 `InvalidBlockSequence`)."
    ),
    "promote_always_stores": (
        "yes — the second Stored of a held hash makes a second node in the real tree, which outlives the "
        "hash's Removed: the router keeps a block the manager no longer has (95 hash-steps)."
    ),
    "destroy_mutates_before_panic": (
        "yes — blocks destroyed before the panic are later Stored again while the router still holds "
        "them; the real tree keeps the duplicate after the Removed (779 hash-steps)."
    ),
}

# Found by stateful_tests/test_sequence.py: request-driven runs (ActiveSequence signals on the manager).
REACHABLE = ["promote_always_stores", "promote_leaves_inactive_copy", "promote_overwrites_refcount", "use_non_atomic"]


def binary(q: Any) -> str:
    return "real RadixTree: " + ("yes" if q.name in ROUTER else "no visible effect") + " (docs/router.md)"


def real(q: Any) -> str:
    """The finding's line about the real binary."""
    return "- On the real router: " + ROUTER.get(
        q.name, "no effect beyond what ideal runs show (below) in the random end-to-end runs."
    )


def section(h: Any) -> list[str]:
    """The KV manager's part of docs/findings.md: Hypothesis counterexamples, reduced to 1-minimal."""
    lines = [
        "# The mocker's KV manager (`lib/llm/src/mocker/kv_manager.rs`, seed 000)",
        "",
        "**Reachable from ordinary requests** means the defect also appears when the manager is driven only by",
        "`ActiveSequence` signals the way the scheduler sends them (shared prompts, eviction pressure,",
        "preemption): `stateful_tests/test_sequence.py` finds those four. The other defects need a caller that",
        "breaks the signal contract (double Deref, Destroy of a block it does not hold, a Promote naming an",
        "unknown parent) — still real code paths, and the reason an ideal manager should reject them.",
        "",
        "Confirmation on the real binary: this single-file-era manager (commit f0652d89f) has no runnable",
        "Rust counterpart in `ai-dynamo-runtime==1.6.1` (whose mocker is the newer G1 manager), but its event",
        "stream does: random runs with each quirk are converted to KV events and fed to the real `RadixTree`",
        "(`kvmodel.conformance.radix.kv_manager_to_router`, `docs/router.md`). Each finding says what the real",
        "router does with that quirk's events. The ideal variant of every invariant is proved by k-induction",
        "(`kvmodel prove --component kv_manager`, `docs/z3.md`), and BMC finds each violation at the depth",
        "the explorer gives (`kvmodel bmc --faithful`).",
        "",
    ]
    lines += h.hypothesis_quirks(NAME, {"max_capacity": 4}, real, lambda q: q.name in REACHABLE)
    lines += [
        "## Beyond the quirks: the ideal manager orphans children in the real router",
        "",
        "Found by feeding the manager's events to the real `RadixTree` (`docs/router.md`). The ideal manager may",
        "Remove a block while a block Stored under it stays resident (a Destroy of the parent, or an eviction",
        "that takes the parent first). The router then drops the child with its parent, although every event",
        "is individually valid and the invariant `kv.router_view_matches_resident` (about the abstract view)",
        "holds. Later Stored events under the orphan are rejected (`ParentBlockNotFound`) or accepted",
        "invisibly, and its Removed is `BlockNotFound`. Confirmed on the binary by",
        "`stateful_tests/test_router.py::test_ideal_kv_manager_orphans_children_in_the_real_router`:",
        "",
        "1. `Use([F0, F1])` → returns true; events: Store([0, 1], parent=None) — router: 0 → 1",
        "2. `Destroy([F0])` → returns true; events: Remove([0]) — router: empty; manager's view: {1}",
        "",
        'An invariant "Remove only leaves" (no Remove of a hash while a Stored descendant is resident) would',
        "catch it; neither the real manager nor this ideal model satisfies it, so it is not in the catalogue yet.",
        "",
    ]
    return lines
