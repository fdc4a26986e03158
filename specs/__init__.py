"""kvmodel.specs — Z3 encodings of the components as symbolic transition systems.

:mod:`kvmodel.specs.engine` is the generic engine (BMC, k-induction, single-step
checks); each component module builds a :class:`~kvmodel.specs.engine.TransitionSystem`
for a bounded universe and a set of quirks; :mod:`kvmodel.specs.runner` connects them to
the executable model (counterexample traces that replay, agreement checks).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from kvmodel.model.errors import InvalidInput
from kvmodel.specs.engine import Step, TransitionSystem


class Spec(Protocol):
    """What the runner needs of a component's spec."""

    ts: TransitionSystem
    quirks: frozenset[str]

    def bounded(self, depth: int) -> Spec: ...
    def exec_config(self) -> dict[str, Any]: ...
    def step_json(self, step: Step) -> tuple[str, Any]: ...
    def universe_json(self) -> dict[str, Any]: ...

    # The other direction (agreement runs): executable steps and states as constraints.
    def within_bounds(self, system: Any, op: str) -> bool: ...
    def step_params(self, pre: Any, op: str, out: Any) -> tuple[str, dict[str, int]]: ...
    def state_constraint(self, system: Any, *, exact_stamps: bool) -> Callable[[Any], Any]: ...
    def post_constraint(self, system: Any, out: Any) -> Callable[[Any], Any]: ...
    def describe(self, values: dict[str, Any] | None) -> str: ...


def _kv(config: dict[str, Any], quirks: Iterable[str]) -> Spec:
    from kvmodel.specs.kv_manager import make_spec

    return make_spec(config, quirks)


def _lru(component: str) -> Callable[[dict[str, Any], Iterable[str]], Spec]:
    def make(config: dict[str, Any], quirks: Iterable[str]) -> Spec:
        from kvmodel.specs.lru import make_spec

        return make_spec(component, config, quirks)

    return make


def _registry(config: dict[str, Any], quirks: Iterable[str]) -> Spec:
    from kvmodel.specs.registry import make_spec

    return make_spec(config, quirks)


def _g1(config: dict[str, Any], quirks: Iterable[str]) -> Spec:
    from kvmodel.specs.g1 import make_spec

    return make_spec(config, quirks)


def _kvbm(config: dict[str, Any], quirks: Iterable[str]) -> Spec:
    from kvmodel.specs.kvbm import make_spec

    return make_spec(config, quirks)


SPECS: dict[str, Callable[[dict[str, Any], Iterable[str]], Spec]] = {
    "g1_native": _g1,
    "g1_kvbm": _kvbm,
    "kvbm_block_registry": _registry,
    "kv_manager": _kv,
    "lru_evictor_wallclock": _lru("lru_evictor_wallclock"),
    "lru_evictor_counter": _lru("lru_evictor_counter"),
}


def universe_of(component: str, config: dict[str, Any], space: dict[str, Any]) -> dict[str, Any]:
    """The spec universe of an explorer world (its configuration and bounded space, as in the
    manifest), so that BMC and BFS search the same bounded system."""
    if component == "kv_manager":
        keys = ("n_full", "partials", "max_batch")
        return {"max_capacity": config["max_capacity"], **{k: space[k] for k in keys}}
    if component == "kvbm_block_registry":
        from kvmodel.explorer import RegSpace

        out = {k: v for k, v in space.items() if k != "shared"}
        if space.get("shared"):
            out["registries"] = RegSpace(**space).registries()
        return out
    if component == "g1_native":
        return {**space, **({"capacity": config["max_capacity"]} if "max_capacity" in config else {})}
    if component == "g1_kvbm":
        return {"owners": space.get("owners", 2), "capacity": config.get("max_capacity", 2)}
    return {"objects": space["objects"], "max_queue": space["max_queue"], **config}


def make_spec(component: str, config: dict[str, Any] | None = None, quirks: Iterable[str] = ()) -> Spec:
    if component not in SPECS:
        raise InvalidInput(f"no Z3 spec for component {component!r} (known: {', '.join(SPECS)})")
    return SPECS[component](dict(config or {}), quirks)
