"""Typed actions: each operation of a component declared once, as one class (issue 22).

An :class:`Action` subclass is a frozen ``attrs`` class whose fields are the operation's
arguments. The class carries what every engine needs to know about the operation:

* its name in the trace format (``op``) and its argument specification (``ARGS``, checked by
  :mod:`kvmodel.argspec` before anything changes): :meth:`Action.from_json` /
  :meth:`Action.to_json`, so traces keep their byte format;
* what it does to the model (:meth:`Action.run`, the real call it stands for);
* optionally its Z3 effect (``PARAMS`` and :meth:`Action.effect`), from which
  :meth:`Actions.operations` builds the spec's operations under the same name.

:class:`Actions` is a component's set of action classes: the operation names, the decoder and
the Z3 operations. A system built on it (:class:`ActionSystem`) dispatches on the action's
class, with no chain of name tests. A bounded world (:class:`ActionMoves`) lists the instances
its moves are and says, in one guard table, where each is enabled: the explorer and the
Hypothesis machine (``machines.WorldMachine``) read the same table. Adding an operation to such
a component is adding a model method, its action class and (if it has one) its invariant.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
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


class Action(abc.ABC):
    """One operation of a component, with its arguments (subclasses are frozen attrs classes)."""

    op: ClassVar[str]
    ARGS: ClassVar[A.Spec] = {}
    # the adapter contract (docs/contracts.md, :mod:`kvmodel.contracts`): the shape of what
    # ``returns`` holds (``contracts.conforms`` reads it; a test checks it on generated runs),
    # what it means, and the contract's types of arguments the checkers in ``ARGS`` cannot name
    # (an action that checks its arguments itself, with no ``ARGS``, names every one, ``?``
    # marking an optional one)
    RETURNS: ClassVar[str] = "null"
    MEANS: ClassVar[str] = ""
    TYPES: ClassVar[Mapping[str, str]] = {}
    # the Z3 parameters (name, sort) of the operation; see :meth:`effect`
    PARAMS: ClassVar[tuple[tuple[str, str], ...]] = ()

    @classmethod
    def from_json(cls, where: str, args: Any) -> Action:
        """The action from its trace-format arguments; malformed ones are ``InvalidInput``, their
        message beginning with ``where`` (``"<component> <op>"``)."""
        a = A.check(where, args, cls.ARGS)
        return cls(**a)

    @classmethod
    def contract_args(cls) -> dict[str, str]:
        """The arguments as the adapter contract lists them: name (``?`` marking an optional
        one) -> type."""
        out = {}
        for k, (required, check) in cls.ARGS.items():
            out[k if required else f"{k}?"] = cls.TYPES.get(k) or A.type_name(check)
        return out or dict(cls.TYPES)

    def to_json(self) -> dict[str, Any]:
        """The trace-format arguments (the fields, in declaration order; an optional one left
        out, :data:`ABSENT`, is left out again)."""
        d = attrs.asdict(self, recurse=False)  # type: ignore[arg-type]
        return {k: v for k, v in d.items() if v is not ABSENT}

    @abc.abstractmethod
    def run(self, on: Any) -> Any:
        """Apply the operation and return what the real call returns (or raise the model's
        error). ``on`` is what the component's system hands its actions: the model
        (:class:`ActionSystem`), or the system itself where an operation also keeps the
        harness's bookkeeping (the G1 systems, the mocker's scheduler)."""

    def at(self, system: System) -> Action:
        """The action this move stands for in the system's current state: itself. (A move
        relative to the state, such as the wall-clock insert one tick after the evictor's
        clock, is a :class:`Move` whose ``at`` builds the action; random runs over a list of
        moves, the Z3 agreement runs, resolve each move this way.)"""
        return self

    @classmethod
    def params(cls, spec: Any) -> tuple[tuple[str, str], ...]:
        """The Z3 parameters in ``spec``'s world (``PARAMS`` unless the world changes them)."""
        return cls.PARAMS

    # the Z3 step, where the operation has one: a classmethod ``effect(spec, s, p)`` giving
    # ``(guard, updates)`` over state ``s`` and parameters ``p`` (``spec`` is the component's
    # spec object, its constants and quirks)
    effect: ClassVar[Callable[..., Any] | None] = None


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
        return cls.from_json(f"{self.component} {op}", args)

    def operations(self, spec: Any) -> tuple[Any, ...]:
        """The Z3 operations, one per action class with an effect, named after its operation."""
        from kvmodel.specs.engine import Operation

        out = []
        for c in self.classes:
            if c.effect is None:
                continue  # no Z3 effect declared (here or in a parent action class)
            out.append(Operation(c.op, c.params(spec), _bound(c, spec)))  # type: ignore[arg-type]
        return tuple(out)


def _bound(c: type[Action], spec: Any) -> Callable[[Any, Any], Any]:
    effect = c.effect
    assert effect is not None
    return lambda s, p: effect(spec, s, p)


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
        guard = self.GUARDS.get(type(move))
        return guard is None or bool(guard(self, s, move))

    def move_kind(self, move: Any) -> str:
        return str(move.op)
