"""Invariant mode: an implementation checked by the component's declared invariants over what it
is seen to do, with no reference revision (``check_implementation(..., check="invariants")``).

Equality mode (the default) asks "does the implementation do what this revision of the real code
does, step by step?"; an implementation of another revision, or of another project, differs
somewhere legitimately and fails it at once. Invariant mode asks "is what it does correct?": the
generated workload drives the implementation, and after every step the component's declared
invariants (:mod:`kvmodel.invariants`) are evaluated on its *observations* — the step's
arguments, its ``returns`` or ``error``, its ``events``, and, where the adapter offers one, its
state in the shape of the model's ``snapshot()`` under the observation's ``state`` key.

The component's *observer* (``Component.observer``, :class:`Observer`) turns the observations into
the :class:`~kvmodel.invariants.StepContext` the invariants read: the arguments decoded as the
model decodes them, the events decoded into the model's event types and fed to the component's
monitor (its ghost bookkeeping: the router's view, the references callers hold), and — when the
observation carries a state — a model rebuilt from it (``ctx.model``) with the state before the
step (``ctx.pre``). Each invariant declares what it reads (``Invariant.needs``); one whose needs
the observations do not provide is *not checked*, and the report says what the adapter would have
to expose.

A violation of an invariant that an accepted quirk is recorded to break (``accept``: a named
revision or quirk names; ``kvmodel.model.quirks.breakable``) is a *known* violation: reported with
the quirks that explain it, never as a pass of that invariant and never as a new failure; the run
goes on checking the other invariants. The first new violation ends the workload and is shrunk
like a divergence (:func:`kvmodel.conformance.differential.run`): its kind is ``invariant``, the
model side names the invariant and its statement, the implementation side is the message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

import attrs

from kvmodel.conformance.differential import Compare, Difference, Observation
from kvmodel.invariants import StepContext, for_component

NEED_TEXT = {
    "snapshot": "its state before and after every step: each observation's `state`, in the shape of "
    "the model's snapshot() (docs/contracts.md)",
    "router_view": "an event stream to the router (the configuration's `channel`)",
    "events": "its events",
    "dump": "the tree's content: answers to `dump_tree`, or each observation's `state.content` (docs/contracts.md)",
    "tree": "its lookup tables and retained nodes: each observation's `state.lookup` and `state.dead_nodes` "
    "(docs/contracts.md)",
}


class Malformed(Exception):
    """An observation the observer cannot read (an event of no known shape, a state that is not a
    snapshot): a divergence of kind ``malformed``."""


class ObservedError(Exception):
    """An implementation's rejection as its observation names it: ``id`` is the name, id or full
    message it gave (an ``{"id": ...}`` object's id)."""

    def __init__(self, value: Any) -> None:
        self.value = value
        self.id = str(value.get("id")) if isinstance(value, dict) else str(value)
        super().__init__(self.id)


class Observer(Protocol):
    """One run's reading of an implementation's observations, for one component."""

    # what the observations give, of ``kvmodel.invariants.core.NEEDS`` (``snapshot`` only while
    # every observation carries a state); an observer may also say what it can ever read
    # (``readable``, default every need): the report then tells an invariant that needs anything
    # else apart from one the adapter could enable by exposing more
    provides: frozenset[str]

    def step(self, op: str, args: Any, observation: dict[str, Any]) -> StepContext:
        """The context the invariants read after this step; :class:`Malformed` when the
        observation cannot be read."""
        ...


def error_of(observation: dict[str, Any]) -> ObservedError | None:
    """The rejection an observation reports (``error`` present and not ``null``), else ``None``."""
    e = observation.get("error")
    return None if e is None else ObservedError(e)


def answer(observation: dict[str, Any]) -> tuple[ObservedError | None, Any, list[Any]]:
    """What every observer reads of an answer: its rejection (else ``None``), its ``returns``
    (``None`` when rejected) and its ``events`` as a list (:class:`Malformed` if not a list)."""
    error = error_of(observation)
    raw = observation.get("events", [])
    if not isinstance(raw, list):
        raise Malformed(f"events must be a list, got {raw!r:.120}")
    return error, None if error is not None else observation.get("returns"), raw


@attrs.define
class Tally:
    """What invariant mode saw over a run's generated workloads: the invariants evaluated at least
    once, those never evaluated and why, the known violations and the quirks that explain them."""

    component: str
    checked: set[str] = attrs.field(factory=set)
    known: dict[str, list[str]] = attrs.field(factory=dict)
    missing: dict[str, set[str]] = attrs.field(factory=dict)  # invariant -> needs not provided
    # what the component's observer can read at all (an adapter can provide nothing else)
    readable: frozenset[str] = frozenset(NEED_TEXT)

    def reason(self, needs: set[str]) -> str:
        """Why an invariant was not checked: what the adapter would have to expose, or, for what the
        component's observer cannot read, that no adapter can give it yet."""
        can = [NEED_TEXT[x] for x in sorted(needs) if x in self.readable]
        cannot = sorted(needs - self.readable)
        parts = [*can]
        if cannot:
            parts.append(
                f"the implementation's internal state ({', '.join(cannot)}), which invariant mode does not read "
                "for this component: no state shape is defined for it"
            )
        return "needs " + "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        names = [i.name for i in for_component(self.component)]
        not_checked = {n: self.reason(self.missing[n]) for n in names if n not in self.checked and n in self.missing}
        never = [n for n in names if n not in self.checked and n not in self.missing]
        for n in never:  # no step ran (an empty run)
            not_checked[n] = "no step was observed"
        return {
            "checked": [n for n in names if n in self.checked],
            "not_checked": not_checked,
            "known": {n: self.known[n] for n in names if n in self.known},
        }


def explaining(component: str, invariant: str, accept: Iterable[str]) -> list[str]:
    """The accepted quirks recorded to break ``invariant`` (each alone, or together through a
    recorded interaction): empty when none does."""
    from kvmodel.model.quirks import INTERACTIONS, QUIRKS

    acc = frozenset(accept)
    out = {q for q in acc if invariant in QUIRKS[q].breaks}
    for x in INTERACTIONS:
        if x.quirks <= acc and invariant in x.breaks:
            out |= x.quirks
    return sorted(out)


def comparer(
    component: str,
    observer: Callable[[], Observer],
    accept: Iterable[str],
    tally: Tally,
    equal: Compare | None = None,
) -> Compare:
    """The conformance comparison of invariant mode: ``equal`` first when given (``check="both"``),
    then the invariants on the implementation's observation. The observer lives for one run
    (``memo``)."""
    acc = frozenset(accept)
    invs = for_component(component)

    def cmp(op: str, args: Any, want: Observation, got: Any, memo: dict[str, Any]) -> Difference | None:
        if equal is not None:
            d = equal(op, args, want, got, memo)
            if d is not None:
                return d
        if not isinstance(got, dict) or ("returns" not in got and got.get("error") is None):
            return ("malformed", want, f"step() must return a dict with returns or error, and events: {got!r:.200}")
        obs: Observer | None = memo.get("observer")
        if obs is None:
            obs = memo["observer"] = observer()
            tally.readable = frozenset(getattr(obs, "readable", NEED_TEXT))
        try:
            ctx = obs.step(op, args, got)
        except Malformed as e:
            return ("malformed", want, str(e))
        provided = obs.provides
        for inv in invs:
            lacking = inv.needs - provided
            if lacking:
                tally.missing.setdefault(inv.name, set()).update(lacking)
                continue
            msg = inv.check(ctx)
            tally.checked.add(inv.name)
            if msg is None:
                continue
            why = explaining(component, inv.name, acc)
            if why:
                tally.known.setdefault(inv.name, why)
                continue
            return ("invariant", {"invariant": inv.name, "statement": inv.statement}, msg)
        return None

    return cmp
