"""LRU evictors: exact-LRU machines, the stale-entry quirk, and the two evictors agreeing."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

from kvmodel import machines, traces
from kvmodel.model.lru import CounterLRU, WallClockLRU


def test_wallclock_ideal_machine() -> None:
    m = machines.machine_for("lru_evictor_wallclock", {"cleanup_threshold": 1}, quirks=())
    run_state_machine_as_test(m, settings=settings())


def test_counter_machine() -> None:
    m = machines.machine_for("lru_evictor_counter", {}, quirks=())
    run_state_machine_as_test(m, settings=settings())


def test_stale_entry_quirk_found_at_minimal_depth() -> None:
    res = machines.run(
        "lru_evictor_wallclock",
        config={"cleanup_threshold": 50},
        quirks=("equal_timestamp_stale_entry",),
        seed=0,
        max_examples=1000,
        target=("lru.evicts_least_recent",),
    )
    assert res.violation is not None and res.trace is not None
    assert res.violation["invariant"] == "lru.evicts_least_recent"
    # insert a, insert b, insert a again (same clock), evict -> a (stale position): 4 steps
    assert len(res.trace["steps"]) == 4
    assert traces.replay(res.trace).reproduces_recorded


ops = st.lists(st.tuples(st.sampled_from(["insert", "remove", "evict"]), st.integers(0, 5)), max_size=60)


@given(ops, st.integers(1, 4))
def test_counter_and_ideal_wallclock_agree(seq: list[tuple[str, int]], threshold: int) -> None:
    """With unique timestamps the lazy-queue evictor is observably the counter evictor."""
    a: WallClockLRU[int] = WallClockLRU(threshold, quirks=())
    b: CounterLRU[int] = CounterLRU()
    for op, x in seq:
        if op == "insert":
            a.insert(x)
            b.insert(x)
        elif op == "remove":
            assert a.remove(x) == b.remove(x)
        else:
            assert a.evict() == b.evict()
        assert a.order() == b.order()
        assert len(a) == len(b)


@given(ops)
def test_faithful_wallclock_with_increasing_clock_is_exact(seq: list[tuple[str, int]]) -> None:
    """The quirk needs equal clock readings: on a strictly increasing clock it is invisible."""
    a: WallClockLRU[int] = WallClockLRU(2)
    b: CounterLRU[int] = CounterLRU()
    for op, x in seq:
        if op == "insert":
            a.insert(x)
            b.insert(x)
        elif op == "remove":
            a.remove(x)
            b.remove(x)
        else:
            assert a.evict() == b.evict()


def test_queue_cleanup_keeps_order_and_bounds_queue() -> None:
    a: WallClockLRU[int] = WallClockLRU(1, quirks=())
    for i in range(50):
        a.insert(i % 3)
    assert len(a.queue) <= 2 * len(a) + 1
    assert a.order() == [0, 1, 2][(50 % 3) :] + [0, 1, 2][: (50 % 3)]


def test_push_front_is_next_to_go() -> None:
    b: CounterLRU[str] = CounterLRU()
    for x in "abc":
        b.insert(x)
    b.push_front("c")
    b.push_front("b")
    assert [b.evict() for _ in range(4)] == ["b", "c", "a", None]


def test_every_operation_is_one_action_class() -> None:
    """The LRU systems' operations are their action classes (``kvmodel.components.lru.actions``):
    the counter rewrite has ``push_front``, the wall-clock evictor not; each runs through its
    class, and an action's JSON is what the trace format records."""
    from kvmodel.components.lru.actions import ACTIONS, Insert
    from kvmodel.components.lru.system import LruSystem

    assert ACTIONS["lru_evictor_counter"].ops == ("insert", "push_front", "remove", "evict", "len")
    assert ACTIONS["lru_evictor_wallclock"].ops == ("insert", "remove", "evict", "len")
    assert Insert(3).to_json() == {"object": 3} and Insert("a", 7).to_json() == {"object": "a", "clock": 7}
    for comp in ("lru_evictor_wallclock", "lru_evictor_counter"):
        s = LruSystem(comp)
        assert s.OPS == ACTIONS[comp].ops
        results = [s.step(op, {"object": 1} if op in ("insert", "push_front", "remove") else {}) for op in s.OPS]
        assert all(r.error is None for r in results), [(r.op, r.error) for r in results]
        assert results[-1].result == len(s.model)
        assert type(results[0].ctx.args).__name__ == "Insert"  # type: ignore[union-attr]
        bad = s.step("no_such_op", {})
        assert bad.error is not None and "no_such_op" in str(bad.error)


@settings(max_examples=300, deadline=None)
@given(
    seq=st.lists(st.tuples(st.sampled_from(["insert", "remove", "evict", "push_front", "copy"]), st.integers(0, 4))),
    counter=st.booleans(),
    stale=st.booleans(),
)
def test_the_kept_eviction_order_is_the_order_after_every_change(
    seq: list[tuple[str, int]], counter: bool, stale: bool
) -> None:
    """``ordered()`` keeps ``order()`` between changes: after any run of operations (and copies,
    which carry it) it is the order ``order()`` computes afresh, on the evictor and on every copy
    still alive, and a copy's changes leave the original's untouched."""
    lru: CounterLRU[int] | WallClockLRU[int] = (
        CounterLRU() if counter else WallClockLRU(2, quirks=["equal_timestamp_stale_entry"] if stale else [])
    )
    copies = []
    for op, x in seq:
        lru.ordered()  # keep an order, to be dropped by the next change
        if op == "copy":
            copies.append((lru, tuple(lru.order())))
            lru = lru.copy()
        elif op == "insert":
            lru.insert(x)
        elif op == "remove":
            lru.remove(x)
        elif op == "evict":
            lru.evict()
        elif isinstance(lru, CounterLRU):
            lru.push_front(x)
        assert lru.ordered() == tuple(lru.order())
    for old, order in copies:
        assert old.ordered() == tuple(old.order()) == order
