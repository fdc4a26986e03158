"""Named quirks: each a known defect or oddity of the real code, switchable in the model.

A component built with all its quirks on is the *faithful* model (the same machine as
the Rust code); with none, the *ideal* specification. ``ref`` points into
``dynamo-semantics.md`` §6 (the numbered subtle behaviours); ``breaks`` names the
invariants a quirk is expected to violate, which the test-suite checks both ways.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs


@attrs.frozen
class Quirk:
    name: str
    component: str
    ref: str
    summary: str
    breaks: tuple[str, ...]
    requires: tuple[str, ...] = ()


_ALL: list[Quirk] = [
    # --- LRU evictor (lib/llm/src/mocker/evictor.rs, wall-clock version) -------------
    Quirk(
        "equal_timestamp_stale_entry",
        "lru_evictor_wallclock",
        "§6 #12, §1.4",
        "Re-inserting an object at the same clock reading as its stale queue entry makes "
        "the stale entry look live: the object is evicted at its old position. Cleanup keeps every such "
        "duplicate, so inserts within one tick also grow the queue without bound.",
        (
            "lru.evicts_least_recent",
            "lru.len_matches",
            "lru.queue_stamps_increase",
            "lru.table_matches_live",
            "lru.table_order_matches_recency",
        ),
    ),
    # --- old mocker KV manager (lib/llm/src/mocker/kv_manager.rs) --------------------
    Quirk(
        "use_non_atomic",
        "kv_manager",
        "§6 #1",
        "A Use that runs out of space returns false with the earlier blocks of the batch "
        "applied (refcounts bumped, new blocks inserted), their Store never sent, and the "
        "Removes of evictions done in the same call already sent.",
        (
            "kv.failed_op_no_trace",
            "kv.refcount_conservation",
            "kv.router_view_matches_resident",
            "kv.remove_only_stored",
            "kv.store_parent_stored",
        ),
    ),
    Quirk(
        "store_parent_last_hit",
        "kv_manager",
        "§6 #2",
        "The parent of a Use's Store is the last hit block of the batch, not the "
        "predecessor of the first new block; non-contiguous new blocks share one Store.",
        ("kv.store_lineage", "kv.store_parent_stored"),
    ),
    Quirk(
        "partial_parent_panic_after_mutation",
        "kv_manager",
        "§6 #3",
        "A Use whose last hit is a PartialBlock panics 'parent block cannot be partial' "
        "after every state change of the batch was made (and its Store is lost).",
        (
            "kv.failed_op_no_trace",
            "kv.refcount_conservation",
            "kv.router_view_matches_resident",
            "kv.remove_only_stored",
        ),
        ("store_parent_last_hit",),
    ),
    Quirk(
        "promote_overwrites_refcount",
        "kv_manager",
        "§6 #4",
        "Promote onto an already-active hash overwrites that hash's refcount with the "
        "partial's, losing the other holders' references.",
        ("kv.refcount_conservation",),
    ),
    Quirk(
        "promote_leaves_inactive_copy",
        "kv_manager",
        "§6 #4",
        "Promote onto a hash that sits in the inactive pool leaves it there too: the "
        "block is both active and inactive.",
        ("kv.active_inactive_disjoint", "kv.all_blocks_union", "kv.store_parent_stored", "kv.remove_only_stored"),
    ),
    Quirk(
        "promote_always_stores",
        "kv_manager",
        "§6 #4",
        "Promote always sends Store([hash]), even when the hash was already resident (and already Stored).",
        ("kv.store_only_new",),
    ),
    Quirk(
        "promote_parent_unchecked",
        "kv_manager",
        "§1.3 Promote",
        "Promote's Store carries the signal's parent hash verbatim, whether or not that "
        "parent is resident (or was ever Stored).",
        ("kv.store_parent_stored",),
    ),
    Quirk(
        "destroy_ignores_refcount",
        "kv_manager",
        "§6 #5",
        "Destroy removes a block whatever its refcount: other holders' references are silently dropped.",
        ("kv.refcount_conservation",),
    ),
    Quirk(
        "destroy_mutates_before_panic",
        "kv_manager",
        "§6 #5",
        "Destroy walks its list in reverse and panics on the first non-active block, "
        "after removing the ones before it; their Remove is never sent.",
        ("kv.failed_op_no_trace", "kv.refcount_conservation", "kv.router_view_matches_resident", "kv.store_only_new"),
    ),
    Quirk(
        "deref_ignores_unknown",
        "kv_manager",
        "§6 #6",
        "Deref of a block that is not active (unknown or inactive) is silently ignored, "
        "so a double Deref goes unnoticed.",
        ("kv.deref_never_below_zero",),
    ),
    Quirk(
        "deref_caches_partial",
        "kv_manager",
        "§6 #6",
        "Deref of a PartialBlock down to zero puts the partial into the inactive pool, "
        "where it occupies a slot until evicted.",
        ("kv.inactive_full_only",),
    ),
]

QUIRKS: dict[str, Quirk] = {q.name: q for q in _ALL}


def quirks_of(component: str) -> tuple[Quirk, ...]:
    return tuple(q for q in _ALL if q.component == component)


def faithful(component: str) -> frozenset[str]:
    """All quirks of ``component`` on: the same machine as the real code."""
    return frozenset(q.name for q in quirks_of(component))


def validate(component: str, names: Iterable[str]) -> frozenset[str]:
    """Check quirk names against the catalogue; ``ValueError`` names the unknown one."""
    known = {q.name for q in quirks_of(component)}
    out = frozenset(names)
    for n in sorted(out):
        if n not in known:
            raise ValueError(f"unknown quirk {n!r} for component {component!r} (known: {sorted(known)})")
    return out
