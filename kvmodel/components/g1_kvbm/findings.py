"""The KVBM backend's findings (docs/findings.md, tools/gen_findings.py)."""

from __future__ import annotations

from typing import Any

NAME = "g1_kvbm"

CONSEQUENCE: dict[str, str] = {
    "failed_use_reorders_inactive": (
        "A request that cannot be admitted still refreshes the blocks it would have reused: they become "
        "the newest inactive entries, so a burst of failing admissions protects their prefix from "
        "eviction and evicts other cached prefixes first. No reference, slot or event leaks."
    ),
    "active_partial_use_noop": (
        "A caller that names a partial twice (a retried creation signal) holds it twice but the manager "
        "counts it once: the first Deref frees the slot while the other holder still writes to it, and "
        "the second Deref panics."
    ),
    "plh_reuse_keeps_first_name": (
        "Two sequence hashes that share a PLH share one block, but the router only knows the first name: "
        "prefix-aware routing never scores the second name's requests on this worker, a child Stored "
        "under the second name is rejected (ParentBlockNotFound), and the eviction is reported under the "
        "first name only. Real PLH fragments are 51-59 bits wide, so it takes a fragment collision."
    ),
    "events_for_uncached_sequences": (
        "A router receives Stored and Removed events for random hashes that no other request can ever "
        "match: index growth and event traffic for nothing (the native backend sends none)."
    ),
    "stored_before_removed": (
        "Between the Stored and the Removed of one Use the router believes the worker holds more blocks "
        "than it has, and a consumer that applies events one at a time can route to an evicted block."
    ),
    "kvbm_active_counts_reservations": (
        "Reserved but unused decode and destination slots show up as active blocks: utilisation metrics "
        "and the scheduler's view of used capacity overstate what requests hold."
    ),
    "commit_asserts_after_partial_commit": (
        "The panic leaves an ownerless block installed, its Stored never sent and the shadow of a block "
        "the Use evicted in place: a later eviction publishes Removed for a hash the router never saw, "
        "and a later registration of that PLH trips the shadow assertion again."
    ),
    "use_ready_counts_entries": (
        "A caller reading Ready(n) as blocks allocated over-counts every hit: `Ready(2)` for a Use that took no slot."
    ),
    "deref_releases_before_panic": (
        "A Deref with one wrong entry releases the entries before it and then panics: those blocks return"
        " to the pool while the caller still believes it holds them."
    ),
}


def binary(q: Any) -> str:
    return "no: the 1.6.1 mocker as driven schedules on the native pool; Rust tests as vectors pass (25 of 25)"


def section(h: Any) -> list[str]:
    """This component's part of docs/findings.md: BFS-minimal traces from the explorer."""
    lines = [
        "# The G1 manager with the KVBM backend (`lib/mocker/src/kv_manager/kvbm_backend.rs` fa6894c9a on",
        "# `lib/kvbm-logical`)",
        "",
        "Traces come from the explorer (`kvmodel explore --component kvbm --owners 1 --prompts 5 --pushes 0",
        "--decode 0 --capacity 2 --quirk NAME`, the world of `kvmodel check`):",
        "one request at a time started from the prompts `[1, 2, 3, 4]`, `[7, 8]` (its PLH",
        "collides with the first block's when PLH fragments are reduced modulo 2), `[9, 10]` with caching off,",
        "`[15, 16, 5]` and `[1, 2, 3, 4, 5]`; block size 2, capacity 2; its blocks named again (`resend`),",
        "destinations, and the malformed `bad_use` / `bad_deref` inputs. Hashes are the mocker's sequence hashes.",
        "",
        "The 1.6.1 wheel's mocker, as the conformance harness drives it, schedules on the native pool, so no KVBM",
        "finding is confirmed on a binary; the model passes the backend's 25 Rust tests as vectors.",
        "Eight of the nine quirks (all but `commit_asserts_after_partial_commit`) are also in the Z3 spec's",
        "two-block-chain world, where BMC finds each at the BFS-minimal depth, and all 17 ideal invariants are",
        "proved by 1-induction (`kvmodel prove --component kvbm`, `docs/z3.md`).",
        "",
    ]
    return lines + list(h.explored_quirks(NAME, "kvbm"))
