"""The router's radix tree: event codec, model behaviour, and conformance with the real RadixTree."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvmodel import cli
from kvmodel.conformance import radix
from kvmodel.model.blocks import Remove, Store
from kvmodel.model.errors import InvalidInput
from kvmodel.model.events import KvCacheEvent, Stored, StoredBlock, event_from_json, from_responses
from kvmodel.model.quirks import faithful, quirks_of
from kvmodel.model.router import (
    BlockNotFound,
    CompressedRadixTree,
    InvalidBlockSequence,
    ParentBlockNotFound,
    make_tree,
)

from .conftest import require


def stored(parent: int | None, blocks: list[tuple[int, int]], w: int = 0, dp: int = 0) -> dict[str, Any]:
    data = {"stored": {"parent_hash": parent, "blocks": [{"block_hash": b, "tokens_hash": t} for b, t in blocks]}}
    return {"op": "apply_event", "worker_id": w, "event": {"event_id": 0, "data": data, "dp_rank": dp}}


def removed(hashes: list[int], w: int = 0, dp: int = 0) -> dict[str, Any]:
    data = {"removed": {"block_hashes": hashes}}
    return {"op": "apply_event", "worker_id": w, "event": {"event_id": 0, "data": data, "dp_rank": dp}}


def cleared(w: int = 0, dp: int = 0) -> dict[str, Any]:
    return {"op": "apply_event", "worker_id": w, "event": {"event_id": 0, "data": "cleared", "dp_rank": dp}}


# --------------------------------------------------------------------------- codec


def test_codec_round_trip_and_rejections() -> None:
    ev = KvCacheEvent(7, Stored(5, (StoredBlock(101, 11),)), 1)
    assert event_from_json(json.loads(ev.to_bytes())) == ev
    assert event_from_json({"event_id": 1, "data": {"cleared": None}}).dp_rank == 0
    for bad, why in [
        ({"data": "cleared"}, "event_id"),
        ({"event_id": 1}, "data"),
        ({"event_id": 1, "data": {"Stored": {}}}, "unknown variant"),
        ({"event_id": -1, "data": "cleared"}, "u64"),
        ({"event_id": 1, "data": {"stored": {"blocks": [{"block_hash": 1}]}}}, "tokens_hash"),
    ]:
        with pytest.raises(InvalidInput, match=why):
            event_from_json(bad)


def test_kv_manager_responses_become_events_in_order() -> None:
    evs = from_responses([Remove((3,)), Store((1, 2), None), Store((4,), 2)], lambda h: h + 10, first_event_id=5)
    assert [e.event_id for e in evs] == [5, 6, 7]
    assert evs[1].to_json()["data"]["stored"]["blocks"][1] == {
        "block_hash": 2,
        "tokens_hash": 12,
        "mm_extra_info": None,
    }
    assert evs[2].to_json()["data"]["stored"]["parent_hash"] == 2


# --------------------------------------------------------------------------- the odd parts, on the model


def _run(ops: list[dict[str, Any]], revision: str = "1.6.1") -> tuple[list[str | None], radix.ModelRadixTree]:
    m = radix.ModelRadixTree(revision)  # type: ignore[arg-type]
    m.reset()
    return [m.apply(o) for o in ops], m


def test_unknown_parent_rejected_whole_even_if_known_to_another_worker() -> None:
    errs, m = _run([stored(None, [(100, 1)], w=1), stored(100, [(200, 2)], w=2), stored(999, [(300, 3)], w=1)])
    assert errs == [None, "ParentBlockNotFound", "ParentBlockNotFound"]
    assert m.observe([])["content"] == {"1:0": [[None, 100, 1]]}
    assert (2, 0) in m.tree.lookup  # the failed event still created the worker's entry


def test_unknown_remove_raises_but_removes_the_known_ones() -> None:
    errs, m = _run([stored(None, [(100, 1), (101, 2)]), removed([555, 101])])
    assert errs == [None, "BlockNotFound"]
    assert m.observe([])["content"] == {"0:0": [[None, 100, 1]]}


def test_removing_a_block_drops_the_workers_descendants() -> None:
    errs, m = _run([stored(None, [(100, 1), (101, 2), (102, 3)]), stored(101, [(110, 9)]), removed([101])])
    assert errs == [None, None, None]
    assert m.observe([])["content"] == {"0:0": [[None, 100, 1]]}
    # Stored under a vanished descendant: accepted, invisible; its Removed succeeds once.
    assert m.apply(stored(102, [(103, 4)])) is None
    assert m.observe([[1, 2, 3, 4]])["scores"] == [{"0:0": 1}]
    assert [m.apply(removed([102])), m.apply(removed([102]))] == [None, "BlockNotFound"]


def test_shared_ancestor_removed_by_one_worker_leaves_stale_descendants() -> None:
    errs, m = _run(
        [
            stored(None, [(100, 1), (101, 2)], w=1),
            stored(100, [(110, 5)], w=1),
            stored(None, [(100, 1)], w=2),
            removed([100], w=1),
        ]
    )
    assert errs == [None] * 4
    obs = m.observe([[1, 2]])
    assert [100, 101, 2] in obs["content"]["1:0"]  # still listed, under a parent it no longer has
    assert obs["scores"] == [{"2:0": 1}]  # and it gets no score


def test_cleared_is_per_rank_and_self_parent_is_rejected_up_front() -> None:
    errs, m = _run([stored(None, [(100, 1)], dp=0), stored(None, [(100, 1)], dp=1), cleared(dp=0)])
    assert m.observe([])["content"] == {"0:1": [[None, 100, 1]]}
    errs, m = _run([stored(None, [(100, 1)]), stored(100, [(300, 3), (100, 1)])])
    assert errs == [None, "InvalidBlockSequence"] and m.observe([])["content"] == {"0:0": [[None, 100, 1]]}
    # The older revision inserts the self edge first (vector test_radix_tree_apply_event_errors).
    old = make_tree("4276866")
    old.apply_event(0, event_from_json(stored(None, [(100, 1)])["event"]))
    with pytest.raises(InvalidBlockSequence):
        old.apply_event(0, event_from_json(stored(100, [(100, 1), (200, 2)])["event"]))


def test_compression_is_observable() -> None:
    """A chain stored over several events is one edge; removing its middle uncovers the tail."""
    t = CompressedRadixTree()
    for ev in (stored(None, [(100, 1)]), stored(100, [(101, 2)]), stored(101, [(102, 3)])):
        t.apply_event(0, event_from_json(ev["event"]))
    assert len(t.nodes) == 2  # the root and one edge of three blocks
    t.apply_event(0, event_from_json(removed([101])["event"]))
    assert t.lookup[(0, 0)] == {100: 1}  # 102 left the lookup with 101
    with pytest.raises(BlockNotFound):
        t.apply_event(0, event_from_json(removed([102])["event"]))
    with pytest.raises(ParentBlockNotFound):
        t.apply_event(0, event_from_json(stored(102, [(103, 4)])["event"]))


# --------------------------------------------------------------------------- against the real RadixTree


@pytest.fixture(scope="module")
def real() -> radix.RealRadixTree:
    why = radix.real_available()
    require(why is None, f"real RadixTree not usable: {why}")
    return radix.RealRadixTree()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_differential_against_the_real_radix_tree(real: radix.RealRadixTree, seed: int) -> None:
    rep = radix.run(radix.ModelRadixTree(), real, workloads=300, seed=seed)
    assert rep.divergences == 0, rep.to_json()
    assert rep.workloads == 300 and rep.extra["events"] > 1000


def test_the_differential_runner_finds_and_shrinks_a_divergence(real: radix.RealRadixTree) -> None:
    """The vectors' revision inserts a self edge the 1.6.1 binary rejects up front: found,
    shrunk to one operation."""
    rep = radix.run(radix.ModelRadixTree("4276866"), real, workloads=300, seed=0)
    assert rep.divergences == 1 and rep.counterexample is not None
    assert len(rep.counterexample) <= 2
    assert radix.differential(radix.ModelRadixTree("4276866"), real, rep.counterexample) is not None


class _NoPruning(radix.ModelRadixTree):
    """A plausible modelling slip: descendants survive when their node loses every worker."""

    def apply(self, op: dict[str, Any]) -> str | None:
        tree = self.tree
        assert isinstance(tree, CompressedRadixTree)
        saved = {i: dict(n.children) for i, n in enumerate(tree.nodes)}
        err = super().apply(op)
        for i, ch in saved.items():
            if i < len(tree.nodes) and not tree.nodes[i].children and ch and op["op"] == "apply_event":
                tree.nodes[i].children = ch
        return err


def test_a_seeded_model_bug_is_caught(real: radix.RealRadixTree) -> None:
    ops = [stored(None, [(100, 1), (101, 2), (102, 3)]), stored(101, [(110, 9)]), removed([101])]
    assert radix.differential(radix.ModelRadixTree(), real, ops) is None
    d = radix.differential(_NoPruning(), real, ops)
    assert d is not None and d.step == 2 and d.what == "content"


_MODES = [("ideal", ()), ("faithful", tuple(sorted(faithful("kv_manager"))))] + [
    (q.name, (q.name, *q.requires)) for q in quirks_of("kv_manager")
]
# Which quirks make the manager Store a hash the router already holds (a second node that
# outlives the hash's Removed), and which make it send self-parented Stores.
_DUPLICATES = {"faithful", "promote_always_stores", "destroy_mutates_before_panic"}
_SELF_PARENT = {"faithful", "store_parent_last_hit", "partial_parent_panic_after_mutation", "promote_parent_unchecked"}


@pytest.mark.parametrize("name,quirks", _MODES, ids=[m[0] for m in _MODES])
def test_kv_manager_streams_in_the_real_router(real: radix.RealRadixTree, name: str, quirks: tuple[str, ...]) -> None:
    """Model tree and real tree agree on every event; every difference between the real
    tree and the manager's router view is explained: orphaned children (ideal behaviour)
    or, with the quirks that re-Store a held hash, a duplicate node."""
    dup = selfp = 0
    for seed in range(2):
        e = radix.kv_manager_to_router(list(quirks), seed=seed, steps=300, real=real)
        assert e.model_vs_real is None, e.to_json()
        assert e.unexplained == [], e.to_json()
        assert e.events > 10
        dup += e.duplicated
        selfp += e.router_errors.get("InvalidBlockSequence", 0)
    assert (dup > 0) <= (name in _DUPLICATES)
    assert (selfp > 0) <= (name in _SELF_PARENT)
    if name == "faithful":
        assert dup > 0 and selfp > 0


def test_ideal_kv_manager_orphans_children_in_the_real_router(real: radix.RealRadixTree) -> None:
    """Finding: the ideal manager may Remove a parent while its child stays resident (here
    Destroy of the parent); the real router then drops the child, so its content differs
    from the manager's router view although every event is individually valid."""
    from kvmodel.components.kv_manager.system import KvManagerSystem

    sys_ = KvManagerSystem({"max_capacity": 4}, [])
    real.reset()
    for sig in ({"Use": [{"F": 0}, {"F": 1}]}, {"Destroy": [{"F": 0}]}):
        out = sys_.step("process", sig)
        assert out.error is None and not out.violations
        for ev in from_responses(out.events, lambda h: h + 1):
            assert real.apply({"op": "apply_event", "worker_id": 0, "event": ev.to_json()}) is None
    assert sys_.monitor.view == {1}
    assert real.content() == {}


# --------------------------------------------------------------------------- CLI


def test_cli_conform(real: radix.RealRadixTree, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["conform", "--target", "dynamo-radix-tree", "--workloads", "100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["divergences"] == 0 and out["workloads"] == 100 and out["events"] > 0 and out["seconds"] > 0
    assert cli.main(["conform", "--target", "nope"]) == 2
