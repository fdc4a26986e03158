"""The router's indexer as a first-class component (issue 59): its structural invariants hold on
the ideal index and each tree revision breaks them; invariant mode passes a correct tree of another
revision and catches a planted defect of each invariant's kind; the real RadixTree's dump is judged
by the invariants after every step, and the panic the explorer found is the real binary's."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from kvmodel import workloads
from kvmodel.api import ModelAdapter, check_implementation
from kvmodel.components.router.space import RouterSpace
from kvmodel.conformance import radix
from kvmodel.invariants import StepContext, for_component
from kvmodel.invariants.router import RouterMonitor, TreeView
from kvmodel.systems import make_system

from .conftest import ROOT, require
from .test_api import _example

TreeRouter = _example("my_router").MyRouterAdapter  # examples/my_router.py

FAST = {"coverage": False, "workloads": 150}
C = "kv_router_radix_tree"


def ev(worker: int, data: Any, rank: int = 0) -> tuple[str, dict[str, Any]]:
    return ("apply_event", {"worker_id": worker, "event": {"event_id": 0, "data": data, "dp_rank": rank}})


def stored(parent: int | None, *hashes: int) -> dict[str, Any]:
    return {"stored": {"parent_hash": parent, "blocks": [{"block_hash": h, "tokens_hash": 10 + h} for h in hashes]}}


# the explorer's find on the 1.6.1 tree: these four events panic the real tree's task
PANIC = [
    ev(0, stored(None, 1, 1)),
    ev(0, stored(None, 2, 1)),
    ev(0, "cleared"),
    ev(0, stored(None, 1, 2), rank=1),
]


@pytest.mark.parametrize("snapshot", [False, True])
def test_a_correct_tree_of_another_revision_passes_invariant_mode_and_fails_equality(snapshot: bool) -> None:
    rep = check_implementation(TreeRouter(snapshot=snapshot), C, check="invariants", **FAST)
    assert rep.verdict == "pass" and rep.steps > 2000, rep.explain()
    inv = rep.extra["invariants"]
    structural = {"router.lookup_matches_content", "router.no_dead_nodes"}
    assert set(inv["checked"]) >= {"router.rejections_as_documented", "router.content_matches_stream"}
    if snapshot:
        assert not inv["not_checked"] and structural <= set(inv["checked"])
    else:  # without a state the tree's own structure is not shown, and the report says so
        assert set(inv["not_checked"]) == structural
        assert all("state.lookup" in why for why in inv["not_checked"].values())
    for other in ({"quirks": "faithful"}, {"revision": "4276866"}):
        eq = check_implementation(TreeRouter(snapshot=snapshot), C, **other, **FAST)  # type: ignore[arg-type]
        assert eq.verdict == "violation" and eq.divergence is not None, other


@pytest.mark.parametrize(
    ("bug", "invariant"),
    [
        ("remove_stops_at_unknown", "router.content_matches_stream"),
        ("self_parent_accepted", "router.rejections_as_documented"),
        ("score_plus_one", "router.scores_longest_chain"),
        ("drop_subtree", "router.content_matches_stream"),
        ("stale_lookup", "router.lookup_matches_content"),
        ("no_prune", "router.no_dead_nodes"),
    ],
)
def test_a_planted_defect_of_each_kind_is_caught_and_shrunk(bug: str, invariant: str) -> None:
    rep = check_implementation(TreeRouter(bug, snapshot=True), C, check="invariants", **FAST)
    d = rep.divergence
    assert rep.verdict == "violation" and d is not None and d.what == "invariant", rep.explain()
    assert d.model["invariant"] == invariant
    assert rep.ops is not None and len(rep.ops) <= 4 and d.step == len(rep.ops) - 1


def test_the_real_revision_fails_invariant_mode_unless_its_quirk_is_accepted() -> None:
    bad = check_implementation(ModelAdapter(C, quirks="faithful", snapshot=True), C, check="invariants", **FAST)
    assert bad.verdict == "violation" and bad.divergence is not None and bad.divergence.what == "invariant"
    ok = check_implementation(
        ModelAdapter(C, quirks="faithful", snapshot=True), C, check="invariants", accept="faithful", **FAST
    )
    assert ok.verdict == "pass", ok.explain()
    known = ok.extra["invariants"]["known"]
    assert set(known) == {i.name for i in for_component(C)}
    assert all(v == ["compressed_tree_1_6_1"] for v in known.values())


def test_the_ideal_index_rejects_self_ancestry_and_removes_the_known_hashes_of_a_partial_removed() -> None:
    s = make_system(C, None, [])
    assert s.step(*ev(0, stored(None, 1, 2))).error is None
    assert s.step(*ev(0, stored(2, 1))).error.id == "InvalidBlockSequence"  # type: ignore[union-attr]
    assert s.step(*ev(0, stored(None, 3, 3))).error.id == "InvalidBlockSequence"  # type: ignore[union-attr]
    out = s.step(*ev(0, {"removed": {"block_hashes": [1, 9]}}))
    assert out.error is not None and out.error.id == "BlockNotFound" and not out.violations
    assert s.step("dump_tree", {}).result == [[0, 0, 1, 2, 12]]  # 2 stays, under a parent it lost
    assert s.step("find_matches", {"local_hashes": [11, 12]}).result == []


def test_a_rejection_that_changed_the_state_does_not_end_a_router_workload() -> None:
    """Rust's indexer returns an event's error and goes on (a panic would end the workload)."""
    sp = RouterSpace(workers=1, hashes=2, max_nodes=100)
    s = make_system(C, None, [])
    s.step(*ev(0, stored(None, 1)))
    partial = next(
        m
        for m in sp.moves()
        if m.op == "apply_event" and m.to_json()["event"]["data"] == {"removed": {"block_hashes": [1, 2]}}
    )
    got = workloads._instance(sp, workloads.Group("r", (partial,)), s, 0, False)
    assert got is not None and got[2] is False and got[1].key() != s.key()


def test_the_acyclic_and_lookup_invariants_read_a_shown_tree() -> None:
    by = {i.name: i for i in for_component(C)}
    mon = RouterMonitor()
    cyc = TreeView({(0, 0): ((2, 1, 11), (1, 2, 12))}, {(0, 0): (1, 2)}, 0)
    ctx = StepContext(cyc, mon, "dump_tree", None)
    assert "its own ancestor" in (by["router.acyclic"].check(ctx) or "")
    stale = TreeView({(0, 0): ((None, 1, 11),)}, {(0, 0): (1, 2)}, 0)
    assert "lookup has 2" in (by["router.lookup_matches_content"].check(StepContext(stale, mon, "x", None)) or "")
    ok = TreeView({}, {}, 0)
    assert all(by[n].check(StepContext(ok, mon, "x", None)) is None for n in ("router.acyclic", "router.no_dead_nodes"))


# --------------------------------------------------------------------------- the real RadixTree


@pytest.fixture(scope="module")
def available() -> None:
    why = radix.real_available()
    require(why is None, f"real RadixTree not usable: {why}")


def test_the_panic_the_explorer_found_is_the_real_binarys(available: None) -> None:
    tail = [("find_matches", {"local_hashes": [11]}), ("remove_worker", {"worker_id": 0})]
    model, real = radix.ModelRadixTree(), radix.RealRadixTree()
    assert radix.differential(model, real, [*PANIC, *tail]) is None
    real.reset({})
    got = [real.apply({"op": op, **a}) for op, a in [*PANIC, *tail]]
    assert got == [
        None,
        None,
        None,
        "RadixTree request was cancelled",
        *["RadixTree background task has shut down"] * 2,
    ]


def test_the_real_trees_dump_is_judged_by_the_invariants(available: None) -> None:
    out = radix.run(
        radix.ModelRadixTree(),  # type: ignore[arg-type]
        radix.InvariantWatch(
            radix.RealRadixTree(),
            [
                "router.rejections_as_documented",
                "router.acyclic",
                "router.content_matches_stream",
                "router.scores_longest_chain",
            ],
        ),  # type: ignore[arg-type]
        workloads=60,
        seed=0,
    )
    assert out.divergences == 0
    seen = out.extra["invariants"]["violated_steps"]
    assert seen.get("router.acyclic", 0) > 0 and seen.get("router.content_matches_stream", 0) > 0
    # nothing recorded as known: the first violation is a divergence of kind "invariant"
    d = radix.differential(
        radix.ModelRadixTree(), radix.InvariantWatch(radix.RealRadixTree()), [ev(0, stored(None, 1, 1))]
    )  # type: ignore[arg-type]
    assert d is not None and d.what == "invariant" and "router.acyclic" in d.implementation


def test_invariant_mode_through_the_harness(tmp_path: Any) -> None:
    cli = [sys.executable, "-m", "kvmodel.cli", "conform", "--target", "exec", "--component", "router"]
    serve = [
        sys.executable,
        "-m",
        "kvmodel.harness",
        "--adapter",
        str(ROOT / "examples/my_router.py") + ":MyRouterAdapter",
    ]
    args = ["--workloads", "40", "--json"]
    inv = subprocess.run(
        [*cli, *args, "--check", "invariants", "--", *serve], capture_output=True, text=True, timeout=600
    )
    assert inv.returncode == 0, inv.stderr
    assert "router.content_matches_stream" in json.loads(inv.stdout)["invariants"]["checked"]
    eq = subprocess.run([*cli, *args, "--revision", "1.6.1", "--", *serve], capture_output=True, text=True, timeout=600)
    assert eq.returncode == 1, eq.stderr
