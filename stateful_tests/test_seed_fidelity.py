"""Faithful means the seed's revision: regressions for every divergence from the seeds found by
independent ports (issue "Faithful to the seeds"), the revision catalogue, and the vectors
notation's generic forms."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kvmodel import vectors
from kvmodel.components.registry.system import RegistrySystem
from kvmodel.model.blocks import FullBlock
from kvmodel.model.errors import NativePanic
from kvmodel.model.g1.acquire import G1Acquire, Ready
from kvmodel.model.g1.g1_manager import G1Manager
from kvmodel.model.g1.kvbm_backend import KvbmKvManager
from kvmodel.model.g1.kvbm_logical import KvbmPanic
from kvmodel.model.g1.sequence import ActiveSequence, G1Use
from kvmodel.model.quirks import (
    QUIRKS,
    REVISIONS,
    default_revision,
    faithful,
    quirk_revisions,
    revision,
    revision_of,
    revisions_of,
)
from kvmodel.model.registry import RegistryWorld, TokenBlockFull
from kvmodel.vectors.notation import Matcher, Mismatch, Namespace, Uninterpretable

HERE = Path(__file__).parent
OURS = HERE / "vectors" / "kvmodel-rust-tests.json"
COPY = HERE / "vectors" / "dynamo-test-vectors.json"
SHARED = HERE.parent.parent / "shared" / "vectors" / "dynamo-test-vectors.json"
REG = "kvbm_block_registry"
H0 = 14643705804678351452  # create_sequence().blocks[0].sequence_hash (tokens 1..4, salt 1337)
BLOCK0 = {"hash": H0, "parent": None}


# ----------------------------------------------------------------------------- revisions


def test_every_quirk_belongs_to_a_revision_and_each_component_has_one_seed() -> None:
    for q in QUIRKS.values():
        assert quirk_revisions(q.name), q.name
    for comp in {q.component for q in QUIRKS.values()}:
        seeds = [r for r in revisions_of(comp) if r.default]
        assert len(seeds) == 1, comp
        assert faithful(comp) == seeds[0].quirks
        assert revision_of(comp, faithful(comp)) == seeds[0].name
    for (comp, name), r in REVISIONS.items():
        assert r.quirks <= {q.name for q in QUIRKS.values() if q.component == comp}, (comp, name)


def test_the_registrys_faithful_revision_is_the_seed_and_403dd259_is_named() -> None:
    d = default_revision(REG)
    assert d is not None and d.name == "1.0.2"
    assert "cleanup_erases_live_entry" not in faithful(REG)
    assert revision(REG, "403dd259").quirks == faithful(REG) | {"cleanup_erases_live_entry"}
    assert "global_registry_untiered" not in revision(REG, "e3d00b899").quirks
    with pytest.raises(ValueError, match="known"):
        revision(REG, "nope")


def test_g1_native_faithful_is_r05_and_366ff0ef_is_named() -> None:
    assert "promote_tail_before_finalize" not in faithful("g1_native")
    assert "promote_tail_before_finalize" in revision("g1_native", "366ff0ef").quirks


# ----------------------------------------------------------------------------- the registry, seed 004


def _eight_steps(quirks: frozenset[str]) -> tuple[Any, bool]:
    """The 8-step divergence of the issue: two states for one hash, register, drop, register
    again (Ok(None)), a third state, drain, register the third."""
    s = RegistrySystem({"registries": [["P", "Device"]]}, quirks)
    for name in ("s1", "s2"):
        assert s.step("state_from_reset_apply_token_block", {"as": name, "block": BLOCK0}).error is None
    assert s.step("register_block", {"registry": "P", "state": "s1", "as": "ph"}).result == "ph"
    assert s.step("drop", {"value": "s1"}).error is None
    assert s.step("register_block", {"registry": "P", "state": "s2"}).result is None  # Ok(None)
    assert s.step("state_from_reset_apply_token_block", {"as": "s3", "block": BLOCK0}).error is None
    assert s.step("drain", {"registry": "P"}).result == H0
    registered = s.step("is_registered", {"registry": "P", "hash": H0}).result
    third = s.step("register_block", {"registry": "P", "state": "s3"})
    return third, registered


def test_seed_unregister_task_keeps_the_live_entry() -> None:
    third, registered = _eight_steps(faithful(REG))
    assert registered is True
    assert third.error is not None and third.error.id == "Block already registered"


def test_403dd259_unregister_task_erases_the_live_entry() -> None:
    third, registered = _eight_steps(revision(REG, "403dd259").quirks)
    assert registered is False
    assert third.error is None and third.result is None  # Ok(None): a second live handle


def test_add_tokens_on_a_full_partial_returns_them_in_every_mode() -> None:
    for quirks in (faithful(REG), frozenset(), revision(REG, "403dd259").quirks):
        m = RegistryWorld(quirks)
        m.new_state("s")
        m.initialize_sequence("s", 2, 0)
        assert m.add_tokens("s", [1, 2, 3]) == [3]
        assert m.add_tokens("s", [4]) == [4]  # full: every token comes back, no Full error
        assert m.add_tokens("s", []) == []
        with pytest.raises(TokenBlockFull, match="TokenBlock is full"):
            m.add_token("s", 5)
        assert m.state_query("s", "len") == 2 and m.state_query("s", "remaining") == 0
        m.pop_token("s")
        assert m.state_query("s", "tokens") == [1]


def test_state_errors_carry_the_rust_display_text() -> None:
    m = RegistryWorld(faithful(REG))
    m.new_state("s")
    with pytest.raises(Exception, match="Block state is invalid: Block is not partial"):
        m.add_tokens("s", [1])
    m.initialize_sequence("s", 0, 0)  # page_size 0 is accepted, as `page_size as u32`
    m.commit("s")  # zero tokens of zero: complete
    assert m.state_query("s", "is_complete") is True
    with pytest.raises(Exception, match="Block state is invalid: Block is not reset"):
        m.initialize_sequence("s", 4, 0)


def test_event_hashes_exist_only_in_the_tiered_revision() -> None:
    s = RegistrySystem({"registries": [["P", "Device"]]}, faithful(REG))
    s.step("state_from_reset_apply_token_block", {"as": "s", "block": BLOCK0})
    out = s.step("register_block", {"registry": "P", "state": "s", "event_hashes": [1, None]})
    assert out.error is not None and "tiered" in out.error.detail
    s = RegistrySystem({"registries": [["P", "Device"]]}, revision(REG, "e3d00b899").quirks)
    s.step("state_from_reset_apply_token_block", {"as": "s", "block": BLOCK0})
    assert s.step("register_block", {"registry": "P", "state": "s", "event_hashes": [1, None]}).error is None


# ----------------------------------------------------------------------------- G1: validate_plh_alignment


def test_plh_alignment_is_checked_on_the_native_decode_path() -> None:
    g = G1Manager(4, 2, backend="native", quirks=faithful("g1_native"))
    r = g.reserve_decode_blocks(1)
    assert not isinstance(r, G1Acquire)
    bad = G1Use((FullBlock(7),), (), ())  # one full block, no PLH
    with pytest.raises(NativePanic, match="PLHs must align with full blocks"):
        g.process_decode_signal_for_request(0, bad, r)
    with pytest.raises(NativePanic, match="PLHs must align with full blocks"):
        g.process_for_request(0, bad, 0)


def test_plh_alignment_is_checked_for_the_destination_layout() -> None:
    class Misaligned(ActiveSequence):
        def prepare_allocation(self, cum: int) -> G1Use | None:
            sig = super().prepare_allocation(cum)
            assert sig is not None
            return G1Use(sig.blocks, sig.local_hashes, (), sig.token_ids, sig.parent)  # its PLHs dropped

    g = G1Manager(4, 2, backend="native", quirks=faithful("g1_native"))
    with pytest.raises(NativePanic, match="PLHs must align with full blocks"):
        g.reserve_destination_at(0, Misaligned([1, 2, 3], 4, 2, name="S"))


# ----------------------------------------------------------------------------- KVBM


@pytest.mark.parametrize(
    "args,message",
    [
        ((0, True, 0, 0), "one atomic G1 reservation retried more than once"),  # first of four, even with zero slots
        ((0, False, 0, 0), "RetryNow released zero G1 slots"),
        ((1, False, 1, 1), "is not newer than attempted generation"),
        ((0, False, 2, 1), "RetryNow generation does not match current G1 capacity generation"),
    ],
)
def test_retry_witness_asserts_in_rusts_order(args: tuple[int, bool, int, int], message: str) -> None:
    m = KvbmKvManager(1, 4, quirks=faithful("g1_kvbm"))
    m.capacity_generation = 1
    with pytest.raises(KvbmPanic, match=message):
        m.validate_retry_witness(*args)


def test_chunked_prefill_publishes_one_stored_per_chunk() -> None:
    s = ActiveSequence(list(range(512)), 100, 64, name="S")
    m = KvbmKvManager(256, 64, quirks=faithful("g1_kvbm"))
    for cum in (256, 512):
        sig = s.prepare_allocation(cum)
        assert sig is not None and m.process(sig) == Ready(4)
        s.commit_allocation(cum)
    ev = [p.event.data for p in m.drain_events()]
    assert len(ev) == 2 and ev[0].parent_hash is None  # type: ignore[union-attr]
    assert ev[1].parent_hash == s.seq_hashes[3]  # type: ignore[union-attr]


def test_partial_parent_panics_after_batch_registration_faithfully() -> None:
    from kvmodel.model.blocks import PartialBlock

    for quirks, inactive in ((faithful("g1_kvbm"), 2), (frozenset(), 0)):
        m = KvbmKvManager(4, 4, quirks=quirks)
        sig = G1Use((FullBlock(2), FullBlock(3)), (), ((200, None, 0), (300, None, 0)), None, PartialBlock("p"))
        with pytest.raises(KvbmPanic, match="parent block cannot be partial"):
            m.process(sig)
        assert m.num_inactive_blocks() == inactive and m.num_active_blocks() == 0 and not m.drain_events()


# ----------------------------------------------------------------------------- vectors


def test_the_projects_own_rust_test_vectors_pass() -> None:
    results = vectors.run_file(OURS)
    assert len(results) >= 16
    bad = [r.line() for r in results if r.status != "PASS"]
    assert not bad, bad


def test_the_registry_vectors_pin_their_revision() -> None:
    vs = {v["name"]: v for v in vectors.load_file(OURS)}
    keep, erase = vs["unregister_task_keeps_a_live_entry"], vs["unregister_task_erases_a_live_entry"]
    assert vectors.run_vector(keep).revision == "1.0.2"
    assert vectors.run_vector(erase).revision == "403dd259"
    assert vectors.run_vector(keep, revision_name="403dd259").status == "FAIL"
    assert vectors.run_vector(erase, revision_name="1.0.2").status == "FAIL"


def test_the_clone_carries_the_shared_vectors() -> None:
    assert COPY.exists()
    if SHARED.exists():
        assert json.loads(COPY.read_text()) == json.loads(SHARED.read_text())


def _ns(values: dict[str, Any], **kw: Any) -> Namespace:
    return Namespace(values, 4, **kw)


@pytest.mark.parametrize(
    "key,expected,ok",
    [
        ("num_active_blocks", 3, True),
        ("num_active_blocks", 4, False),
        ("active_full[30].block_id", 1, True),
        ("active_full_len", 2, True),
        ("active_full_contains_30", True, True),
        ("active_full_contains_31", True, False),
        ("events_empty", True, True),
        ("registration_dedup", 2, True),  # a unique field below the top
        ("refs_at_least", 5, True),
        ("refs_at_least", 7, False),
        ("removed_in", [10, 11], True),
        ("removed_in", [11], False),
        ("removed_as_set", [10], True),
        ("num_active_blocks == refs", False, True),
        ("num_active_blocks < refs", True, True),
        ("active_full_exact", {"30": {"block_id": 1}, "10": {"block_id": 0}}, True),
        ("active_full_exact", {"30": {"block_id": 1}}, False),
        ("active_full", {"30": {"block_id": 1}}, True),  # only the listed keys
        ("num_active_blocks_mod_2", 1, True),
        ("S.h[1]", 22, True),
    ],
)
def test_notation_forms(key: str, expected: Any, ok: bool) -> None:
    ns = _ns(
        {
            "num_active_blocks": 3,
            "refs": 6,
            "active_full": {"30": {"block_id": 1}, "10": {"block_id": 0}},
            "events": [],
            "removed": [10],
            "block_manager": {"metrics": {"snapshot": {"registration_dedup": 2}}},
            "S": {"h": [11, 22]},
        }
    )
    if ok:
        ns.check(key, expected, Matcher(), strict_text=True)
    else:
        with pytest.raises(Mismatch):
            ns.check(key, expected, Matcher(), strict_text=True)


def test_notation_unchanged_and_history_forms() -> None:
    ns = _ns({"available": 3}, before={"available": 3}, history={"insert": {"counters": {"1": 5}}})
    ns.check("available_unchanged", True, Matcher(), strict_text=True)
    ns.check("counters_after_inserts", {"1": 5}, Matcher(), strict_text=True)
    with pytest.raises(Mismatch):
        _ns({"available": 2}, before={"available": 3}).check("available_unchanged", True, Matcher(), True)


def test_notation_never_passes_what_it_cannot_read() -> None:
    with pytest.raises(Uninterpretable):
        _ns({"a": 1}).check("flux_capacitance", 3, Matcher(), strict_text=True)
    with pytest.raises(Uninterpretable):
        _ns({"a": 1}).check("a.b.c", 3, Matcher(), strict_text=True)


def test_a_result_value_matches_by_variant() -> None:
    m = Matcher()
    m.match("Err(BlockAlreadyRegistered)", "Err(BlockAlreadyRegistered(123))", "r")
    m.match("Err(BlockRegistrationError::InvalidState)", 'Err(InvalidState("Block is in Reset state"))', "r")
    with pytest.raises(Mismatch):
        m.match("Ok(None)", "Ok(Some(publish_handle))", "r")


# -- vllm_backend.rs (request-table revision that the seed's g1_manager.rs calls): found by
#    reading commit_layout / validate_* / process_promote beside the model


def _native(cap: int = 4) -> Any:
    from kvmodel.model.g1.vllm_backend import VllmKvManager

    return VllmKvManager(cap, 4, quirks=faithful("g1_native"))


def _stored(m: Any) -> list[dict[str, Any]]:
    return [p.to_json()["data"]["stored"] for p in m.drain_events() if "stored" in p.to_json()["data"]]


def test_native_fresh_block_takes_its_local_hash_counted_over_the_prefix() -> None:
    """``commit_layout``'s ``full_idx`` counts every full block, the reused prefix's included: the
    fresh block after a reused prefix publishes ``local_hashes[1]``, not ``local_hashes[0]``."""
    from kvmodel.model.g1.vllm_backend import VllmBlockLayout

    m = _native()
    m.use_for_request(1, VllmBlockLayout([FullBlock(7)], [107], None, None))
    m.finalize_computed_prefix(1, 0, 4)
    assert [b["tokens_hash"] for s in _stored(m) for b in s["blocks"]] == [107]
    assert m.use_for_request(
        2, VllmBlockLayout([FullBlock(7), FullBlock(8)], [107, 108], [[1] * 4, [2] * 4], None), 1
    ) == Ready(2)
    m.finalize_computed_prefix(2, 0, 8)
    ev = [p.to_json() for p in m.drain_events()]
    assert [(e["data"]["stored"]["parent_hash"], e["data"]["stored"]["blocks"][0]["tokens_hash"]) for e in ev] == [
        (7, 108)
    ]
    assert ev[0]["block_token_ids"] == [[2] * 4]


def test_native_destination_partial_splits_the_published_run() -> None:
    """A destination activation collects one store slot per block: a partial is an empty slot,
    so the full blocks on either side of it are published as two Stored events."""
    from kvmodel.model.blocks import PartialBlock
    from kvmodel.model.g1.vllm_backend import VllmBlockLayout

    m = _native()
    res = m.reserve_destination(1, VllmBlockLayout([FullBlock(7), PartialBlock("p"), FullBlock(8)], [], None, None), 12)
    m.activate_destination(res)
    assert [(s["parent_hash"], [b["block_hash"] for b in s["blocks"]]) for s in _stored(m)] == [(None, [7]), (7, [8])]


def test_native_destination_revalidates_partials_at_activation() -> None:
    """``activate_destination`` runs ``validate_fresh_partials`` again: a partial UUID another
    request took since the reservation panics, and nothing is committed."""
    from kvmodel.model.blocks import PartialBlock
    from kvmodel.model.g1.vllm_backend import VllmBlockLayout

    m = _native()
    res = m.reserve_destination(1, VllmBlockLayout([PartialBlock("p")], [], None, None), 2)
    m.use_for_request(2, VllmBlockLayout([PartialBlock("p")], [], None, None))
    before = m.snapshot()
    with pytest.raises(NativePanic) as e:
        m.activate_destination(res)
    assert e.value.id == "partial block {} is already allocated"
    assert str(e.value.detail) == "partial block p is already allocated"
    assert m.snapshot() == before


def test_native_promote_without_a_table_names_the_request() -> None:
    """``process_promote``: no table is ``request {id} owns no block table``; only an existing,
    empty one would be ``Promote requires a request-owned partial tail``."""
    m = _native()
    with pytest.raises(NativePanic) as e:
        m.promote_for_request(3, "p", 9, None)
    assert e.value.id == "request {} owns no block table"


@pytest.mark.parametrize(
    ("rust", "model_id"),
    [
        ("request 0000-00ff owns no block table", "request {} owns no block table"),
        ("partial block 9b1c is already allocated", "partial block {} is already allocated"),
        (
            "assertion `left == right` failed: full-block Deref mismatch\n  left: 1\n right: 2",
            "full-block Deref mismatch",
        ),
        (
            "assertion failed: reusable_prefix_blocks <= blocks.len()",
            "assertion failed: reusable_prefix_blocks <= blocks.len()",
        ),
        (
            "local hashes must be empty or align with full blocks",
            "local hashes must be empty or align with full blocks",
        ),
        ("assertion `left == right` failed\n  left: 1\n right: 0", "assertion `left == right` failed"),
    ],
)
def test_rust_panic_texts_match_the_model_ids(rust: str, model_id: str) -> None:
    """A Rust panic message, runtime data and std's assertion prefix included, names the model's
    rejection whose id is the format string; a different message does not."""
    from kvmodel.api import same_error

    assert same_error({"id": model_id, "type": "NativePanic"}, rust)
    assert not same_error({"id": model_id, "type": "NativePanic"}, "request owns a block table")
    assert not same_error({"id": model_id, "type": "NativePanic"}, "thread panicked: " + rust)
    assert not same_error({"id": model_id, "type": "NativePanic"}, rust[: len(rust) // 2])


def test_native_panic_ids_are_in_the_contract() -> None:
    """Every Rust text the native backend raises is in the g1_native error catalogue."""
    from kvmodel import contracts

    ids = set(contracts.error_catalogue("g1_native").values())
    for want in (
        "request {} owns no block table",
        "partial block {} is already allocated",
        "token IDs must align with full blocks",
        "assertion failed: !matches!(parent, Some(UniqueBlock::PartialBlock(_)))",
        "assertion failed: self.enable_prefix_caching || reusable_prefix_blocks == 0",
    ):
        assert want in ids


@pytest.mark.parametrize("component", ["g1_native", "g1_kvbm"])
def test_the_g1_facade_answers_its_rate_and_rank_queries(component: str) -> None:
    """``G1Manager::get_active_perc`` (the backend's ``num_active_blocks as f64 / max_capacity
    as f64``) and ``dp_rank`` (seed 002), for both backends, after a request took blocks."""
    from kvmodel.systems import make_system

    s = make_system(component, {"max_capacity": 4, "dp_rank": 3}, [])
    args = {"owner": 0, "tokens": [1, 2, 3, 4, 5]}
    if component == "g1_kvbm":
        args["caching"] = True
    s.step("new_request", args)
    s.step("allocate", {"owner": 0, **({"reuse": False} if component == "g1_native" else {})})
    g = s.model  # type: ignore[attr-defined]
    assert g.num_active_blocks() > 0
    assert g.get_active_perc() == g.num_active_blocks() / 4
    assert g.dp_rank() == 3


LABEL = re.compile(r"\bR(0[0-9]|1[0-9])\b")


def test_every_component_with_a_model_names_the_commit_of_each_file_its_faithful_model_follows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 58: ``kvmodel quirks --json`` lists, per revision, every followed Rust file pinned to a
    Dynamo commit or a crate version; the faithful revision of every component that has a
    model carries them; no reference-material label (``R05``) is printed."""
    from kvmodel import components
    from kvmodel.cli import main

    assert main(["quirks", "--json"]) == 0
    out = capsys.readouterr().out
    assert not LABEL.search(out)
    report = json.loads(out)
    seeds = {r["component"]: r for r in report["revisions"] if r["default"]}
    for c in components.registered():
        if c.system is None and c.conform == ():
            continue
        if c.name not in seeds:
            continue
        assert seeds[c.name]["files"], c.name
    assert {"kv_manager", "g1_native", "g1_kvbm", "kvbm_block_registry"} <= set(seeds)
    for r in report["revisions"]:
        for f in r["files"]:
            assert f["path"] and (f["commit"] or f["crate"]), (r["name"], f)
            assert (f["commit"] is None) != (f["crate"] is None)
            if f["commit"]:
                assert re.fullmatch(r"[0-9a-f]{8,40}", f["commit"]), f
    assert main(["quirks"]) == 0
    text = capsys.readouterr().out
    assert not LABEL.search(text) and "follows lib/mocker/src/kv_manager/g1_manager.rs at commit 6125e8260" in text


def test_old_reference_labels_still_name_the_revision_that_replaced_them() -> None:
    assert revision("g1_native", "R05") is revision("g1_native", "6125e8260")
    assert revision(REG, "R13") is revision(REG, "e3d00b899")
    with pytest.raises(ValueError, match="unknown revision"):
        revision("kv_manager", "R05")


def test_user_documents_carry_no_reference_labels() -> None:
    root = HERE.parent
    for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        hits = [ln for ln in p.read_text().splitlines() if LABEL.search(ln)]
        assert not hits, (p.name, hits[:3])
