"""The G1 KVBM backend's adapter contract (docs/contracts.md)."""

from __future__ import annotations

from kvmodel.components.g1_native.contract import ENCODING

EVENTS = "as g1_native; compared exactly"

# the model modules (kvmodel.model.*) whose raises the operations reach
MODULES = ("g1.g1_manager", "g1.kvbm_backend", "g1.kvbm_logical", "g1.sequence", "blocks")


NOTES: tuple[str, ...] = (
    ENCODING,
    "**Operations.** As `g1_native` for the operations both have; the facade sends every signal "
    "through `process_for_request(owner, signal, 0)`, which the KVBM backend serves by "
    "`process(signal)` (the owner is not read). `allocate` is the creation Use; on `Ready` the "
    "request holds the Use's blocks. `push` sends the token's signals (Promote, Use) through "
    "`process_for_request`; `decode_push` the same through the outstanding decode reservation "
    "(`process_decode_signal_for_request`). `resend` names the request's held blocks again in one "
    "Use: a second logical holder (each block's reference count rises). `free` sends the terminal "
    "Deref of the held blocks leaf first; `bad_deref` the same with the full block 999999 at the "
    "end, which is unknown (a panic after the blocks before it were released, as Rust's loop "
    "releases them) unless a `bad_use` left it installed. "
    "`bad_use` sends a malformed Use for no request: `dup_partial` names one partial (`bad`) twice; "
    "`hash_two_plhs` names the full block hash 999999 twice under two PLHs (positions 0 and 1); "
    "`plh_alias` names the full block 999999 (its tokens hash 999999, no parent, no token ids) under "
    "the PLH of the first block of the tokens 1, 2, ..., block_size with caching on (the first "
    "block of the prompts that start so): a second sequence hash for one PLH, which Rust's test "
    "of PLH reuse builds directly and real fragments give only by collision; `dup_full` names the "
    "full block 999999 twice (tokens hashes 999999, both under the PLH of sequence hash 999999 at "
    "position 0, no parent): the Reject policy registers it once and the second entry takes the "
    "first's block, as in Rust's test of duplicate fresh registrations. On `Ready` the block of a "
    "`plh_alias` or `dup_full` Use is held by its caller, one reference per entry, and each "
    "`bad_deref` (whose Deref names 999999 once) releases one. "
    "`new_request` with `caching: false` gives a sequence whose sequence hashes and PLHs are drawn "
    "at random, fresh for every sequence (a request id used again draws new ones); they are "
    "compared up to a consistent one-to-one renaming kept over the workload, so a port draws its "
    "own. `plh_fragments` (configuration, default 0: PLHs as Rust computes them) reduces PLH "
    "fragments modulo a number, so that small worlds reach PLH collisions; the explorer's worlds "
    "set 2.",
    "**After a panic**: as `g1_native`. A malformed Use whose commit panics after part of it was "
    "installed (faithful `commit_asserts_after_partial_commit`) leaves those entries installed: "
    "after a `hash_two_plhs` `bad_use`, block 999999 is active, so a `bad_deref` finds it, releases "
    "one of its references and answers `Ready(1)` instead of panicking.",
)

CONTRACT = (EVENTS, MODULES, NOTES)
