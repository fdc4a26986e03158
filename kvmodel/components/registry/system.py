"""The KVBM block registry's system (dynamo-llm 1.0.2, seed 004): registries, handles, publishers
and the caller's values behind the step interface."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from kvmodel import argspec as A
from kvmodel.invariants import StepContext, check_all
from kvmodel.invariants.registry import Before, RegMonitor
from kvmodel.invariants.registry import entries as _reg_entries
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.quirks import resolve
from kvmodel.model.registry import Block, BlockState, Registry, block_from_json
from kvmodel.systems import Outcome, System, check_config


class RegistrySystem(System):
    """The KVBM block registry world (pools sharing a global registry, the caller's values)
    with the Register/Remove stream monitor."""

    OPS = (
        "new_registry",
        "new_state",
        "state_from_reset_apply_token_block",
        "apply_token_block",
        "initialize_sequence",
        "add_token",
        "add_tokens",
        "pop_token",
        "pop_tokens",
        "commit",
        "state_query",
        "register_block",
        "create_publish_handle",
        "remove_handle",
        "new_publisher",
        "take_handle",
        "publish",
        "clone_publisher",
        "drop",
        "drain",
        "is_registered",
    )
    DEFAULTS: ClassVar[dict[str, Any]] = {
        "registries": [["device0", "Device"], ["device1", "Device"], ["host", "HostPinned"]],
    }

    def __init__(self, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> None:
        self.component = "kvbm_block_registry"
        self.config = check_config(self.component, config or {}, self.DEFAULTS)
        self.quirks = resolve(self.component, quirks)
        self.model = Registry(self.quirks)
        regs = self.config["registries"]
        if not isinstance(regs, list):
            raise InvalidInput(f"registries must be a list of [name, tier], got {regs!r}")
        for r in regs:
            if not isinstance(r, list | tuple) or len(r) not in (2, 3):
                raise InvalidInput(f"a registry is [name, tier] or [name, tier, global], got {r!r}")
            self.model.new_registry(r[0], r[1], *(r[2:] or ["G"]))
        self.monitor = RegMonitor()
        self._key: Any = None  # cached key of the current state (computing it dominated exploration)

    REQUIRED: ClassVar[dict[str, tuple[str, ...]]] = {
        "new_registry": ("as",),
        "apply_token_block": ("state", "block"),
        "state_from_reset_apply_token_block": ("block",),
        "initialize_sequence": ("state", "page_size"),
        "add_token": ("state", "token"),
        "add_tokens": ("state", "tokens"),
        "pop_token": ("state",),
        "pop_tokens": ("state", "count"),
        "commit": ("state",),
        "state_query": ("state", "query"),
        "register_block": ("registry", "state"),
        "create_publish_handle": ("block",),
        "remove_handle": ("publish_handle",),
        "take_handle": ("publisher", "publish_handle"),
        "publish": ("publisher",),
        "clone_publisher": ("publisher",),
        "drop": ("value",),
        "drain": ("registry",),
        "is_registered": ("registry", "hash"),
    }

    _NAMED = frozenset({"as", "state", "registry", "publisher", "publish_handle", "value", "global_registry"})
    _OPTIONAL: ClassVar[dict[str, tuple[str, ...]]] = {
        "new_registry": ("tier", "global_registry"),
        "new_state": ("as",),
        "state_from_reset_apply_token_block": ("as",),
        "initialize_sequence": ("salt",),
        "register_block": ("as", "event_hashes"),
        "create_publish_handle": ("as", "tier"),
        "remove_handle": ("as",),
        "new_publisher": ("as",),
        "take_handle": ("as",),
        "clone_publisher": ("as",),
    }

    def decode(self, op: str, args: Any) -> Any:
        args = {} if args is None else args
        if op not in self.OPS:
            raise InvalidInput(f"unknown {self.component} operation {op!r} (known: {list(self.OPS)})")
        if not isinstance(args, dict):
            raise InvalidInput(f"{op} arguments must be an object, got {args!r:.60}")
        known = set(self.REQUIRED.get(op, ())) | set(self._OPTIONAL.get(op, ()))
        for k in args:
            if k not in known:
                raise InvalidInput(
                    f"{self.component} {op}: unknown argument {k!r:.40} (known: {sorted(known) or 'none'})"
                )
        for k in self.REQUIRED.get(op, ()):
            if k not in args:
                raise InvalidInput(f"{op} needs {k!r}")
        for k in self._NAMED & set(args):
            if not (args[k] is None and k == "as"):
                A.name(args[k], f"{self.component} {op}: {k}")
        out = dict(args)
        if "block" in out:
            out["block"] = block_from_json(out["block"])
        if op == "add_tokens" and not isinstance(out["tokens"], list):
            raise InvalidInput(f"tokens must be a list, got {out['tokens']!r}")
        if op == "is_registered" and (isinstance(out["hash"], bool) or not isinstance(out["hash"], int)):
            raise InvalidInput(f"hash must be an integer, got {out['hash']!r}")
        eh = out.get("event_hashes")
        if eh is not None and (not isinstance(eh, list) or len(eh) != 2):
            raise InvalidInput(f"event_hashes must be [hash|null, parent|null], got {eh!r}")
        return out

    def _call(self, op: str, a: dict[str, Any]) -> Any:
        """The model's method for ``op`` (:data:`CALLS`), with the decoded arguments."""
        return CALLS[op](self.model, a)

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        m = self.model
        pre_key = self.key()
        pre = Before(_reg_entries(m))
        if op == "register_block":
            st = m.values.get(decoded.get("state"))
            pool = m.pools.get(decoded.get("registry"))
            pre.pending_hit = (
                isinstance(st, BlockState)
                and st.block is not None
                and pool is not None
                and st.block.sequence_hash in pool.pending
            )
        out = Outcome(op, args_json if args_json is not None else _reg_args_json(decoded))
        try:
            out.result = self._call(op, decoded)
        except ModelError as e:
            out.error = e
        out.events = m.drain_events()
        m.messages.clear()  # the batches live on in the events (the model's list is for the vectors)
        self.monitor.observe(m, out.events)
        m.gc()
        self.monitor.forget(set(m.handles))
        self._key = None
        pre.post_key = self.key()
        ctx = StepContext(m, self.monitor, op, decoded, out.result, out.error, out.events, pre_key, pre)
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


def _reg_args_json(decoded: dict[str, Any]) -> dict[str, Any]:
    out = dict(decoded)
    if isinstance(out.get("block"), Block):
        out["block"] = out["block"].to_json()
    return out


def _register(m: Any, a: dict[str, Any]) -> Any:
    eh = a.get("event_hashes")
    return m.register_block(a["registry"], a["state"], a.get("as"), None if eh is None else (eh[0], eh[1]))


# each operation of the trace format: the model's method it calls and how the arguments map
CALLS: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "new_registry": lambda m, a: m.new_registry(a["as"], a.get("tier", "Device"), a.get("global_registry", "G")),
    "new_state": lambda m, a: m.new_state(a.get("as")),
    "state_from_reset_apply_token_block": lambda m, a: m.state_from_block(a.get("as"), a["block"]),
    "apply_token_block": lambda m, a: m.apply_token_block(a["state"], a["block"]),
    "initialize_sequence": lambda m, a: m.initialize_sequence(a["state"], a["page_size"], a.get("salt", 0)),
    "add_token": lambda m, a: m.add_token(a["state"], a["token"]),
    "add_tokens": lambda m, a: m.add_tokens(a["state"], a["tokens"]),
    "pop_token": lambda m, a: m.pop_token(a["state"]),
    "pop_tokens": lambda m, a: m.pop_tokens(a["state"], a["count"]),
    "state_query": lambda m, a: m.state_query(a["state"], a["query"]),
    "commit": lambda m, a: m.commit(a["state"]),
    "register_block": _register,
    "create_publish_handle": lambda m, a: m.create_publish_handle(a.get("as"), a["block"], a.get("tier", "Device")),
    "remove_handle": lambda m, a: m.remove_handle(a["publish_handle"], a.get("as")),
    "new_publisher": lambda m, a: m.new_publisher(a.get("as")),
    "take_handle": lambda m, a: m.take_handle(a["publisher"], a["publish_handle"], a.get("as")),
    "publish": lambda m, a: m.publish(a["publisher"]),
    "clone_publisher": lambda m, a: m.clone_publisher(a["publisher"], a.get("as")),
    "drop": lambda m, a: m.drop(a["value"]),
    "drain": lambda m, a: m.drain(a["registry"]),
    "is_registered": lambda m, a: m.is_registered(a["registry"], a["hash"]),
}
