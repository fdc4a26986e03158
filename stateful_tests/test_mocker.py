"""Conformance A: the native backend model against the real mocker of ai-dynamo-runtime 1.6.1
(offline `_runtime` event path): sequential and concurrent requests (batching, chunked prefill,
preemption)."""

from __future__ import annotations

from typing import Any

import pytest

from kvmodel.conformance import mocker as mk
from kvmodel.model.g1.vllm_block_pool import NativePool

from .conftest import require


@pytest.fixture(scope="module", autouse=True)
def _real() -> None:
    why = mk.available()
    require(why is None, str(why))


def test_a_crafted_schedule_matches_event_for_event() -> None:
    """Shared prefix, the hit cap, a partial tail, eviction of the oldest (leaf-first) copies,
    a decode block evicting one more: six events, identical on both sides."""
    w = mk.Workload(
        [list(range(10)), list(range(10)), [*range(8), 50, 51, 52], list(range(100, 112))], [3, 6, 1, 2], 4, 6
    )
    real = mk.real_run(w)
    model = mk.model_run(w, real.generated)
    assert mk.flatten(model.events) == mk.flatten(real.events)
    kinds = [e[1] for e in mk.flatten(real.events)]
    assert kinds == ["stored", "stored", "stored", "removed", "stored", "removed"]
    assert model.cached == real.cached == [0, 8, 8, 0]


def test_the_real_streams_lineage_is_checked_as_an_invariant() -> None:
    """Every Stored of the real mocker chains under its parent; one re-parented to its batch's
    parent (a real publisher bug) or to nothing is reported as ``lineage``, before equality."""
    w = mk.Workload([list(range(10)), [*range(8), 50, 51, 52]], [3, 1], 4, 6)
    real = mk.real_run(w)
    flat = [list(e) for e in mk.flatten(real.events)]
    stored = [e for e in flat if e[1] == "stored" and len(e[2]) > 1]
    assert stored and all(mk.lineage_fault(e) is None for e in flat)
    obs = {"late": False, "stalled": False, "events": flat, "cached": []}
    assert mk.compare_runs("run", {}, obs, obs, {}) is None
    bad = [list(e) for e in flat]
    i = next(k for k, e in enumerate(bad) if e[1] == "stored" and e[4] is not None)
    bad[i][4] = None  # the Stored names no parent
    d = mk.compare_runs("run", {}, obs, {**obs, "events": bad}, {})
    assert d is not None and d[0] == "lineage" and d[2]["index"] == i


def test_generated_schedules_do_not_diverge() -> None:
    rep = mk.run(workloads=300, seed=3)
    assert rep.divergences == 0, rep.to_json()
    assert rep.extra["requests"] > 600 and rep.extra["events"] > 600
    cov = rep.extra["coverage"]  # the workloads reach what the scheduler model is for
    assert cov["concurrent_requests"] > 300 and cov["chunked_prefills"] > 100 and cov["preemptions"] > 10
    assert cov["rejected"] > 0 and 0 < cov["stalled_workloads"] < rep.workloads // 4


def test_a_concurrent_schedule_with_chunking_and_preemption_matches() -> None:
    """Three requests arrive together on 4 blocks with a 3-token budget: two prefills are chunked,
    the second request reuses the block the first finalized, and decode pressure preempts the
    last running request (LIFO), which later recomputes: ten events, identical on both sides."""
    a, b = [10, 11, 12, 13], [20, 21, 22, 23]
    w = mk.Workload([[*a, *b, 90], [*a, 30, 31], [*b, 91, 92]], [6, 6, 3], 4, 4, [0, 0, 0], 3)
    real = mk.real_run(w)
    model = mk.model_run(w, real.generated)
    assert not real.stalled and not real.late
    assert mk.flatten(model.events) == mk.flatten(real.events)
    assert model.cached == real.cached
    assert real.cached == [0, 4, 0]  # the second request hits the block the first finalized
    assert model.stats["chunked_prefills"] == 2 and model.stats["preemptions"] == 1, model.stats
    kinds = [e[1] for e in mk.flatten(real.events)]
    assert kinds.count("removed") == 3 and len(kinds) == 10


def test_a_request_that_outgrows_the_pool_stalls_both() -> None:
    """Finding: a lone request whose decode needs one block more than the pool has stalls the real
    engine (the offline replay aborts: 'effect-free zero-duration pass'); the model predicts it."""
    w = mk.Workload([[10, 11, 12, 13] * 3], [2], 4, 3)
    assert mk.real_run(w).stalled
    assert mk.model_run(w, [[]]).stalled
    assert mk.compare(w)[0] is None


def test_admission_sees_a_hit_as_active_by_its_primary_copy_only() -> None:
    """§6 #16 observed in the real engine: the waiting request's cached block has an idle primary
    copy and an active duplicate. The real scheduler counts the hit as inactive, so the request
    waits; with the quirk off the model admits it and preempts the running one."""
    w = mk.Workload(
        [[1], [1], [30, 31, 32, 33], [30, 31, 32, 33], [30, 31, 32, 33, 10, 11, 12, 13]], [1, 1, 2, 5, 1], 4, 3, [0] * 5
    )
    assert mk.compare(w)[0] is None
    real = mk.real_run(w)

    class AnyCopyActive(mk.VllmScheduler):
        def __init__(self, *a: Any, **k: Any) -> None:
            super().__init__(*a, **k)
            self.pool = NativePool(self.pool.capacity, ())

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mk, "VllmScheduler", AnyCopyActive)
        ideal = mk.model_run(w, real.generated)
    assert mk.flatten(ideal.events) != mk.flatten(real.events)
    assert ideal.stats["preemptions"] == 1


class _RootFirst(mk.VllmScheduler):
    def release_order(self, copies: list[int]) -> list[int]:
        return list(copies)


class _NoHitCap(mk.VllmScheduler):
    def hit_cap(self, length: int) -> int:
        return length // self.bs


class _FifoPreemption(mk.VllmScheduler):
    def _preempt(self) -> Any:
        if len(self.running) > 1:  # the oldest running request becomes the victim
            self.running.append(self.running.pop(0))
        return super()._preempt()


@pytest.mark.parametrize("wrong", [_RootFirst, _NoHitCap, _FifoPreemption], ids=lambda c: c.__name__)
def test_a_wrong_scheduler_model_is_caught(wrong: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mk, "VllmScheduler", wrong)
    rep = mk.run(workloads=300, seed=0)
    assert rep.divergences == 1 and rep.counterexample is not None
    assert len(rep.counterexample[0][1]["prompts"]) <= 3


# ----------------------------------------------------------------------------- the live path


def test_live_zmq_stream_matches_the_model() -> None:
    """The mocker served in-process, its events read from the ZMQ replay socket (dynamo-runtime.md
    §3.4): the same stream shape, cached tokens and prompt-block hashes as the model predicts, on
    the crafted schedule and three small seeded ones."""
    import random

    from kvmodel.conformance import live

    why = live.available()
    require(why is None, str(why))
    workloads = [
        mk.Workload(
            [list(range(10)), list(range(10)), [*range(8), 50, 51, 52], list(range(100, 112))], [3, 6, 1, 2], 4, 6
        )
    ]
    rng = random.Random(7)
    while len(workloads) < 4:
        prompts = []
        for _ in range(3):
            blocks = [rng.randint(1, 3) for _ in range(rng.randint(0, 2))]
            p = [10 * b + j for b in blocks for j in range(4)] + [90] * rng.randint(0, 2)
            prompts.append(p or [1])
        w = mk.Workload(prompts, [rng.randint(1, 6) for _ in prompts], 4, rng.randint(5, 8))
        if not mk.model_run(w, [[0] * o for o in w.outputs]).stalled:
            workloads.append(w)
    for w in workloads:
        why_not, r = live.compare(w)
        assert why_not is None, (w.to_json(), why_not)
        assert r["events"], w.to_json()
