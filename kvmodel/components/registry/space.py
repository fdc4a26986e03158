"""The block registry's bounded world for the explorer."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from kvmodel.actions import ActionMoves
from kvmodel.components.registry.actions import (
    ClonePublisher,
    Drain,
    Drop,
    NewPublisher,
    Publish,
    RegisterBlock,
    RemoveHandle,
    StateFromResetApplyTokenBlock,
    TakeHandle,
)
from kvmodel.explorer import NoSymmetry
from kvmodel.model.errors import require_naturals
from kvmodel.model.registry import block_from_json
from kvmodel.systems import System


@attrs.frozen
class RegSpace(ActionMoves, NoSymmetry):
    """Bounded registry world: ``states`` block-state slots (each filled with a Complete block of
    one of ``hashes`` hashes), ``publish_handles`` and ``arcs`` slots for what register_block and
    remove_handle return, ``publishers`` publisher slots, and at most ``max_pending`` undrained
    drops per registry. The registries come from the configuration. Moves: fill a slot,
    register_block of a slot in any registry, drop of any value, remove_handle, take_handle
    (returned Arc discarded), publish, new and cloned publishers, one drain step of a registry.
    Names are fixed slot names, so the state key needs no renaming beyond the model's handle ids.
    """

    component = "kvbm_block_registry"
    hashes: int = 2
    states: int = 3
    publish_handles: int = 2
    arcs: int = 1
    publishers: int = 1
    max_pending: int = 2
    # The registries: one per storage tier by default, plus a second Device pool with ``shared``.
    shared: bool = False

    def registries(self) -> list[list[str]]:
        return [["device0", "Device"], *([["device1", "Device"]] if self.shared else []), ["host", "HostPinned"]]

    def __attrs_post_init__(self) -> None:
        require_naturals(self, ("hashes", "states", "publish_handles", "arcs", "publishers", "max_pending"))

    def to_json(self) -> dict[str, int]:
        return {k: int(v) for k, v in attrs.asdict(self).items()}

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System:
        from kvmodel.components.registry.system import RegistrySystem

        return RegistrySystem({"registries": self.registries(), **config}, list(quirks))

    def _names(self) -> list[str]:
        return (
            [f"s{i}" for i in range(self.states)]
            + [f"ph{i}" for i in range(self.publish_handles)]
            + [f"a{i}" for i in range(self.arcs)]
            + [f"pub{i}" for i in range(self.publishers)]
        )

    def moves(self) -> list[Any]:
        """The world's action instances, in the order the search tries them. A register or a
        remove_handle names what it returns only when it runs (:meth:`concrete`: the first
        free slot)."""
        pools = [r[0] for r in self.registries()]
        out: list[Any] = [
            StateFromResetApplyTokenBlock(block_from_json({"hash": h, "parent": None}), f"s{i}")
            for i in range(self.states)
            for h in range(self.hashes)
        ]
        out += [RegisterBlock(p, f"s{i}") for p in pools for i in range(self.states)]
        out += [Drop(n) for n in self._names()]
        out += [RemoveHandle(f"ph{j}") for j in range(self.publish_handles)]
        out += [TakeHandle(f"pub{k}", f"ph{j}") for k in range(self.publishers) for j in range(self.publish_handles)]
        out += [Publish(f"pub{k}") for k in range(self.publishers)]
        out += [NewPublisher(f"pub{k}") for k in range(self.publishers)]
        out += [
            ClonePublisher(f"pub{k}", f"pub{k2}")
            for k in range(self.publishers)
            for k2 in range(self.publishers)
            if k != k2
        ]
        out += [Drain(p) for p in pools]
        return out

    def move_kind(self, move: Any) -> str:
        """The world's short names for its moves (coverage, and the API workloads' weights)."""
        return _KINDS[type(move)]

    def _free(self, s: System, prefix: str, n: int) -> str | None:
        for i in range(n):
            if f"{prefix}{i}" not in s.model.values:
                return f"{prefix}{i}"
        return None

    def concrete(self, s: System, move: Any) -> tuple[str, Any, Any]:
        """The move in state ``s``: a register names its publish handle, a remove_handle its
        Arc, by the first free slot (``None``: none free, the value is a temporary)."""
        if isinstance(move, RegisterBlock):
            move = attrs.evolve(move, as_=self._free(s, "ph", self.publish_handles))
        elif isinstance(move, RemoveHandle):
            move = attrs.evolve(move, as_=self._free(s, "a", self.arcs))
        return super().concrete(s, move)

    # -- the guards (``ActionMoves.GUARDS``): names exist (or are free) as Rust's types demand

    def _empty_slot(self, s: System, a: Any) -> bool:
        """The name the new value takes is free (the world's slots)."""
        return a.as_ not in s.model.values

    def bounds(self) -> list[str]:
        """What the world bounds that the real code does not (``kvmodel explore`` reports it)."""
        return [
            f"slots at a time: hashes={self.hashes}, states={self.states}, publish_handles={self.publish_handles}, "
            f"arcs={self.arcs}, publishers={self.publishers} (a move that needs a free slot is disabled without one)",
            f"at most max_pending={self.max_pending} undrained drops per registry's unregister channel: a drop "
            "that would pass it is disabled",
        ]

    def _registers(self, s: System, a: Any) -> bool:
        """A register that may create a publish handle needs a free slot for it."""
        st = s.model.values.get(a.state)
        if st is None:
            return False
        return not self._creates_handle(s, a.registry, st) or self._free(s, "ph", self.publish_handles) is not None

    def _drops(self, s: System, a: Any) -> bool:
        """A drop that tells a registry's task needs room in its channel (the bound)."""
        m = s.model
        v = m.values.get(a.value)
        if v is None:
            return False
        bh = getattr(v, "bh", None)
        return bh is None or len(m.pools[m.block_handles[bh].pool].pending) < self.max_pending

    def _removes(self, s: System, a: Any) -> bool:
        """The publish handle exists, and a slot is free for the registration Arc it gives up."""
        return a.publish_handle in s.model.values and self._free(s, "a", self.arcs) is not None

    def _takes(self, s: System, a: Any) -> bool:
        """The publisher and the publish handle exist."""
        vals = s.model.values
        return a.publisher in vals and a.publish_handle in vals

    def _publishes(self, s: System, a: Any) -> bool:
        """The publisher exists."""
        return a.publisher in s.model.values

    def _clones(self, s: System, a: Any) -> bool:
        """The publisher exists and the clone's name is free."""
        vals = s.model.values
        return a.publisher in vals and a.as_ not in vals

    def _drains(self, s: System, a: Any) -> bool:
        """A drain needs something to receive."""
        return bool(s.model.pools[a.registry].pending)

    @staticmethod
    def _creates_handle(s: System, pool: str, st: Any) -> bool:
        """Whether register_block would succeed with a new PublishHandle (it needs a free slot)."""
        m = s.model
        if st.kind != "Complete" or m.is_registered(pool, st.block.sequence_hash):
            return False
        p = m.pools[pool]
        rid = m.globals[p.global_name].get(m._key(p, st.block.sequence_hash))
        return rid is None or not m.handles[rid].alive


RegSpace.GUARDS = {
    StateFromResetApplyTokenBlock: RegSpace._empty_slot,
    RegisterBlock: RegSpace._registers,
    Drop: RegSpace._drops,
    RemoveHandle: RegSpace._removes,
    TakeHandle: RegSpace._takes,
    Publish: RegSpace._publishes,
    NewPublisher: RegSpace._empty_slot,
    ClonePublisher: RegSpace._clones,
    Drain: RegSpace._drains,
}
_KINDS: dict[type[Any], str] = {
    StateFromResetApplyTokenBlock: "complete",
    RegisterBlock: "register",
    Drop: "drop",
    RemoveHandle: "remove_handle",
    TakeHandle: "take",
    Publish: "publish",
    NewPublisher: "new_publisher",
    ClonePublisher: "clone_publisher",
    Drain: "drain",
}
