"""The check matrix, written once: for each component, the ideal model (must hold), the faithful
model (the seed's revision, or a named one: its violations are reported) and each quirk with its
prerequisites (must break every invariant it is declared to break), on every engine that supports
the component. ``kvmodel check``, ``tools/gen_manifest.py``, ``tools/gen_findings.py``, the
mutation benchmark and the test suite use it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kvmodel import components
from kvmodel.engines import Budget, Case, CheckResult, Engine, engines
from kvmodel.model.quirks import faithful, quirks_of, revision
from kvmodel.verdicts import worst

MODES = ("both", "ideal", "faithful")


def matrix(component: str, mode: str = "both", revision_name: str | None = None) -> list[Case]:
    """The cases of one component: ``both`` = the ideal model and each quirk (what ``kvmodel
    check`` runs by default); ``ideal``; ``faithful`` (the seed's revision, or ``revision_name``)."""
    c = components.get(component)
    out: list[Case] = []
    if mode in ("ideal", "both"):
        out.append(Case(c.name, "ideal"))
    if mode == "faithful":
        qs = faithful(c.name) if revision_name is None else revision(c.name, revision_name).quirks
        out.append(Case(c.name, "faithful", frozenset(qs), revision=revision_name))
    if mode == "both":
        out += [quirk_case(c.name, q.name) for q in quirks_of(c.name)]
    return out


def quirk_case(component: str, quirk: str) -> Case:
    """A quirk alone, with the quirks it requires, and the invariants it must break."""
    q = next(x for x in quirks_of(component) if x.name == quirk)
    return Case(component, "quirk", frozenset({q.name, *q.requires}), quirk=q.name, breaks=tuple(q.breaks))


def plan(
    names: Iterable[str],
    engine_names: Iterable[str] | None = None,
    mode: str = "both",
    revision_name: str | None = None,
) -> list[tuple[Engine, components.Component, Case]]:
    """Every (engine, component, case) to run, engine by engine, in registry order."""
    wanted = None if engine_names is None else set(engine_names)
    comps = [components.get(n) for n in names]
    out = []
    for e in engines():
        if wanted is not None and e.name not in wanted:
            continue
        for c in comps:
            if e.supports(c):
                out += [(e, c, case) for case in e.cases(c, matrix(c.name, mode, revision_name))]
    return out


def run(
    names: Iterable[str],
    engine_names: Iterable[str] | None = None,
    *,
    mode: str = "both",
    revision_name: str | None = None,
    budget: Budget | None = None,
    progress: Callable[[str], None] | None = None,
    done: Callable[[CheckResult], None] | None = None,
) -> list[CheckResult]:
    """Run the plan; every engine failure becomes an ``error`` row (never a pass or a find)."""
    budget = budget or Budget()
    results = []
    for e, c, case in plan(names, engine_names, mode, revision_name):
        if progress is not None:
            progress(f"{e.name} on {c.name} ({case.label})")
        try:
            r = e.run(c, case, budget)
        except Exception as ex:  # an engine crash decides nothing
            r = CheckResult(e.name, c.name, case.label, "error", "FAIL", error=f"{type(ex).__name__}: {ex}"[:300])
        results.append(r)
        if done is not None:
            done(r)
    return results


def verdict(results: Iterable[CheckResult]) -> str:
    return worst(r.outcome for r in results)


def summary(results: list[CheckResult], **about: Any) -> dict[str, Any]:
    v = verdict(results)
    return {**about, "verdict": v, "ok": v == "pass", "results": [r.to_json() for r in results]}
