"""The block registry's findings (docs/findings.md, tools/gen_findings.py)."""

from __future__ import annotations

from typing import Any

NAME = "kvbm_block_registry"

CONSEQUENCE: dict[str, str] = {
    "cleanup_erases_live_entry": (
        "The pool forgets a block it holds: `is_registered` says no, prefix matching in that pool misses "
        "it, and a third registration of the same hash is accepted, so two blocks of one sequence hash "
        "live in one pool (the duplicate the per-pool map exists to prevent). A finding about commit "
        "403dd259 (`--revision 403dd259`): the seed, dynamo-llm 1.0.2, fixes it (the task removes the "
        "entry only if it is dead), as the ideal variant does, so the faithful model does not have it."
    ),
    "global_registry_untiered": (
        "A block copied to a second tier (device to host, host to disk) is never announced for that tier,"
        " and the first tier's Remove is held back until the last tier drops it: a consumer of KV events "
        "(the KV-event consolidator, the router) believes the block is still in the first tier after it "
        "left. Revisions e3d00b899 key the global registry by (hash, tier) — the ideal variant here, and "
        "what the vectors of those revisions assert."
    ),
    "dead_global_entry_leaks": (
        "Harmless to correctness (every lookup upgrades the weak pointer first and a new registration "
        "overwrites the entry), but the global map keeps one dead entry per hash whose registration "
        "handle outlived its blocks (for example a block dropped before its Publisher flushed): memory "
        "grows with the number of distinct hashes seen. Every revision read has it."
    ),
    "publisher_clone_shares_pending": (
        "A cloned Publisher (the type derives Clone) publishes the same pending handles again: the "
        "consumer receives two Register events for one block and one Remove, so a counting consumer (or "
        "the consolidator's deduplication across sources) keeps a block that is gone."
    ),
}


def binary(q: Any) -> str:
    return "no binary (dynamo-llm); Rust tests as vectors pass"


def section(h: Any) -> list[str]:
    """This component's part of docs/findings.md: BFS-minimal traces from the explorer."""
    lines = [
        "# The KVBM block registry (`lib/llm/src/block_manager/block/registry.rs`, seed 004)",
        "",
        "Traces here come from the explorer (`kvmodel explore --component registry --quirk NAME`), so each is a",
        "shortest counterexample in its bounded world (registries `device0` (Device) and `host` (HostPinned)",
        "sharing one global registry; 2 block-state slots, 1 publish-handle slot, 2 publisher slots, at most 1",
        "undrained drop per registry). Arc drops are explicit `drop` steps and the asynchronous unregister task is",
        "the explicit `drain` step. `publish_handles` are bound to `ph0`, states to `s0`/`s1`.",
        "",
        "On the real code: the registry lives in `dynamo-llm`, which the `ai-dynamo-runtime` wheel does not expose,",
        "so no finding here is confirmed on a binary. The model passes the registry's own Rust tests as vectors",
        "(`kvmodel vectors`, 8 of 8, each on the revision it names: 403dd259 or e3d00b899; and the project's own",
        "translations of 1.0.2's behaviour). The faithful model is the seed, dynamo-llm 1.0.2; quirk 1",
        "(`cleanup_erases_live_entry`) belongs to the older commit 403dd259 only and is fixed in the seed, and",
        "quirk 2 is fixed in the tiered commit e3d00b899, exactly as the ideal variant does. The ideal variant's",
        "invariants are proved by",
        "k-induction (`kvmodel prove --component registry`) and hold in every explored world.",
        "",
        "`PublishHandle::remove_handle` not disarming (§6 #21) is not a switchable quirk: it is load-bearing.",
        "`register_block` itself calls `remove_handle` to keep the state's Arc, and the Register-before-Remove",
        "guarantee (§3.7 #3) rests on the armed handle. A variant where `remove_handle` disarms makes",
        "`remove_handle(ph); drop(ph); drop(arc)` emit a Remove for a block never Registered, which",
        "`reg.remove_after_register` catches (`stateful_tests/test_registry.py::test_remove_handle_is_load_bearing`).",
        "Its user-facing hazard is the name: a caller who takes the Arc out expecting to publish it some other",
        "way gets a second Register when the handle drops.",
        "",
    ]
    return lines + list(h.explored_quirks(NAME, "registry"))
