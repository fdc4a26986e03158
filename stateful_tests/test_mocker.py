"""Conformance A: the native backend model against the real mocker of ai-dynamo-runtime 1.6.1
(offline `_runtime` event path), sequential requests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from kvmodel.conformance import mocker as mk

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


def test_generated_schedules_do_not_diverge() -> None:
    rep = mk.run(workloads=300, seed=3)
    assert rep.divergences == 0, rep.to_json()
    assert rep.requests > 600 and rep.events > 600


def test_a_request_that_outgrows_the_pool_stalls_both() -> None:
    """Finding: a lone request whose decode needs one block more than the pool has stalls the real
    engine (the offline replay aborts: 'effect-free zero-duration pass'); the model predicts it."""
    w = mk.Workload([[10, 11, 12, 13] * 3], [2], 4, 3)
    assert mk.real_run(w).stalled
    assert mk.model_run(w, [[]]).stalled
    assert mk.compare(w)[0] is None


class _RootFirst(mk.LeaseScheduler):
    def request(self, prompt: Sequence[int], generated: Sequence[int], outputs: int) -> int | None:
        rel, order = self.pool.release, []
        self.pool.release = order.append  # type: ignore[method-assign]
        out = super().request(prompt, generated, outputs)
        self.pool.release = rel  # type: ignore[method-assign]
        for c in reversed(order):  # root first
            rel(c)
        return out


class _NoHitCap(mk.LeaseScheduler):
    def request(self, prompt: Sequence[int], generated: Sequence[int], outputs: int) -> int | None:
        return super().request([*prompt, 0], generated, outputs)  # one more token: the cap moves


@pytest.mark.parametrize("wrong", [_RootFirst, _NoHitCap], ids=lambda c: c.__name__)
def test_a_wrong_scheduler_model_is_caught(wrong: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mk, "LeaseScheduler", wrong)
    rep = mk.run(workloads=300, seed=0)
    assert rep.divergences == 1 and rep.counterexample is not None
    assert len(rep.counterexample["prompts"]) <= 3


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
