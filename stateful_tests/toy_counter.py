"""A toy component for the registry test: a bounded counter with one invariant and one quirk.

Everything a component needs lives here — model, action classes, bounded world, Z3 spec,
invariant, witness, quirk and the :class:`~kvmodel.components.Component` record — so that
``test_structure.py`` can show that registering the record (and its quirk and invariant
catalogue entries, declared here) is all it takes for ``kvmodel check``, ``explore``,
``prove``, ``invariants``, ``quirks`` and the API to pick a component up.

Its operations are typed actions (:mod:`kvmodel.actions`): each is declared once, as a class
that says how it reads from and writes to a trace, what it does to the model and what it does in
Z3; the system, the explorer's world, the spec and the Hypothesis machine (the generic world
machine over that world) are built from the list. :func:`component` builds the record from a
model class, the action classes and the invariants, which is how ``test_structure.py`` shows
that adding an operation touches those three and nothing else.

The counter: ``inc`` adds one up to ``limit`` (then ``Full``), ``dec`` takes one down to 0
(then ``Empty``). With the quirk ``dec_wraps`` a ``dec`` at 0 goes to -1, which breaks
``toy.nonnegative``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs
import z3
from hypothesis import strategies as st

from kvmodel.actions import Action, ActionMoves, Actions, ActionSystem
from kvmodel.components import EXPLORE, SPEC, CheckProfile, Component, Option, World
from kvmodel.explorer import NoSymmetry
from kvmodel.invariants import Invariant, StepContext, Witness
from kvmodel.machines import world_machine
from kvmodel.model.errors import ModelError
from kvmodel.model.quirks import Quirk, resolve
from kvmodel.specs.engine import Property, State, Step, TransitionSystem
from kvmodel.systems import System, check_config

NAME = "toy_counter"


class Full(ModelError):
    id = "counter full"


class Empty(ModelError):
    id = "counter empty"


class Counter:
    def __init__(self, limit: int, quirks: frozenset[str]) -> None:
        self.limit, self.value = limit, 0
        self.quirks = quirks

    def inc(self) -> int:
        if self.value >= self.limit:
            raise Full(f"at {self.value}")
        self.value += 1
        return self.value

    def dec(self) -> int:
        if self.value <= 0 and "dec_wraps" not in self.quirks:
            raise Empty("at 0")
        self.value -= 1
        return self.value


@attrs.frozen
class Inc(Action):
    """``inc``: one up, ``Full`` at the limit."""

    op = "inc"

    def run(self, model: Counter) -> int:
        return model.inc()

    @classmethod
    def effect(cls, spec: Any, s: State, p: State) -> Any:
        return z3.BoolVal(True), {"v": z3.If(s["v"] < spec.limit, s["v"] + 1, s["v"])}


@attrs.frozen
class Dec(Action):
    """``dec``: one down, ``Empty`` at 0 (with ``dec_wraps``: down to -1)."""

    op = "dec"

    def run(self, model: Counter) -> int:
        return model.dec()

    @classmethod
    def effect(cls, spec: Any, s: State, p: State) -> Any:
        wraps = "dec_wraps" in spec.quirks
        return z3.BoolVal(True), {"v": z3.If(s["v"] > 0, s["v"] - 1, s["v"] - 1 if wraps else s["v"])}


ACTIONS: tuple[type[Action], ...] = (Inc, Dec)


class CounterSystem(ActionSystem):
    """The counter behind the step interface; its operations are its actions."""

    def __init__(
        self,
        config: dict[str, Any] | None = None,
        quirks: Iterable[str] | None = None,
        *,
        name: str = NAME,
        model: type[Counter] = Counter,
        actions: Actions | None = None,
    ) -> None:
        self.component = name
        self.ACTIONS = actions or Actions(name, ACTIONS)
        self.config = check_config(name, config or {}, {"limit": 2})
        self.quirks = resolve(name, quirks)
        self._model_cls = model
        self.model = model(self.config["limit"], self.quirks)
        self.monitor = None

    def before(self) -> Any:
        return {"value": self.model.value}

    def clone(self) -> CounterSystem:
        c = CounterSystem.__new__(CounterSystem)
        c.__dict__.update(self.__dict__)
        c.model = self._model_cls(self.config["limit"], self.quirks)
        c.model.value = self.model.value
        return c

    def snapshot(self) -> dict[str, Any]:
        return {"value": self.model.value}

    def key(self) -> Any:
        return self.model.value


@attrs.frozen
class CounterSpace(NoSymmetry, ActionMoves):
    """The counter's bounded world: one move per action class (the toy's operations take no
    arguments); a ``dec`` is enabled down to 0 (with the quirk a ``dec`` at -1 would go on for
    ever)."""

    component: str
    actions: Actions
    make: Callable[..., System]

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System:
        return self.make(config, list(quirks))

    def moves(self) -> list[Any]:
        return [c() for c in self.actions.classes]

    def to_json(self) -> dict[str, Any]:
        return {}

    def _bounded_below(self, s: System, a: Action) -> bool:
        return bool(s.model.value >= 0)


CounterSpace.GUARDS = {Dec: CounterSpace._bounded_below}


class CounterSpec:
    """The counter as a Z3 transition system over ``v`` (the value), with ``limit`` fixed; its
    operations are the actions' effects."""

    def __init__(self, config: dict[str, Any], quirks: Iterable[str], actions: Actions, name: str = NAME) -> None:
        self.limit = int(config.get("limit", 2))
        self.quirks = frozenset(quirks)
        self.ts = TransitionSystem(
            name,
            (("v", "int"),),
            lambda s: s["v"] == 0,
            actions.operations(self),
            (Property("toy.nonnegative", lambda s: s["v"] >= 0),),
        )

    def bounded(self, depth: int) -> CounterSpec:
        return self

    def exec_config(self) -> dict[str, Any]:
        return {"limit": self.limit}

    def step_json(self, step: Step) -> tuple[str, Any]:
        return step.op, {}

    def universe_json(self) -> dict[str, Any]:
        return {"limit": self.limit}


def _nonnegative(c: StepContext) -> str | None:
    return None if c.model.value >= 0 else f"the value is {c.model.value}"


def invariants(name: str) -> tuple[Invariant, ...]:
    return (
        Invariant(
            "toy.nonnegative",
            name,
            "state",
            "The counter never goes below zero.",
            _nonnegative,
            witnesses=("toy.w.full",),
        ),
    )


def component(
    name: str = NAME,
    model: type[Counter] = Counter,
    actions: Sequence[type[Action]] = ACTIONS,
    extra_invariants: tuple[Invariant, ...] = (),
) -> Component:
    """The toy's record, for a model class, its action classes and invariants beyond
    ``toy.nonnegative`` (the default: the toy as it is)."""
    acts = Actions(name, actions)

    def make(config: dict[str, Any] | None, quirks: Iterable[str] | None) -> System:
        return CounterSystem(config, quirks, name=name, model=model, actions=acts)

    def space(**world: Any) -> CounterSpace:
        return CounterSpace(name, acts, make)

    witnesses = (Witness("toy.w.full", name, "The counter reaches its limit.", lambda c: c.result == c.model.limit),)
    return Component(
        name=name,
        title="toy counter (the registry test's)",
        real_code="none: a test fixture",
        aliases=("toy",) if name == NAME else (),
        system=make,
        space=space,
        options=(
            Option("limit", "the counter's limit", (EXPLORE,), lo=1, hi=8, default=2, part="config"),
            Option("limit", "the counter's limit (spec default 2)", (SPEC,), lo=1, hi=8),
        ),
        spec=lambda config, quirks: CounterSpec(config, quirks, acts, name),
        universe=lambda world: {"limit": world.config.get("limit", 2)},
        profile=CheckProfile(explore=World({"limit": 2}, {}), bmc_depth=4),
        api_world={},
        machine=world_machine(f"{name}_machine", st.just(space()), {"limit": 2}, by_kind=True),
        invariants=(invariants(name) + extra_invariants, witnesses),
        quirks=(Quirk("dec_wraps", name, "toy", "dec at zero goes to -1", ("toy.nonnegative",)),),
    )


COMPONENT = component()
