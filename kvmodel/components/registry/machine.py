"""The block registry's Hypothesis machine."""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import (
    initialize,
    precondition,
    rule,
)

from kvmodel.components.registry.system import RegistrySystem
from kvmodel.machines import Machine, WrongError
from kvmodel.model import errors as E
from kvmodel.systems import Outcome


class RegistryMachine(Machine):
    """Rules over the registry world: block states (complete, reset, partial), register_block in
    any pool, publish handles, publishers (take, publish, clone), caller Arcs, drops of anything,
    the unregister task's drain steps, and bad input (unknown names, wrong kinds, bad states)."""

    component = "kvbm_block_registry"
    config: ClassVar[dict[str, Any]] = dict(RegistrySystem.DEFAULTS)
    quirks = frozenset()

    idx = st.integers(0, 63)
    hashes = st.integers(0, 1)

    def __init__(self) -> None:
        super().__init__()
        self.fresh = 0

    def _name(self) -> str:
        self.fresh += 1
        return f"v{self.fresh}"

    def _has(self, kind: str) -> bool:
        from kvmodel.model.registry import kind_of

        return any(kind_of(v) == kind for v in self.system.model.values.values())

    @initialize()
    def first_publisher(self) -> None:
        self._run_json("new_publisher", {"as": self._name()})

    def _names(self, kind: str) -> list[str]:
        from kvmodel.model.registry import kind_of

        return sorted(n for n, v in self.system.model.values.items() if kind_of(v) == kind)

    def _pick(self, data: st.DataObject, items: list[Any], label: str) -> Any:
        return items[data.draw(self.idx, label=label) % len(items)]

    def _flip(self, data: st.DataObject, label: str) -> bool:
        b: bool = data.draw(st.booleans(), label=label)
        return b

    def _pool(self, data: st.DataObject) -> str:
        pools: list[str] = sorted(self.system.model.pools)
        p: str = self._pick(data, pools, "registry")
        return p

    def _expect(self, out: Outcome, *allowed: type[Exception]) -> None:
        if out.error is not None and not isinstance(out.error, allowed):
            raise WrongError(f"{out.op} {out.args_json} raised undocumented {type(out.error).__name__}: {out.error}")

    @rule(h=hashes)
    def complete_state(self, h: int) -> None:
        self._run_json("state_from_reset_apply_token_block", {"as": self._name(), "block": {"hash": h}})

    @rule(data=st.data(), new=st.none() | hashes)
    def register(self, data: st.DataObject, new: int | None) -> None:
        """register_block of a new Complete state of hash ``new``, or of an existing state
        (mostly a Complete one; sometimes any, so Reset/Partial/Registered are rejected)."""
        from kvmodel.model.registry import BlockAlreadyRegistered, InvalidState

        m = self.system.model
        if new is not None:
            self.complete_state(new)
        states = self._names("state")
        if not states:
            return
        if new is not None:
            name = f"v{self.fresh}"
        else:
            fresh = [n for n in states if getattr(m.values[n], "kind", "") == "Complete"]
            name = self._pick(data, fresh if fresh and self._flip(data, "fresh") else states, "state")
        h = getattr(getattr(m.values[name], "block", None), "sequence_hash", None)
        # Targeted: half the time, a pool whose unregister channel still carries this hash's
        # earlier drop (the interleaving the cleanup task races with).
        racing = sorted(n for n, p in m.pools.items() if h in p.pending)
        if racing and self._flip(data, "racing"):
            pool = self._pick(data, racing, "registry")
        else:
            pool = self._pool(data)
        out = self._run_json("register_block", {"registry": pool, "state": name, "as": self._name()})
        self._expect(out, BlockAlreadyRegistered, InvalidState)
        listed = self._run_json("is_registered", {"registry": pool, "hash": h if h is not None else 0})
        if out.error is None and listed.result is not True:
            raise WrongError(f"{name} registered in {pool} but is_registered says {listed.result}")

    @precondition(lambda self: self._has("state"))
    @rule(data=st.data())
    def drop_state(self, data: st.DataObject) -> None:
        """Drop a block state (a registered one releases its handles; the pool's task is told)."""
        names = self._names("state")
        if names:
            self._run_json("drop", {"value": self._pick(data, names, "state")})

    @rule(data=st.data())
    def drain(self, data: st.DataObject) -> None:
        """One step of a pool's unregister task; a pool with pending drops is picked first."""
        m = self.system.model
        busy = sorted(n for n, p in m.pools.items() if p.pending)
        pool = self._pick(data, busy, "registry") if busy else self._pool(data)
        self._run_json("drain", {"registry": pool})

    @precondition(lambda self: bool(self.system.model.values))
    @rule(data=st.data())
    def drop(self, data: st.DataObject) -> None:
        names = sorted(self.system.model.values)
        if names:
            self._run_json("drop", {"value": self._pick(data, names, "value")})

    @precondition(lambda self: self._has("publish_handle") and self._has("publisher"))
    @rule(data=st.data(), keep=st.booleans())
    def take_handle(self, data: st.DataObject, keep: bool) -> None:
        phs, pubs = self._names("publish_handle"), self._names("publisher")
        if phs and pubs:
            args = {"publisher": self._pick(data, pubs, "pub"), "publish_handle": self._pick(data, phs, "ph")}
            if keep:
                args["as"] = self._name()
            self._run_json("take_handle", args)

    @precondition(lambda self: self._has("publisher"))
    @rule(data=st.data())
    def publish(self, data: st.DataObject) -> None:
        pubs = self._names("publisher")
        if pubs:
            self._run_json("publish", {"publisher": self._pick(data, pubs, "pub")})

    @precondition(lambda self: self._has("publish_handle"))
    @rule(data=st.data())
    def remove_handle(self, data: st.DataObject) -> None:
        phs = self._names("publish_handle")
        if phs:
            self._run_json("remove_handle", {"publish_handle": self._pick(data, phs, "ph"), "as": self._name()})

    @precondition(lambda self: self._has("publisher"))
    @rule(data=st.data())
    def clone_publisher(self, data: st.DataObject) -> None:
        pubs = self._names("publisher")
        if pubs:
            self._run_json("clone_publisher", {"publisher": self._pick(data, pubs, "pub"), "as": self._name()})

    @rule()
    def settle(self) -> None:
        """Every unregister task runs to quiescence (what a tokio runtime does when idle)."""
        m = self.system.model
        for name in sorted(m.pools):
            while m.pools[name].pending:
                self._run_json("drain", {"registry": name})

    @rule(data=st.data(), size=st.integers(1, 3), n=st.integers(0, 4))
    def partial_state(self, data: st.DataObject, size: int, n: int) -> None:
        """A state through initialize_sequence / add_tokens / commit, each possibly rejected."""
        from kvmodel.model.registry import StateNotPartial, StateNotReset, TokenBlockFull, TokenBlockIncomplete

        name = self._name()
        self._run_json("new_state", {"as": name})
        out = self._run_json("initialize_sequence", {"state": name, "page_size": size})
        self._expect(out, StateNotReset)
        if n:
            out = self._run_json("add_tokens", {"state": name, "tokens": list(range(n))})
            self._expect(out, StateNotPartial, TokenBlockFull)
        if data.draw(st.booleans(), label="commit"):
            out = self._run_json("commit", {"state": name})
            self._expect(out, StateNotPartial, TokenBlockIncomplete)

    @rule(
        op_args=st.sampled_from(
            [
                ("drop", {"value": "nobody"}),
                ("drop", {}),
                ("register_block", {"registry": "nowhere", "state": "nobody"}),
                ("register_block", {"registry": "device0"}),
                ("publish", {"publisher": 3}),
                ("drain", {"registry": ["device0"]}),
                ("state_from_reset_apply_token_block", {"block": {"hash": -1}}),
                ("state_from_reset_apply_token_block", {"block": 5}),
                ("frobnicate", {}),
                ("new_registry", {"as": "device0", "tier": "Device"}),
                ("new_registry", {"as": "elsewhere", "tier": "Moon"}),
            ]
        ),
        data=st.data(),
    )
    def malformed(self, op_args: tuple[str, dict[str, Any]], data: st.DataObject) -> None:
        """Unknown names, wrong kinds and malformed arguments: InvalidInput, nothing changes.
        Also a name of the wrong kind (a publisher given where a state is expected)."""
        op, args = op_args
        names = sorted(self.system.model.values)
        if names and self._flip(data, "wrong_kind"):
            op, args = "take_handle", {"publisher": self._pick(data, names, "x"), "publish_handle": "nobody"}
        before = self.system.key()
        out = self._run_json(op, args)
        if not isinstance(out.error, E.InvalidInput):
            raise WrongError(f"malformed {op} {args!r} gave {out.error!r}, not InvalidInput")
        if self.system.key() != before:
            raise WrongError(f"malformed {op} {args!r} changed the state")
