"""The explorer over worker processes (``explore(..., workers=N)``, ``kvmodel explore --workers``):
the one-process search's result, on every explorable component, with quirks, stops, bounds and
the state graph; the level's states shared out fairly; a failing worker reported, not hung."""

from __future__ import annotations

import json
import multiprocessing
import os
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvmodel import cli, components, explore_workers, explorer
from kvmodel.model.quirks import breakable, quirks_of

from .test_explorer import FAST, _space

pytestmark = pytest.mark.skipif(not explore_workers.available(), reason="no fork here: one process searches")

# what differs from run to run, or says how the search ran rather than what it found
_RUN = ("seconds", "states_per_second", "bytes_per_state", "peak_rss_bytes", "workers", "workers_peak_rss_bytes")
# the small manifest worlds (and each explorable component's quickest), ideal and with quirks
SMALL = [
    e
    for e in FAST
    if e["seconds"] < 1.6 or e["seconds"] == min(x["seconds"] for x in FAST if x["component"] == e["component"])
]


def _same(a: explorer.ExploreResult, b: explorer.ExploreResult) -> None:
    ja, jb = a.to_json(), b.to_json()
    for k in _RUN:
        ja.pop(k), jb.pop(k)
    assert json.dumps(ja) == json.dumps(jb)  # the same result, in the same order
    assert {k: v["trace"] for k, v in a.violations.items()} == {k: v["trace"] for k, v in b.violations.items()}
    assert {k: v["message"] for k, v in a.violations.items()} == {k: v["message"] for k, v in b.violations.items()}


def test_the_small_worlds_span_every_explorable_component_ideal_and_with_quirks() -> None:
    names = {c.name for c in components.registered() if c.space is not None}
    assert {e["component"] for e in SMALL} == names
    assert any(e["quirks"] for e in SMALL) and any(not e["quirks"] for e in SMALL)


@pytest.mark.parametrize("entry", SMALL, ids=lambda e: e["name"])
@pytest.mark.parametrize("workers", [2, 3])
def test_workers_give_the_one_process_search(entry: dict[str, Any], workers: int) -> None:
    """States, concrete states, transitions (counted and run), depth, coverage, witnesses,
    deadlocks, completeness and every counterexample's depth, message and steps, all in the same
    order."""
    sp = _space(entry)
    one = explorer.explore(entry["config"], entry["quirks"], sp)
    many = explorer.explore(entry["config"], entry["quirks"], sp, workers=workers)
    assert one.workers == 1 and many.workers == workers
    # the memory each worker used is reported beside the main process's
    assert one.workers_peak_rss_bytes == [] and len(many.workers_peak_rss_bytes) == workers
    assert all(b > 0 for b in many.workers_peak_rss_bytes)
    _same(one, many)
    assert many.states == entry["expect"]["states_symmetry"]


@pytest.mark.parametrize("name", sorted(c.name for c in components.registered() if c.space is not None))
def test_workers_stop_where_the_one_process_search_stops(name: str) -> None:
    """With every quirk: the early stop (``until``), the stop at the first violation and a state
    bound that cuts a level short each end the search at the same state with the same result;
    states checked on every step (``defer_state_checks=False``) too."""
    comp = components.get(name)
    world = comp.profile.explore
    sp = comp.explore_space(world)
    quirks = sorted(q.name for q in quirks_of(name))
    runs: list[dict[str, Any]] = [
        {"until": breakable(name, quirks) - explorer.cannot_break(sp)},
        {"stop_on_violation": True},
        {"max_states": 97},
        {"max_states": 300, "defer_state_checks": False},
    ]
    for kw in runs:
        one = explorer.explore(dict(world.config), quirks, sp, **kw)
        many = explorer.explore(dict(world.config), quirks, sp, workers=2, **kw)
        _same(one, many)


@pytest.mark.parametrize("name", ["kv_manager", "g1_native"])
def test_workers_draw_the_same_state_graph(name: str) -> None:
    comp = components.get(name)
    world = comp.profile.explore
    sp = comp.explore_space(world)
    quirks = sorted(q.name for q in quirks_of(name))
    one = explorer.explore(dict(world.config), quirks, sp, graph=True, max_states=400)
    many = explorer.explore(dict(world.config), quirks, sp, graph=True, max_states=400, workers=3)
    _same(one, many)
    g, h = one.graph, many.graph
    assert list(g.nodes(data=True)) == list(h.nodes(data=True))
    assert list(g.edges(data=True)) == list(h.edges(data=True))
    assert g.graph["paths"] == h.graph["paths"]


@given(holders=st.lists(st.integers(0, 4), max_size=60), workers=st.integers(1, 5))
def test_a_level_is_shared_out_fairly_moving_only_what_must_move(holders: list[int], workers: int) -> None:
    holders = [h % workers for h in holders]
    who = explore_workers.balance(holders, workers)
    assert len(who) == len(holders) and all(0 <= w < workers for w in who)
    got = Counter(who)
    share = len(holders) // workers
    assert all(share <= got[w] <= share + 1 for w in range(workers))
    # a state moves only off a worker holding more than its share, and only as many as that
    have = Counter(holders)
    moved = Counter(h for h, w in zip(holders, who, strict=True) if h != w)
    for w, m in moved.items():
        assert have[w] - m >= share and have[w] - m <= share + 1
    # and never onto a worker that held its share already
    assert all(got[w] <= max(have[w], share + 1) for w in range(workers))


class _Boom(RuntimeError):
    pass


def test_a_worker_that_fails_is_reported_with_its_traceback_and_every_worker_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    comp = components.get("kv_manager")
    world = comp.profile.explore
    sp = comp.explore_space(world)
    real = type(sp).allows
    main = os.getpid()

    def allows(self: Any, s: Any, move: Any) -> bool:
        if os.getpid() != main:  # in a worker
            raise _Boom("planted")
        return bool(real(self, s, move))

    monkeypatch.setattr(type(sp), "allows", allows)
    with pytest.raises(explore_workers.WorkerError, match="planted"):
        explorer.explore(dict(world.config), [], sp, workers=2)
    assert multiprocessing.active_children() == []


def _plant(monkeypatch: pytest.MonkeyPatch, sp: Any, failure: Callable[[], None]) -> None:
    """Make every guard a worker evaluates call ``failure`` (the main process is untouched)."""
    real = type(sp).allows
    main = os.getpid()

    def allows(self: Any, s: Any, move: Any) -> bool:
        if os.getpid() != main:
            failure()
        return bool(real(self, s, move))

    monkeypatch.setattr(type(sp), "allows", allows)


def test_a_worker_killed_mid_search_is_an_error_not_a_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that dies without a word (the kernel's OOM killer, say) ends the search with
    ``WorkerError``: never a result, and no process left behind."""
    comp = components.get("g1_native")
    world = comp.profile.explore
    sp = comp.explore_space(world)
    _plant(monkeypatch, sp, lambda: os._exit(9))
    with pytest.raises(explore_workers.WorkerError, match="ended without answering"):
        explorer.explore(dict(world.config), [], sp, workers=2)
    assert multiprocessing.active_children() == []


def test_the_cli_reports_a_failed_worker_in_one_line_with_no_verdict(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    comp = components.get("kv_manager")
    sp = comp.explore_space(comp.profile.explore)

    def boom() -> None:
        raise _Boom("planted in a worker")

    _plant(monkeypatch, sp, boom)
    assert cli.main(["explore", "--workers", "2", "--json"]) == 2  # the error exit, not pass (0) or found (1)
    cap = capsys.readouterr()
    assert cap.out == ""
    err = cap.err.strip().splitlines()
    assert len(err) == 1 and "engine error" in err[0] and "planted in a worker" in err[0], err


@pytest.mark.parametrize("bad", [0, -1, 65, 2.0, True, "2"])
def test_workers_out_of_range_are_refused(bad: Any) -> None:
    sp = _space(SMALL[0])
    with pytest.raises(ValueError, match="workers"):
        explorer.explore(SMALL[0]["config"], [], sp, workers=bad)


def test_cli_workers(capsys: pytest.CaptureFixture[str]) -> None:
    """``--workers`` gives the same JSON and text (the workers apart) and says how many ran;
    a count out of range is one line on exit 2."""
    args = ["explore", "--component", "g1_native", "--faithful", "--max-states", "2000"]
    codes = []
    outs = []
    for extra in ([], ["--workers", "2"]):
        codes.append(cli.main([*args, *extra, "--json"]))
        outs.append(json.loads(capsys.readouterr().out))
    assert codes[0] == codes[1] == 1
    assert outs[0]["workers"] == 1 and outs[1]["workers"] == 2
    for o in outs:
        for k in _RUN:
            o.pop(k)
    assert outs[0] == outs[1]
    assert cli.main([*args, "--workers", "2"]) == 1
    assert "2 workers" in capsys.readouterr().out
    # ``auto``: the cores this process may use, within 1 .. MAX_WORKERS
    assert cli.main([*args, "--workers", "auto", "--json"]) == 1
    auto = json.loads(capsys.readouterr().out)
    assert auto["workers"] == min(explore_workers.MAX_WORKERS, explore_workers.default_workers())
    for bad in ("0", "65", "two", "Auto", ""):
        assert cli.main([*args, "--workers", bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--workers" in err[0]
