"""The KVBM block registry: semantics examples (regressions of §3), the Hypothesis machine both
directions, bad input, and the load-bearing ``remove_handle`` (§6 #21)."""

from __future__ import annotations

from typing import Any

import pytest

from kvmodel import explorer, machines
from kvmodel.components.registry.space import RegSpace
from kvmodel.components.registry.system import RegistrySystem
from kvmodel.model.errors import InvalidInput
from kvmodel.model.quirks import quirks_of
from kvmodel.model.registry import (
    Block,
    BlockAlreadyRegistered,
    InvalidState,
    RegistryWorld,
    StateNotPartial,
    TokenBlockIncomplete,
)

C = "kvbm_block_registry"


def _world(quirks: Any = ()) -> RegistryWorld:
    m = RegistryWorld(quirks)
    m.new_registry("a", "Device")
    m.new_registry("b", "Device")
    m.new_registry("h", "HostPinned")
    return m


def _texts(m: RegistryWorld) -> list[list[str]]:
    return [[e.text() for e in batch] for batch in m.messages]


def test_register_errors_leave_everything_untouched() -> None:
    m = _world()
    m.new_state("r")
    with pytest.raises(InvalidState, match="Reset"):
        m.register_block("a", "r")
    m.initialize_sequence("r", 2)
    with pytest.raises(InvalidState, match="Partial"):
        m.register_block("a", "r")
    with pytest.raises(TokenBlockIncomplete):
        m.commit("r")
    m.add_tokens("r", [1, 2])
    m.commit("r")
    with pytest.raises(StateNotPartial):
        m.commit("r")
    assert m.register_block("a", "r", "ph") == "ph"
    before = m.key()
    with pytest.raises(BlockAlreadyRegistered):
        m.register_block("a", "r")
    m.state_from_block("same", m.values["r"].block)  # type: ignore[union-attr]
    with pytest.raises(BlockAlreadyRegistered):
        m.register_block("a", "same")
    m.drop("same")
    assert m.key() == before and m.messages == []


def test_second_pool_of_the_same_tier_reuses_the_handle_and_announces_nothing() -> None:
    m = _world()
    m.state_from_block("x", Block(7))
    m.state_from_block("y", Block(7))
    assert m.register_block("a", "x", "ph") == "ph"
    assert m.register_block("b", "y") is None  # Ok(None): no PublishHandle, no second Register
    m.drop("ph")
    assert _texts(m) == [["Register(7, Device)"]]
    m.drop("x")
    assert _texts(m) == [["Register(7, Device)"]]  # y still holds the shared handle
    m.drop("y")
    assert _texts(m)[-1] == ["Remove(7, Device)"]


def test_tiers_get_their_own_handle_unless_the_registry_is_untiered() -> None:
    for quirks, want in (((), "ph2"), (("global_registry_untiered",), None)):
        m = _world(quirks)
        m.state_from_block("x", Block(7))
        m.state_from_block("y", Block(7))
        m.register_block("a", "x", "ph1")
        assert m.register_block("h", "y", "ph2") == want


def test_cleanup_race_with_and_without_the_403dd259_task() -> None:
    """Drop, re-register before the task runs, then drain: the faithful task erases the live entry."""
    for quirks, listed in (((), True), (("cleanup_erases_live_entry",), False)):
        m = _world(quirks)
        m.state_from_block("x", Block(7))
        m.state_from_block("y", Block(7))
        m.register_block("a", "x", "ph")
        m.drop("x")
        assert m.pools["a"].pending == [7]
        m.register_block("a", "y")
        assert m.is_registered("a", 7)
        assert m.drain("a") == 7 and m.drain("a") is None
        assert m.is_registered("a", 7) is listed
        m.state_from_block("z", Block(7))
        if listed:
            with pytest.raises(BlockAlreadyRegistered):
                m.register_block("a", "z")
        else:
            m.register_block("a", "z")  # a second live block handle for 7 in pool a
            assert len(m.live_block_handles("a")[7]) == 2


def test_publisher_batches_in_take_order_then_drops_its_arcs() -> None:
    m = _world()
    m.new_publisher("pub")
    for n, h in (("x", 1), ("y", 2)):
        m.state_from_block(n, Block(h))
        m.register_block("a", n, f"ph{h}")
    m.take_handle("pub", "ph2")
    m.take_handle("pub", "ph1")
    m.drop("x")  # the publisher still holds handle 1: no Remove yet
    assert m.messages == []
    m.publish("pub")
    assert _texts(m) == [["Register(2, Device)", "Register(1, Device)"], ["Remove(1, Device)"]]
    m.publish("pub")
    m.drop("pub")
    assert len(m.messages) == 2


def test_remove_handle_is_load_bearing() -> None:
    """§6 #21: were ``remove_handle`` to disarm, ``remove_handle; drop(ph); drop(arc)`` would Remove a
    block that was never Registered — the catalogue's stream invariant catches that variant."""

    import attrs

    from kvmodel.components.registry.actions import RemoveHandle

    @attrs.frozen
    class DisarmingRemove(RemoveHandle):
        def run(self, model: Any) -> Any:
            out = super().run(model)
            model.values[self.publish_handle].armed = False
            return out

    class Disarming(RegistrySystem):
        def decode(self, op: str, args: Any) -> Any:
            a = super().decode(op, args)
            return DisarmingRemove(a.publish_handle, a.as_) if isinstance(a, RemoveHandle) else a

    steps = [
        ("state_from_reset_apply_token_block", {"as": "s", "block": {"hash": 3}}),
        ("register_block", {"registry": "device0", "state": "s", "as": "ph"}),
        ("drop", {"value": "s"}),
        ("remove_handle", {"publish_handle": "ph", "as": "arc"}),
        ("drop", {"value": "ph"}),
        ("drop", {"value": "arc"}),
    ]
    for cls, broken in ((RegistrySystem, set()), (Disarming, {"reg.remove_after_register"})):
        s = cls({}, ())
        seen: set[str] = set()
        for op, args in steps:
            seen |= {v.invariant for v in s.step(op, args).violations}
        assert seen >= broken and (broken or not seen), (cls.__name__, seen)


@pytest.mark.parametrize(
    ("op", "args"),
    [
        ("drop", {"value": "ghost"}),
        ("register_block", {"registry": "nowhere", "state": "s"}),
        ("register_block", {"registry": "device0"}),
        ("take_handle", {"publisher": "s", "publish_handle": "s"}),
        ("new_registry", {"as": "device0"}),
        ("state_from_reset_apply_token_block", {"block": {"hash": 2**64}}),
        ("frobnicate", {}),
    ],
)
def test_bad_input_is_a_typed_error_and_changes_nothing(op: str, args: dict[str, Any]) -> None:
    s = RegistrySystem({}, ())
    s.step("state_from_reset_apply_token_block", {"as": "s", "block": {"hash": 1}})
    before = s.key()
    out = s.step(op, args)
    assert isinstance(out.error, InvalidInput) and "\n" not in str(out.error)
    assert s.key() == before and not out.events and not out.violations


def test_hypothesis_lengths_against_the_bfs_minimum() -> None:
    """Same world for both engines (the explorer's is a bounded version of the machine's)."""
    space = RegSpace(hashes=1, states=2, publish_handles=1, arcs=0, publishers=2, max_pending=1)
    for q in quirks_of(C):
        bfs = explorer.explore({}, (q.name,), space)
        res = machines.run(C, quirks=(q.name,), target=q.breaks, max_examples=1500, seed=0)
        assert res.trace is not None and res.violation is not None
        inv = res.violation["invariant"]
        assert len(res.trace["steps"]) <= 2 * bfs.violations[inv]["depth"], q.name


def test_every_operation_is_one_action_class_and_nothing_else_is() -> None:
    """The system's operations are its action classes (``kvmodel.components.registry.actions``):
    a name outside them is rejected before any call; an action's JSON is exactly the keys the
    caller gave (an explicit ``null`` kept, an absent optional key left out)."""
    from kvmodel.components.registry.actions import ABSENT, ACTIONS, NewState, RegisterBlock

    assert RegistrySystem.OPS == ACTIONS.ops and len(ACTIONS.ops) == 21
    out = RegistrySystem().step("no_such_op", {})
    assert out.error is not None and "no_such_op" in str(out.error)
    a = ACTIONS.decode("register_block", {"registry": "device0", "state": "s0", "as": None})
    assert a == RegisterBlock("device0", "s0", None, ABSENT)
    assert a.to_json() == {"registry": "device0", "state": "s0", "as": None}
    assert ACTIONS.decode("new_state", {}).to_json() == {} and NewState("x").to_json() == {"as": "x"}


def test_generated_token_blocks_carry_their_tokens() -> None:
    """Issue 58: a Rust ``TokenBlock`` always holds its tokens, so every block the default
    workload generates has them, and a Complete state built from one answers ``len`` and
    ``tokens`` (never the ``null`` a token-less block would give)."""
    from kvmodel.api import ModelAdapter, check_implementation

    seen: list[tuple[str, Any, Any]] = []

    class Logging(ModelAdapter):
        def step(self, op: str, args: Any) -> dict[str, Any]:
            obs = super().step(op, args)
            seen.append((op, args, obs))
            if op == "state_query" and args["query"] in ("len", "tokens"):
                kind = super().step("state_query", {"state": args["state"], "query": "is_registered"})
                reset = super().step("state_query", {"state": args["state"], "query": "is_reset"})
                if kind.get("returns") is False and reset.get("returns") is False and "error" not in obs:
                    seen.append(("answered", args["query"], obs["returns"]))
            return obs

    rep = check_implementation(Logging("kvbm_block_registry"), "kvbm_block_registry", workloads=60, seed=3)
    assert rep.ok, rep.explain()
    blocks = [a["block"] for op, a, _ in seen if op in ("apply_token_block", "create_publish_handle")]
    assert blocks and all(b.get("tokens") for b in blocks)
    answers = [v for op, _, v in seen if op == "answered"]
    assert answers and all(v is not None for v in answers)
