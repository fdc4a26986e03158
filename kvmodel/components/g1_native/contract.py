"""The G1 native backend's adapter contract (docs/contracts.md)."""

from __future__ import annotations

EVENTS = (
    "Dynamo's `KvCacheEvent`s (`{event_id, data: {stored: {...}} | {removed: {block_hashes}} | "
    '"cleared", dp_rank}`) as the publisher sends them; none when `publishers` is false; '
    "compared exactly"
)

# the model modules (kvmodel.model.*) whose raises the operations reach
MODULES = ("g1.g1_manager", "g1.vllm_backend", "g1.vllm_block_pool", "g1.sequence", "blocks")


ENCODING = (
    '**Encodings.** `G1Acquire` is a JSON string: `Ready(n)` is `"Ready(2)"` (n: the count Rust '
    "puts in it: blocks newly allocated for a Use, always 1 for Promote and Deref); "
    '`CapacityExhausted` is `"CapacityExhausted"`; a reservation that is kept (`reserve_decode`) '
    'answers `"Ready"`. Compared exactly: `"Ready(1)"` is not `"Ready"`. A `stored` event is '
    "`{parent_hash: u64|null, start_position: null, blocks: [{block_hash: u64, tokens_hash: u64, "
    "mm_extra_info: null}]}` (`block_hash` the sequence hash, `tokens_hash` the block's local hash, "
    "which for the first block equals its sequence hash); a `removed` event is "
    "`{block_hashes: [u64]}`; `event_id` counts published events from 0 per manager (a step that "
    "publishes nothing takes no id); `dp_rank` is the configuration's."
)

NOTES: tuple[str, ...] = (
    ENCODING,
    "**Operations.** Requests are named by `owner`, and an owner id may be used again once its "
    "request left (`free`, `deref_in_order`, `cancel_destination`). `new_request` builds the "
    "request's `ActiveSequence` (no signal). `allocate` sends the sequence's creation Use through "
    "`process_for_request(owner, use, reusable)`; with `reuse: true` on a request's first "
    "allocation, `reusable` is the number of leading full blocks with a `prefix_hit`, capped as "
    "the scheduler caps its hit at `(len(tokens) - 1) // block_size`; without it, 0. `push` appends "
    "a token: the sequence's signals (the Promote of a completed tail, the Use of a new partial) go "
    "each through `process_for_request(owner, signal, 0)`, one result per signal. `finalize` is "
    "`finalize_computed_prefix(owner, before, after, sequence)` with `before` the request's "
    "watermark (0 at first; the reused prefix's tokens after a `reuse` allocation; the prompt after "
    "`activate_destination`; the previous `after` after a `finalize`) and `after` the sequence's "
    "length: everything pushed is computed. `free` sends the request's terminal Deref of every "
    "block it holds, leaf first (`Deref` in reverse table order); `deref_in_order` sends the same "
    "blocks in table order. `reserve_decode` / `release_decode` take and give back "
    "`reserve_decode_blocks(count)` (the oldest outstanding one goes back first); no other "
    "operation of this component uses a decode reservation. `reserve_destination` is "
    "`reserve_destination_at(owner, sequence)` over a new request's prompt: "
    "`transferable_prompt_tokens` as Rust computes it (fresh blocks × block size) and "
    "`uncached_prompt_tokens`, the prompt's tokens beyond the reserved cached prefix "
    "(`max(0, prompt length − prefix blocks × block size)`, the harness's own figure). "
    "`activate_destination` makes the reservation the request's table (its prompt computed); "
    "`cancel_destination` gives it back (`cancel`: the prefix unpinned leaf first) and the request "
    "leaves.",
    "**After a panic** (an `error` answer other than `InvalidInput`): the manager keeps what Rust "
    "mutated before the panic (cached copies, published events, released references); the request "
    "bookkeeping, the request's `ActiveSequence` included, is as before the step. That is a "
    "convention: Rust changes the sequence first (`promote_computed_tail`, a pushed token) and its "
    "process then dies, so no later step exists there, and a generated workload ends at such a panic "
    "(see Validation order); a trace written by hand that goes on agrees only with a port that "
    "restores its request's sequence (not the manager). An `InvalidInput` "
    "answer (an input outside the world's preconditions, checked before anything moves) changes "
    "nothing.",
)

CONTRACT = (EVENTS, MODULES, NOTES)
