"""The scheduler system that vLLM-engine traces replay on (``kvmodel/components/mocker_scheduler``):
its operations, its rejections and its invariants, without vLLM."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvmodel.model.errors import InvalidInput
from kvmodel.systems import make_system

BS = 32


def _sys(**config: Any) -> Any:
    return make_system("vllm_scheduler", config or None, [])


def _prompt(k: int, n: int) -> list[int]:
    return [3 + (k * 131 + i * 7) % 1000 for i in range(n)]


def _add(s: Any, rid: int, n: int, k: int = 0, max_tokens: int = 2) -> Any:
    return s.step("add_request", {"request": rid, "prompt": _prompt(k, n), "max_tokens": max_tokens})


def _drain(s: Any, limit: int = 200) -> list[Any]:
    evs: list[Any] = []
    for _ in range(limit):
        if len(s.model.finished) == len(s.model.requests):
            break
        o = s.step("step", {})
        assert o.error is None and not o.violations
        evs += o.observation(None)["events"]
    return evs


def test_a_request_is_prefilled_in_chunks_stored_parent_first_and_finishes() -> None:
    s = _sys()
    _add(s, 7, 3 * BS, max_tokens=2)
    first = s.step("step", {}).observation(None)  # a 64-token budget: two blocks
    assert [list(e) for e in first["events"]] == [["Stored"], ["Stored"]]
    assert first["events"][1]["Stored"]["parent_hash"] == first["events"][0]["Stored"]["blocks"][0]
    finished: list[int] = []
    for _ in range(10):
        finished += s.step("step", {}).result or []
    assert finished == [7] and s.snapshot()["finished"] == [7]


def test_reset_succeeds_only_when_no_block_is_in_use_and_its_cleared_comes_with_the_next_step() -> None:
    s = _sys()
    _add(s, 0, 2 * BS)
    s.step("step", {})
    assert s.step("reset_prefix_cache", {}).result is False  # the request holds blocks
    _drain(s)
    r1, r2 = s.step("reset_prefix_cache", {}), s.step("reset_prefix_cache", {})
    assert (r1.result, r2.result) == (True, True) and not r1.events and not r2.events
    nxt = s.step("step", {}).observation(None)["events"]
    assert nxt == [{"Cleared": {"blocks": []}}] * 2
    assert s.snapshot()["visible"] == []
    # the prompt is stored again: nothing was left cached
    _add(s, 1, 2 * BS)
    assert len(_drain(s)) == 2


def test_abort_returns_whether_a_live_request_left() -> None:
    s = _sys()
    _add(s, 0, 2 * BS, max_tokens=5)
    _add(s, 1, BS, k=1, max_tokens=5)
    s.step("step", {})
    assert s.step("abort", {"request": 0}).result is True
    assert s.step("abort", {"request": 0}).result is False  # already gone
    assert s.step("abort", {"request": 99}).result is False  # never added
    _drain(s)
    assert s.step("abort", {"request": 1}).result is False  # finished
    assert s.snapshot()["finished"] == [0, 1]


@pytest.mark.parametrize(
    ("op", "args", "match"),
    [
        ("add_request", {"request": 0, "prompt": [], "max_tokens": 1}, "prompt must not be empty"),
        ("add_request", {"request": 0, "prompt": [5], "max_tokens": 0}, "max_tokens"),
        ("add_request", {"request": 0, "prompt": [5], "max_tokens": 1, "output": [1, 2]}, "more than max_tokens"),
        ("add_request", {"request": -1, "prompt": [5], "max_tokens": 1}, "request"),
        ("add_request", {"request": 0, "prompt": "abc", "max_tokens": 1}, "prompt"),
        ("add_request", {"request": 0, "prompt": [5], "max_tokens": 1, "extra": 1}, "unknown argument"),
        ("abort", {}, "needs 'request'"),
        ("step", {"n": 1}, "unknown argument"),
        ("evict", {}, "unknown mocker_vllm_scheduler operation"),
    ],
)
def test_bad_input_is_a_typed_error_and_changes_nothing(op: str, args: Any, match: str) -> None:
    s = _sys()
    _add(s, 5, BS)
    before = s.key()
    o = s.step(op, args)
    assert isinstance(o.error, InvalidInput) and match in str(o.error)
    assert s.key() == before


def test_a_request_id_is_used_once() -> None:
    s = _sys()
    _add(s, 3, BS)
    before = s.key()
    o = _add(s, 3, BS)
    assert isinstance(o.error, InvalidInput) and "request 3 exists" in str(o.error)
    assert s.key() == before


@pytest.mark.parametrize("config", [{"block_size": 0}, {"capacity": 0}, {"max_num_seqs": "4"}, {"pool": 3}])
def test_a_bad_config_is_refused(config: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        _sys(**config)


ACTION = st.one_of(
    st.builds(
        lambda r, k, n, m: ("add_request", {"request": r, "prompt": _prompt(k, n), "max_tokens": m}),
        st.integers(0, 5),
        st.integers(0, 2),
        st.integers(1, 3 * BS + 5),
        st.integers(1, 40),
    ),
    st.builds(lambda r: ("abort", {"request": r}), st.integers(0, 5)),
    st.just(("reset_prefix_cache", {})),
    st.just(("step", {})),
    st.just(("step", {})),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(ACTION, max_size=40), st.integers(4, 11))
def test_any_harness_run_keeps_the_stream_invariants_and_clones_are_independent(
    actions: list[tuple[str, dict[str, Any]]], capacity: int
) -> None:
    """Whatever the harness does, the model's own stream stores a parent before its child, stores
    a hash once while visible and removes only visible hashes; errors are typed; a clone is an
    independent copy."""
    s = _sys(capacity=capacity)
    for i, (op, args) in enumerate(actions):
        if i == len(actions) // 2:
            c = s.clone()
            assert c.key() == s.key()
            snap = c.snapshot()
        o = s.step(op, args)
        assert not o.violations, o.violations
        assert o.error is None or op in ("add_request", "step")
    if len(actions) >= 2:
        assert c.snapshot() == snap
    _drain(s, 2000)
