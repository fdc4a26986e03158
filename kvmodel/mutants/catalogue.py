"""The mutant catalogue: plausible one-idea bugs in the ideal models (see :mod:`kvmodel.mutants`),
gathered from the components' declarations (each component's ``mutants.py``), in registry order."""

from __future__ import annotations

from typing import Any

from kvmodel.mutants import Mutant


def mutants() -> tuple[Mutant, ...]:
    from kvmodel import components

    return tuple(m for c in components.registered() for m in c.seeded_mutants())


def __getattr__(name: str) -> Any:
    if name == "MUTANTS":
        return mutants()
    raise AttributeError(name)
