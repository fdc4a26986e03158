"""Hypothesis rule-based state machines over the systems, and the engine that runs them.

The machines live in the package (not only in the test suite) so that ``kvmodel check``
and ``pytest`` run the very same machines. Every step goes through the component's
:class:`~kvmodel.systems.System`, so every registered invariant is checked after every
step; a violation fails the example, Hypothesis shrinks it, and the shrunk run is
re-recorded as a trace in the trace format.

Bad inputs are generated on purpose: operations on blocks that are not there, partial
blocks in the wrong place, malformed JSON arguments. Each must raise its documented
error (and a malformed argument must leave the state as it was).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, ClassVar

import attrs
from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky
from hypothesis.stateful import (
    RuleBasedStateMachine,
    rule,
    run_state_machine_as_test,
)

from kvmodel import components, determinism, traces
from kvmodel.components import Component
from kvmodel.components.base import resolve
from kvmodel.systems import Outcome, System


class InvariantViolated(AssertionError):
    """Raised inside a machine when a step breaks a (targeted) invariant."""


class WrongError(AssertionError):
    """Raised inside a machine when a bad input did not raise its documented error."""


class Machine(RuleBasedStateMachine):
    component: ClassVar[str]
    record: ClassVar[Component]
    config: ClassVar[dict[str, Any]]
    quirks: ClassVar[frozenset[str]]
    target: ClassVar[frozenset[str] | None] = None
    failures: ClassVar[list[tuple[list[tuple[str, Any]], str, str]]]
    steps_run: ClassVar[list[int]]
    first_failure_at: ClassVar[list[float]]

    def __init__(self) -> None:
        super().__init__()
        self.system: System = self.record.make_system(dict(self.config), self.quirks)
        self.log: list[tuple[str, Any]] = []

    @classmethod
    def bind(cls, config: dict[str, Any]) -> dict[str, Any]:
        """Class attributes that depend on the configuration (rules whose strategies do),
        added to the class :func:`machine_for` builds. None by default."""
        return {}

    def _run(self, op: str, decoded: Any) -> Outcome:
        out = self.system.apply(op, decoded)
        self.log.append((op, out.args_json))
        self.steps_run[0] += 1
        self._judge(out)
        return out

    def _run_json(self, op: str, args: Any) -> Outcome:
        out = self.system.step(op, args)
        self.log.append((op, args))
        self.steps_run[0] += 1
        self._judge(out)
        return out

    def _judge(self, out: Outcome) -> None:
        for v in out.violations:
            if self.target is None or v.invariant in self.target:
                if not self.failures:
                    self.first_failure_at.append(time.perf_counter())
                self.failures.append((list(self.log), v.invariant, v.message))
                raise InvariantViolated(f"{v.invariant}: {v.message}")


class WorldMachine(Machine):
    """The machine of a world-based component (the G1 backends, the router, the toy): it draws a
    world from ``worlds`` (a Hypothesis strategy of the component's explorer spaces, whose
    prompts, tokens and bounds Hypothesis draws and shrinks), then makes enabled moves of that
    world — the world's guard table (``space.allows``) is the one
    notion of enabled, shared with the explorer: the simulation of Stateright's checker. The
    rule picks uniformly among the enabled moves or, with ``by_kind``, a kind of move
    (``space.move_kind``) first and then a move of that kind, so an operation with many
    instances (the router's Stored of every block list) is tried as often as one with a single
    instance, as Hypothesis weights rules.

    :func:`world_machine` builds one for a component."""

    worlds: ClassVar[Any]
    by_kind: ClassVar[bool] = False
    space: Any = None

    # One rule, which draws the world on its first step. An ``initialize`` rule drawing it was
    # measured: finding is as fast, but Hypothesis's shrink phase then runs 2 to 5 times as many
    # examples (docs/performance.md, "The world machines").
    @rule(pick=st.integers(0, 10_000), data=st.data())
    def move(self, pick: int, data: Any) -> None:
        if self.space is None:
            self.space = data.draw(self.worlds, label="world")
            self.moves = self.space.moves()
        enabled = [m for m in self.moves if self.space.allows(self.system, m)]
        if not enabled:
            return
        if self.by_kind:
            kinds: dict[str, list[Any]] = {}
            for m in enabled:
                kinds.setdefault(self.space.move_kind(m), []).append(m)
            groups = list(kinds.values())
            enabled = groups[pick % len(groups)]
            pick //= len(groups)
        op, _, args = self.space.concrete(self.system, enabled[pick % len(enabled)])
        self._run_json(op, args)


def world_machine(
    name: str, worlds: Any, config: dict[str, Any] | None = None, *, by_kind: bool = False
) -> type[WorldMachine]:
    """A :class:`WorldMachine` whose worlds are drawn from ``worlds`` and whose system has the
    configuration ``config`` (what :func:`machine_for` puts a run's configuration on)."""
    body = {"config": dict(config or {}), "quirks": frozenset(), "worlds": worlds, "by_kind": by_kind}
    return type(name, (WorldMachine,), body)


# ------------------------------------------------------------------------------ engine


@attrs.define
class HypothesisResult:
    component: str
    mode: str
    quirks: list[str]
    seed: int
    examples: int
    steps: int
    seconds: float
    violation: dict[str, Any] | None = None
    trace: dict[str, Any] | None = None
    error: str | None = None
    seconds_to_first_failure: float | None = None

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "engine": "hypothesis",
            "mode": self.mode,
            "quirks": self.quirks,
            "seed": self.seed,
            "examples": self.examples,
            "steps": self.steps,
            "seconds": round(self.seconds, 3),
            "steps_per_second": round(self.steps_per_second, 1),
            "violation": self.violation,
            "error": self.error,
        }


def machine_class(component: Component | str) -> type[Machine]:
    """The component's machine class (its record's ``machine``)."""
    c = components.of(component, lambda c: c.machine, "component with a Hypothesis machine")
    cls: type[Machine] = resolve(c.machine)
    return cls


def machine_for(
    component: Component | str,
    config: dict[str, Any] | None = None,
    quirks: Iterable[str] = (),
    target: Iterable[str] | None = None,
) -> type[Machine]:
    """A fresh machine class bound to one configuration (class state is per class): the
    machine's own world (its class ``config``) with ``config`` on top."""
    c = components.of(component, lambda c: c.machine, "component with a Hypothesis machine")
    base = machine_class(c)
    config = {**base.config, **(config or {})}
    sys_ = c.make_system(config, quirks)  # validates config and quirks
    attrs_: dict[str, Any] = {
        "component": c.name,
        "record": c,
        "config": sys_.config,
        "quirks": sys_.quirks,
        "target": None if target is None else frozenset(target),
        "failures": [],
        "steps_run": [0],
        "first_failure_at": [],
    }
    attrs_.update(base.bind(sys_.config))
    return type(f"{base.__name__}_{c.name}", (base,), attrs_)


def run(
    component: Component | str,
    *,
    config: dict[str, Any] | None = None,
    quirks: Iterable[str] = (),
    mode: str = "custom",
    seed: int = 0,
    max_examples: int = 200,
    steps: int = 30,
    target: Iterable[str] | None = None,
    hypothesis_shrink: bool = True,
) -> HypothesisResult:
    """Run one machine; on a violation, return the shrunk counterexample as a trace.

    The failing example is shrunk by Hypothesis's shrink phase, then by
    :func:`kvmodel.traces.minimize` (deletion of single steps, then of pairs of steps).
    ``hypothesis_shrink=False`` skips Hypothesis's phase: on the KV manager's quirks that finds
    and shrinks a defect 14x faster on the median, but deletion cannot merge steps (two Uses
    into one), so 2 of 12 counterexamples come out one step longer (docs/performance.md, "Time
    to find each defect"); the default keeps the shorter counterexamples."""
    determinism.pin()
    quirk_list = sorted(quirks)
    c = components.of(component, lambda c: c.machine, "component with a Hypothesis machine")
    machine = machine_for(c, config, quirk_list, target)
    setattr(machine, "_hypothesis_internal_use_seed", seed)  # noqa: B010 - read by Hypothesis
    examples = [0]
    orig_init = machine.__init__

    def counting_init(self: Any) -> None:
        examples[0] += 1
        orig_init(self)

    machine.__init__ = counting_init  # type: ignore[method-assign]
    s = settings(
        max_examples=max_examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
        print_blob=False,
        phases=[Phase.generate, Phase.shrink] if hypothesis_shrink else [Phase.generate],
    )
    res = HypothesisResult(c.name, mode, quirk_list, seed, 0, 0, 0.0)
    t0 = time.perf_counter()
    try:
        run_state_machine_as_test(machine, settings=s)
    except InvariantViolated:
        log, inv, msg = machine.failures[-1]
        log = traces.minimize(c, dict(machine.config), quirk_list, log, inv)
        trace = traces.record(
            c,
            dict(machine.config),
            quirk_list,
            log,
            origin={"engine": "hypothesis", "seed": seed, "max_examples": max_examples, "mode": mode},
            target=machine.target,
        )
        res.trace = trace
        res.violation = trace["violation"] or {"invariant": inv, "step": len(log) - 1, "message": msg}
    except (WrongError, Flaky) as e:
        res.error = f"{type(e).__name__}: {e}"
    res.seconds = time.perf_counter() - t0
    if machine.first_failure_at:
        res.seconds_to_first_failure = machine.first_failure_at[0] - t0
    res.examples = examples[0]
    res.steps = machine.steps_run[0]
    return res
