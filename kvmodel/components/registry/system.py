"""The KVBM block registry's system (dynamo-llm 1.0.2, seed 004): registries, handles, publishers
and the caller's values behind the step interface."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from kvmodel.actions import Action
from kvmodel.components.registry.actions import ACTIONS, RegisterBlock
from kvmodel.invariants import StepContext, check_all
from kvmodel.invariants.registry import Before, RegMonitor
from kvmodel.invariants.registry import entries as _reg_entries
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.quirks import resolve
from kvmodel.model.registry import BlockState, RegistryWorld
from kvmodel.systems import Outcome, System, check_config


class RegistrySystem(System):
    """The KVBM block registry world (pools sharing a global registry, the caller's values)
    with the Register/Remove stream monitor."""

    ACTIONS = ACTIONS
    OPS = ACTIONS.ops
    DEFAULTS: ClassVar[dict[str, Any]] = {
        "registries": [["device0", "Device"], ["device1", "Device"], ["host", "HostPinned"]],
    }

    def __init__(self, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> None:
        self.component = "kvbm_block_registry"
        self.config = check_config(self.component, config or {}, self.DEFAULTS)
        self.quirks = resolve(self.component, quirks)
        self.model = RegistryWorld(self.quirks)
        regs = self.config["registries"]
        if not isinstance(regs, list):
            raise InvalidInput(f"registries must be a list of [name, tier], got {regs!r}")
        for r in regs:
            if not isinstance(r, list | tuple) or len(r) not in (2, 3):
                raise InvalidInput(f"a registry is [name, tier] or [name, tier, global], got {r!r}")
            self.model.new_registry(r[0], r[1], *(r[2:] or ["G"]))
        self.monitor = RegMonitor()
        self._key: Any = None  # cached key of the current state (computing it dominated exploration)

    def decode(self, op: str, args: Any) -> Any:
        return ACTIONS.decode(op, args)

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        """Run one action (given as its JSON arguments, it is decoded first)."""
        action: Action = decoded if isinstance(decoded, Action) else ACTIONS.decode(op, decoded)
        if action.op != op:
            raise InvalidInput(f"{self.component}: a {action.op} action applied as {op!r:.60}")
        m = self.model
        pre_key = self.key()
        pre = Before(_reg_entries(m))
        if isinstance(action, RegisterBlock):
            st = m.values.get(action.state)
            pool = m.pools.get(action.registry)
            pre.pending_hit = (
                isinstance(st, BlockState)
                and st.block is not None
                and pool is not None
                and st.block.sequence_hash in pool.pending
            )
        out = Outcome(op, args_json if args_json is not None else action.to_json())
        try:
            out.result = action.run(m)
        except ModelError as e:
            out.error = e.with_traceback(None)  # no frame held: no cycle left for the collector
        out.events = m.drain_events()
        m.messages.clear()  # the batches live on in the events (the model's list is for the vectors)
        self.monitor.observe(m, out.events)
        m.gc()
        self.monitor.forget(set(m.handles))
        self._key = None
        pre.post_key = self.key()
        ctx = StepContext(m, self.monitor, op, action, out.result, out.error, out.events, pre_key, pre)
        out.violations = check_all(self.component, ctx)
        out.ctx = ctx
        return out

    def snapshot(self) -> dict[str, Any]:
        snap: dict[str, Any] = self.model.snapshot()
        return snap

    def key(self) -> Any:
        if self._key is None:
            self._key = self.model.key(self.monitor.registers)
        return self._key

    def clone(self) -> RegistrySystem:
        c = RegistrySystem.__new__(RegistrySystem)
        c.component, c.config, c.quirks, c._key = self.component, self.config, self.quirks, self._key
        c.model = self.model.clone()
        c.monitor = self.monitor.copy()
        return c
