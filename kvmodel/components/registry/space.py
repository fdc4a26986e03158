"""The block registry's bounded world for the explorer."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from kvmodel.explorer import NoSymmetry
from kvmodel.model.errors import require_naturals
from kvmodel.systems import System


@attrs.frozen
class RegSpace(NoSymmetry):
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
        self_pools = [r[0] for r in self.registries()]
        out: list[Any] = [("complete", i, h) for i in range(self.states) for h in range(self.hashes)]
        out += [("register", p, i) for p in self_pools for i in range(self.states)]
        out += [("drop", n) for n in self._names()]
        out += [("remove_handle", j) for j in range(self.publish_handles)]
        out += [("take", k, j) for k in range(self.publishers) for j in range(self.publish_handles)]
        out += [("publish", k) for k in range(self.publishers)]
        out += [("new_publisher", k) for k in range(self.publishers)]
        out += [("clone_publisher", k, k2) for k in range(self.publishers) for k2 in range(self.publishers) if k != k2]
        out += [("drain", p) for p in self_pools]
        return out

    def _free(self, s: System, prefix: str, n: int) -> str | None:
        for i in range(n):
            if f"{prefix}{i}" not in s.model.values:
                return f"{prefix}{i}"
        return None

    def concrete(self, s: System, move: Any) -> tuple[str, Any, Any]:
        kind = move[0]
        if kind == "complete":
            a: dict[str, Any] = {"as": f"s{move[1]}", "block": {"hash": move[2], "parent": None}}
            op = "state_from_reset_apply_token_block"
        elif kind == "register":
            op, a = "register_block", {"registry": move[1], "state": f"s{move[2]}"}
            a["as"] = self._free(s, "ph", self.publish_handles)
        elif kind == "drop":
            op, a = "drop", {"value": move[1]}
        elif kind == "remove_handle":
            op, a = "remove_handle", {"publish_handle": f"ph{move[1]}", "as": self._free(s, "a", self.arcs)}
        elif kind == "take":
            op, a = "take_handle", {"publisher": f"pub{move[1]}", "publish_handle": f"ph{move[2]}"}
        elif kind == "publish":
            op, a = "publish", {"publisher": f"pub{move[1]}"}
        elif kind == "new_publisher":
            op, a = "new_publisher", {"as": f"pub{move[1]}"}
        elif kind == "clone_publisher":
            op, a = "clone_publisher", {"publisher": f"pub{move[1]}", "as": f"pub{move[2]}"}
        else:
            op, a = "drain", {"registry": move[1]}
        decoded = s.decode(op, a)
        return op, decoded, a

    def allows(self, s: System, move: Any) -> bool:
        """Names must exist (or be free) as Rust's types would demand; a register that may create a
        publish handle needs a free slot; a drop that tells a registry's task needs room in its
        channel (the bound); a drain needs something to receive."""
        m = s.model
        vals = m.values
        kind = move[0]
        if kind == "complete":
            return f"s{move[1]}" not in vals
        if kind == "register":
            st = vals.get(f"s{move[2]}")
            if st is None:
                return False
            return not self._creates_handle(s, move[1], st) or self._free(s, "ph", self.publish_handles) is not None
        if kind == "drop":
            v = vals.get(move[1])
            if v is None:
                return False
            bh = getattr(v, "bh", None)
            return bh is None or len(m.pools[m.block_handles[bh].pool].pending) < self.max_pending
        if kind == "remove_handle":
            return f"ph{move[1]}" in vals and self._free(s, "a", self.arcs) is not None
        if kind == "take":
            return f"pub{move[1]}" in vals and f"ph{move[2]}" in vals
        if kind == "publish":
            return f"pub{move[1]}" in vals
        if kind == "new_publisher":
            return f"pub{move[1]}" not in vals
        if kind == "clone_publisher":
            return f"pub{move[1]}" in vals and f"pub{move[2]}" not in vals
        return bool(m.pools[move[1]].pending)

    @staticmethod
    def _creates_handle(s: System, pool: str, st: Any) -> bool:
        """Whether register_block would succeed with a new PublishHandle (it needs a free slot)."""
        m = s.model
        if st.kind != "Complete" or m.is_registered(pool, st.block.sequence_hash):
            return False
        p = m.pools[pool]
        rid = m.globals[p.global_name].get(m._key(p, st.block.sequence_hash))
        return rid is None or not m.handles[rid].alive
