"""Systems: a component's model, its monitor and its invariants behind one step interface.

Every engine drives a component through a :class:`System`: ``step(op, args)`` applies
one operation given in the JSON form that traces and vectors use, records what was
observed (return value, events in order, error) and checks the component's invariants.
Hypothesis machines call :meth:`System.apply` with decoded arguments to skip the JSON.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from typing import Any

import attrs

from kvmodel import components
from kvmodel.invariants import StepContext, Violation
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.g1.acquire import plain


@attrs.define
class Outcome:
    """What one step did: its result or error, the events it emitted, the violations found."""

    op: str
    args_json: Any
    result: Any = None
    error: ModelError | None = None
    events: list[Any] = attrs.field(factory=list)
    violations: list[Violation] = attrs.field(factory=list)
    ctx: StepContext | None = None
    # the system knows the step left everything its key reads as it was (a rejected operation
    # that changed nothing): the explorer then reuses the source state's key instead of
    # spelling it again. False means "not known", never "changed".
    unchanged: bool = False

    def observation(self, state: dict[str, Any] | None) -> dict[str, Any]:
        obs: dict[str, Any] = {}
        if self.error is not None:
            obs["error"] = self.error.to_json()
        else:
            obs["returns"] = plain(self.result)
        obs["events"] = [e.to_json() for e in self.events]
        if state is not None:
            obs["state"] = state
        return obs


class System(abc.ABC):
    component: str

    @abc.abstractmethod
    def clone(self) -> System: ...

    config: dict[str, Any]
    quirks: frozenset[str]
    model: Any
    monitor: Any

    def step(self, op: str, args: Any) -> Outcome:
        """Apply ``op`` with JSON ``args``; malformed arguments are an ``InvalidInput`` error."""
        try:
            decoded = self.decode(op, args)
        except InvalidInput as e:
            return Outcome(op, args, error=e)
        return self.apply(op, decoded, args)

    @abc.abstractmethod
    def decode(self, op: str, args: Any) -> Any: ...

    @abc.abstractmethod
    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome: ...

    @abc.abstractmethod
    def snapshot(self) -> dict[str, Any]: ...

    @abc.abstractmethod
    def key(self) -> Any: ...


_BOUNDS: dict[str, tuple[int, int]] = {
    "max_capacity": (0, 2**64),
    "block_size": (0, 2**32),
    "cleanup_threshold": (0, 2**64),  # a usize in the Rust; 0 is legal (cleanup on every insert)
    "dp_rank": (0, 2**32),
    "plh_fragments": (0, 2**64),
}


def check_config(
    component: str, config: dict[str, Any], allowed: dict[str, Any], *, bounds: dict[str, tuple[int, int]] | None = None
) -> dict[str, Any]:
    """The configuration with defaults filled; unknown keys, values of the wrong type and worlds
    that cannot fit (``bounds`` overrides the default integer ranges: a pool the model allocates
    slot by slot has at most ``MAX_SLOTS`` slots) are ``InvalidInput`` up front."""
    if not isinstance(config, dict):
        raise InvalidInput(f"{component}: config must be an object, got {config!r:.60}")
    for k in config:
        if k not in allowed:
            raise InvalidInput(f"{component}: unknown config key {k!r:.40} (known: {sorted(allowed)})")
    out = {**allowed, **config}
    ranges = {**_BOUNDS, **(bounds or {})}
    for k, v in out.items():
        d = allowed[k]
        if isinstance(d, bool):
            if not isinstance(v, bool):
                raise InvalidInput(f"{component}: config {k} must be true or false, got {v!r:.60}")
        elif isinstance(d, int):
            lo, hi = ranges.get(k, (0, 2**64))
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v < hi:
                raise InvalidInput(f"{component}: config {k} must be an integer in [{lo}, {hi}), got {v!r:.60}")
        elif isinstance(d, str) and not isinstance(v, str):
            raise InvalidInput(f"{component}: config {k} must be a string, got {v!r:.60}")
        elif isinstance(d, list) and (not isinstance(v, list) or len(v) > 64):
            raise InvalidInput(f"{component}: config {k} must be a list of at most 64 entries, got {v!r:.60}")
    return out


def make_system(
    component: components.Component | str, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None
) -> System:
    """Build a component's system (the record, or its name or alias); ``quirks=None`` means
    faithful (the seed's revision)."""
    return components.of(component, lambda c: c.system, "component with a system").make_system(config, quirks)


def system_components() -> tuple[str, ...]:
    """The components with an executable system, in registry order."""
    return components.names(lambda c: c.system)
