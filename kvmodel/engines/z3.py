"""The Z3 engine: every ideal invariant proved by k-induction (on the spec's default universe);
the faithful model and each quirk's declared breakage found by BMC on the component's check
universe, each trace replayed on the executable model before it is written."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kvmodel.components import Component
from kvmodel.engines.base import Budget, Case, CheckResult


def _properties(component: Component) -> set[str]:
    from kvmodel.specs import make_spec

    return {p.name for p in make_spec(component.name, component.check_universe()).ts.properties}


class Z3Engine:
    name = "z3"

    def supports(self, component: Component) -> bool:
        return component.spec is not None

    def cases(self, component: Component, matrix: list[Case]) -> list[Case]:
        """A quirk the spec's world cannot reach (the explorer's world does), or none of whose
        broken invariants the spec states, has no Z3 case: a check that could not fail is none."""
        props = _properties(component) if any(c.kind == "quirk" for c in matrix) else set()
        out = []
        for c in matrix:
            if c.kind == "quirk":
                if component.modelled_quirks([c.quirk or ""]) != {c.quirk}:
                    continue
                if not set(c.breaks) & props:
                    continue
            out.append(c)
        return out

    def run(self, component: Component, case: Case, budget: Budget) -> CheckResult:
        from kvmodel.specs.runner import prove, run_bmc

        name, depth = component.name, component.profile.bmc_depth
        among: Iterable[str] | None = None
        if case.kind == "ideal":
            rep = prove(name)
            rep.pop("_results")
            out = "pass" if rep["all_proved"] else "inconclusive" if rep["verdict"] == "inconclusive" else "violation"
            check = "ideal (k-induction)"
        elif case.kind == "faithful":
            rep = run_bmc(
                name, depth, component.check_universe(), component.modelled_quirks(case.quirks), out=budget.out_dir
            )
            out = "violation" if rep["verdict"] == "violation" else rep["verdict"]
            check = "faithful (BMC)"
        else:
            props = _properties(component)
            wanted = [b for b in case.breaks if b in props]
            rep = run_bmc(
                name,
                depth,
                component.check_universe(),
                case.quirks,
                out=budget.out_dir,
                properties=wanted,
                label=f"quirk-{case.quirk}",
                induction=False,  # the quirk's invariants are expected to break: straight to BMC
            )
            got = {r["invariant"] for r in rep["invariants"] if r["status"] == "violated"}
            if set(wanted) <= got:
                out = "pass"
            elif any(r["status"] == "inconclusive" for r in rep["invariants"]):
                out = "inconclusive"
            else:
                out = "violation"
            among = case.breaks
            check = f"quirk {case.quirk} (BMC)"
        viol = [
            r for r in rep["invariants"] if r["status"] == "violated" and (among is None or r["invariant"] in among)
        ]
        v = min(viol, key=lambda r: (r["k"], r["invariant"])) if viol else None
        violation: dict[str, Any] | None = None
        if v:
            violation = {
                "invariant": v["invariant"],
                "step": v["k"] - 1,
                "message": "found by BMC",
                "trace": v.get("trace"),
            }
        return CheckResult(
            engine=self.name,
            component=name,
            check=check,
            outcome=out,
            verdict=case.verdict_word(out),
            seconds=rep["seconds"],
            steps=rep.get("depth", rep.get("max_k", 0)),
            violation=violation,
            trace=v.get("trace") if v else None,
            extra={"invariants": rep["invariants"]},
        )
