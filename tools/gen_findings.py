"""Write docs/findings.md: each quirk's minimal counterexample, found by Hypothesis (seed 0).

Usage: python tools/gen_findings.py  (deterministic: same model, same seed, same bytes)
Each finding embeds its steps as JSON; stateful_tests/test_findings.py replays them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kvmodel import machines
from kvmodel.model.quirks import QUIRKS, quirk_revisions, quirks_of

ROOT = Path(__file__).resolve().parents[1]

CONSEQUENCE = {
    "promote_tail_before_finalize": "The computed tail's Stored reaches the router before its parent's: the real "
    "RadixTree rejects it whole (ParentBlockNotFound), so the block this request just computed is invisible to "
    "prefix-aware routing, although the manager caches it. A finding about commit 366ff0ef (`--revision "
    "366ff0ef`): revision R05, the seed, finalizes then promotes, as the ideal variant does, so the faithful model "
    "does not have it; the g1_manager vector pins R05's order.",
    "prefix_hit_first_copy_only": "With duplicate copies of a hash (the same prompt run twice without an "
    "authorised prefix), the prefill cost reports an active hit as inactive reuse: active_cached_tokens "
    "undercounts, and a scheduler that prefers requests with active prefixes mis-ranks them.",
    "transferable_counts_partial_tail": "A disaggregated transfer announces up to block_size - 1 more tokens "
    "than the prompt has (10 tokens, block size 4: 12), so transfer-time and bandwidth estimates run high.",
    "finalize_skips_owner_check": "A finalize for a request that does not exist (freed, preempted, or a stale "
    "id) is accepted silently as long as no block boundary is crossed, and panics once one is: the same bug "
    "surfaces only on some token counts.",
    "active_counts_reservations": "num_active_blocks rises as soon as capacity is reserved for decode or a "
    "transfer, before any block is used: load metrics and the router's active-block view overstate use.",
    "deref_exact_reverse_tail": "A caller that releases a request's blocks in table order (as the old manager and "
    "KVBM accept) panics the native manager: the three backends do not share one release contract.",
    "use_non_atomic": "The scheduler preempts on `false`, believing nothing was allocated, but the earlier blocks of "
    "the batch stay resident and referenced with no owner, and the router never hears of them: its view and the "
    "manager's cache differ, prefix-aware routing under-counts this worker, and a later eviction sends a Remove for "
    "a hash the router never saw Stored.",
    "store_parent_last_hit": "The router attaches the new blocks under the wrong parent (or under themselves, as in "
    "the trace: `Use([0, 1, 0])` announces 0 and 1 with parent 0). The radix tree then describes a prefix that no "
    "request has, so matches are scored on a wrong lineage.",
    "partial_parent_panic_after_mutation": "The panic unwinds after the batch was applied: refcounts bumped and new "
    "blocks inserted, with no Store. Anything that catches the panic (a supervisor restarting the task, a test "
    "harness) continues with leaked references.",
    "promote_overwrites_refcount": "Two requests that complete the same block (same prompt, same next token) share "
    "one hash; the second Promote sets the count to 1. When the first request frees, the block goes inactive and "
    "can be evicted while the second request still uses it "
    "(see `test_same_prompt_same_token_trips_promote_overwrite`).",
    "promote_leaves_inactive_copy": "The block is both active and cached: current_capacity double counts it, and "
    "evicting the inactive copy removes it from all_blocks while it is active, after which Destroy of it panics on "
    "the all_blocks assert and a Remove is sent for a block in use.",
    "promote_always_stores": "The router receives a second Stored for a hash it already holds; harmless to a set, "
    "but any consumer that counts Stored/Removed pairs (or a KV-event replay) drifts.",
    "promote_parent_unchecked": "A Stored whose parent the router has not seen is rejected whole by the real "
    "RadixTree (ParentBlockNotFound), so the block is missing from the router's view.",
    "destroy_ignores_refcount": "Destroying a shared block drops every holder's reference; the other holders' later "
    "Derefs are silently ignored (see deref_ignores_unknown) and the block is gone while in use.",
    "destroy_mutates_before_panic": "Blocks walked before the offending one are removed with no Remove event: the "
    "router keeps hashes the manager no longer has.",
    "deref_ignores_unknown": "A double free is invisible: no error, no counter. Combined with promote or destroy "
    "defects it hides refcount corruption instead of surfacing it.",
    "deref_caches_partial": "A partial block (fresh UUID, never shareable) occupies a cache slot until it is evicted, "
    "reducing the effective cache size.",
    "equal_timestamp_stale_entry": "With a coarse clock, an object re-inserted within the same clock tick is "
    "evicted at its old position: the LRU evicts a recently used block before an older one. Found by the "
    "explorer: the queue cleanup keeps every entry whose timestamp equals the table's, so re-inserts within one "
    "tick are never cleaned up and the lazy queue grows without bound (a memory leak whenever the clock repeats).",
}

CONSEQUENCE.update(
    {
        "cleanup_erases_live_entry": "The pool forgets a block it holds: `is_registered` says no, prefix matching in "
        "that pool misses it, and a third registration of the same hash is accepted, so two blocks of one sequence "
        "hash live in one pool (the duplicate the per-pool map exists to prevent). A finding about commit 403dd259 "
        "(`--revision 403dd259`): the seed, dynamo-llm 1.0.2, fixes it (the task removes the entry only if it is "
        "dead), as the ideal variant does, so the faithful model does not have it.",
        "global_registry_untiered": "A block copied to a second tier (device to host, host to disk) is never "
        "announced for that tier, and the first tier's Remove is held back until the last tier drops it: a "
        "consumer of KV events (the KV-event consolidator, the router) believes the block is still in the first "
        "tier after it left. Revisions R12/R13 key the global registry by (hash, tier) — the ideal variant here, "
        "and what the vectors of those revisions assert.",
        "dead_global_entry_leaks": "Harmless to correctness (every lookup upgrades the weak pointer first and a new "
        "registration overwrites the entry), but the global map keeps one dead entry per hash whose registration "
        "handle outlived its blocks (for example a block dropped before its Publisher flushed): memory grows with "
        "the number of distinct hashes seen. Every revision read has it.",
        "publisher_clone_shares_pending": "A cloned Publisher (the type derives Clone) publishes the same pending "
        "handles again: the consumer receives two Register events for one block and one Remove, so a counting "
        "consumer (or the consolidator's deduplication across sources) keeps a block that is gone.",
    }
)

# The KV manager's events fed to the real RadixTree of ai-dynamo-runtime 1.6.1, 6 seeds x 500 random
# steps per quirk (kvmodel.conformance.radix.kv_manager_to_router; docs/router.md has the table; pinned
# by stateful_tests/test_router.py::test_kv_manager_streams_in_the_real_router).
ROUTER = {
    "store_parent_last_hit": "yes — its self-parented Stored (`Store([h], parent=h)`) is rejected by the real "
    "RadixTree as `InvalidBlockSequence` (18 times in 6 × 500 steps; never in ideal runs).",
    "partial_parent_panic_after_mutation": "yes — as with `store_parent_last_hit`, which it requires: "
    "`InvalidBlockSequence` from the real RadixTree (17 times in 6 × 500 steps).",
    "promote_parent_unchecked": "yes — the real RadixTree rejects Stored events whose parent it never saw "
    "(`ParentBlockNotFound` 26 times against 17 in ideal runs, and 3 `InvalidBlockSequence`).",
    "promote_always_stores": "yes — the second Stored of a held hash makes a second node in the real tree, "
    "which outlives the hash's Removed: the router keeps a block the manager no longer has (95 hash-steps).",
    "destroy_mutates_before_panic": "yes — blocks destroyed before the panic are later Stored again while the "
    "router still holds them; the real tree keeps the duplicate after the Removed (779 hash-steps).",
}

# Found by stateful_tests/test_sequence.py: request-driven runs (ActiveSequence signals on the manager).
REACHABLE = {"promote_always_stores", "promote_leaves_inactive_copy", "promote_overwrites_refcount", "use_non_atomic"}


def _fmt_events(obs: dict[str, Any]) -> str:
    out = []
    for e in obs.get("events", []):
        if "data" in e:  # a KvCacheEvent (G1 era)
            d = e["data"]
            if "stored" in d:
                hs = [f"#{str(b['block_hash'])[-5:]}" for b in d["stored"]["blocks"]]
                p = d["stored"]["parent_hash"]
                out.append(f"Stored([{', '.join(hs)}], parent={'None' if p is None else '#' + str(p)[-5:]})")
            else:
                out.append(f"Removed([{', '.join('#' + str(h)[-5:] for h in d['removed']['block_hashes'])}])")
            continue
        if "kind" in e:  # a registry event
            out.append(
                f"{e['kind']}({e['sequence_hash']}, {e['tier']})" if e["tier"] else f"{e['kind']}({e['sequence_hash']})"
            )
            continue
        ((k, v),) = e.items()
        if k == "Store":
            out.append(f"Store({v['blocks']}, parent={v['parent_hash']})")
        else:
            out.append(f"Remove({v['blocks']})")
    return ", ".join(out) or "none"


def _fmt_args(op: str, args: Any) -> str:
    if op == "process" and isinstance(args, dict) and len(args) == 1:
        ((k, v),) = args.items()
        if isinstance(v, list):
            blocks = ", ".join(f"F{b['F']}" if "F" in b else f"P:{b['P']}" for b in v)
            return f"{k}([{blocks}])"
        return f"{k}({', '.join(f'{a}={b}' for a, b in v.items())})"
    return f"{op}({json.dumps(args)})"


def _bfs_minima() -> dict[str, dict[str, int]]:
    data = json.loads((ROOT / "specs" / "manifest.json").read_text())
    return {e["name"]: e["expect"]["violations"] for e in data["entries"]}


INDEX: list[tuple[str, str, str, int, str]] = []  # quirk, component, invariant, steps, real binary


CONSEQUENCE.update(
    {
        "failed_use_reorders_inactive": "A request that cannot be admitted still refreshes the blocks it would have "
        "reused: they become the newest inactive entries, so a burst of failing admissions protects their prefix "
        "from eviction and evicts other cached prefixes first. No reference, slot or event leaks.",
        "active_partial_use_noop": "A caller that names a partial twice (a retried creation signal) holds it twice "
        "but the manager counts it once: the first Deref frees the slot while the other holder still writes to "
        "it, and the second Deref panics.",
        "plh_reuse_keeps_first_name": "Two sequence hashes that share a PLH share one block, but the router only "
        "knows the first name: prefix-aware routing never scores the second name's requests on this worker, a "
        "child Stored under the second name is rejected (ParentBlockNotFound), and the eviction is reported under "
        "the first name only. Real PLH fragments are 51-59 bits wide, so it takes a fragment collision.",
        "events_for_uncached_sequences": "A router receives Stored and Removed events for random hashes that no "
        "other request can ever match: index growth and event traffic for nothing (the native backend sends none).",
        "stored_before_removed": "Between the Stored and the Removed of one Use the router believes the worker holds "
        "more blocks than it has, and a consumer that applies events one at a time can route to an evicted block.",
        "kvbm_active_counts_reservations": "Reserved but unused decode and destination slots show up as active blocks: "
        "utilisation metrics and the scheduler's view of used capacity overstate what requests hold.",
        "commit_asserts_after_partial_commit": "The panic leaves an ownerless block installed, its Stored never sent "
        "and the shadow of a block the Use evicted in place: a later eviction publishes Removed for a hash the "
        "router never saw, and a later registration of that PLH trips the shadow assertion again.",
        "use_ready_counts_entries": "A caller reading Ready(n) as blocks allocated over-counts every hit: `Ready(2)` "
        "for a Use that took no slot.",
        "deref_releases_before_panic": "A Deref with one wrong entry releases the entries before it and then panics: "
        "those blocks return to the pool while the caller still believes it holds them.",
    }
)


def _index() -> list[str]:
    out = [
        "## Index",
        "",
        "| quirk | component | invariant broken (first found) | minimal trace | confirmed on a real binary |",
        "|---|---|---|---|---|",
    ]
    for q, comp, inv, n, real in INDEX:
        out.append(f"| `{q}` | {comp} | `{inv}` | {n} step{'' if n == 1 else 's'} | {real} |")
    out += [
        "",
        "In every row the ideal variant (the quirk off) holds under Hypothesis and exhaustive exploration",
        "(`kvmodel check`), it is also proved by k-induction (`kvmodel prove --component NAME`), and BMC finds",
        "the quirk's violations at the explorer's minimal depths.",
        "",
    ]
    return out


def _real(q: Any) -> str:
    """Whether a real binary confirms the quirk, and the revisions of the real code that have it."""
    return f"{_binary(q)}; revision(s) {', '.join(quirk_revisions(q.name))}"


def _binary(q: Any) -> str:
    if q.component == "kv_manager":
        return "real RadixTree: " + ("yes" if q.name in ROUTER else "no visible effect") + " (docs/router.md)"
    if q.component == "kvbm_block_registry":
        return "no binary (dynamo-llm); Rust tests as vectors pass"
    if q.component == "g1_native":
        if q.name == "prefix_hit_first_copy_only":
            return "yes: the real mocker's admission waits where the ideal pool admits (docs/g1.md)"
        return "no: the mocker and vLLM conformance runs do not reach these paths; Rust tests as vectors pass"
    if q.component == "g1_kvbm":
        return "no: the 1.6.1 mocker as driven schedules on the native pool; Rust tests as vectors pass (25 of 25)"
    return "evictor no longer in the 1.6.1 mocker"


def _kvbm_section(bfs: dict[str, dict[str, int]]) -> list[str]:
    """The G1 facade with the KVBM backend: BFS-minimal traces from the explorer."""
    lines = [
        "# The G1 manager with the KVBM backend (`lib/mocker/src/kv_manager/kvbm_backend.rs` R09 on",
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
    return lines + _explored_quirks("g1_kvbm", "kvbm", bfs)


def _registry_section(bfs: dict[str, dict[str, int]]) -> list[str]:
    """The KVBM block registry's quirks: BFS-minimal traces from the explorer (exact minima)."""
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
        "(`kvmodel vectors`, 8 of 8, each on the revision it names: 403dd259 or R12/R13; and the project's own",
        "translations of 1.0.2's behaviour). The faithful model is the seed, dynamo-llm 1.0.2; quirk 1",
        "(`cleanup_erases_live_entry`) belongs to the older commit 403dd259 only and is fixed in the seed, and",
        "quirk 2 is fixed in the tiered revisions R12/R13, exactly as the ideal variant does. The ideal variant's",
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
    return lines + _explored_quirks("kvbm_block_registry", "registry", bfs)


def _g1_section(bfs: dict[str, dict[str, int]]) -> list[str]:
    """The G1 facade with the native backend: BFS-minimal traces from the explorer."""
    lines = [
        "# The G1 manager with the native backend (`lib/mocker/src/kv_manager/g1_manager.rs`, `vllm_backend.rs`,",
        "# `lib/mocker/src/cache/vllm_block_pool.rs`; seed 002)",
        "",
        "Traces come from the explorer (`kvmodel explore --component g1 --quirk NAME`): two requests started from",
        "the prompts `[1, 2, 5]` and `[7]` (block size 2, capacity 3), one decode token each, one decode slot.",
        "Hashes are the mocker's XXH3 sequence hashes, shown by their last five digits. Requests are driven as",
        "the scheduler drives them: a token that starts a new block is generated only after everything before",
        "it was computed and finalized. (Without that discipline the native manager's Promote publishes a",
        "Stored whose parent was never finalized, in R05 too: parent-before-child is the caller's contract.)",
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
        "",
    ]
    return lines + _explored_quirks("g1_native", "g1", bfs)


def _explored_quirks(component: str, suffix: str, bfs: dict[str, dict[str, int]]) -> list[str]:
    from kvmodel import explorer

    man = json.loads((ROOT / "specs" / "manifest.json").read_text())["entries"]
    lines: list[str] = []
    for q in quirks_of(component):
        entry = next(e for e in man if e["name"] == f"quirk-{q.name}-{suffix}")
        sp: Any = {"registry": explorer.RegSpace, "g1": explorer.G1Space, "kvbm": explorer.KvbmSpace}[suffix](
            **entry["space"]
        )
        r = explorer.explore(entry["config"], entry["quirks"], sp)
        inv = min(r.violations, key=lambda n: (r.violations[n]["depth"], n))
        t = explorer.violation_trace(r, inv)
        v = t["violation"]
        INDEX.append((q.name, q.component, v["invariant"], len(t["steps"]), _real(q)))
        lines += [
            f"## `{q.name}` ({q.component}, semantics {q.ref})",
            "",
            q.summary,
            "",
            f"- Invariant broken: `{v['invariant']}` — {v['message']}",
            f"- Minimal counterexample: {len(t['steps'])} step(s) (BFS minimum); quirks on: {', '.join(t['quirks'])}",
            "- All invariants it breaks, with the BFS-minimal depth: "
            + ", ".join(f"`{k}` {d}" for k, d in sorted(bfs[entry["name"]].items(), key=lambda x: (x[1], x[0]))),
            f"- Consequence: {CONSEQUENCE[q.name]}",
            (
                "- Ideal variant: with this quirk off the world runs clean (`kvmodel check --component registry`) "
                "and every invariant is proved by k-induction (`kvmodel prove --component registry`)."
                if suffix == "registry"
                else "- Ideal variant: with this quirk off the world runs clean under Hypothesis and exhaustive "
                f"exploration (`kvmodel check --component {suffix}`), and the spec's invariants are proved by "
                f"1-induction (`kvmodel prove --component {suffix}`)."
            ),
            "",
        ]
        for i, st_ in enumerate(t["steps"]):
            obs = st_["observe"]
            res = f"error `{obs['error']['id']}`" if "error" in obs else f"returns {json.dumps(obs.get('returns'))}"
            lines.append(
                f"{i + 1}. `{st_['op']}({json.dumps(st_['args'], sort_keys=True)})` → {res}; events: {_fmt_events(obs)}"
            )
        finding = {
            "component": t["component"],
            "config": t["config"],
            "quirks": t["quirks"],
            "invariant": v["invariant"],
            "steps": [{"op": st_["op"], "args": st_["args"]} for st_ in t["steps"]],
        }
        lines += ["", "```json", json.dumps(finding, sort_keys=True), "```", ""]
    return lines


def main() -> None:
    bfs = _bfs_minima()
    lines = [
        "# Findings: Dynamo's KV-block management defects as minimal counterexamples",
        "",
        "Generated by `python tools/gen_findings.py` (Hypothesis, seed 0, each counterexample shrunk and then",
        "reduced to 1-minimal by step deletion). Every trace below is replayed by",
        "`stateful_tests/test_findings.py`, which checks it still breaks the named invariant at its last step.",
        "To re-run one: save the JSON block as a trace (see `docs/trace-format.md`) or run",
        "`kvmodel check --component kv_manager` and `kvmodel replay kvmodel-traces/<file>.json`.",
        "",
        "Each quirk is switched on alone (with the quirks it requires) on top of the ideal model, so the trace",
        "shows that defect and nothing else. The faithful model has all of them on at once; `kvmodel check",
        "--faithful` reports whichever it meets first.",
        "",
        "**Reachable from ordinary requests** means the defect also appears when the manager is driven only by",
        "`ActiveSequence` signals the way the scheduler sends them (shared prompts, eviction pressure,",
        "preemption): `stateful_tests/test_sequence.py` finds those four. The other defects need a caller that",
        "breaks the signal contract (double Deref, Destroy of a block it does not hold, a Promote naming an",
        "unknown parent) — still real code paths, and the reason an ideal manager should reject them.",
        "",
        "Confirmation on the real binary: this single-file-era manager (OLDKV, revision R01) has no runnable",
        "Rust counterpart in `ai-dynamo-runtime==1.6.1` (whose mocker is the newer G1 manager), but its event",
        "stream does: random runs with each quirk are converted to KV events and fed to the real `RadixTree`",
        "(`kvmodel.conformance.radix.kv_manager_to_router`, `docs/router.md`). Each finding says what the real",
        "router does with that quirk's events. The ideal variant of every invariant is proved by k-induction",
        "(`kvmodel prove --component kv_manager`, `docs/z3.md`), and BMC finds each violation at the depth",
        "the explorer gives (`kvmodel bmc --faithful`).",
        "",
    ]
    for q in quirks_of("kv_manager") + quirks_of("lru_evictor_wallclock"):
        cfg = {"cleanup_threshold": 50} if q.component.startswith("lru") else {"max_capacity": 4}
        r = machines.run(q.component, config=cfg, quirks=(q.name, *q.requires), target=q.breaks, max_examples=3000)
        assert r.trace is not None and r.violation is not None, q.name
        t = r.trace
        INDEX.append((q.name, q.component, r.violation["invariant"], len(t["steps"]), _real(q)))
        lines += [
            f"## `{q.name}` ({q.component}, semantics {q.ref})",
            "",
            q.summary,
            "",
            f"- Invariant broken: `{r.violation['invariant']}` — {r.violation['message']}",
            f"- Minimal counterexample: {len(t['steps'])} step(s); quirks on: {', '.join(t['quirks'])}",
            f"- Reachable from ordinary requests: {'yes' if q.name in REACHABLE else 'not found (needs API misuse)'}",
            "- All invariants it breaks, with the BFS-minimal depth (explorer; KV manager: capacity 2, 3 ids,"
            " batches of at most 2; LRU: 2 objects; `specs/manifest.json`): "
            + (
                ", ".join(
                    f"`{k}` {v}"
                    for k, v in sorted(
                        next((v for n, v in bfs.items() if n.startswith(f"quirk-{q.name}-")), {}).items(),
                        key=lambda x: x[1],
                    )
                )
                or "LRU component, not explored yet"
            ),
            f"- Consequence: {CONSEQUENCE[q.name]}",
            "- On the real router: "
            + ROUTER.get(q.name, "no effect beyond what ideal runs show (below) in the random end-to-end runs.")
            if q.component == "kv_manager"
            else "- On the real binary: the mocker of ai-dynamo-runtime 1.6.1 no longer has this evictor.",
            "- Ideal variant: with this quirk off the machine runs clean (`kvmodel check --ideal`) and every "
            f"invariant is proved by k-induction (`kvmodel prove --component {q.component}`).",
            "",
        ]
        for i, s in enumerate(t["steps"]):
            obs = s["observe"]
            res = f"error `{obs['error']['id']}`" if "error" in obs else f"returns {json.dumps(obs.get('returns'))}"
            lines.append(f"{i + 1}. `{_fmt_args(s['op'], s['args'])}` → {res}; events: {_fmt_events(obs)}")
        ops = [{"op": s["op"], "args": s["args"]} for s in t["steps"]]
        finding = {
            "component": t["component"],
            "config": t["config"],
            "quirks": t["quirks"],
            "invariant": r.violation["invariant"],
            "steps": ops,
        }
        lines += ["", "```json", json.dumps(finding, sort_keys=True), "```", ""]
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
    lines += _registry_section(bfs)
    lines += _g1_section(bfs)
    lines += _kvbm_section(bfs)
    missing = set(QUIRKS) - set(CONSEQUENCE)
    assert not missing, missing
    cut = lines.index("") + 1  # after the title
    lines[cut:cut] = _index()
    (ROOT / "docs" / "findings.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
