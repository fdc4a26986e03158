"""kvmodel.specs — Z3 encodings of the components as symbolic transition systems.

:mod:`kvmodel.specs.engine` is the generic engine (BMC, k-induction, single-step
checks); each component module builds a :class:`~kvmodel.specs.engine.TransitionSystem`
for a bounded universe and a set of quirks; :mod:`kvmodel.specs.runner` connects them to
the executable model (counterexample traces that replay, agreement checks).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

from kvmodel.specs.engine import Step, TransitionSystem


class Spec(Protocol):
    """What the runner needs of every component's spec: the transition system, its quirks, a
    version bounded for a BMC depth, and the way back to the executable model."""

    ts: TransitionSystem
    quirks: frozenset[str]

    def bounded(self, depth: int) -> Spec: ...
    def exec_config(self) -> dict[str, Any]: ...
    def step_json(self, step: Step) -> tuple[str, Any]: ...
    def universe_json(self) -> dict[str, Any]: ...


@runtime_checkable
class ConstraintSpec(Spec, Protocol):
    """A spec whose agreement runs read executable steps and states as constraints
    (:func:`kvmodel.specs.runner.agreement`: the KV manager's and the LRU evictors'); the G1 and
    KVBM specs check agreement state by state with their own functions, the registry's not at all."""

    def within_bounds(self, system: Any, op: str) -> bool: ...
    def step_params(self, pre: Any, op: str, out: Any) -> tuple[str, dict[str, int]]: ...
    def state_constraint(self, system: Any, *, exact_stamps: bool) -> Callable[[Any], Any]: ...
    def post_constraint(self, system: Any, out: Any) -> Callable[[Any], Any]: ...
    def describe(self, values: dict[str, Any] | None) -> str: ...


def spec_components() -> tuple[str, ...]:
    """The components with a Z3 spec, in registry order."""
    from kvmodel import components

    return components.names(lambda c: c.spec)


def universe_of(component: str, config: dict[str, Any], space: dict[str, Any]) -> dict[str, Any]:
    """The spec universe of an explorer world (its configuration and bounded space, as in the
    manifest), so that BMC and BFS search the same bounded system."""
    from kvmodel import components

    c = components.get(component, lambda c: c.universe, "component with a Z3 spec")
    return c.spec_universe(components.World(config, space))


def make_spec(component: str, config: dict[str, Any] | None = None, quirks: Iterable[str] = ()) -> Spec:
    from kvmodel import components

    c = components.get(component, lambda c: c.spec, "component with a Z3 spec")
    assert c.spec is not None
    return c.spec(dict(config or {}), quirks)


def __getattr__(name: str) -> Any:
    if name == "SPECS":  # the components with a spec (computed: components register lazily)
        return spec_components()
    raise AttributeError(name)
