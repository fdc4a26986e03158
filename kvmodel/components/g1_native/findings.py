"""The native backend's findings (docs/findings.md, tools/gen_findings.py)."""

from __future__ import annotations

from typing import Any

NAME = "g1_native"

CONSEQUENCE: dict[str, str] = {
    "promote_tail_before_finalize": (
        "The computed tail's Stored reaches the router before its parent's: the real RadixTree rejects it"
        " whole (ParentBlockNotFound), so the block this request just computed is invisible to "
        "prefix-aware routing, although the manager caches it. A finding about commit 366ff0ef "
        "(`--revision 366ff0ef`): commit 6125e8260, the seed, finalizes then promotes, as the ideal variant "
        "does, so the faithful model does not have it; the g1_manager vector pins 6125e8260's order."
    ),
    "prefix_hit_first_copy_only": (
        "With duplicate copies of a hash (the same prompt run twice without an authorised prefix), the "
        "prefill cost reports an active hit as inactive reuse: active_cached_tokens undercounts, and a "
        "scheduler that prefers requests with active prefixes mis-ranks them."
    ),
    "transferable_counts_partial_tail": (
        "A disaggregated transfer announces up to block_size - 1 more tokens than the prompt has (10 "
        "tokens, block size 4: 12), so transfer-time and bandwidth estimates run high."
    ),
    "finalize_skips_owner_check": (
        "A finalize for a request that does not exist (freed, preempted, or a stale id) is accepted "
        "silently as long as no block boundary is crossed, and panics once one is: the same bug surfaces "
        "only on some token counts."
    ),
    "active_counts_reservations": (
        "num_active_blocks rises as soon as capacity is reserved for decode or a transfer, before any "
        "block is used: load metrics and the router's active-block view overstate use."
    ),
    "deref_exact_reverse_tail": (
        "A caller that releases a request's blocks in table order (as the old manager and KVBM accept) "
        "panics the native manager: the three backends do not share one release contract."
    ),
}


def binary(q: Any) -> str:
    if q.name == "prefix_hit_first_copy_only":
        return "yes: the real mocker's admission waits where the ideal pool admits (docs/g1.md)"
    return "no: the mocker and vLLM conformance runs do not reach these paths; Rust tests as vectors pass"


def section(h: Any) -> list[str]:
    """This component's part of docs/findings.md: BFS-minimal traces from the explorer."""
    lines = [
        "# The G1 manager with the native backend (`lib/mocker/src/kv_manager/g1_manager.rs`, `vllm_backend.rs`,",
        "# `lib/mocker/src/cache/vllm_block_pool.rs`; seed 002)",
        "",
        "Traces come from the explorer (`kvmodel explore --component g1 --quirk NAME`): two requests started from",
        "the prompts `[1, 2, 5]` and `[7]` (block size 2, capacity 3), one decode token each, one decode slot.",
        "Hashes are the mocker's XXH3 sequence hashes, shown by their last five digits. Requests are driven as",
        "the scheduler drives them: a token that starts a new block is generated only after everything before",
        "it was computed and finalized. (Without that discipline the native manager's Promote publishes a",
        "Stored whose parent was never finalized, in 6125e8260 too: parent-before-child is the caller's contract.)",
        "",
        "Modelled but not switchable: the native backend publishes Removed when capacity is reserved, long",
        "before the Stored of the same allocation at finalize (§6 #14). Every event is right at its moment, so",
        "no invariant separates it from an alternative; the mocker conformance pins it.",
        "",
        "Found on the real binaries (`docs/g1.md`):",
        "",
        "- The real 1.6.1 mocker stalls when a lone request's decode needs one block more than the pool has:",
        "  the offline replay aborts (`replay invariant violated: offline replay detected an effect-free",
        "  zero-duration pass`). Prompt `[10, 11, 12, 13] * 3`, 2 output tokens, 3 GPU blocks of 4 tokens. The",
        "  model predicts it (`stateful_tests/test_mocker.py::test_a_request_that_outgrows_the_pool_stalls_both`).",
        "- `prefix_hit_first_copy_only` (§6 #16) is visible in the real mocker's scheduling. Five requests arrive",
        "  together on 3 blocks of 4 tokens: `[1]`, `[1]`, `A`, `A`, `A B` (A = 30..33, B = 10..13; outputs 1, 1,",
        "  2, 5, 1). When the last one is considered, `A` has an idle primary copy and an active duplicate: the",
        "  real scheduler counts the hit as inactive and the request waits until the fourth finishes. With the",
        "  quirk off the model admits it and preempts the fourth. Hypothesis found it (`kvmodel conform --target",
        "  dynamo-mocker --seed 2`, before the model's pool took the quirk);",
        "  `stateful_tests/test_mocker.py::test_admission_sees_a_hit_as_active_by_its_primary_copy_only` keeps it.",
        "- vLLM's `BlockPool` publishes per physical block, Dynamo's native pool per hash: two requests that",
        "  compute the same prompt before either caches it make vLLM send a second BlockStored for cached hashes,",
        "  then a BlockRemoved when one copy is evicted while the other still serves the hash. A router fed vLLM's",
        "  stream drops a live hash there. Six operations (`kvmodel conform --target vllm-block-pool --json`,",
        "  `duplicate_copy_witness`).",
        "- The same on vLLM's real v1 engine (`kvmodel conform --target vllm-engine`, named",
        "  `vllm.per_copy_removed`): a prompt of exactly one block can never hit its own last block, so",
        "  requests sharing it compute copies of their own; when one copy is evicted, Dynamo's router (real",
        "  and modelled alike) drops the hash *and every block stored below it*, which the engine still caches",
        "  and serves. Shrunk witness: 5 requests arriving together on 11 blocks of 32 tokens, one of four",
        "  blocks `[A, A, A, A]` and three of one block `A`: at engine step 4 the engine caches four hashes",
        "  both routers lack. 697 steps in 1,000 generated schedules. **Per path** (ai-dynamo-runtime 1.6.1,",
        "  `kvmodel conform --target vllm-engine --path`, 60 schedules at seed 0, 2,288 engine steps, 7 per-copy",
        "  BlockRemoved): on the raw path (the stream into `RadixTree`) 41 steps named; the standalone",
        "  `python -m dynamo.indexer` path drops the block the same way (its router behind the engine at 12",
        "  steps); the deployed worker path (the engine's socket relayed by the worker's `KvEventPublisher` to",
        "  `KvRouter`) does **not** (0 steps behind): its dedup filter (since 9b3e9249f, #8012) holds a Removed",
        "  until the last copy goes (`docs/g1.md`, `stateful_tests/test_deployed_paths.py`).",
        "- Where the mocker does not behave like vLLM: nothing found yet. The model of the mocker's vLLM",
        "  scheduler (the model that matches the real 1.6.1 mocker) fed vLLM's sampled tokens predicts vLLM",
        "  0.32's cache events block by block, up to vLLM's per-copy events, on every generated schedule",
        "  (1,000 at seed 0: waves, timed arrivals, chunked prefill, eviction, 136 preemptions, resets, aborts; 0",
        "  differences).",
        "",
    ]
    return lines + list(h.explored_quirks(NAME, "g1"))
