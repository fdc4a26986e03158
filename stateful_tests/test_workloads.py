"""The differential check's workload generator: every operation of every component appears in a
default run, workloads hold only inputs the real code's types admit, handle ids compare up to a
consistent renaming, and panic messages match by their fixed prefix."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvmodel import api, components
from kvmodel.model.errors import InvalidInput

API_COMPONENTS = components.names(lambda c: c.api_world is not None)


def test_every_component_with_a_system_has_a_workload_world() -> None:
    # the scheduler system is the reference vLLM-engine traces replay on, and SGLang's cache the one
    # SGLang's traces replay on: their workloads are the engines' schedules (kvmodel conform
    # --target vllm-engine / sglang-radix-cache), not generated operations
    engines = {"mocker_vllm_scheduler", "sglang_radix_cache"}
    assert set(API_COMPONENTS) == set(components.names(lambda c: c.system)) - {"router", *engines}


@pytest.mark.parametrize("component", API_COMPONENTS)
def test_a_default_run_exercises_every_operation(component: str) -> None:
    rep = api.check_implementation(api.ModelAdapter(component), component)
    assert rep.ok, rep.explain()
    assert rep.workloads == 200 and sum(rep.op_counts.values()) == rep.steps
    seen = {label.split(":")[0] for label in rep.op_counts}
    assert set(api.operations(component)) <= seen, set(api.operations(component)) - seen
    if component == "kv_manager":  # every MoveBlock variant
        assert {f"process:{k}" for k in ("Use", "Deref", "Destroy", "Promote")} <= set(rep.op_counts)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(API_COMPONENTS), st.lists(st.integers(0, 10_000), max_size=25))
def test_workloads_hold_no_malformed_input(component: str, picks: list[int]) -> None:
    c = components.get(component)
    sp = c.api_space()
    ops = api._concrete(component, {}, [], picks, sp)
    s = sp.system({}, [])
    for op, args in ops:
        assert not isinstance(s.step(op, args).error, InvalidInput), (op, args)


class _Renumbered(api.ModelAdapter):
    """The registry model with its handle ids renumbered: consistently, or not."""

    def __init__(self, consistent: bool) -> None:
        super().__init__("kvbm_block_registry")
        self.consistent = consistent
        self.calls = 0

    def step(self, op: str, args: Any) -> dict[str, Any]:
        out = super().step(op, args)
        for e in out["events"]:
            self.calls += 1
            e["handle"] = 1000 + e["handle"] * 7 + (0 if self.consistent else self.calls % 2)
        return out


def test_handle_ids_compare_up_to_a_consistent_renaming() -> None:
    assert api.check_implementation(_Renumbered(True), "kvbm_block_registry", workloads=100).ok
    bad = api.check_implementation(_Renumbered(False), "kvbm_block_registry", workloads=100)
    assert not bad.ok and bad.divergence is not None and bad.divergence.what == "events"


def test_renaming_is_one_to_one() -> None:
    r = api.Renaming(("handle",))
    a = [{"kind": "Register", "handle": 1}, {"kind": "Register", "handle": 2}]
    assert not r.same_events(a, [{"kind": "Register", "handle": 5}, {"kind": "Register", "handle": 5}])
    assert r.same_events(a, [{"kind": "Register", "handle": 5}, {"kind": "Register", "handle": 6}])
    assert not r.same_events([{"kind": "Remove", "handle": 1}], [{"kind": "Remove", "handle": 6}])
    assert r.same_events([{"kind": "Remove", "handle": 2}], [{"kind": "Remove", "handle": 6}])


def test_a_panic_message_with_runtime_data_matches_its_prefix() -> None:
    err = {"type": "PromoteMissing", "id": "Missing active block for promotion", "detail": ""}
    assert api.same_error(err, "PromoteMissing")
    assert api.same_error(err, "Missing active block for promotion")
    assert api.same_error(err, "Missing active block for promotion: PartialBlock(p0). Block still exists: false")
    assert not api.same_error(err, "Missing active block for promotions")
    assert not api.same_error(err, "Missing active block")
    assert not api.same_error(err, {"type": "PromoteMissing"})


class _RustMessages(api.ModelAdapter):
    """Rejections as the real code's full message: the id, then the runtime data."""

    def step(self, op: str, args: Any) -> dict[str, Any]:
        out = self.system.step(op, args).observation(None)
        if "error" in out:
            e = out["error"]
            out["error"] = f"{e['id']}: {e['detail'] or 'data'}"
        return out


@pytest.mark.parametrize("component", ["kv_manager", "kvbm_block_registry", "g1_native"])
def test_real_panic_messages_are_accepted(component: str) -> None:
    assert api.check_implementation(_RustMessages(component), component, workloads=60).ok


class _Spy(api.ModelAdapter):
    """The model, noting every rejection it makes."""

    def __init__(self, component: str, seen: set[tuple[str, str]]) -> None:
        super().__init__(component)
        self.seen = seen

    def step(self, op: str, args: Any) -> dict[str, Any]:
        out = self.system.step(op, args).observation(None)
        if "error" in out:
            self.seen.add((out["error"]["type"], out["error"]["id"]))
            out["error"] = out["error"]["type"]
        return out


def test_every_rejection_of_every_component_is_in_error_names() -> None:
    """Every error a default run makes the model raise is listed by error_names(component)."""
    for component in API_COMPONENTS:
        names = api.error_names(component)
        seen: set[tuple[str, str]] = set()

        api.check_implementation(_Spy(component, seen), component, workloads=60)
        assert seen or set(names) == {"InvalidInput"}, component  # the LRU evictors reject nothing
        for typ, ident in seen:
            assert names.get(typ) == ident or ident in names.values(), (component, typ, ident)


def test_a_run_that_compared_nothing_is_not_a_pass() -> None:
    rep = api.DiffReport("x", "kv_manager", {}, [], workloads=3, steps=0)
    assert rep.ok and rep.verdict == "inconclusive"
    assert api.DiffReport("x", "kv_manager", {}, [], workloads=3, steps=5).verdict == "pass"


@pytest.mark.parametrize("component", ["kv_manager", "g1_kvbm"])
def test_a_generated_workload_ends_at_a_panic_that_changed_the_state(component: str) -> None:
    """Rust's engine task dies at a panic: no workload goes on from a state a panic left changed
    (a faithful revision's mutation before panicking), and a rejection that changed nothing is an
    ordinary step."""
    import random

    from kvmodel.model.quirks import faithful
    from kvmodel.systems import make_system

    q = sorted(faithful(component))
    sp = api.workload_space(component)
    cfg = dict(make_system(component, {}, q).config)
    rnd = random.Random(0)
    ended, went_on = 0, 0
    for _ in range(150):
        picks = [rnd.randrange(10_000) for _ in range(40)]
        ops = api._concrete(component, cfg, q, picks, sp)
        s = make_system(component, cfg, q)
        for i, (op, args) in enumerate(ops):
            before = s.key()
            out = s.step(op, args)
            if out.error is not None and s.key() != before:
                assert i == len(ops) - 1, (component, ops[: i + 2])
                ended += 1
            elif out.error is not None and i < len(ops) - 1:
                went_on += 1
    assert ended > 0 and went_on > 0  # both kinds occur in these workloads
