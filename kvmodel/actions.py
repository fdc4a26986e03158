"""Typed actions: each operation of a component declared once, as one class (issue 22).

An :class:`Action` subclass is a frozen ``attrs`` class whose fields are the operation's
arguments. The class carries everything every engine needs to know about the operation:

* its name in the trace format (``op``) and its argument specification (``ARGS``, checked by
  :mod:`kvmodel.argspec` before anything changes): :meth:`Action.from_json` /
  :meth:`Action.to_json`, so traces keep their byte format;
* what it does to the model (:meth:`Action.run`, the real call it stands for);
* its instances in a bounded world (:meth:`Action.instances`) and when one is enabled there
  (:meth:`Action.enabled`): the explorer's moves and the Hypothesis machine's rules;
* optionally its Z3 effect (``PARAMS`` and :meth:`Action.effect`), from which
  :meth:`Actions.operations` builds the spec's operations under the same name.

:class:`Actions` is a component's set of action classes: the operation names, the decoder, the
bounded world's moves, the Z3 operations and a generated Hypothesis machine. A system built on
it (:class:`ActionSystem`) dispatches on the action's class, with no chain of name tests; a
space (:class:`ActionSpace`) enumerates the instances. Adding an operation to such a component
is adding a model method, its action class and (if it has one) its invariant.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Protocol

import attrs

from kvmodel import argspec as A
from kvmodel.invariants import StepContext, check_all
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.systems import Outcome, System


class _Absent:
    """An optional key the caller left out (distinct from an explicit ``null``)."""

    def __repr__(self) -> str:
        return "ABSENT"


# the value of an action's optional field whose key the caller left out: ``to_json`` omits it,
# so an action's JSON is exactly what was given
ABSENT: Any = _Absent()


class Action:
    """One operation of a component, with its arguments (subclasses are frozen attrs classes)."""

    op: ClassVar[str]
    ARGS: ClassVar[A.Spec] = {}
    # the Z3 parameters (name, sort) of the operation; see :meth:`effect`
    PARAMS: ClassVar[tuple[tuple[str, str], ...]] = ()

    @classmethod
    def from_json(cls, component: str, args: Any) -> Action:
        """The action from its trace-format arguments; malformed ones are ``InvalidInput``."""
        a = A.check(component, cls.op, args, cls.ARGS)
        return cls(**a)

    def to_json(self) -> dict[str, Any]:
        """The trace-format arguments (the fields, in declaration order; an optional one left
        out, :data:`ABSENT`, is left out again)."""
        d = attrs.asdict(self, recurse=False)  # type: ignore[arg-type]
        return {k: v for k, v in d.items() if v is not ABSENT}

    def run(self, model: Any) -> Any:
        """Apply the operation to the model and return what the real call returns (or raise
        the model's error)."""
        raise NotImplementedError

    @classmethod
    def instances(cls, world: Mapping[str, Any]) -> list[Action]:
        """The operation's instances in a bounded world (the world's parameters); by default
        the one instance of an operation without arguments."""
        if attrs.fields(cls):  # type: ignore[arg-type]
            raise NotImplementedError(f"{cls.__name__} takes arguments: say which instances a world has")
        return [cls()]

    def at(self, system: System) -> Action:
        """The action this move stands for in the system's current state: itself. (A move
        relative to the state, such as the wall-clock insert one tick after the evictor's
        clock, is a :class:`Move` whose ``at`` builds the action; random runs over a list of
        moves, the Z3 agreement runs, resolve each move this way.)"""
        return self

    def enabled(self, system: System) -> bool:
        """Whether the bounded world allows this instance in the system's state (all do by
        default; a guard bounds what would grow without bound)."""
        return True

    @classmethod
    def params(cls, spec: Any) -> tuple[tuple[str, str], ...]:
        """The Z3 parameters in ``spec``'s world (``PARAMS`` unless the world changes them)."""
        return cls.PARAMS

    @classmethod
    def effect(cls, spec: Any, s: Any, p: Any) -> Any:
        """The Z3 step ``(guard, updates)`` over state ``s`` and parameters ``p``; ``spec`` is
        the component's spec object (its constants and quirks)."""
        raise NotImplementedError(f"{cls.__name__} has no Z3 effect")


class Move(Protocol):
    """A move of a random run: an :class:`Action`, or a template that builds one from the
    state it is made in (``at``)."""

    def at(self, system: System) -> Action: ...


class Actions:
    """A component's action classes, in the order their operations are listed."""

    def __init__(self, component: str, classes: Sequence[type[Action]]) -> None:
        self.component = component
        self.classes = tuple(classes)
        self.by_op = {c.op: c for c in self.classes}
        if len(self.by_op) != len(self.classes):
            raise ValueError(f"{component}: two action classes share an operation name")

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(self.by_op)

    def decode(self, op: str, args: Any) -> Action:
        cls = self.by_op.get(op)
        if cls is None:
            raise InvalidInput(f"unknown {self.component} operation {op!r:.60} (known: {list(self.by_op)})")
        return cls.from_json(self.component, args)

    def moves(self, world: Mapping[str, Any]) -> list[Action]:
        return [a for c in self.classes for a in c.instances(world)]

    def operations(self, spec: Any) -> tuple[Any, ...]:
        """The Z3 operations, one per action class with an effect, named after its operation."""
        from kvmodel.specs.engine import Operation

        out = []
        for c in self.classes:
            if c.effect.__func__ is Action.effect.__func__:  # type: ignore[attr-defined]
                continue  # no Z3 effect declared (here or in a parent action class)
            out.append(Operation(c.op, c.params(spec), _bound(c, spec)))  # type: ignore[arg-type]
        return tuple(out)

    def machine(self, name: str, world: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> type:
        """A Hypothesis machine with one rule per action class: the rule draws one of the
        class's instances in ``world`` and runs it if it is enabled."""
        from hypothesis import strategies as st
        from hypothesis.stateful import rule

        from kvmodel.machines import Machine

        body: dict[str, Any] = {
            "component": self.component,
            "config": dict(config or {}),
            "quirks": frozenset(),
            "__doc__": f"Generated from the actions of {self.component}: one rule per operation.",
        }
        for c in self.classes:
            insts = c.instances(world)
            if not insts:
                continue

            def step(self: Any, action: Action) -> None:
                if action.enabled(self.system):
                    self._run(action.op, action)

            step.__name__ = c.op
            body[c.op] = rule(action=st.sampled_from(insts))(step)
        return type(name, (Machine,), body)


def _bound(c: type[Action], spec: Any) -> Callable[[Any, Any], Any]:
    return lambda s, p: c.effect(spec, s, p)


class ActionSystem(System):
    """A system whose operations are an :class:`Actions` set: ``decode`` gives the action,
    ``apply`` runs it on the model (``Action.run``) and checks the component's invariants.
    A subclass sets ``ACTIONS``, builds ``model`` (and ``monitor``), and may record what its
    step invariants need from before the step (:meth:`before`, and the key when
    ``KEEP_PRE_KEY``) and feed its monitor (:meth:`observe`)."""

    ACTIONS: Actions  # a class attribute or, where the component varies, the instance's
    # whether the step invariants compare the state's key before the step (``StepContext.pre_key``)
    KEEP_PRE_KEY: ClassVar[bool] = False

    @property
    def OPS(self) -> tuple[str, ...]:
        return self.ACTIONS.ops

    def decode(self, op: str, args: Any) -> Any:
        return self.ACTIONS.decode(op, args)

    def before(self) -> Any:
        return None

    def observe(self, action: Action, out: Outcome) -> list[Any]:
        """The step's events (none by default), after feeding the monitor."""
        return []

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        action = decoded if isinstance(decoded, Action) else self.decode(op, decoded)
        if action.op != op:
            raise InvalidInput(f"{self.component}: a {action.op} action applied as {op!r}")
        out = Outcome(op, args_json if args_json is not None else action.to_json())
        pre_key = self.key() if self.KEEP_PRE_KEY else None
        pre = self.before()
        try:
            out.result = action.run(self.model)
        except ModelError as e:
            out.error = e.with_traceback(None)  # no frame held: no cycle left for the collector
        out.events = self.observe(action, out)
        ctx = StepContext(self.model, self.monitor, op, action, out.result, out.error, out.events, pre_key, pre)
        out.violations = check_all(self.component, ctx)
        out.ctx = ctx
        return out


class ActionMoves:
    """The explorer-space side of a bounded world whose moves are action instances.

    A move is the action itself (its JSON is the trace's arguments) and is allowed where the
    guard its class has in this world says so: what the real caller ensures before making the
    call (a request exists, is allocated, is not a pending destination) and the world's own
    bounds (how many tokens a request grows by, one decode reservation). ``GUARDS`` maps each
    action class the world's moves use to its guard, ``guard(space, system, action)``; the
    world dispatches on the action's class, as ``System.apply`` does."""

    GUARDS: ClassVar[Mapping[type[Action], Callable[..., bool]]] = {}

    def concrete(self, s: System, move: Any) -> tuple[str, Any, Any]:
        # a fresh JSON per step: a list argument shared by every trace would be one object
        args = {k: list(v) if isinstance(v, list) else v for k, v in move.to_json().items()}
        return move.op, move, args

    def allows(self, s: System, move: Any) -> bool:
        return bool(self.GUARDS[type(move)](self, s, move))

    def move_kind(self, move: Any) -> str:
        return str(move.op)


class ActionSpace:
    """An explorer space whose moves are a component's action instances in a world."""

    component: str
    actions: Actions
    world: Mapping[str, Any]

    def __init__(self, component: str, actions: Actions, world: Mapping[str, Any], make: Callable[..., System]):
        self.component, self.actions, self.world, self._make = component, actions, dict(world), make

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System:
        return self._make(config, list(quirks))

    def moves(self) -> list[Any]:
        return self.actions.moves(self.world)

    def concrete(self, s: System, move: Any) -> tuple[str, Any, Any]:
        return move.op, move, move.to_json()

    def allows(self, s: System, move: Any) -> bool:
        return bool(move.enabled(s))

    def key(self, s: System, symmetry: bool) -> Any:
        return s.key()

    def orbit(self, key: Any) -> int:
        return 1

    def move_kind(self, move: Any) -> str:
        return str(move.op)

    def to_json(self) -> dict[str, Any]:
        return dict(self.world)
