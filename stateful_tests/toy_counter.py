"""A toy component for the registry test: a bounded counter with one invariant and one quirk.

Everything a component needs lives here — model, system, bounded world, Z3 spec, invariant,
witness, quirk and the :class:`~kvmodel.components.Component` record — so that
``test_structure.py`` can show that registering the record (and its quirk and invariant
catalogue entries, declared here) is all it takes for ``kvmodel check``, ``explore``,
``prove``, ``invariants``, ``quirks`` and the API to pick a component up.

The counter: ``inc`` adds one up to ``limit`` (then ``Full``), ``dec`` takes one down to 0
(then ``Empty``). With the quirk ``dec_wraps`` a ``dec`` at 0 goes to -1, which breaks
``toy.nonnegative``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import z3

from kvmodel.components import EXPLORE, SPEC, CheckProfile, Component, Option, World
from kvmodel.explorer import NoSymmetry
from kvmodel.invariants import Invariant, StepContext, Witness, check_all
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.quirks import Quirk, resolve
from kvmodel.specs.engine import Operation, Property, State, Step, TransitionSystem
from kvmodel.systems import Outcome, System, check_config

NAME = "toy_counter"


class Full(ModelError):
    id = "counter full"


class Empty(ModelError):
    id = "counter empty"


class Counter:
    def __init__(self, limit: int, quirks: Iterable[str] | None = None) -> None:
        self.limit, self.value = limit, 0
        self.quirks = resolve(NAME, quirks)

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


class CounterSystem(System):
    OPS = ("inc", "dec")

    def __init__(self, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> None:
        self.component = NAME
        self.config = check_config(NAME, config or {}, {"limit": 2})
        self.quirks = resolve(NAME, quirks)
        self.model = Counter(self.config["limit"], self.quirks)
        self.monitor = None

    def decode(self, op: str, args: Any) -> Any:
        if op not in self.OPS:
            raise InvalidInput(f"unknown {NAME} operation {op!r} (known: {list(self.OPS)})")
        if args not in (None, {}):
            raise InvalidInput(f"{NAME} {op}: takes no arguments, got {args!r:.60}")
        return {}

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        out = Outcome(op, args_json if args_json is not None else decoded)
        pre = {"value": self.model.value}
        try:
            out.result = self.model.inc() if op == "inc" else self.model.dec()
        except ModelError as e:
            out.error = e
        ctx = StepContext(self.model, None, op, decoded, out.result, out.error, [], None, pre)
        out.violations = check_all(NAME, ctx)
        out.ctx = ctx
        return out

    def clone(self) -> CounterSystem:
        c = CounterSystem(self.config, self.quirks)
        c.model.value = self.model.value
        return c

    def snapshot(self) -> dict[str, Any]:
        return {"value": self.model.value}

    def key(self) -> Any:
        return self.model.value


class CounterSpace(NoSymmetry):
    component = NAME

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System:
        return CounterSystem(config, list(quirks))

    def moves(self) -> list[Any]:
        return [("inc",), ("dec",)]

    def concrete(self, s: System, move: Any) -> tuple[str, Any, Any]:
        return move[0], {}, {}

    def allows(self, s: System, move: Any) -> bool:
        """Bounded below: with the quirk a ``dec`` at -1 would go on for ever."""
        return move[0] == "inc" or s.model.value >= 0

    def to_json(self) -> dict[str, int]:
        return {}


class CounterSpec:
    """The counter as a Z3 transition system over ``v`` (the value), with ``limit`` fixed."""

    def __init__(self, config: dict[str, Any], quirks: Iterable[str]) -> None:
        self.limit = int(config.get("limit", 2))
        self.quirks = frozenset(quirks)
        wraps = "dec_wraps" in self.quirks

        def inc(s: State, p: State) -> Any:
            return z3.BoolVal(True), {"v": z3.If(s["v"] < self.limit, s["v"] + 1, s["v"])}

        def dec(s: State, p: State) -> Any:
            return z3.BoolVal(True), {"v": z3.If(s["v"] > 0, s["v"] - 1, s["v"] - 1 if wraps else s["v"])}

        self.ts = TransitionSystem(
            NAME,
            (("v", "int"),),
            lambda s: s["v"] == 0,
            (Operation("inc", (), inc), Operation("dec", (), dec)),
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


INVARIANTS = (
    Invariant(
        "toy.nonnegative", NAME, "state", "The counter never goes below zero.", _nonnegative, witnesses=("toy.w.full",)
    ),
)
WITNESSES = (Witness("toy.w.full", NAME, "The counter reaches its limit.", lambda c: c.result == c.model.limit),)
QUIRKS = (Quirk("dec_wraps", NAME, "toy", "dec at zero goes to -1", ("toy.nonnegative",)),)

COMPONENT = Component(
    name=NAME,
    title="toy counter (the registry test's)",
    real_code="none: a test fixture",
    aliases=("toy",),
    system=lambda config, quirks: CounterSystem(config, quirks),
    space=CounterSpace,
    options=(
        Option("limit", "the counter's limit", (EXPLORE,), lo=1, hi=8, default=2, part="config"),
        Option("limit", "the counter's limit (spec default 2)", (SPEC,), lo=1, hi=8),
    ),
    spec=lambda config, quirks: CounterSpec(config, quirks),
    universe=lambda world: {"limit": world.config.get("limit", 2)},
    profile=CheckProfile(explore=World({"limit": 2}, {}), bmc_depth=4),
    api_space=CounterSpace,
    invariants=lambda: (INVARIANTS, WITNESSES),
    quirks=QUIRKS,
)
