"""Systems: a component's model, its monitor and its invariants behind one step interface.

Every engine drives a component through a :class:`System`: ``step(op, args)`` applies
one operation given in the JSON form that traces and vectors use, records what was
observed (return value, events in order, error) and checks the component's invariants.
Hypothesis machines call :meth:`System.apply` with decoded arguments to skip the JSON.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, ClassVar

import attrs

from kvmodel import argspec as A
from kvmodel.argspec import OPTIONAL as O
from kvmodel.argspec import REQUIRED as R
from kvmodel.invariants import StepContext, Violation, check_all
from kvmodel.invariants.kv_manager import KvMonitor
from kvmodel.invariants.lru import LruMonitor
from kvmodel.invariants.registry import RegMonitor
from kvmodel.invariants.registry import entries as _reg_entries
from kvmodel.model.blocks import MoveBlock, blocks_from_json, move_block_from_json
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.kv_manager import KvManager
from kvmodel.model.lru import CounterLRU, WallClockLRU
from kvmodel.model.quirks import faithful, validate
from kvmodel.model.registry import Block, BlockState, Registry, block_from_json


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

    def observation(self, state: dict[str, Any] | None) -> dict[str, Any]:
        obs: dict[str, Any] = {}
        if self.error is not None:
            obs["error"] = self.error.to_json()
        else:
            obs["returns"] = self.result
        obs["events"] = [e.to_json() for e in self.events]
        if state is not None:
            obs["state"] = state
        return obs


class System:
    component: str

    def clone(self) -> System:
        raise NotImplementedError

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

    def decode(self, op: str, args: Any) -> Any:
        raise NotImplementedError

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        raise NotImplementedError

    def snapshot(self) -> dict[str, Any]:
        raise NotImplementedError

    def key(self) -> Any:
        raise NotImplementedError


from kvmodel.model.g1.pool import MAX_SLOTS  # noqa: E402 -- a pool the model allocates slot by slot

_BOUNDS: dict[str, tuple[int, int]] = {
    "max_capacity": (0, 2**64),
    "block_size": (0, 2**32),
    "cleanup_threshold": (0, 2**64),  # a usize in the Rust; 0 is legal (cleanup on every insert)
    "dp_rank": (0, 2**32),
    "plh_fragments": (0, 2**64),
}
_SLOT_POOLS = frozenset({"g1_native", "g1_kvbm"})


def _check_config(component: str, config: dict[str, Any], allowed: dict[str, Any]) -> dict[str, Any]:
    """The configuration with defaults filled; unknown keys, values of the wrong type and worlds
    that cannot fit (a pool of more than ``MAX_SLOTS`` slots) are ``InvalidInput`` up front."""
    if not isinstance(config, dict):
        raise InvalidInput(f"{component}: config must be an object, got {config!r:.60}")
    for k in config:
        if k not in allowed:
            raise InvalidInput(f"{component}: unknown config key {k!r:.40} (known: {sorted(allowed)})")
    out = {**allowed, **config}
    for k, v in out.items():
        d = allowed[k]
        if isinstance(d, bool):
            if not isinstance(v, bool):
                raise InvalidInput(f"{component}: config {k} must be true or false, got {v!r:.60}")
        elif isinstance(d, int):
            lo, hi = _BOUNDS.get(k, (0, 2**64))
            if k == "max_capacity" and component in _SLOT_POOLS:
                hi = MAX_SLOTS + 1
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v < hi:
                raise InvalidInput(f"{component}: config {k} must be an integer in [{lo}, {hi}), got {v!r:.60}")
        elif isinstance(d, str) and not isinstance(v, str):
            raise InvalidInput(f"{component}: config {k} must be a string, got {v!r:.60}")
        elif isinstance(d, list) and (not isinstance(v, list) or len(v) > 64):
            raise InvalidInput(f"{component}: config {k} must be a list of at most 64 entries, got {v!r:.60}")
    return out


class KvManagerSystem(System):
    """The old mocker KV manager with its router-view / held-references monitor."""

    OPS = (
        "process",
        "probe_new_blocks",
        "current_capacity",
        "num_active_blocks",
        "num_inactive_blocks",
        "get_prefill_cost",
    )
    DEFAULTS: ClassVar[dict[str, Any]] = {"max_capacity": 4, "block_size": 16, "channel": True, "evictor": "wallclock"}

    def __init__(self, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> None:
        self.component = "kv_manager"
        self.config = _check_config(self.component, config or {}, self.DEFAULTS)
        self.quirks = faithful(self.component) if quirks is None else validate(self.component, quirks)
        self.model = KvManager(
            self.config["max_capacity"],
            self.config["block_size"],
            channel=self.config["channel"],
            quirks=self.quirks,
            evictor=self.config["evictor"],
        )
        self.monitor = KvMonitor(self.model.channel)

    def decode(self, op: str, args: Any) -> Any:
        if op == "process":
            return move_block_from_json(args)
        if op == "probe_new_blocks":
            a = A.check(self.component, op, args, {"blocks": (R, A.anything)})
            return blocks_from_json(a["blocks"])
        if op == "get_prefill_cost":
            a = A.check(
                self.component,
                op,
                args,
                {"unique_blocks": (R, A.anything), "num_input_tokens": (R, A.usize)},
            )
            return (blocks_from_json(a["unique_blocks"]), a["num_input_tokens"])
        if op in self.OPS:
            A.check(self.component, op, args, {})
            return None
        raise InvalidInput(f"unknown kv_manager operation {op!r} (known: {list(self.OPS)})")

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        m = self.model
        pre_key = m.key()
        pre = {
            "active": dict(m.active),
            "active_keys": frozenset(m.active),
            "inactive": m.inactive.keys(),
            "all": frozenset(m.all_blocks),
        }
        out = Outcome(op, args_json if args_json is not None else _args_json(op, decoded))
        try:
            if op == "process":
                out.result = m.process(decoded)
            elif op == "probe_new_blocks":
                out.result = m.probe_new_blocks(decoded)
            elif op == "get_prefill_cost":
                nb, nt = m.get_prefill_cost(decoded[0], decoded[1])
                out.result = {"new_blocks": nb, "new_tokens": nt}
            else:
                out.result = getattr(m, op)()
        except ModelError as e:
            out.error = e
        out.events = m.drain_events()
        signal = decoded if op == "process" else None
        self.monitor.observe(signal, out.result, out.error, out.events)
        ctx = StepContext(m, self.monitor, op, signal, out.result, out.error, out.events, pre_key, pre)
        out.violations = check_all(self.component, ctx)
        out.ctx = ctx
        return out

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
        return c


def _args_json(op: str, decoded: Any) -> Any:
    if op == "process":
        sig: MoveBlock = decoded
        return sig.to_json()
    if op == "probe_new_blocks":
        return {"blocks": [b.to_json() for b in decoded]}
    if op == "get_prefill_cost":
        return {"unique_blocks": [b.to_json() for b in decoded[0]], "num_input_tokens": decoded[1]}
    if isinstance(decoded, dict):
        return decoded
    return {}


class LruSystem(System):
    """One of the two LRU evictors with the exact-LRU ghost monitor."""

    OPS = ("insert", "push_front", "remove", "evict", "len")

    def __init__(
        self, component: str, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None
    ) -> None:
        if component not in ("lru_evictor_wallclock", "lru_evictor_counter"):
            raise InvalidInput(f"not an LRU component: {component!r}")
        self.component = component
        self.config = _check_config(component, config or {}, {"cleanup_threshold": 50})
        self.quirks = faithful(component) if quirks is None else validate(component, quirks)
        self.model: WallClockLRU[Any] | CounterLRU[Any]
        if component == "lru_evictor_wallclock":
            self.model = WallClockLRU(self.config["cleanup_threshold"], quirks=self.quirks)
        else:
            self.model = CounterLRU(self.config["cleanup_threshold"])
        self.monitor = LruMonitor()

    def decode(self, op: str, args: Any) -> Any:
        args = {} if args is None else args
        if not isinstance(args, dict):
            raise InvalidInput(f"{op} arguments must be an object, got {args!r}")
        if op not in self.OPS:
            raise InvalidInput(f"unknown {self.component} operation {op!r} (known: {list(self.OPS)})")
        if op == "push_front" and self.component != "lru_evictor_counter":
            raise InvalidInput("push_front exists only on the counter-based evictor")
        spec: A.Spec = {"object": (R, A.anything)} if op in ("push_front", "remove") else {}
        if op == "insert":
            spec = {"object": (R, A.anything), "clock": (O, A.optional(A.u64))}
        A.check(self.component, op, args, spec)
        if op in ("insert", "push_front", "remove"):
            if "object" not in args:
                raise InvalidInput(f"{op} needs an 'object'")
            obj = args["object"]
            if not isinstance(obj, int | str) or isinstance(obj, bool):
                raise InvalidInput(f"object must be an integer or a string, got {obj!r}")
        return dict(args)

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        m = self.model
        out = Outcome(op, args_json if args_json is not None else decoded)
        obj = decoded.get("object")
        pre = {"live": frozenset(self.monitor.order)}
        try:
            if op == "insert":
                m.insert(obj, decoded.get("clock"))
            elif op == "push_front":
                assert isinstance(m, CounterLRU)
                m.push_front(obj)
            elif op == "remove":
                out.result = m.remove(obj)
            elif op == "evict":
                out.result = m.evict()
            else:
                out.result = len(m)
        except ModelError as e:
            out.error = e
        self.monitor.observe(op, obj, out.result, out.error)
        ctx = StepContext(m, self.monitor, op, decoded, out.result, out.error, [], None, pre)
        out.violations = check_all(self.component, ctx)
        out.ctx = ctx
        return out

    def clone(self) -> LruSystem:
        c = LruSystem.__new__(LruSystem)
        c.component, c.config, c.quirks = self.component, self.config, self.quirks
        c.model = self.model.copy()
        c.monitor = self.monitor.copy()
        return c

    def snapshot(self) -> dict[str, Any]:
        return {"order": list(self.model.order())}

    def key(self) -> Any:
        return (tuple(self.model.order()), self.monitor.key())


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
        self.config = _check_config(self.component, config or {}, self.DEFAULTS)
        self.quirks = faithful(self.component) if quirks is None else validate(self.component, quirks)
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
        m = self.model
        if op == "new_registry":
            return m.new_registry(a["as"], a.get("tier", "Device"), a.get("global_registry", "G"))
        if op == "new_state":
            return m.new_state(a.get("as"))
        if op == "state_from_reset_apply_token_block":
            return m.state_from_block(a.get("as"), a["block"])
        if op == "apply_token_block":
            return m.apply_token_block(a["state"], a["block"])
        if op == "initialize_sequence":
            return m.initialize_sequence(a["state"], a["page_size"], a.get("salt", 0))
        if op == "add_token":
            return m.add_token(a["state"], a["token"])
        if op == "add_tokens":
            return m.add_tokens(a["state"], a["tokens"])
        if op == "pop_token":
            return m.pop_token(a["state"])
        if op == "pop_tokens":
            return m.pop_tokens(a["state"], a["count"])
        if op == "state_query":
            return m.state_query(a["state"], a["query"])
        if op == "commit":
            return m.commit(a["state"])
        if op == "register_block":
            eh = a.get("event_hashes")
            return m.register_block(a["registry"], a["state"], a.get("as"), None if eh is None else (eh[0], eh[1]))
        if op == "create_publish_handle":
            return m.create_publish_handle(a.get("as"), a["block"], a.get("tier", "Device"))
        if op == "remove_handle":
            return m.remove_handle(a["publish_handle"], a.get("as"))
        if op == "new_publisher":
            return m.new_publisher(a.get("as"))
        if op == "take_handle":
            return m.take_handle(a["publisher"], a["publish_handle"], a.get("as"))
        if op == "publish":
            return m.publish(a["publisher"])
        if op == "clone_publisher":
            return m.clone_publisher(a["publisher"], a.get("as"))
        if op == "drop":
            return m.drop(a["value"])
        if op == "drain":
            return m.drain(a["registry"])
        return m.is_registered(a["registry"], a["hash"])

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        m = self.model
        pre_key = self.key()
        pre: dict[str, Any] = {"entries": _reg_entries(m)}
        if op == "register_block":
            st = m.values.get(decoded.get("state"))
            pool = m.pools.get(decoded.get("registry"))
            pre["pending_hit"] = (
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
        pre["post_key"] = self.key()
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


COMPONENTS = (
    "kv_manager",
    "lru_evictor_wallclock",
    "lru_evictor_counter",
    "kvbm_block_registry",
    "g1_native",
    "g1_kvbm",
)


def make_system(component: str, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> System:
    """Build a system; ``quirks=None`` means faithful (all of the component's quirks on)."""
    if component == "kv_manager":
        return KvManagerSystem(config, quirks)
    if component in ("lru_evictor_wallclock", "lru_evictor_counter"):
        return LruSystem(component, config, quirks)
    if component == "kvbm_block_registry":
        return RegistrySystem(config, quirks)
    if component == "g1_native":
        return G1System(config, quirks)
    if component == "g1_kvbm":
        return G1KvbmSystem(config, quirks)
    raise InvalidInput(f"unknown component {component!r} (known: {list(COMPONENTS)})")


class G1System(System):
    """The G1 facade with the native backend, driven request by request.

    Operations (trace format): ``new_request {owner, tokens}`` (a sequence, no signal yet),
    ``allocate {owner, reuse}`` (the creation signal; with ``reuse`` its cached full-block
    prefix is authorised, capped like the scheduler's hit at ``(n-1)//block_size`` blocks),
    ``push {owner, token}`` (the sequence's Promote and Use of a new partial),
    ``finalize {owner}`` (everything computed: ``finalize_computed_prefix(computed, len)``),
    ``free {owner}`` (the terminal Deref, leaf first), ``deref_in_order {owner}`` (the same
    blocks in table order), ``reserve_decode {count}`` / ``release_decode {}``,
    ``reserve_destination {owner, tokens}`` / ``activate_destination {owner}`` /
    ``cancel_destination {owner}``, and ``counts {}``.
    """

    OPS = (
        "new_request",
        "allocate",
        "push",
        "finalize",
        "free",
        "deref_in_order",
        "reserve_decode",
        "release_decode",
        "reserve_destination",
        "activate_destination",
        "cancel_destination",
        "counts",
    )
    DEFAULTS: ClassVar[dict[str, Any]] = {
        "max_capacity": 4,
        "block_size": 2,
        "enable_prefix_caching": True,
        "publishers": True,
        "dp_rank": 0,
    }

    def __init__(self, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> None:
        from kvmodel.invariants.g1 import G1Monitor
        from kvmodel.model.g1.facade import G1Manager

        self.component = "g1_native"
        self.config = _check_config(self.component, config or {}, self.DEFAULTS)
        self.quirks = faithful(self.component) if quirks is None else validate(self.component, quirks)
        c = self.config
        self.model = G1Manager(
            c["max_capacity"],
            c["block_size"],
            backend="native",
            enable_prefix_caching=c["enable_prefix_caching"],
            publishers=c["publishers"],
            dp_rank=c["dp_rank"],
            quirks=self.quirks,
        )
        self.monitor = G1Monitor()
        self.seqs: dict[int, Any] = {}
        self.computed: dict[int, int] = {}
        self.decodes: list[Any] = []
        self.dest: dict[int, Any] = {}

    def clone(self) -> G1System:
        import copy

        c = G1System.__new__(G1System)
        c.component, c.config, c.quirks = self.component, self.config, self.quirks
        c.model = self.model.clone()
        c.monitor = self.monitor.copy()
        c.seqs = {k: v.copy() for k, v in self.seqs.items()}
        c.computed = dict(self.computed)
        # reservations point into the pool's bookkeeping only by value: copy them
        c.decodes = [copy.deepcopy(r) for r in self.decodes]
        c.dest = {k: copy.deepcopy(v) for k, v in self.dest.items()}
        return c

    ARGS: ClassVar[dict[str, A.Spec]] = {
        "new_request": {"owner": (R, A.owner), "tokens": (R, A.tokens)},
        "allocate": {"owner": (R, A.owner), "reuse": (O, A.boolean)},
        "push": {"owner": (R, A.owner), "token": (R, A.u32)},
        "finalize": {"owner": (R, A.owner)},
        "free": {"owner": (R, A.owner)},
        "deref_in_order": {"owner": (R, A.owner)},
        "reserve_decode": {"count": (R, A.usize)},
        "release_decode": {},
        "reserve_destination": {"owner": (R, A.owner), "tokens": (R, A.tokens)},
        "activate_destination": {"owner": (R, A.owner)},
        "cancel_destination": {"owner": (R, A.owner)},
        "counts": {},
    }

    def decode(self, op: str, args: Any) -> Any:
        if op not in self.OPS:
            raise InvalidInput(f"unknown g1_native operation {op!r} (known: {list(self.OPS)})")
        return A.check(self.component, op, args, self.ARGS[op])

    def _seq(self, owner: Any) -> Any:
        s = self.seqs.get(owner)
        if s is None:
            raise InvalidInput(f"no request {owner!r}")
        return s

    def _live(self, owner: Any) -> Any:
        """The request's sequence, if it is not a destination reservation still in transfer."""
        s = self._seq(owner)
        if owner in self.dest:
            raise InvalidInput(f"request {owner} is a destination reservation (activate or cancel it)")
        return s

    def _outstanding(self) -> int:
        return int(sum(r.pool.fresh for r in self.decodes) + sum(r.pool.fresh for r in self.dest.values()))

    def _call(self, op: str, a: dict[str, Any]) -> Any:
        from kvmodel.model.g1.sequence import G1Deref, NewActiveSequence

        g = self.model
        bs = g.block_size
        if op == "new_request":
            o = a["owner"]
            if o in self.seqs:
                raise InvalidInput(f"request {o} exists")
            self.seqs[o] = NewActiveSequence(a["tokens"], 8, bs, self.config["enable_prefix_caching"], name=f"r{o}")
            self.computed[o] = 0
            return None
        if op == "allocate":
            o = a["owner"]
            s = self._live(o)
            sig = s.prepare_allocation(len(s))
            if sig is None:
                return "Ready(0)"
            reusable = 0
            if a.get("reuse") and s.num_allocated_tokens == 0 and o not in g.native.tables:
                cap = (len(s) - 1) // bs
                for b in sig.blocks[:cap]:
                    if getattr(b, "hash", None) is None or g.native.prefix_hit(b.hash) is None:
                        break
                    reusable += 1
            self._pre["reusable"] = reusable
            out = g.process_for_request(o, sig, reusable)
            if out.startswith("Ready"):
                s.commit_allocation(len(s))
                self.computed[o] = max(self.computed[o], reusable * bs)
            return out
        if op == "push":
            o = a["owner"]
            s = self._live(o)
            if o not in g.native.tables:
                # out of protocol: the scheduler decodes only admitted (allocated) requests
                raise InvalidInput(f"request {o} is not allocated, so it does not decode")
            sigs = s.push(a["token"]) or []
            return [g.process_for_request(o, x, 0) for x in sigs]
        if op == "finalize":
            o = a["owner"]
            s = self._live(o)
            before, after = self.computed.get(o, 0), len(s)
            g.finalize_computed_prefix(o, before, after, s)
            self.computed[o] = after
            return None
        if op in ("free", "deref_in_order"):
            o = a["owner"]
            s = self._live(o)
            sig = s.terminal_signal()
            if op == "deref_in_order":
                if o not in g.native.tables:
                    raise InvalidInput(f"request {o} holds no blocks to name in table order")
                sig = G1Deref(tuple(reversed(sig.blocks)))
                t = g.native.tables.get(o, [])
                self._pre["deref_names_tail"] = len(t) == len(sig.blocks) and all(
                    any(e.matches(b) for e in t) for b in sig.blocks
                )
            out = g.process_for_request(o, sig, 0)
            del self.seqs[o]
            self.computed.pop(o, None)
            return out
        if op == "reserve_decode":
            r = g.reserve_decode_blocks(a["count"])
            if isinstance(r, str):
                return r
            self.decodes.append(r)
            return "Ready"
        if op == "release_decode":
            if not self.decodes:
                raise InvalidInput("no decode reservation outstanding")
            g.release_decode_reservation(self.decodes[0])
            self.decodes.pop(0)
            return None
        if op == "reserve_destination":
            o = a["owner"]
            if o in self.seqs:
                raise InvalidInput(f"request {o} exists")
            s = NewActiveSequence(a["tokens"], 8, bs, self.config["enable_prefix_caching"], name=f"r{o}")
            r = g.reserve_destination_at(o, s)
            if isinstance(r, str):
                return r
            self.seqs[o], self.computed[o], self.dest[o] = s, 0, r
            cached = len(r.pool.prefix) * bs
            return {
                "transferable_prompt_tokens": r.transferable_prompt_tokens(bs),
                "uncached_prompt_tokens": max(0, s.num_input_tokens - cached),
            }
        if op in ("activate_destination", "cancel_destination"):
            o = a["owner"]
            r = self.dest.get(o)
            if r is None:
                raise InvalidInput(f"no destination reservation for request {o}")
            if op == "activate_destination":
                g.activate_destination(r)
                s = self.seqs[o]
                s.commit_allocation(s.num_input_tokens)
                self.computed[o] = s.num_input_tokens
            else:
                g.cancel_destination(r)
                del self.seqs[o]
                self.computed.pop(o, None)
            del self.dest[o]
            return None
        if op == "counts":
            return {
                "num_active_blocks": g.num_active_blocks(),
                "num_inactive_blocks": g.num_inactive_blocks(),
                "num_active_block_refs": g.num_active_block_refs(),
            }
        raise InvalidInput(f"unknown g1_native operation {op!r}")

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        from kvmodel.invariants import check_all

        pre_key = self.model.key()
        self._pre: dict[str, Any] = {"owners": set(self.model.native.tables)}
        out = Outcome(op, args_json if args_json is not None else decoded)
        # A rejected operation leaves the request bookkeeping as it was: the operated request's
        # sequence is copied, since a signal's sequence-side change (a promoted tail, a pushed
        # token) precedes the rejection.
        seqs = dict(self.seqs)
        owner = decoded.get("owner") if isinstance(decoded, dict) else None
        if isinstance(owner, (int, str)) and owner in seqs:
            seqs[owner] = seqs[owner].copy()
        saved = (seqs, dict(self.computed), list(self.decodes), dict(self.dest))
        try:
            out.result = self._call(op, decoded)
        except ModelError as e:
            out.error = e
            self.seqs, self.computed, self.decodes, self.dest = saved
        out.events = self.model.drain_events()
        self.monitor.observe(out.events)
        self._pre["outstanding_fresh"] = self._outstanding()
        self._pre["dest_pins"] = Counter(i for r in self.dest.values() for _, i in r.pool.prefix)
        self._pre["dest_prefix"] = {o: len(r.pool.prefix) for o, r in self.dest.items()}
        self._pre["seqs"] = self.seqs
        self._pre["computed"] = self.computed
        ctx = StepContext(self.model, self.monitor, op, decoded, out.result, out.error, out.events, pre_key, self._pre)
        out.violations = check_all(self.component, ctx)
        out.ctx = ctx
        return out

    def snapshot(self) -> dict[str, Any]:
        snap: dict[str, Any] = self.model.snapshot()
        snap["requests"] = {
            str(o): {"tokens": len(s), "allocated": s.num_allocated_tokens, "computed": self.computed.get(o, 0)}
            for o, s in sorted(self.seqs.items())
        }
        return snap

    def key(self) -> Any:
        reqs = tuple(
            (o, tuple(s.tokens), s.num_allocated_tokens, self.computed.get(o, 0), tuple(map(repr, s.unique)))
            for o, s in sorted(self.seqs.items())
        )
        res = (
            tuple((len(r.pool.prefix), r.pool.fresh) for r in self.decodes),
            tuple((o, tuple(h for h, _ in r.pool.prefix), r.pool.fresh) for o, r in sorted(self.dest.items())),
        )
        return (self.model.key(), self.monitor.key(), reqs, res)


class G1KvbmSystem(System):
    """The G1 facade with the KVBM backend (its default), driven request by request.

    Operations (trace format): ``new_request {owner, tokens, caching}`` (a sequence; ``caching``
    false gives random hashes), ``allocate {owner}`` (its creation signal), ``push {owner,
    token}`` (the Promote of a completed tail and the Use of a new partial),
    ``decode_push {owner, token}`` (the same through the outstanding decode reservation),
    ``resend {owner}`` (the request's held blocks named again in one Use: a second logical
    holder of the same table), ``free {owner}`` (one Deref of what it holds, leaf first),
    ``reserve_decode {count}`` / ``release_decode {}``, ``reserve_destination {owner, tokens}`` /
    ``activate_destination {owner}`` / ``cancel_destination {owner}``, the malformed inputs
    ``bad_use {kind: dup_partial | hash_two_plhs}`` and ``bad_deref {owner}`` (the request's
    Deref with an unknown block at the end), and ``counts {}``.

    The system keeps what each request holds (the blocks its successful signals named): a
    request's Deref names exactly those, so the manager's references can be checked against
    them.
    """

    OPS = (
        "new_request",
        "allocate",
        "push",
        "decode_push",
        "resend",
        "free",
        "reserve_decode",
        "release_decode",
        "reserve_destination",
        "activate_destination",
        "cancel_destination",
        "bad_use",
        "bad_deref",
        "counts",
    )
    DEFAULTS: ClassVar[dict[str, Any]] = {
        "max_capacity": 3,
        "block_size": 2,
        "eviction_backend": "Lineage",
        "publishers": True,
        "dp_rank": 0,
        "plh_fragments": 0,
    }
    BAD_HASH = 999_999

    def __init__(self, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> None:
        from kvmodel.invariants.kvbm import KvbmMonitor
        from kvmodel.model.g1.facade import G1Manager

        self.component = "g1_kvbm"
        self.config = _check_config(self.component, config or {}, self.DEFAULTS)
        self.quirks = faithful(self.component) if quirks is None else validate(self.component, quirks)
        c = self.config
        self.model = G1Manager(
            c["max_capacity"],
            c["block_size"],
            backend="kvbm",
            eviction_backend=c["eviction_backend"],
            publishers=c["publishers"],
            dp_rank=c["dp_rank"],
            quirks=self.quirks,
        )
        self.monitor = KvbmMonitor()
        self.seqs: dict[int, Any] = {}
        self.holdings: dict[int, list[Any]] = {}
        self.stalled: set[int] = set()
        self.decodes: list[Any] = []
        self.dest: dict[int, Any] = {}
        self.uncached: set[int] = set()

    def clone(self) -> G1KvbmSystem:
        import copy

        c = G1KvbmSystem.__new__(G1KvbmSystem)
        c.component, c.config, c.quirks = self.component, self.config, self.quirks
        c.model = self.model.clone()
        c.monitor = self.monitor.copy()
        c.seqs = {k: v.copy() for k, v in self.seqs.items()}
        c.holdings = {k: list(v) for k, v in self.holdings.items()}
        c.stalled = set(self.stalled)
        c.decodes = [copy.deepcopy(r) for r in self.decodes]
        c.dest = {k: copy.deepcopy(v) for k, v in self.dest.items()}
        c.uncached = set(self.uncached)
        return c

    ARGS: ClassVar[dict[str, A.Spec]] = {
        "new_request": {"owner": (R, A.owner), "tokens": (R, A.tokens), "caching": (O, A.boolean)},
        "allocate": {"owner": (R, A.owner)},
        "push": {"owner": (R, A.owner), "token": (R, A.u32)},
        "decode_push": {"owner": (R, A.owner), "token": (R, A.u32)},
        "resend": {"owner": (R, A.owner)},
        "free": {"owner": (R, A.owner)},
        "reserve_decode": {"count": (R, A.usize)},
        "release_decode": {},
        "reserve_destination": {"owner": (R, A.owner), "tokens": (R, A.tokens), "caching": (O, A.boolean)},
        "activate_destination": {"owner": (R, A.owner)},
        "cancel_destination": {"owner": (R, A.owner)},
        "bad_use": {"kind": (R, A.string)},
        "bad_deref": {"owner": (R, A.owner)},
        "counts": {},
    }

    def decode(self, op: str, args: Any) -> Any:
        if op not in self.OPS:
            raise InvalidInput(f"unknown g1_kvbm operation {op!r} (known: {list(self.OPS)})")
        return A.check(self.component, op, args, self.ARGS[op])

    def _seq(self, owner: Any) -> Any:
        s = self.seqs.get(owner)
        if s is None:
            raise InvalidInput(f"no request {owner!r}")
        return s

    def _new_seq(self, o: int, a: dict[str, Any]) -> Any:
        from kvmodel.model.g1.sequence import NewActiveSequence

        if o in self.seqs:
            raise InvalidInput(f"request {o} exists")
        return NewActiveSequence(
            a["tokens"],
            8,
            self.model.block_size,
            bool(a.get("caching", True)),
            name=f"r{o}",
            plh_fragments=self.config["plh_fragments"],
        )

    def _use_of(self, s: Any, blocks: list[Any]) -> Any:
        """A Use naming ``blocks`` of sequence ``s`` (their PLHs and local hashes)."""
        from kvmodel.model.blocks import FullBlock
        from kvmodel.model.g1.sequence import G1Use

        idx = {b: i for i, b in enumerate(s.unique)}
        fulls = [idx[b] for b in blocks if isinstance(b, FullBlock)]
        return G1Use(
            tuple(blocks),
            tuple(s.local_hashes[i] for i in fulls) if s.caching else (),
            tuple(s.plhs[i] for i in fulls),
            None,
            None,
            s.caching,
        )

    def _push(self, o: int, token: int, decode: bool) -> list[str]:
        from kvmodel.model.g1.sequence import G1Promote, G1Use

        g = self.model
        s = self._seq(o)
        if o not in self.holdings or not self.holdings[o] or o in self.dest or o in self.stalled:
            raise InvalidInput(f"request {o} is not decoding")
        if decode:
            if not self.decodes:
                raise InvalidInput("no decode reservation outstanding")
            if (len(s) + 1) % s.block_size == 1 and not self.decodes[0].slots:
                raise InvalidInput("the decode reservation has no slot left")
        out: list[str] = []
        for sig in s.push(token) or []:
            if decode:
                r = g.process_decode_signal_for_request(o, sig, self.decodes[0])
            else:
                r = g.process_for_request(o, sig, 0)
            out.append(r)
            held = self.holdings[o]
            if isinstance(sig, G1Promote) and r.startswith("Ready"):
                held[:] = [s.unique[i] if getattr(b, "uuid", None) == sig.uuid else b for i, b in enumerate(held)]
            elif isinstance(sig, G1Use):
                if r.startswith("Ready"):
                    held.extend(sig.blocks)
                else:
                    self.stalled.add(o)
        s.commit_allocation(len(s))
        return out

    def _call(self, op: str, a: dict[str, Any]) -> Any:
        from kvmodel.model.blocks import FullBlock, PartialBlock
        from kvmodel.model.g1.sequence import G1Deref, G1Use

        g = self.model
        bs = g.block_size
        if op == "new_request":
            o = a["owner"]
            self.seqs[o] = self._new_seq(o, a)
            self.holdings[o] = []
            return None
        if op == "allocate":
            o = a["owner"]
            s = self._seq(o)
            if self.holdings.get(o) or o in self.dest:
                raise InvalidInput(f"request {o} is already allocated")
            sig = s.prepare_allocation(len(s))
            if sig is None:
                return "Ready(0)"
            out = g.process_for_request(o, sig, 0)
            if out.startswith("Ready"):
                s.commit_allocation(len(s))
                self.holdings[o] = list(sig.blocks)
            return out
        if op in ("push", "decode_push"):
            return self._push(a["owner"], a["token"], op == "decode_push")
        if op == "resend":
            o = a["owner"]
            s = self._seq(o)
            held = self.holdings.get(o) or []
            if not held or o in self.dest:
                raise InvalidInput(f"request {o} holds nothing")
            sig = self._use_of(s, held)
            out = g.process_for_request(o, sig, 0)
            if out.startswith("Ready"):
                self.holdings[o] = held + list(sig.blocks)
            return out
        if op in ("free", "bad_deref"):
            o = a["owner"]
            self._seq(o)
            if o in self.dest:
                raise InvalidInput(f"request {o} is a destination reservation")
            blocks = tuple(reversed(self.holdings.get(o, [])))
            if op == "bad_deref":
                blocks += (FullBlock(self.BAD_HASH),)
            out = g.process_for_request(o, G1Deref(blocks), 0)
            del self.seqs[o]
            self.holdings.pop(o, None)
            self.stalled.discard(o)
            return out
        if op == "reserve_decode":
            if self.decodes:
                raise InvalidInput("a decode reservation is outstanding")
            r = g.reserve_decode_blocks(a["count"])
            if isinstance(r, str):
                return r
            self.decodes.append(r)
            return "Ready"
        if op == "release_decode":
            if not self.decodes:
                raise InvalidInput("no decode reservation outstanding")
            g.release_decode_reservation(self.decodes.pop(0))
            return None
        if op == "reserve_destination":
            o = a["owner"]
            s = self._new_seq(o, a)
            r = g.reserve_destination_at(o, s)
            if isinstance(r, str):
                return r
            self.seqs[o], self.dest[o], self.holdings[o] = s, r, []
            return {"transferable_prompt_tokens": r.transferable_prompt_tokens(bs), "pinned": len(r.pinned)}
        if op in ("activate_destination", "cancel_destination"):
            o = a["owner"]
            r = self.dest.get(o)
            if r is None:
                raise InvalidInput(f"no destination reservation for request {o}")
            if op == "activate_destination":
                lay = r.layout
                g.activate_destination(r)
                s = self.seqs[o]
                s.commit_allocation(s.num_input_tokens)
                self.holdings[o] = [] if lay is None else list(lay.blocks)
            else:
                g.cancel_destination(r)
                del self.seqs[o]
                self.holdings.pop(o, None)
            del self.dest[o]
            return None
        if op == "bad_use":
            kind = a.get("kind")
            if kind == "dup_partial":
                sig = G1Use((PartialBlock("bad"), PartialBlock("bad")))
            elif kind == "hash_two_plhs":
                h = self.BAD_HASH
                sig = G1Use((FullBlock(h), FullBlock(h)), (), ((h, None, 0), (h, None, 1)))
            else:
                raise InvalidInput(f"bad_use kind must be dup_partial or hash_two_plhs, got {kind!r}")
            return g.process_for_request(-1, sig, 0)
        if op == "counts":
            return {
                "num_active_blocks": g.num_active_blocks(),
                "num_inactive_blocks": g.num_inactive_blocks(),
                "num_active_block_refs": g.num_active_block_refs(),
            }
        raise InvalidInput(f"unknown g1_kvbm operation {op!r}")

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        from kvmodel.invariants import check_all
        from kvmodel.invariants.kvbm import _parts

        m = self.model.kvbm
        pre_key = self.model.key()
        pre: dict[str, Any] = {
            "parts": _parts(m),
            "index_key": m.sub.inactive.key(),
            "inactive_before": len(m.sub.inactive),
        }
        out = Outcome(op, args_json if args_json is not None else decoded)
        seqs = dict(self.seqs)
        owner = decoded.get("owner") if isinstance(decoded, dict) else None
        if isinstance(owner, (int, str)) and owner in seqs:
            seqs[owner] = seqs[owner].copy()
        saved = (
            seqs,
            {k: list(v) for k, v in self.holdings.items()},
            set(self.stalled),
            list(self.decodes),
            dict(self.dest),
        )
        try:
            out.result = self._call(op, decoded)
        except ModelError as e:
            out.error = e
            self.seqs, self.holdings, self.stalled, self.decodes, self.dest = saved
        for s in self.seqs.values():
            if not s.caching:
                self.uncached.update(s.seq_hashes)
        out.events = self.model.drain_events()
        self.monitor.observe(out.events, self.uncached)
        pre["holdings"] = self.holdings
        pre["uncached"] = self.uncached
        pre["dest_pins"] = Counter(plh for r in self.dest.values() if r.live for _, plh in r.pinned)
        ctx = StepContext(self.model, self.monitor, op, decoded, out.result, out.error, out.events, pre_key, pre)
        out.violations = check_all(self.component, ctx)
        out.ctx = ctx
        return out

    def snapshot(self) -> dict[str, Any]:
        snap: dict[str, Any] = self.model.snapshot()
        snap["requests"] = {
            str(o): {"tokens": len(s), "holds": [repr(b) for b in self.holdings.get(o, [])]}
            for o, s in sorted(self.seqs.items())
        }
        return snap

    def key(self) -> Any:
        reqs = tuple(
            (
                o,
                tuple(s.tokens),
                s.caching,
                s.num_allocated_tokens,
                tuple(map(repr, s.unique)),
                tuple(map(repr, self.holdings.get(o, []))),
                o in self.stalled,
            )
            for o, s in sorted(self.seqs.items())
        )
        res = (
            tuple(tuple(r.slots) for r in self.decodes),
            tuple((o, tuple(r.pinned), tuple(r.unpublished), r.live) for o, r in sorted(self.dest.items())),
        )
        return (self.model.key(), self.monitor.key(), reqs, res, tuple(sorted(self.uncached)))
