"""The faithful KV manager, example by example against semantics §1.3 and §6 #1-#6.

Regression examples: each pins one behaviour of the Rust code (revision R01) that the
vectors do not assert, and checks the ideal model's answer beside it.
"""

from __future__ import annotations

import pytest

from kvmodel.model import errors as E
from kvmodel.model.blocks import Deref, Destroy, FullBlock, PartialBlock, Promote, Remove, Store, Use
from kvmodel.model.kv_manager import COMPONENT, KvManager
from kvmodel.model.quirks import faithful
from kvmodel.model.sequence import ActiveSequence

FAITHFUL, IDEAL = faithful(COMPONENT), frozenset[str]()


def F(*hs: int) -> tuple[FullBlock, ...]:
    return tuple(FullBlock(h) for h in hs)


def P(name: str) -> PartialBlock:
    return PartialBlock(name)


def mgr(cap: int = 10, quirks: frozenset[str] = FAITHFUL) -> KvManager:
    return KvManager(cap, 16, quirks=quirks)


def test_store_parent_is_last_hit_and_new_blocks_share_one_store() -> None:
    """§6 #2: Use([new A, hit B, new C]) -> Store([A, C], parent=B); ideal: two lineage runs."""
    for quirks, want in (
        (FAITHFUL, [Store((1, 3), 2)]),
        (IDEAL, [Store((1,), None), Store((3,), 2)]),
    ):
        m = mgr(quirks=quirks)
        m.process(Use(F(2)))
        m.drain_events()
        assert m.process(Use(F(1, 2, 3)))
        assert m.drain_events() == want


def test_non_atomic_use_keeps_earlier_blocks_and_loses_their_store() -> None:
    """§6 #1: eviction fails mid-batch: false, earlier blocks applied, Removes sent, no Store."""
    m = mgr(3)
    m.process(Use(F(1, 2)))
    m.process(Deref(F(2)))
    m.drain_events()
    assert m.process(Use(F(1, 5, 6, 7))) is False
    assert m.drain_events() == [Remove((2,))]
    assert m.active == {FullBlock(1): 2, FullBlock(5): 1, FullBlock(6): 1}
    ideal = mgr(3, IDEAL)
    ideal.process(Use(F(1, 2)))
    ideal.process(Deref(F(2)))
    ideal.drain_events()
    before = ideal.key()
    assert ideal.process(Use(F(1, 5, 6, 7))) is False
    assert ideal.drain_events() == [] and ideal.key() == before


def test_partial_parent_panics_after_mutation() -> None:
    """§6 #3: re-Using an active partial as the last hit panics after bumping its count."""
    m = mgr()
    m.process(Use((P("u"),)))
    with pytest.raises(E.ParentBlockPartial):
        m.process(Use((FullBlock(9), P("u"))))
    assert m.active[P("u")] == 2 and m.active[FullBlock(9)] == 1
    assert m.drain_events() == []  # the Store of 9 was lost


def test_promote_onto_active_overwrites_and_always_stores() -> None:
    """§6 #4: refcount overwritten with the partial's; a Store even for a known hash."""
    m = mgr()
    m.process(Use(F(7)))
    m.process(Use(F(7)))
    m.process(Use((P("u"),)))
    m.drain_events()
    m.process(Promote("u", 7, None))
    assert m.active == {FullBlock(7): 1}
    assert m.drain_events() == [Store((7,), None)]
    i = mgr(quirks=IDEAL)
    i.process(Use(F(7)))
    i.process(Use(F(7)))
    i.process(Use((P("u"),)))
    i.drain_events()
    i.process(Promote("u", 7, None))
    assert i.active == {FullBlock(7): 3} and i.drain_events() == []


def test_promote_onto_inactive_leaves_it_in_both_pools_then_destroy_panics() -> None:
    """§6 #4: the hash is active and inactive; evicting the inactive copy drops it from
    all_blocks while active; a Destroy of it then panics on the all_blocks assert."""
    m = mgr(2)
    m.process(Use(F(7)))
    m.process(Deref(F(7)))
    m.process(Use((P("u"),)))
    m.process(Promote("u", 7, None))
    assert FullBlock(7) in m.active and m.inactive.contains(FullBlock(7))
    assert m.current_capacity() == 2  # double counted
    m.drain_events()
    m.process(Use(F(8)))  # at capacity: evicts the inactive copy of 7
    assert m.drain_events() == [Remove((7,)), Store((8,), None)]
    assert FullBlock(7) in m.active and FullBlock(7) not in m.all_blocks
    with pytest.raises(E.DestroyNotResident):
        m.process(Destroy(F(7)))


def test_promote_of_missing_partial_says_whether_it_still_exists() -> None:
    m = mgr()
    m.process(Use((P("u"),)))
    m.process(Deref((P("u"),)))  # faithful: the partial is cached inactive (§6 #6)
    with pytest.raises(E.PromoteMissing, match="Block still exists: true"):
        m.process(Promote("u", 1, None))
    with pytest.raises(E.PromoteMissing, match="Block still exists: false"):
        m.process(Promote("never", 1, None))


def test_destroy_reverse_walk_input_order_event_and_refcount_ignored() -> None:
    """§6 #5 and §1.3: Destroy ignores refcounts; one Remove in input order."""
    m = mgr()
    m.process(Use(F(1, 2, 3)))
    m.process(Use(F(2)))
    m.drain_events()
    m.process(Destroy(F(1, 2, 3)))
    assert m.drain_events() == [Remove((1, 2, 3))]
    assert m.active == {}


def test_destroy_panics_midway_after_removing_later_blocks() -> None:
    """Reverse walk: Destroy([unknown, a]) removes a, then panics; no Remove is sent."""
    m = mgr()
    m.process(Use(F(1)))
    m.drain_events()
    with pytest.raises(E.DestroyNotActive):
        m.process(Destroy(F(99, 1)))
    assert m.active == {} and m.drain_events() == []
    i = mgr(quirks=IDEAL)
    i.process(Use(F(1)))
    with pytest.raises(E.DestroyNotActive):
        i.process(Destroy(F(99, 1)))
    assert i.active == {FullBlock(1): 1}


def test_deref_reverse_order_unknown_ignored_partial_cached() -> None:
    """§1.3: Deref([a, b, c]) makes c the oldest inactive; unknown blocks ignored (§6 #6)."""
    m = mgr()
    m.process(Use((*F(1, 2, 3), P("u"))))
    m.process(Deref((*F(1, 2, 3, 42), P("u"))))
    assert m.inactive.order() == [P("u"), FullBlock(3), FullBlock(2), FullBlock(1)]
    i = mgr(quirks=IDEAL)
    i.process(Use((*F(1, 2, 3), P("u"))))
    with pytest.raises(E.DerefNotHeld):
        i.process(Deref((*F(1, 2, 3, 42), P("u"))))
    i.process(Deref((*F(1, 2, 3), P("u"))))
    assert i.inactive.order() == [FullBlock(3), FullBlock(2), FullBlock(1)] and P("u") not in i.all_blocks


def test_no_channel_no_events_and_capacity_zero() -> None:
    m = KvManager(0, 16, channel=False)
    assert m.process(Use(F(1))) is False
    assert m.outbox == []
    assert m.current_capacity_perc() != m.current_capacity_perc()  # NaN, as 0.0 / 0.0 in Rust


def test_prefill_cost_counts_any_cached_block() -> None:
    """probe_new_blocks is not prefix-based: a cached block after a miss still counts."""
    s = ActiveSequence(range(40), 10, 16, name="s")
    m = mgr()
    m.process(Use((s.unique_blocks[1],)))
    assert m.probe_new_blocks(s.unique_blocks) == 2
    assert m.prefill_cost(s) == (2, 40 - 16)


@pytest.mark.parametrize("bad", [-1, 1.5, "4", True])
def test_bad_constructor_arguments(bad: object) -> None:
    with pytest.raises(E.InvalidInput):
        KvManager(bad, 16)  # type: ignore[arg-type]


def test_bad_signal_is_typed_and_leaves_state() -> None:
    m = mgr()
    m.process(Use(F(1)))
    before = m.key()
    with pytest.raises(E.InvalidInput):
        m.process("Use")  # type: ignore[arg-type]
    with pytest.raises(E.InvalidInput):
        m.process(Use(("x",)))  # type: ignore[arg-type]
    assert m.key() == before


def test_every_operation_is_one_action_class() -> None:
    """The KV manager system's operations are its action classes
    (``kvmodel.components.kv_manager.actions``); each runs through its class, and an action's
    JSON is the trace format's (a ``process`` step's is its signal's)."""
    from kvmodel.components.kv_manager.actions import ACTIONS, ProbeNewBlocks, Process
    from kvmodel.components.kv_manager.system import KvManagerSystem

    assert KvManagerSystem.OPS == ACTIONS.ops
    assert Process(Use((FullBlock(1),))).to_json() == {"Use": [{"F": 1}]}
    assert ACTIONS.decode("probe_new_blocks", {"blocks": [{"F": 2}]}) == ProbeNewBlocks((FullBlock(2),))
    s = KvManagerSystem({"max_capacity": 4})
    assert s.step("process", {"Use": [{"F": 1}, {"F": 2}]}).error is None
    args = {
        "probe_new_blocks": {"blocks": [{"F": 1}, {"F": 3}]},
        "get_prefill_cost": {"unique_blocks": [{"F": 1}, {"F": 3}], "num_input_tokens": 40},
    }
    got = {op: s.step(op, args.get(op, {})).result for op in KvManagerSystem.OPS if op != "process"}
    assert got == {
        "probe_new_blocks": 1,
        "current_capacity": 2,
        "num_active_blocks": 2,
        "num_inactive_blocks": 0,
        "get_prefill_cost": {"new_blocks": 1, "new_tokens": 24},
    }
    assert s.step("no_such_op", {}).error is not None
