"""The Hypothesis engine: the component's rule-based machine, its counterexamples shrunk and
written as traces."""

from __future__ import annotations

from typing import Any

from kvmodel import machines, traces
from kvmodel.components import Component
from kvmodel.engines.base import Budget, Case, CheckResult, trace_name
from kvmodel.profiles import QUIRK_MIN_EXAMPLES


def outcome(r: machines.HypothesisResult, *, expect_violation: bool) -> str:
    """A run's outcome: a violation found where none is expected (or none found where one is);
    a flaky run is an engine error; nothing run at all is inconclusive. A bad input that did not
    raise its documented error (``WrongError``) is a finding, not an engine error."""
    if r.error is not None:
        return "error" if r.error.startswith("Flaky") else "violation"
    if r.examples == 0:
        return "inconclusive"
    return "pass" if (r.violation is not None) == expect_violation else "violation"


class HypothesisEngine:
    name = "hypothesis"

    def supports(self, component: Component) -> bool:
        return component.machine is not None

    def cases(self, component: Component, matrix: list[Case]) -> list[Case]:
        return matrix

    def run(self, component: Component, case: Case, budget: Budget) -> CheckResult:
        quirk = case.kind == "quirk"
        r = machines.run(
            component,
            quirks=case.quirks,
            mode=f"quirk:{case.quirk}" if quirk else case.kind,
            seed=budget.seed,
            max_examples=max(budget.max_examples, QUIRK_MIN_EXAMPLES) if quirk else budget.max_examples,
            steps=budget.steps,
            target=case.breaks if quirk else None,
        )
        path = None
        if r.trace is not None and r.violation is not None:
            p = budget.out_dir / trace_name(component.name, case.file_label, r.violation["invariant"], r.seed)
            traces.write(r.trace, p)
            path = str(p)
        out = outcome(r, expect_violation=quirk)
        extra: dict[str, Any] = r.to_json()
        if quirk:
            extra["expects"] = list(case.breaks)
        return CheckResult(
            engine=self.name,
            component=component.name,
            check=case.label,
            outcome=out,
            verdict=case.verdict_word(out),
            seconds=r.seconds,
            steps=r.steps,
            violation=r.violation,
            trace=path,
            error=r.error,
            extra=extra,
        )
