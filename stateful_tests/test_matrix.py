"""The check matrix, once for every component (:mod:`kvmodel.suite`): the ideal model holds,
the seed's revision (faithful) is caught, and each quirk, with the quirks it requires, is found
by Hypothesis — a counterexample to one of the invariants it is declared to break — whose
trace validates and replays to the same violation. The budget is the ``kvmodel check``
profile's (the engine raises quirk cases to ``QUIRK_MIN_EXAMPLES``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvmodel import components, suite, traces
from kvmodel.engines import Budget, Case
from kvmodel.engines.hypothesis import HypothesisEngine
from kvmodel.profiles import PROFILES

ENGINE = HypothesisEngine()
CASES = [
    (c, case)
    for c in components.registered()
    if ENGINE.supports(c)
    for case in suite.matrix(c.name, "both") + suite.matrix(c.name, "faithful")
]


@pytest.mark.parametrize(("component", "case"), CASES, ids=[f"{c.name}-{k.file_label}" for c, k in CASES])
def test_matrix_case(component: components.Component, case: Case, tmp_path: Path) -> None:
    ci = PROFILES["ci"]
    r = ENGINE.run(component, case, Budget(max_examples=ci.max_examples, steps=ci.steps, seed=0, out_dir=tmp_path))
    # the faithful model of a component with quirks breaks invariants: its expected outcome is a
    # violation (exit 1); a component with none (the counter LRU) is its own ideal
    broken = case.kind == "faithful" and bool(case.quirks)
    assert r.outcome == ("violation" if broken else "pass"), (r.verdict, r.error, r.violation)
    if case.kind == "faithful" and not case.quirks:
        return
    if case.kind == "ideal":
        # not vacuous: every example ran steps (the machines' runs are 1 to 30 steps long)
        assert r.violation is None and r.steps > ci.max_examples
        return
    assert r.violation is not None and r.trace is not None
    if case.kind == "quirk":
        assert r.violation["invariant"] in case.breaks
    trace = traces.load(r.trace)
    assert traces.validate(trace) is None
    rr = traces.replay(trace)
    assert rr.divergence is None and rr.reproduces_recorded, rr.to_json()
    assert len(trace["steps"]) <= 12, len(trace["steps"])
