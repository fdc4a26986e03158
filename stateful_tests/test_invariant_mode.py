"""Invariant mode (``check_implementation(..., check="invariants")``, kvmodel/invariant_mode.py):
an implementation of another revision passes it and fails equality; planted defects of each
invariant's kind are caught; known quirks are reported as known; the report says what was not
checked and why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kvmodel import components, show, traces
from kvmodel.api import ModelAdapter, check_implementation
from kvmodel.invariants import for_component
from kvmodel.model.quirks import revision

from .other_revisions import KvManagerPromoteFixed, OneBlockPerStored

FAST = {"coverage": False, "workloads": 150}


@pytest.mark.parametrize("snapshot", [True, False])
def test_a_correct_kv_manager_of_another_revision_passes_invariant_mode_and_fails_equality(snapshot: bool) -> None:
    inv = check_implementation(KvManagerPromoteFixed(snapshot=snapshot), "kv_manager", check="invariants", **FAST)
    assert inv.verdict == "pass" and inv.steps > 1000, inv.explain()
    assert inv.extra["check"] == "invariants"
    eq = check_implementation(KvManagerPromoteFixed(snapshot=snapshot), "kv_manager", **FAST)
    assert eq.verdict == "violation" and eq.divergence is not None and eq.divergence.what == "events"
    checked = set(inv.extra["invariants"]["checked"])
    not_checked = inv.extra["invariants"]["not_checked"]
    if snapshot:  # every invariant of the KV manager is evaluated on the implementation
        assert not not_checked and "kv.refcount_conservation" in checked
    else:  # the state invariants are not, and the report says what the adapter must expose
        assert "kv.refcount_conservation" in not_checked and "state" in not_checked["kv.refcount_conservation"]
        assert {"kv.store_lineage", "kv.store_parent_stored", "kv.prefill_cost_longest_prefix"} <= checked


@pytest.mark.parametrize(
    ("bug", "invariant", "snapshot"),
    [
        ("prefill_any_resident", "kv.prefill_cost_longest_prefix", False),
        ("store_batch_parent", "kv.store_lineage", False),
        ("deref_silently", "kv.deref_never_below_zero", False),
        ("deref_silently", "kv.deref_never_below_zero", True),
    ],
)
def test_a_planted_defect_is_caught_in_invariant_mode_and_shrunk(
    bug: str, invariant: str, snapshot: bool, tmp_path: Path
) -> None:
    rep = check_implementation(KvManagerPromoteFixed(bug, snapshot=snapshot), "kv_manager", check="invariants", **FAST)
    d = rep.divergence
    assert rep.verdict == "violation" and d is not None and d.what == "invariant", rep.explain()
    assert d.model["invariant"] == invariant and d.model["statement"]
    assert rep.ops is not None and len(rep.ops) <= 3 and d.step == len(rep.ops) - 1
    assert f"breaks {invariant}" in str(d)
    # the trace marks the implementation's violation for show and replay
    assert rep.trace is not None and show.marked(rep.trace)["invariant"].startswith(invariant)
    path = rep.write_trace(tmp_path / "t.json")
    assert path is not None
    trace = traces.load(path)  # the file reads back as a valid trace, which replays on the model
    assert trace["origin"]["divergence"]["what"] == "invariant"
    assert traces.replay(trace).steps_run == len(rep.ops)


def test_the_seed_fails_invariant_mode_unless_its_quirks_are_accepted_and_then_they_are_known() -> None:
    seed = ModelAdapter("kv_manager", "faithful", snapshot=True)
    bad = check_implementation(seed, "kv_manager", check="invariants", **FAST)
    assert bad.verdict == "violation" and bad.divergence is not None and bad.divergence.what == "invariant"
    ok = check_implementation(seed, "kv_manager", check="invariants", accept="faithful", **FAST)
    assert ok.verdict == "pass", ok.explain()
    known = ok.extra["invariants"]["known"]
    assert "kv.store_parent_stored" in known and "store_parent_last_hit" in known["kv.store_parent_stored"]
    assert "kv.prefill_cost_longest_prefix" in known  # the new invariant: the seed's quirk
    assert known["kv.prefill_cost_longest_prefix"] == ["prefill_cost_counts_any_resident"]
    assert ok.extra["accepted_quirks"] == sorted(ok.extra["accepted_quirks"])
    # one accepted quirk explains only its own invariants: the others stay new failures
    part = check_implementation(seed, "kv_manager", check="invariants", accept=["store_parent_last_hit"], **FAST)
    assert part.verdict == "violation"
    assert part.divergence is not None and part.divergence.model["invariant"] not in {"kv.store_lineage"}


def test_both_mode_accepts_the_compared_revisions_quirks_and_still_finds_differences() -> None:
    same = check_implementation(
        ModelAdapter("kv_manager", "faithful"), "kv_manager", quirks="faithful", check="both", **FAST
    )
    assert same.verdict == "pass" and same.extra["invariants"]["known"], same.explain()
    other = check_implementation(KvManagerPromoteFixed(), "kv_manager", check="both", **FAST)
    assert other.verdict == "violation" and other.divergence is not None and other.divergence.what == "events"


class _Garbled:
    name = "garbled events"

    def __init__(self, event: Any) -> None:
        self.event, self.inner = event, KvManagerPromoteFixed(snapshot=False)

    def reset(self, config: dict[str, Any]) -> None:
        self.inner.reset(config)

    def step(self, op: str, args: Any) -> dict[str, Any]:
        out = self.inner.step(op, args)
        if out["events"]:
            out["events"] = [self.event]
        return out


@pytest.mark.parametrize(
    "event",
    [{"Store": {"blocks": ["1"], "parent_hash": None}}, {"Stored": {"blocks": [1]}}, {"Remove": {"blocks": [True]}}],
)
def test_an_event_of_no_known_shape_is_a_malformed_answer(event: Any) -> None:
    rep = check_implementation(_Garbled(event), "kv_manager", check="invariants", **FAST)
    assert rep.divergence is not None and rep.divergence.what == "malformed"


def test_bad_arguments_are_refused_with_one_clear_error() -> None:
    with pytest.raises(ValueError, match="check must be"):
        check_implementation(KvManagerPromoteFixed(), "kv_manager", check="invariant")
    with pytest.raises(ValueError, match="unknown quirk"):
        check_implementation(KvManagerPromoteFixed(), "kv_manager", check="invariants", accept=["nope"])
    with pytest.raises(ValueError, match="unknown revision"):
        check_implementation(KvManagerPromoteFixed(), "kv_manager", check="invariants", accept="nope")


def test_every_invariant_declares_what_it_needs() -> None:
    from kvmodel.invariants import catalogue
    from kvmodel.invariants.core import NEEDS

    for inv in catalogue():
        assert inv.needs and inv.needs <= set(NEEDS) and "events" in inv.needs, inv.name
        assert inv.to_json()["needs"] == sorted(inv.needs)


@pytest.mark.parametrize("component", ["g1_native", "g1_kvbm"])
def test_a_g1_publisher_of_one_block_per_stored_passes_invariants_and_a_batch_parent_bug_is_caught(
    component: str,
) -> None:
    ok = check_implementation(OneBlockPerStored(ModelAdapter(component)), component, check="invariants", **FAST)
    assert ok.verdict == "pass", ok.explain()
    assert f"{'g1' if component == 'g1_native' else 'kvbm'}.stored_lineage" in ok.extra["invariants"]["checked"]
    eq = check_implementation(OneBlockPerStored(ModelAdapter(component)), component, **FAST)
    assert eq.verdict == "violation" and eq.divergence is not None and eq.divergence.what == "events"
    bad = check_implementation(
        OneBlockPerStored(ModelAdapter(component), "batch_parent"), component, check="invariants", **FAST
    )
    d = bad.divergence
    assert d is not None and d.what == "invariant" and d.model["invariant"].endswith(".stored_lineage"), bad.explain()


def test_the_tiered_registry_revision_passes_invariant_mode_and_fails_equality_with_the_seed() -> None:
    tiered = ModelAdapter("kvbm_block_registry", sorted(revision("kvbm_block_registry", "e3d00b899").quirks))
    few = {"coverage": False, "workloads": 60}
    inv = check_implementation(tiered, "kvbm_block_registry", check="invariants", accept="e3d00b899", **few)
    assert inv.verdict == "pass", inv.explain()
    eq = check_implementation(tiered, "kvbm_block_registry", quirks="faithful", **few)
    assert eq.verdict == "violation"


@pytest.mark.parametrize("component", [c.name for c in components.registered() if c.api_world is not None], ids=str)
def test_every_component_with_a_workload_generator_has_invariant_mode(component: str) -> None:
    few = {"coverage": False, "workloads": 50}  # every operation appears; the registry's are long
    ideal = check_implementation(ModelAdapter(component), component, check="invariants", **few)
    assert ideal.verdict == "pass" and ideal.extra["invariants"]["checked"], ideal.explain()
    seed = check_implementation(
        ModelAdapter(component, "faithful"), component, check="invariants", accept="faithful", **few
    )
    assert seed.verdict == "pass", seed.explain()
    report = ideal.extra["invariants"]
    names = {i.name for i in for_component(component)}
    assert set(report["checked"]) | set(report["not_checked"]) == names


def test_a_promotes_store_is_held_to_the_promotes_parent() -> None:
    """``kv.store_lineage`` covers a Promote's Store: the example pool's bug that stores a promoted
    block without its parent is caught with no reference revision."""
    import importlib.util

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("my_kv_manager_inv", root / "examples" / "my_kv_manager.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rep = check_implementation(mod.MyAdapter("promote_store_without_parent"), "kv_manager", check="invariants", **FAST)
    d = rep.divergence
    assert d is not None and d.what == "invariant" and d.model["invariant"] == "kv.store_lineage", rep.explain()
    assert d.op == "process" and "Promote" in d.args and rep.ops is not None and len(rep.ops) <= 3


def test_an_invariant_no_adapter_can_enable_is_told_apart_from_one_a_state_would_enable() -> None:
    """G1's state invariants read the model's pool and tables, for which no state shape is defined:
    the report must not ask the adapter for a `state` it would not read."""
    rep = check_implementation(ModelAdapter("g1_native"), "g1_native", check="invariants", coverage=False, workloads=5)
    reasons = rep.extra["invariants"]["not_checked"]
    assert reasons and all("no state shape is defined" in why for why in reasons.values())
    kv = check_implementation(ModelAdapter("kv_manager"), "kv_manager", check="invariants", coverage=False, workloads=5)
    assert all("no state shape" not in why for why in kv.extra["invariants"]["not_checked"].values())
