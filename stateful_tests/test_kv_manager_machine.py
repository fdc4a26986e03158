"""The KV manager's Hypothesis machine, both directions.

* Ideal model (all quirks off): no invariant fails, in several configurations.
* Each quirk alone (with the quirks it requires): Hypothesis finds a counterexample to an
  invariant the quirk is declared to break, and the trace it writes replays on the model
  with the same violation.
* Faithful model (all quirks on): a counterexample is found and replays.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from kvmodel import machines, traces
from kvmodel.model.quirks import quirks_of

IDEAL_CONFIGS: list[dict[str, Any]] = [
    {"max_capacity": 4},
    {"max_capacity": 2, "evictor": "counter"},
    {"max_capacity": 3, "channel": False},
    {"max_capacity": 0},
]


@pytest.mark.parametrize("config", IDEAL_CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_ideal_machine_holds(config: dict[str, Any]) -> None:
    machine = machines.machine_for("kv_manager", config, quirks=())
    run_state_machine_as_test(machine, settings=settings())


def test_each_quirk_alone_is_invisible_to_the_ideal_invariants_it_does_not_break() -> None:
    """Sanity of the catalogue: every declared breakage names a registered invariant."""
    from kvmodel.invariants import for_component

    names = {i.name for i in for_component("kv_manager")}
    for q in quirks_of("kv_manager"):
        assert set(q.breaks) <= names, q.name
        assert set(q.requires) <= {x.name for x in quirks_of("kv_manager")}


def test_counterexamples_are_one_minimal() -> None:
    """Removing any single step of a reported counterexample loses the violation."""
    q = next(q for q in quirks_of("kv_manager") if q.name == "promote_leaves_inactive_copy")
    res = machines.run("kv_manager", quirks=(q.name,), target=q.breaks, max_examples=1500, seed=0)
    assert res.trace is not None and res.violation is not None
    ops = [(s["op"], s["args"]) for s in res.trace["steps"]]
    inv = res.violation["invariant"]
    for i in range(len(ops)):
        cand = ops[:i] + ops[i + 1 :]
        t = traces.record("kv_manager", res.trace["config"], res.trace["quirks"], cand, target=[inv])
        assert t["violation"] is None, f"step {i} was not needed"


def test_same_seed_same_trace_bytes() -> None:
    q = quirks_of("kv_manager")[0]
    a = machines.run("kv_manager", quirks=(q.name,), target=q.breaks, seed=7)
    b = machines.run("kv_manager", quirks=(q.name,), target=q.breaks, seed=7)
    assert a.trace is not None and b.trace is not None
    assert traces.dumps(a.trace) == traces.dumps(b.trace)
