"""The engines behind ``kvmodel check``, one protocol for all four.

An :class:`Engine` has a ``name``, says which components it ``supports`` (from the component's
record: a machine, a space, a spec, conformance targets) and ``run``s one :class:`Case` of the
check matrix (:mod:`kvmodel.suite`) within a :class:`Budget`, returning a :class:`CheckResult`:
the case's outcome (``pass``, ``violation``, ``error`` or ``inconclusive``, as in
:mod:`kvmodel.verdicts`), the violation reported and its trace, seconds and steps or states.

* ``hypothesis`` — the component's rule-based machine (:mod:`kvmodel.machines`);
* ``explore`` — exhaustive BFS of the component's check world (:mod:`kvmodel.explorer`);
* ``z3`` — k-induction of the ideal model, BMC of the faithful model and of each quirk
  (:mod:`kvmodel.specs.runner`);
* ``conform`` — the component's conformance targets against the real implementations.
"""

from __future__ import annotations

from kvmodel.engines.base import Budget, Case, CheckResult, Engine, trace_name
from kvmodel.engines.conform import ConformEngine
from kvmodel.engines.explore import ExploreEngine
from kvmodel.engines.hypothesis import HypothesisEngine
from kvmodel.engines.z3 import Z3Engine

__all__ = ["ENGINE_NAMES", "Budget", "Case", "CheckResult", "Engine", "engines", "get", "trace_name"]


def engines() -> tuple[Engine, ...]:
    """Every engine, in the order ``kvmodel check`` runs them."""
    return (HypothesisEngine(), ExploreEngine(), Z3Engine(), ConformEngine())


ENGINE_NAMES = ("hypothesis", "explore", "z3", "conform")


def get(name: str) -> Engine:
    for e in engines():
        if e.name == name:
            return e
    raise ValueError(f"unknown engine {name!r} (known: {', '.join(ENGINE_NAMES)})")
