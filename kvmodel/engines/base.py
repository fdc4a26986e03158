"""What every engine shares: the check matrix's :class:`Case`, the :class:`Budget` of a run, the
:class:`CheckResult` it returns and the :class:`Engine` protocol (:mod:`kvmodel.engines`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import attrs

from kvmodel.components import Component


@attrs.frozen
class Case:
    """One cell of the check matrix: a component's model with ``quirks`` on.

    ``kind`` is ``ideal`` (no quirk: must hold), ``faithful`` (the seed's revision, or the named
    ``revision``: its violations are reported) or ``quirk`` (``quirk`` with its prerequisites:
    every invariant in ``breaks`` must be found broken)."""

    component: str
    kind: str
    quirks: frozenset[str] = frozenset()
    quirk: str | None = None
    breaks: tuple[str, ...] = ()
    revision: str | None = None

    @property
    def label(self) -> str:
        return "ideal" if self.kind == "ideal" else "faithful" if self.kind == "faithful" else f"quirk {self.quirk}"

    @property
    def file_label(self) -> str:
        return "ideal" if self.kind == "ideal" else "faithful" if self.kind == "faithful" else f"quirk-{self.quirk}"

    def verdict_word(self, outcome: str) -> str:
        """The word ``kvmodel check`` prints for the case's outcome."""
        if self.kind == "quirk":
            return "reproduced" if outcome == "pass" else "NOT REPRODUCED"
        if outcome == "pass":
            return "pass"
        return "FAIL" if self.kind == "ideal" else "VIOLATION"


@attrs.frozen
class Budget:
    """What one run may spend: Hypothesis examples and steps, the seed, the traces' folder."""

    max_examples: int = 150
    steps: int = 30
    seed: int = 0
    out_dir: Path = Path("kvmodel-traces")


@attrs.define
class CheckResult:
    """What one engine found for one case (the row ``kvmodel check`` prints and writes)."""

    engine: str
    component: str
    check: str
    outcome: str
    verdict: str
    seconds: float = 0.0
    steps: int = 0
    states: int | None = None
    violation: dict[str, Any] | None = None
    trace: str | None = None
    error: str | None = None
    extra: dict[str, Any] = attrs.field(factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = dict(self.extra)
        out.update(
            engine=self.engine,
            component=self.component,
            check=self.check,
            outcome=self.outcome,
            verdict=self.verdict,
            seconds=round(self.seconds, 3),
            steps=self.steps,
            violation=self.violation,
            trace=self.trace,
            error=self.error,
        )
        if self.states is not None:
            out["states"] = self.states
        return out


class Engine(Protocol):
    name: str

    def supports(self, component: Component) -> bool: ...

    def cases(self, component: Component, matrix: list[Case]) -> list[Case]:
        """The cases of the matrix this engine runs for the component (all, by default)."""
        ...

    def run(self, component: Component, case: Case, budget: Budget) -> CheckResult: ...


def trace_name(component: str, label: str, invariant: str, seed: int) -> str:
    return f"{component}-{label}-{invariant.replace('.', '_')}-seed{seed}.json"
