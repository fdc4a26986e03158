"""Named quirks: each a known defect or oddity of the real code, switchable in the model.

A component built with all its quirks on is the *faithful* model (the same machine as
the Rust code); with none, the *ideal* specification. ``ref`` points into
``dynamo-semantics.md`` §6 (the numbered subtle behaviours); ``breaks`` names the
invariants a quirk is expected to violate, which the test-suite checks both ways.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from kvmodel.model.errors import InvalidInput


@attrs.frozen
class Quirk:
    name: str
    component: str
    ref: str
    summary: str
    breaks: tuple[str, ...]
    requires: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "component": self.component,
            "ref": self.ref,
            "summary": self.summary,
            "breaks": list(self.breaks),
            "requires": list(self.requires),
            "revisions": list(quirk_revisions(self.name)),
        }


# each of the router's tree revisions breaks every invariant of the router (docs/router.md)
_ROUTER_EVERY = (
    "router.rejections_as_documented",
    "router.scores_longest_chain",
    "router.content_matches_stream",
    "router.acyclic",
    "router.lookup_matches_content",
    "router.no_dead_nodes",
)

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
        ("kv.held_release_accepted", "kv.refcount_conservation"),
    ),
    Quirk(
        "promote_leaves_inactive_copy",
        "kv_manager",
        "§6 #4",
        "Promote onto a hash that sits in the inactive pool leaves it there too: the "
        "block is both active and inactive.",
        (
            "kv.active_inactive_disjoint",
            "kv.all_blocks_union",
            "kv.held_release_accepted",
            "kv.remove_only_stored",
            "kv.store_parent_stored",
        ),
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
        ("kv.held_release_accepted", "kv.refcount_conservation"),
    ),
    Quirk(
        "destroy_mutates_before_panic",
        "kv_manager",
        "§6 #5",
        "Destroy walks its list in reverse and panics on the first non-active block, "
        "after removing the ones before it; their Remove is never sent.",
        (
            "kv.failed_op_no_trace",
            "kv.held_release_accepted",
            "kv.refcount_conservation",
            "kv.router_view_matches_resident",
            "kv.store_only_new",
        ),
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
    Quirk(
        "prefill_cost_counts_any_resident",
        "kv_manager",
        "§1.7 get_prefill_cost (found here; fixed in d22ca5231, #5808)",
        "get_prefill_cost counts every listed block that is resident, wherever it sits in the "
        "sequence, as cached (probe_new_blocks), and subtracts block_size tokens per such block "
        "without a clamp: a sequence whose first block is missing reports later blocks as a prefix "
        "hit, and more hit blocks than input tokens is the usize subtraction panic. From d22ca5231 "
        "the cost is that of the longest resident prefix, its tokens clamped to the input.",
        ("kv.prefill_cost_longest_prefix",),
    ),
    # --- KVBM block registry (lib/llm/src/block_manager/block/registry.rs, events.rs) -------
    Quirk(
        "cleanup_erases_live_entry",
        "kvbm_block_registry",
        "§6 #19, §3.3",
        "The unregister task (commit 403dd259) removes the pool's entry for a dropped hash without "
        "checking that it is dead: a block re-registered before the task ran loses its entry, the "
        "pool reports it unregistered, and a third registration of the hash succeeds beside it.",
        ("reg.one_block_handle_per_pool_hash", "reg.pool_lists_iff_live"),
    ),
    Quirk(
        "global_registry_untiered",
        "kvbm_block_registry",
        "§6 #20, §3.6",
        "The global registry is keyed by sequence hash alone (403dd259): a pool of another storage "
        "tier registering a hash already announced gets Ok(None) and shares the first tier's handle, "
        "so its copy is never announced and the first tier's Remove waits for it.",
        ("reg.handle_tier_matches_pool",),
    ),
    Quirk(
        "dead_global_entry_leaks",
        "kvbm_block_registry",
        "§3.3 (found here)",
        "Only a dropped BlockHandle triggers cleanup: when a registration handle outlives every "
        "block holding it (a publish handle, publisher or caller Arc keeps it), its global entry "
        "stays dead after every channel is drained, until the hash is registered again.",
        ("reg.drained_no_dead_entries",),
    ),
    Quirk(
        "publisher_clone_shares_pending",
        "kvbm_block_registry",
        "§3.5 (found here)",
        "Publisher derives Clone: a clone carries Arc clones of the pending handles, so the "
        "original and the clone both publish them and the same handle is Registered twice.",
        ("reg.publication_pending_once", "reg.register_at_most_once"),
    ),
]

_ALL += [
    # --- G1 facade with the native ("vLLM") backend (lib/mocker/src/kv_manager/g1_manager.rs,
    # --- vllm_backend.rs, lib/mocker/src/cache/vllm_block_pool.rs) ---------------------------
    Quirk(
        "promote_tail_before_finalize",
        "g1_native",
        "§6 #18 (commit 366ff0ef)",
        "finalize_computed_prefix promotes the computed tail before caching the earlier blocks, "
        "so the tail's Stored names a parent whose own Stored comes after it (a router rejects it).",
        ("g1.stored_parent_announced",),
    ),
    Quirk(
        "prefix_hit_first_copy_only",
        "g1_native",
        "§6 #16",
        "prefix_hit(h).is_active looks at the first physical copy of h only: an active second copy "
        "is reported as inactive reuse (and the prefill cost's active_cached_tokens undercounts).",
        ("g1.prefix_hit_active_exact",),
    ),
    Quirk(
        "transferable_counts_partial_tail",
        "g1_native",
        "§6 #15",
        "transferable_prompt_tokens = fresh blocks × block size: a partial prompt tail counts as a "
        "whole block, so more tokens are announced than the prompt has.",
        ("g1.transferable_within_prompt",),
    ),
    Quirk(
        "finalize_skips_owner_check",
        "g1_native",
        "§6 #17",
        "finalize_computed_prefix returns before looking the request up when no block boundary "
        "is crossed: an unknown owner is accepted silently (it panics only if a block completes).",
        ("g1.unknown_request_rejected",),
    ),
    Quirk(
        "active_counts_reservations",
        "g1_native",
        "§6 #23",
        "num_active_blocks counts reserved-but-unused decode and destination slots as active blocks.",
        ("g1.active_count_resident",),
    ),
    Quirk(
        "deref_exact_reverse_tail",
        "g1_native",
        "§6 #26",
        "A Deref must name the request's table tail in exactly reversed table order; the same "
        "blocks in another order panic (the old manager and KVBM accept any order).",
        ("g1.deref_of_tail_accepted",),
    ),
    # --- G1 KVBM backend (lib/mocker/src/kv_manager/kvbm_backend.rs fa6894c9a on kvbm-logical) ---
    Quirk(
        "failed_use_reorders_inactive",
        "g1_kvbm",
        "§6 #7",
        "A Use (or destination reservation) that runs out of capacity after matching inactive blocks "
        "resurrects and re-releases them: they return to the inactive index as its newest entries, "
        "so a failure changes the eviction order.",
        ("kvbm.failure_keeps_eviction_order",),
    ),
    Quirk(
        "active_partial_use_noop",
        "g1_kvbm",
        "§6 #8",
        "A Use naming a partial block that is already active is a silent no-op for that entry: no "
        "reference is taken, so the first Deref frees it under its other holder.",
        ("kvbm.refs_match_holders",),
    ),
    Quirk(
        "plh_reuse_keeps_first_name",
        "g1_kvbm",
        "§6 #9",
        "Reuse is by PLH: a block registered as sequence hash 1 serves a Use of hash 2 with the same "
        "PLH without a Stored for 2, and its eviction is reported as Removed([1]) only: the router "
        "never learns the name the requester uses (and a child Stored names a parent it never saw).",
        ("kvbm.active_named", "kvbm.active_names_announced", "kvbm.stored_parent_announced"),
    ),
    Quirk(
        "events_for_uncached_sequences",
        "g1_kvbm",
        "§6 #13",
        "Blocks of a sequence with prefix caching off (random hashes) are published as Stored and "
        "Removed like any other; the native backend publishes nothing for them. Their random hashes "
        "are no chained hashes of their tokens (the Stored carries tokens hash 0), so the router is "
        "told of a lineage no sequence has.",
        ("kvbm.stored_lineage", "kvbm.uncached_silent"),
    ),
    Quirk(
        "stored_before_removed",
        "g1_kvbm",
        "§6 #14",
        "Within one Use the Stored groups are published before the Removed of the blocks the Use "
        "evicted to make room: for a moment the router sees more blocks than the worker holds.",
        ("kvbm.removed_before_stored",),
    ),
    Quirk(
        "kvbm_active_counts_reservations",
        "g1_kvbm",
        "§6 #23",
        "num_active_blocks is total − available, so reserved-but-unused decode and destination slots "
        "count as active blocks.",
        ("kvbm.active_count_held",),
    ),
    Quirk(
        "commit_asserts_after_partial_commit",
        "g1_kvbm",
        "§6 #24",
        "A Use listing one new partial UUID twice, or one sequence hash with two PLHs, panics in the "
        "commit loop with the earlier entries installed, the Stored run unpublished and the evicted "
        "blocks' Removed never sent (their shadow entries stay, so a later Removed names a hash "
        "the router never saw).",
        (
            "kvbm.active_names_announced",
            "kvbm.announced_exact",
            "kvbm.refs_match_holders",
            "kvbm.rejection_no_trace",
            "kvbm.removed_only_announced",
            "kvbm.shadow_matches_registry",
        ),
    ),
    Quirk(
        "use_ready_counts_entries",
        "g1_kvbm",
        "§6 #25",
        "A Use returns Ready(len(blocks)), the number of signal entries (hits included), not the "
        "number of blocks it newly allocated.",
        ("kvbm.use_reports_new_blocks",),
    ),
    Quirk(
        "deref_releases_before_panic",
        "g1_kvbm",
        "§2.4.3 (Deref)",
        "A Deref naming a block that is not active panics there, with the blocks listed before it already released.",
        ("kvbm.refs_match_holders", "kvbm.rejection_no_trace"),
    ),
    # --- the worker-side KV event publisher (lib/llm/src/kv_router/publisher/) -------------
    Quirk(
        "removed_passes_every_copy",
        "kv_event_publisher",
        "dynamo-history.md, worker-side publisher (9b3e9249f)",
        "No dedup filter (the publisher before #8012): every BlockRemoved reaches the router, so the "
        "router drops a hash as soon as one of the engine's copies goes while another copy still serves it.",
        (
            "publisher.removed_at_last_copy",
            "publisher.router_view_matches_engine",
            "publisher.counts_match_copies",
        ),
    ),
    Quirk(
        "cleared_resets_every_rank",
        "kv_event_publisher",
        "dynamo-history.md, worker-side publisher (9b3e9249f)",
        "A Cleared from one dp rank drops every rank's copy counts (the filter of 9b3e9249f): another rank's "
        "next Removed of a hash it holds twice passes at its first copy, and the router drops the hash early.",
        (
            "publisher.removed_at_last_copy",
            "publisher.router_view_matches_engine",
            "publisher.counts_match_copies",
        ),
    ),
    # --- the router's indexer (lib/kv-router/src/indexer/radix_tree.rs) -----------------
    Quirk(
        "compressed_tree_1_6_1",
        "kv_router_radix_tree",
        "§4 RTREE; docs/router.md",
        "The compressed radix tree of the ai-dynamo-runtime 1.6.1 binary, whole: a node whose workers all "
        "left loses its children (other workers' blocks below it vanish, their lookup entries stay); a "
        "removal inside an edge uncovers the rest of it for that worker; a block joins the node of its "
        "tokens hash whatever its block hash; a worker that removed a shared ancestor stays listed below it; "
        "a Stored repeating a hash of its batch or naming a descendant as parent is applied. Its oddities "
        "live in one edge representation, so they switch together.",
        _ROUTER_EVERY,
    ),
    Quirk(
        "per_block_tree_4276866",
        "kv_router_radix_tree",
        "§4 RTREE (4276866)",
        "The per-block radix tree of commit 4276866 (the unit-test vectors' revision), whole: a Stored "
        "listing a block under itself inserts the self edge before failing; Cleared clears every dp_rank "
        "of the worker; a node whose workers all left loses its children and stays attached; a worker's "
        "node for a hash Stored again under another parent is hung there too; a block joins the node of "
        "its tokens hash whatever its block hash. (Ignored when compressed_tree_1_6_1 is on.)",
        _ROUTER_EVERY,
    ),
]

QUIRKS: dict[str, Quirk] = {q.name: q for q in _ALL}


def quirks_of(component: str) -> tuple[Quirk, ...]:
    return tuple(q for q in _ALL if q.component == component)


# --- revisions --------------------------------------------------------------------------


@attrs.frozen
class Revision:
    """A revision of the real code: the quirks it has. One revision per component is the
    *seed's* (``default``): faithful means that revision. The others are named presets
    (selectable with ``--revision`` and recorded in traces), for the behaviour of an older or
    newer commit where it differs from the seed."""

    name: str
    component: str
    quirks: frozenset[str]
    source: str
    summary: str
    default: bool = False
    # the Rust files this revision's model follows, each pinned to a Dynamo commit or crate version
    files: tuple[Pin, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "component": self.component,
            "default": self.default,
            "source": self.source,
            "summary": self.summary,
            "quirks": sorted(self.quirks),
            "files": [f.to_json() for f in self.files],
        }


@attrs.frozen
class Pin:
    """One Rust file (or directory) a model follows, at a Dynamo commit (``commit``) or in a
    published crate (``crate``, ``name version``), with what was read there (``note``)."""

    path: str
    commit: str | None = None
    crate: str | None = None
    note: str = ""

    def where(self) -> str:
        return f"commit {self.commit}" if self.commit else f"crate {self.crate}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "commit": self.commit, "crate": self.crate, "note": self.note}


def _rev(
    name: str,
    component: str,
    quirks: Iterable[str],
    source: str,
    summary: str,
    *,
    default: bool = False,
    files: Iterable[Pin] = (),
) -> Revision:
    return Revision(name, component, frozenset(quirks), source, summary, default, tuple(files))


# Revision names a user may still find in traces written before revisions were named by commits
# (the reference material's own labels, never Dynamo's): read as the commit that replaced them.
OLD_NAMES = {"R01": "f0652d89f", "R02": "f0652d89f", "R05": "6125e8260", "R09": "6125e8260", "R13": "e3d00b899"}

_MOCKER = "lib/mocker/src"
_G1_FACADE = Pin(
    f"{_MOCKER}/kv_manager/g1_manager.rs",
    commit="6125e8260",
    note="the seed (002): finalize the computed prefix, then promote the tail (#12222); before the "
    "request leases of 7e11b32cd (#12329)",
)
_G1_SEQUENCE = Pin(
    f"{_MOCKER}/common/sequence.rs",
    commit="6125e8260",
    note="ActiveSequence in the facade's tree: caching-disabled sequences draw fresh random hashes",
)


_KV = [q.name for q in _ALL if q.component == "kv_manager"]
_G1N = [q.name for q in _ALL if q.component == "g1_native"]
_KVBM = [q.name for q in _ALL if q.component == "g1_kvbm"]
_REG_SEED = ("global_registry_untiered", "dead_global_entry_leaks", "publisher_clone_shares_pending")

_REVISIONS: list[Revision] = [
    _rev(
        "f0652d89f",
        "kv_manager",
        _KV,
        "lib/llm/src/mocker/kv_manager.rs, the MoveBlockResponse channel version (seed 000)",
        "the Store/Remove channel version the project started from",
        default=True,
        files=(
            Pin(
                "lib/llm/src/mocker/kv_manager.rs",
                commit="f0652d89f",
                note="the seed (000): the MoveBlockResponse channel manager f0652d89f (2025-07-01) "
                "introduced, as it stood until cc4c3516b (#3833, 2025-10-28)",
            ),
            Pin(
                "lib/llm/src/mocker/sequence.rs",
                commit="f0652d89f",
                note="Use(Vec<UniqueBlock>) and the three-field Promote the channel manager takes",
            ),
            Pin("lib/llm/src/mocker/protocols.rs", commit="f0652d89f", note="MoveBlock, MoveBlockResponse"),
            Pin(
                "lib/llm/src/mocker/evictor.rs",
                commit="0c89c866",
                note="the wall-clock lazy-queue LruEvictor the seed calls; mainline paired the channel "
                "manager with the counter-based evictor of f0652d89f, so this pairing is the seed's own",
            ),
        ),
    ),
    _rev(
        "0c89c866",
        "lru_evictor_wallclock",
        ["equal_timestamp_stale_entry"],
        "lib/llm/src/mocker/evictor.rs commits 0c89c866 / e9226a26",
        "the wall-clock evictor with the lazy queue (the one seed 000 uses)",
        default=True,
        files=(Pin("lib/llm/src/mocker/evictor.rs", commit="0c89c866", note="unchanged at e9226a26"),),
    ),
    _rev(
        "f0652d89f",
        "lru_evictor_counter",
        [],
        "lib/llm/src/mocker/evictor.rs commit f0652d89f",
        "the counter-based rewrite (no known defect)",
        default=True,
        files=(
            Pin(
                "lib/llm/src/mocker/evictor.rs",
                commit="f0652d89f",
                note="the counter-based LruEvictor introduced with the response channel",
            ),
        ),
    ),
    _rev(
        "1.0.2",
        "kvbm_block_registry",
        _REG_SEED,
        "lib/llm/src/block_manager/block/registry.rs, dynamo-llm 1.0.2 (seed 004)",
        "untiered global registry; the unregister task removes a pool entry only when it is dead",
        default=True,
        files=(
            Pin("lib/llm/src/block_manager/block/registry.rs", crate="dynamo-llm 1.0.2", note="the seed (004)"),
            Pin("lib/llm/src/block_manager/block/state.rs", crate="dynamo-llm 1.0.2", note="BlockState"),
            Pin("lib/llm/src/block_manager/events.rs", crate="dynamo-llm 1.0.2", note="Register/Remove events"),
            Pin("lib/llm/src/tokens.rs", crate="dynamo-llm 1.0.2", note="TokenBlock, TokenBlockSequence"),
        ),
    ),
    _rev(
        "403dd259",
        "kvbm_block_registry",
        (*_REG_SEED, "cleanup_erases_live_entry"),
        "lib/llm/src/block_manager/block/registry.rs commit 403dd25973f5 (older than the seed)",
        "as 1.0.2, but the unregister task removes the pool entry unconditionally (§6 #19)",
        files=(Pin("lib/llm/src/block_manager/block/registry.rs", commit="403dd25973f5"),),
    ),
    _rev(
        "e3d00b899",
        "kvbm_block_registry",
        ("dead_global_entry_leaks", "publisher_clone_shares_pending"),
        "lib/llm/src/block_manager/block/registry.rs commit e3d00b899 (#8380, newer than the seed)",
        "global registry keyed by (sequence hash, storage tier); events carry the tier; optional "
        "external (event) hashes given to register_block",
        files=(
            Pin(
                "lib/llm/src/block_manager/block/registry.rs",
                commit="e3d00b899",
                note="#8380 (2026-04-23): tier-tagged Register/Remove, external hashes",
            ),
        ),
    ),
    _rev(
        "6125e8260",
        "g1_native",
        [q for q in _G1N if q != "promote_tail_before_finalize"],
        "lib/mocker/src/kv_manager/g1_manager.rs commit 6125e8260 (seed 002) over the pre-lease "
        "vllm_backend.rs and cache/vllm_block_pool.rs",
        "finalize the computed prefix, then promote the tail (parent before child)",
        default=True,
        files=(
            _G1_FACADE,
            Pin(
                f"{_MOCKER}/kv_manager/vllm_backend.rs",
                commit="2ee518f3d948",
                note="the pre-lease request tables (VllmBlockLayout, Deref lists) the facade calls; read "
                "at this commit of a public mirror of ai-dynamo/dynamo",
            ),
            Pin(
                f"{_MOCKER}/cache/vllm_block_pool.rs",
                commit="2ee518f3d948",
                note="timestamp LRU; cancel unpins leaf first (its test "
                "canceled_prefix_evicts_leaf_before_parent_under_pressure); at e917a453 cancel unpins "
                "head first, with the promote-then-finalize facade",
            ),
            _G1_SEQUENCE,
        ),
    ),
    _rev(
        "366ff0ef",
        "g1_native",
        _G1N,
        "lib/mocker/src/kv_manager/g1_manager.rs commit 366ff0ef (older than the seed)",
        "as 6125e8260, but the computed tail is promoted before the prefix is finalized (§6 #18)",
        files=(Pin(f"{_MOCKER}/kv_manager/g1_manager.rs", commit="366ff0ef52831ed9"),),
    ),
    _rev(
        "6125e8260",
        "g1_kvbm",
        _KVBM,
        "lib/mocker/src/kv_manager/g1_manager.rs commit 6125e8260 (seed 002) over the KVBM backend "
        "it selects by default, kvbm_backend.rs, on lib/kvbm-logical",
        "atomic Use returning G1Acquire; Stored before Removed",
        default=True,
        files=(
            _G1_FACADE,
            Pin(
                f"{_MOCKER}/kv_manager/kvbm_backend.rs",
                commit="fa6894c9a",
                note="#11095 (2026-06-30), the last change before 6125e8260: atomic prepare/commit Use "
                "returning G1Acquire, batch registration, duplicate PLHs in one batch tolerated under "
                "Reject, Stored published before Removed (65bdf67a0, two days earlier, is the same PR)",
            ),
            Pin(
                "lib/kvbm-logical/src/",
                commit="65bdf67a0",
                note="unified BlockStore and InactiveIndex with batch register_blocks, as at 6125e8260 "
                "(55a24121c, after it, only moves a metric)",
            ),
            _G1_SEQUENCE,
        ),
    ),
    _rev(
        "1.6.1",
        "kv_router_radix_tree",
        ["compressed_tree_1_6_1"],
        "lib/kv-router/src/indexer/radix_tree.rs and compressed_radix.rs as built into ai-dynamo-runtime 1.6.1",
        "the compressed radix tree the real RadixTree of the 1.6.1 wheel runs",
        default=True,
        files=(
            Pin("lib/kv-router/src/indexer/", crate="ai-dynamo-runtime 1.6.1", note="RadixTree"),
            Pin(
                "lib/kv-router/src/protocols.rs",
                commit="038eab23a6b6",
                note="the KV event structs (RouterEvent, KvCacheEvent)",
            ),
        ),
    ),
    _rev(
        "6f64a59b6",
        "kv_event_publisher",
        [],
        "lib/llm/src/kv_router/publisher/dedup.rs commit 6f64a59b6 (dynamo-llm 1.5.0 has the same rules), as "
        "the ai-dynamo-runtime 1.6.1 wheel's relay path runs it",
        "Stored counted per (dp rank, tier, residency domain); a Removed passes at the last copy; a Cleared "
        "drops the emitting rank's counts; ids from 1, one per event sent",
        default=True,
        files=(
            Pin(
                "lib/llm/src/kv_router/publisher/dedup.rs",
                commit="6f64a59b6",
                note="EventDedupFilter: track_store_in_domain, filter_remove_in_domain, clear_rank_domain",
            ),
            Pin(
                "lib/llm/src/kv_router/publisher/dedup.rs",
                crate="dynamo-llm 1.5.0",
                note="the same rules (RefCounted policy; Clears reset the emitting rank across tiers)",
            ),
            Pin(
                "lib/llm/src/kv_router/publisher/event_processor.rs",
                commit="0d29bd4e6",
                note="BatchingState::flush: next_publish_id from 1, advanced only when an event was sent",
            ),
        ),
    ),
    _rev(
        "9b3e9249f",
        "kv_event_publisher",
        ["cleared_resets_every_rank"],
        "lib/llm/src/kv_router/publisher/event_processor.rs commit 9b3e9249f (#8012, 2026-04-08)",
        "the first dedup filter: counts per dp rank; a Cleared from any rank resets every rank's counts",
        files=(
            Pin(
                "lib/llm/src/kv_router/publisher/event_processor.rs",
                commit="9b3e9249f",
                note="EventDedupFilter with per_rank counts and clear() of all ranks (read at 0d29bd4e6)",
            ),
        ),
    ),
    _rev(
        "9b3e9249f^",
        "kv_event_publisher",
        ["removed_passes_every_copy"],
        "lib/llm/src/kv_router/publisher/event_processor.rs before 9b3e9249f (#8012)",
        "no dedup filter: every Removed an engine publishes reaches the router",
        files=(
            Pin(
                "lib/llm/src/kv_router/publisher/event_processor.rs",
                commit="9b3e9249f",
                note="the file as it was before this commit (its parent): BatchingState::flush with no "
                "filter, the filter being what 9b3e9249f added",
            ),
        ),
    ),
    _rev(
        "4276866",
        "kv_router_radix_tree",
        ["per_block_tree_4276866"],
        "lib/kv-router/src/radix_tree.rs at commit 4276866",
        "the per-block radix tree the unit-test vectors come from",
        files=(Pin("lib/kv-router/src/radix_tree.rs", commit="4276866e1", note="RadixTree, one node per block"),),
    ),
]

REVISIONS: dict[tuple[str, str], Revision] = {(r.component, r.name): r for r in _REVISIONS}


def revisions_of(component: str) -> tuple[Revision, ...]:
    """The component's revisions, the seed's first."""
    rs = [r for r in _REVISIONS if r.component == component]
    return tuple(sorted(rs, key=lambda r: not r.default))


def default_revision(component: str) -> Revision | None:
    for r in _REVISIONS:
        if r.component == component and r.default:
            return r
    return None


def revision(component: str, name: str) -> Revision:
    """The named revision (an old label of :data:`OLD_NAMES` reads as the commit that replaced
    it); ``ValueError`` names the known ones."""
    r = REVISIONS.get((component, name)) or REVISIONS.get((component, OLD_NAMES.get(name, "")))
    if r is None:
        known = [x.name for x in revisions_of(component)]
        raise ValueError(f"unknown revision {name!r} for component {component!r} (known: {known})")
    return r


def revision_of(component: str, quirks: Iterable[str]) -> str | None:
    """The name of the revision whose quirk set is exactly ``quirks`` (the seed's first)."""
    qs = frozenset(quirks)
    for r in revisions_of(component):
        if r.quirks == qs:
            return r.name
    return None


def quirk_revisions(name: str) -> tuple[str, ...]:
    """The revisions that have quirk ``name``."""
    q = QUIRKS[name]
    return tuple(r.name for r in revisions_of(q.component) if name in r.quirks)


def mode_label(component: str, quirks: Iterable[str]) -> str:
    """How a report names a quirk set: ``ideal`` (none), ``faithful`` (the seed's revision),
    ``revision R`` (another named revision), ``all quirks``, or ``custom``."""
    q = frozenset(quirks)
    if not q:
        return "ideal"
    if q == faithful(component):
        return "faithful"
    name = revision_of(component, q)
    if name is not None:
        return f"revision {name}"
    if q == frozenset(x.name for x in quirks_of(component)):
        return "all quirks"
    return "custom"


def faithful(component: str) -> frozenset[str]:
    """The seed's revision of ``component``: the same machine as the real code the project
    models (a component with no recorded revision: all of its quirks)."""
    r = default_revision(component)
    if r is not None:
        return r.quirks
    return frozenset(q.name for q in quirks_of(component))


class UnknownQuirk(InvalidInput, ValueError):
    """A quirk name that is not one of the component's."""


def validate(component: str, names: Iterable[str]) -> frozenset[str]:
    """Check quirk names against the catalogue; :class:`UnknownQuirk` names the unknown one."""
    known = {q.name for q in quirks_of(component)}
    if isinstance(names, str):
        raise UnknownQuirk(f"quirks of {component!r} must be a list of names, not the string {names!r}")
    out = frozenset(names)
    for n in sorted(out, key=str):
        if n not in known:
            raise UnknownQuirk(f"unknown quirk {n!r} for component {component!r} (known: {sorted(known)})")
    return out


@attrs.frozen
class Interaction:
    """Quirks that together break an invariant none of them breaks alone."""

    quirks: frozenset[str]
    breaks: tuple[str, ...]
    summary: str


INTERACTIONS: tuple[Interaction, ...] = (
    Interaction(
        frozenset({"commit_asserts_after_partial_commit", "stored_before_removed"}),
        ("kvbm.announced_registered",),
        "A Use that evicts a cached block and then panics in its commit loop (§6 #24) never sends "
        "that block's Removed; with the Stored groups published before the Removed (§6 #14) the "
        "router keeps the evicted hash announced while no block is registered under it (found by "
        "the faithful exploration of the default KVBM world, depth 6).",
    ),
)


def breakable(component: str, quirks: Iterable[str]) -> frozenset[str]:
    """The invariants the quirk set ``quirks`` of ``component`` is recorded to break: each
    quirk's ``breaks`` and those of every :data:`INTERACTIONS` entry it contains — what a search
    of that model can stop for once each has its shortest counterexample. Empty for the ideal
    model."""
    qs = validate(component, quirks)
    out = {i for q in qs for i in QUIRKS[q].breaks}
    out.update(i for x in INTERACTIONS if x.quirks <= qs for i in x.breaks)
    return frozenset(out)


def resolve(component: str, quirks: Iterable[str] | None) -> frozenset[str]:
    """The quirk set a model of ``component`` runs with: ``None`` is faithful (the seed's
    revision), anything else is validated. Every model constructor and every system uses it."""
    return faithful(component) if quirks is None else validate(component, quirks)


def chosen(component: str, quirks: Iterable[str] | str) -> list[str]:
    """A quirk set as the API names it, sorted: ``"faithful"`` (the seed's revision), ``"ideal"``
    (none) or a list of quirk names (checked). Any other bare string is refused: it is not a list
    of names (``ValueError``)."""
    if isinstance(quirks, str):
        if quirks == "faithful":
            return sorted(faithful(component))
        if quirks == "ideal":
            return []
        raise ValueError(f"quirks must be 'faithful', 'ideal' or a list of quirk names, got {quirks!r:.80}")
    return sorted(validate(component, quirks))


def accepted(component: str, accept: Iterable[str] | str) -> set[str]:
    """The quirks ``accept`` names: a named revision of ``component`` (``"faithful"``: the seed's,
    ``"ideal"``: none) or a list of quirk names (checked)."""
    if isinstance(accept, str):
        if accept == "ideal":
            return set()
        return set(faithful(component) if accept == "faithful" else revision(component, accept).quirks)
    return set(validate(component, list(accept)))


def register(quirks: Iterable[Quirk], revisions: Iterable[Revision] = ()) -> None:
    """Add the quirks and revisions of a component registered at run time."""
    for q in quirks:
        if q.name in QUIRKS:
            raise ValueError(f"quirk {q.name!r} exists")
        _ALL.append(q)
        QUIRKS[q.name] = q
    for r in revisions:
        _REVISIONS.append(r)
        REVISIONS[(r.component, r.name)] = r


def unregister(component: str) -> None:
    """Remove a run-time component's quirks and revisions."""
    for q in [q for q in _ALL if q.component == component]:
        _ALL.remove(q)
        QUIRKS.pop(q.name, None)
    for r in [r for r in _REVISIONS if r.component == component]:
        _REVISIONS.remove(r)
        REVISIONS.pop((r.component, r.name), None)
