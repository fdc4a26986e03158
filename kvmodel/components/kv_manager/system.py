"""The KV manager's system: the old mocker ``KvManager`` (seed 000) with its router-view and
held-references monitor behind the step interface."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from kvmodel.actions import Action
from kvmodel.components.kv_manager.actions import ACTIONS, Process
from kvmodel.invariants import StepContext, check_all
from kvmodel.invariants.kv_manager import Before, KvMonitor
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.kv_manager import KvManager
from kvmodel.model.quirks import resolve
from kvmodel.systems import Outcome, System, check_config


class KvManagerSystem(System):
    """The old mocker KV manager with its router-view / held-references monitor."""

    ACTIONS = ACTIONS
    OPS = ACTIONS.ops
    DEFAULTS: ClassVar[dict[str, Any]] = {"max_capacity": 4, "block_size": 16, "channel": True, "evictor": "wallclock"}

    def __init__(self, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> None:
        self.component = "kv_manager"
        self.config = check_config(self.component, config or {}, self.DEFAULTS)
        self.quirks = resolve(self.component, quirks)
        self.model = KvManager(
            self.config["max_capacity"],
            self.config["block_size"],
            channel=self.config["channel"],
            quirks=self.quirks,
            evictor=self.config["evictor"],
        )
        self.monitor = KvMonitor(self.model.channel, self.model.block_size)
        self._pre: Before | None = None  # the Before of the current state, while the model is unchanged

    def decode(self, op: str, args: Any) -> Any:
        return ACTIONS.decode(op, args)

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        """Run one action (a bare ``MoveBlock`` stands for ``Process`` of it); the invariants see
        a ``process`` step's signal as its arguments, as before actions."""
        action: Action = decoded if isinstance(decoded, Action) else Process(decoded)
        if action.op != op:
            raise InvalidInput(f"kv_manager: a {action.op} action applied as {op!r:.60}")
        m = self.model
        pre = self._pre
        if pre is None:
            pre = self._before()
        else:
            self._pre = None
        signal = action.signal if isinstance(action, Process) else None
        try:
            # (``Process.run`` is ``process`` of its signal: called here without its frame)
            result: Any = m.process(signal) if signal is not None else action.run(m)
            error: ModelError | None = None
        except ModelError as e:
            # a rejection is a value of the step: without its traceback it holds no frame (this
            # one's included), so it leaves no cycle for the garbage collector
            result, error = None, e.with_traceback(None)
        events = m.drain_events()
        mon = self.monitor
        mon.observe(signal, result, error, events)
        # a rejected step: the monitor moved nothing (it counts references only for a step that
        # succeeded, and saw no event); unchanged if the model's refcounts, residency and
        # eviction order — what the key reads of it — are the Before's. A model still sharing its
        # structures with a clone (``KvManager.clone``) has not changed them since the step
        # began: every change copies them first, and a rollback to a saved state taken while
        # shared brings back those very structures (``KvManager._restore``)
        unchanged = (
            (error is not None or result is False)
            and not events
            and (
                m.shares_state()
                or (m.active == pre.active and m.all_blocks == pre.all and m.inactive.ordered() == pre.order)
            )
        )
        # no pre-step key: the failed-operation invariant compares the Before with the model
        # the invariants see a ``process`` step as its signal, a query as its action
        ctx = StepContext(m, mon, op, signal if signal is not None else action, result, error, events, None, pre)
        return Outcome(
            op,
            args_json if args_json is not None else action.to_json(),
            result,
            error,
            events,
            check_all(self.component, ctx),
            ctx,
            unchanged,
        )

    def _before(self) -> Before:
        """What the step invariants read of the state before a step (read, never changed, by
        them): with the eviction order, the whole of the model's state, which the
        failed-operation invariant compares instead of spelling the model's key twice."""
        m = self.model
        return Before(
            dict(m.active), frozenset(m.active), m.inactive.keys(), frozenset(m.all_blocks), m.inactive.ordered()
        )

    def snapshot(self) -> dict[str, Any]:
        return self.model.snapshot()  # type: ignore[no-any-return]

    def key(self) -> Any:
        return (self.model.key(), self.monitor.key())

    def clone(self) -> KvManagerSystem:
        """An independent copy (model and monitor), for the explorer's frontier."""
        c = KvManagerSystem.__new__(KvManagerSystem)
        c.component, c.config, c.quirks = self.component, self.config, self.quirks
        c.model = self.model.clone()
        c.monitor = self.monitor.copy()
        # the explorer clones one state once per move: what its steps compare against is the
        # source's, computed once (the model changes only in ``apply``, which drops it)
        if self._pre is None:
            self._pre = self._before()
        c._pre = self._pre
        return c
