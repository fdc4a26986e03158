"""The conformance engine: the component's model against each real implementation it declares
for ``kvmodel check`` (the router against the real ``RadixTree``, the native backend against the
real mocker). A missing real part is an error, never a pass."""

from __future__ import annotations

from typing import Any

from kvmodel import traces
from kvmodel.components import Component
from kvmodel.engines.base import Budget, Case, CheckResult


def divergence(report: dict[str, Any]) -> dict[str, Any]:
    """A conformance report's first divergence as a violation row (invariant, step, message)."""
    d = report.get("first_divergence") or {}
    return {
        "invariant": f"conformance ({d.get('what')})",
        "step": d.get("step", d.get("index", 0)),
        "message": "model != real",
    }


class ConformEngine:
    name = "conform"

    def supports(self, component: Component) -> bool:
        return any(t.in_check for t in component.conform)

    def cases(self, component: Component, matrix: list[Case]) -> list[Case]:
        """One case per target (the model as the real code's revision runs it), whatever the mode."""
        return [Case(component.name, "conform", quirk=t.name) for t in component.conform if t.in_check]

    def run(self, component: Component, case: Case, budget: Budget) -> CheckResult:
        t = next(t for t in component.conform if t.name == case.quirk)
        res = CheckResult(self.name, component.name, t.title, "error", "FAIL")
        why = t.available()
        if why is not None:
            res.error = why
            return res
        j = t.run(workloads=t.check_workloads, seed=budget.seed)
        res.seconds, res.steps = j["seconds"], j.get("events", j.get("steps", 0))
        res.extra["conformance"] = j
        verdict = j.get("verdict") or ("violation" if j["divergences"] else "pass")
        if verdict == "inconclusive":  # nothing was compared: never a pass
            res.outcome, res.verdict = "inconclusive", "INCONCLUSIVE"
            res.error = "no step was compared"
            return res
        if not j["divergences"]:
            res.outcome, res.verdict = "pass", "pass"
            return res
        res.outcome, res.verdict = "violation", "DIVERGENCE"
        res.violation = divergence(j)
        res.trace = traces.write_counterexample(t, j, budget.out_dir, budget.seed)
        return res
