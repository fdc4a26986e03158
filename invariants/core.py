"""Declared invariants: one object per property, one registry for every engine.

An :class:`Invariant` has a name, the component it speaks of, a kind and a one-sentence
statement, and a predicate over a :class:`StepContext` that returns ``None`` when the
property holds or a message naming the offending values when it does not.

Kinds:
* ``state`` — a predicate over the state after a step;
* ``stream`` — over the history of emitted events (and ghost bookkeeping kept by the
  component's monitor, such as the router's view or the references callers hold);
* ``step`` — over one transition: the state before, the operation, and what it did.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, Literal

import attrs

Kind = Literal["state", "stream", "step"]

# What an invariant reads, for invariant mode (:mod:`kvmodel.invariant_mode`), where the
# implementation is seen only through its observations: ``events`` — the step's arguments and
# the implementation's ``returns`` / ``error`` / ``events``, and the component monitor's ghost
# bookkeeping over them; ``snapshot`` — the implementation's state before and after the step,
# in the shape of the model's ``snapshot()`` (an observation's ``state``); ``router_view`` —
# an event stream to the router (the KV manager's ``channel``); ``dump`` — an indexer's content
# (its answer to ``dump_tree``, or a state's ``content``); ``tree`` — an indexer's lookup tables
# and retained nodes (a state's ``lookup`` and ``dead_nodes``).
NEEDS = ("events", "snapshot", "router_view", "dump", "tree")


def _needs(v: Iterable[str]) -> frozenset[str]:
    return frozenset(v)


def _default_needs(self: Any) -> frozenset[str]:
    """``events`` for a check of the monitor's faults, else ``snapshot`` (a predicate over the
    model, or one whose needs nobody declared: never evaluated on less than it may read)."""
    return frozenset({"events"}) if isinstance(self.check, MonitorFault) else frozenset({"events", "snapshot"})


def counts_of(pairs: Iterable[tuple[Any, int]]) -> Counter[Any]:
    """A ``Counter`` holding these (item, count) pairs, built without ``Counter.__init__``'s
    generic update (a fourth of its cost): the monitors copy their counts once per explorer
    transition."""
    c: Counter[Any] = Counter.__new__(Counter)
    dict.update(c, pairs)
    return c


@attrs.define
class StepContext:
    """Everything an invariant may look at after one step."""

    model: Any
    monitor: Any
    op: str
    args: Any
    result: Any = None
    error: Exception | None = None
    events: list[Any] = attrs.field(factory=list)
    pre_key: Any = None
    # the component's record of what its invariants read from before the step (its ``Before``
    # class: a typed field per fact, no string keys)
    pre: Any = None
    # the model's key after the step, where the system already spelled it (else ``None``: an
    # invariant that needs it spells it)
    post_key: Any = None


def post_key(ctx: StepContext) -> Any:
    """The model's key after the step: the one the system spelled (``StepContext.post_key``), or
    spelled now."""
    k = ctx.post_key
    return ctx.model.key() if k is None else k


class MonitorFault:
    """The check of a ``stream`` invariant that reports the fault its component's monitor found
    in the step (``ctx.monitor.faults``, name -> message, emptied at every step). A step whose
    monitor found no fault passes every such check, so ``invariants.check_all`` asks them only
    when ``faults`` is not empty (the explorer runs millions of steps, almost all fault-free)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, ctx: StepContext) -> str | None:
        msg: str | None = ctx.monitor.faults.get(self.name)
        return msg


@attrs.frozen
class Invariant:
    name: str
    component: str
    kind: Kind
    statement: str
    check: Callable[[StepContext], str | None] = attrs.field(eq=False, repr=False)
    lemma: bool = False
    witnesses: tuple[str, ...] = ()
    # whether the verdict is a function of the state a step reached, as the explorer's state key
    # captures it (model and monitor): every ``state`` invariant, and a ``stream`` one that
    # compares the monitor's ghost bookkeeping with the model (say so where the key holds both).
    # The explorer checks these once per new state (``invariants.state_checks_deferred``).
    per_state: bool = attrs.field(
        default=attrs.Factory(lambda self: self.kind == "state", takes_self=True), kw_only=True
    )
    # what the check reads (``NEEDS``): invariant mode evaluates it only on an implementation
    # whose observations provide all of it
    needs: frozenset[str] = attrs.field(
        default=attrs.Factory(_default_needs, takes_self=True), kw_only=True, converter=_needs
    )

    def __attrs_post_init__(self) -> None:
        bad = sorted(set(self.needs) - set(NEEDS))
        if bad or not self.needs:
            raise ValueError(f"invariant {self.name!r}: needs must be a non-empty subset of {NEEDS}, got {bad}")

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "component": self.component,
            "kind": self.kind,
            "statement": self.statement,
            "lemma": self.lemma,
            "witnesses": list(self.witnesses),
            "needs": sorted(self.needs),
        }


@attrs.frozen
class Witness:
    """A reachability witness: something interesting that must be reachable, so that an
    invariant cannot hold merely because nothing it speaks of ever happens."""

    name: str
    component: str
    statement: str
    check: Callable[[StepContext], bool] = attrs.field(eq=False, repr=False)


@attrs.frozen
class Violation:
    invariant: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"invariant": self.invariant, "message": self.message}
