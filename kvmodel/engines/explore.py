"""The explorer engine: exhaustive BFS of the component's check world (its check profile). The
ideal model must hold and reach every witness; a quirk must break every invariant it is declared
to break (the search of a quirk's case ends once each has its shortest counterexample); the
shallowest counterexample is written as a trace."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kvmodel import explorer, traces
from kvmodel.components import Component
from kvmodel.engines.base import Budget, Case, CheckResult


def outcome(r: explorer.ExploreResult, case: Case) -> str:
    if case.kind == "quirk":
        if all(b in r.violations for b in case.breaks):
            return "pass"
        return "inconclusive" if not r.complete else "violation"
    if case.kind == "ideal" and r.missing_witnesses and r.complete and not r.violations:
        return "violation"  # a witness the world should reach is missing: the check is vacuous
    if r.violations:
        return "violation"
    return "pass" if r.complete else "inconclusive"


def shallowest(r: explorer.ExploreResult, case: Case) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The shallowest violation the case looks for (a quirk: among those it breaks), as its trace
    and its (invariant, step, message); ``None`` when there is none."""
    among: Iterable[str] | None = case.breaks if case.kind == "quirk" else None
    names = [n for n in r.violations if among is None or n in among]
    if not names:
        return None
    inv = min(names, key=lambda n: (r.violations[n]["depth"], n))
    t = explorer.violation_trace(r, inv)
    v = t["violation"] or {}
    return t, {
        "invariant": inv,
        "step": v.get("step", r.violations[inv]["depth"] - 1),
        "message": v.get("message", r.violations[inv]["message"]),
    }


def search_suffix(case: Case) -> str:
    """How the check's name says the world was searched: a quirk's case stops once its
    invariants are broken (each at its shallowest), the others search the whole world."""
    return " (BFS, stops at the shallowest)" if case.kind == "quirk" else " (exhaustive)"


class ExploreEngine:
    name = "explore"

    def supports(self, component: Component) -> bool:
        return component.space is not None and component.system is not None

    def cases(self, component: Component, matrix: list[Case]) -> list[Case]:
        return matrix

    def run(self, component: Component, case: Case, budget: Budget) -> CheckResult:
        w = component.profile.explore
        # A quirk's case passes once each invariant it breaks has a counterexample, and BFS finds
        # each first at its minimal depth: the search stops there (``until``), with the same
        # verdict and the same shallowest trace as the whole search; it runs to the end when
        # one is missing (then the verdict is a violation, as before).
        until = case.breaks if case.kind == "quirk" else None
        r = explorer.explore(dict(w.config), case.quirks, component.explore_space(w), until=until)
        out = outcome(r, case)
        found = shallowest(r, case)
        viol = None
        if found is not None:
            t, viol = found
            inv = viol["invariant"]
            path = budget.out_dir / f"{component.name}-explore-{case.file_label}-{inv.replace('.', '_')}.json"
            traces.write(t, path)
            viol["trace_path"] = str(path)
        return CheckResult(
            engine=self.name,
            component=component.name,
            check=case.label + search_suffix(case),
            outcome=out,
            verdict=case.verdict_word(out),
            seconds=r.seconds,
            steps=r.transitions,
            states=r.states,
            violation=viol,
            trace=viol["trace_path"] if viol else None,
        )
