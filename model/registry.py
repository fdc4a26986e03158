"""The KVBM block registry (semantics §3, tags REG, STATE, EVENTS) as an explicit state machine.

Real code: ``lib/llm/src/block_manager/block/registry.rs`` (``BlockRegistry``,
``BlockHandle``, ``RegistrationHandle``), ``block/state.rs`` (``BlockState``) and
``lib/llm/src/block_manager/events.rs`` (``PublishHandle``, ``Publisher``, the event
manager traits). The faithful revision is the seed, dynamo-llm 1.0.2 (``shared/seeds/004``):
an untiered global registry and an unregister task that removes a pool's entry only when it no
longer upgrades. Commit 403dd259 (older) removes it unconditionally (quirk
``cleanup_erases_live_entry``); commit e3d00b899 (newer) key the global registry by (sequence
hash, storage tier) and accept external (event) hashes. ``kvmodel.model.quirks`` names them as
revisions ``1.0.2``, ``403dd259`` and ``e3d00b899``.

``block/state.rs`` and ``tokens.rs`` of 1.0.2: ``add_tokens`` pushes what fits and returns the
rest (all of it when the block is full; never an error), ``add_token`` fails ``TokenBlock is
full`` on a full block, ``pop_token`` / ``pop_tokens`` fail ``TokenBlock is empty`` /
``TokenBlock has insufficient tokens``, ``commit`` fails ``TokenBlock is incomplete`` unless the
block holds exactly its size; ``initialize_sequence(page_size, salt)`` takes any usize page size,
cast to u32 (``page_size as u32``). Their errors reach the caller as ``anyhow`` errors whose text
is the ``Display`` of ``BlockStateInvalid`` ("Block state is invalid: ...") or ``TokenBlockError``.

What Rust does implicitly is explicit here:

* **Arc lifetimes.** Every ``Arc<RegistrationHandle>`` is counted (``strong``). Holders:
  a ``Registered`` block state, a ``PublishHandle``, a ``Publisher``'s pending list and any
  Arc the caller keeps (``remove_handle`` / ``take_handle`` results, named values of kind
  ``arc``). When the count reaches zero the handle's ``Drop`` runs: the event manager's
  ``block_release`` sends one message ``[Remove(h)]``.
* **Weak pointers.** The per-pool map ``blocks: hash -> Weak<BlockHandle>`` and the global
  map ``key -> Weak<RegistrationHandle>`` store handle ids; a lookup "upgrades" only if the
  handle is still alive.
* **The asynchronous unregister task.** Dropping a ``BlockHandle`` sends its hash on the
  pool's unbounded channel (``pending``). The tokio task that drains it is the explicit
  operation ``drain``: one received hash per step, so every interleaving of drops,
  re-registrations and cleanup is reachable.
* **Event batches.** The mock event manager of the Rust tests (and, batch for batch, the
  real ``EventPublisher`` / ``EventReleaseManager`` calls) receives one message per
  ``publish(handles)`` call listing ``Register`` for each handle in order, and one message
  ``[Remove(h)]`` per ``block_release``.

Values the caller owns (block states, publish handles, publishers, Arcs) live in a
namespace of names; ``drop(name)`` is Rust's drop of that value. A name that does not exist
or has the wrong kind would not compile in Rust, so it is an ``InvalidInput`` error that
leaves the state untouched.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import attrs

from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.events import _u64
from kvmodel.model.hashing import block_hash as _block_hash

TIERS = ("Device", "HostPinned", "Disk")

QUIRKS = (
    "cleanup_erases_live_entry",
    "global_registry_untiered",
    "dead_global_entry_leaks",
    "publisher_clone_shares_pending",
)


# --- errors (the Rust error values, by their Display text) -----------------------------


class BlockAlreadyRegistered(ModelError):
    """``BlockRegistrationError::BlockAlreadyRegistered(hash)``: the block state is already
    Registered, or this pool holds a live ``BlockHandle`` for the hash."""

    id = "Block already registered"


class InvalidState(ModelError):
    """``BlockRegistrationError::InvalidState(msg)``: registering a Reset or Partial state."""

    id = "Invalid state"


class StateNotReset(ModelError):
    """``BlockState::initialize_sequence`` / ``apply_token_block`` on a state that is not Reset:
    ``BlockStateInvalid("Block is not reset")``."""

    id = "Block state is invalid: Block is not reset"


class StateNotPartial(ModelError):
    """``BlockState::add_token(s)`` / ``pop_token(s)`` / ``commit`` on a state that is not
    Partial: ``BlockStateInvalid("Block is not partial")``."""

    id = "Block state is invalid: Block is not partial"


class TokenBlockFull(ModelError):
    """``PartialTokenBlock::push_token`` on a full block (``TokenBlockError::Full``)."""

    id = "TokenBlock is full"


class TokenBlockIncomplete(ModelError):
    """``PartialTokenBlock::commit`` with other than ``block_size`` tokens (``Incomplete``)."""

    id = "TokenBlock is incomplete"


class TokenBlockEmpty(ModelError):
    """``PartialTokenBlock::pop_token`` on an empty block (``TokenBlockError::Empty``)."""

    id = "TokenBlock is empty"


class TokenBlockInsufficient(ModelError):
    """``PartialTokenBlock::pop_tokens(n)`` with fewer than ``n`` tokens (``InsufficientTokens``)."""

    id = "TokenBlock has insufficient tokens"


# --- values ---------------------------------------------------------------------------


@attrs.frozen
class Block:
    """A complete token block as the registry sees it (``TokenBlock``): its sequence hash, block
    hash, parent's sequence hash and the optional external (router-facing) hashes of e3d00b899."""

    sequence_hash: int
    block_hash: int = 0
    parent: int | None = None
    external: int | None = None
    external_parent: int | None = None
    tokens: tuple[int, ...] | None = None  # the block's tokens, when known

    @property
    def size(self) -> int | None:
        """``TokenBlock::block_size()``: the number of tokens (None when not known)."""
        return None if self.tokens is None else len(self.tokens)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"hash": self.sequence_hash, "parent": self.parent}
        if self.block_hash:
            out["block_hash"] = self.block_hash
        if self.external is not None or self.external_parent is not None:
            out["external"] = [self.external, self.external_parent]
        if self.tokens is not None:
            out["tokens"] = list(self.tokens)
        return out


def _opt_u64(v: Any, what: str) -> int | None:
    return None if v is None else _u64(v, what)


BLOCK_KEYS = ("hash", "parent", "block_hash", "external", "tokens")


def block_from_json(v: Any) -> Block:
    """``{"hash": h, "parent": p|null, "block_hash"?: b, "external"?: [e, ep], "tokens"?: [...]}``."""
    if not isinstance(v, dict) or "hash" not in v:
        raise InvalidInput(f"a block is {{'hash': h, 'parent': p|null}}, got {v!r}")
    extra = sorted(set(v) - set(BLOCK_KEYS))
    if extra:
        raise InvalidInput(f"unknown block key {extra[0]!r} (known: {list(BLOCK_KEYS)})")
    ext = v.get("external") or [None, None]
    if not isinstance(ext, list | tuple) or len(ext) != 2:
        raise InvalidInput(f"external must be [hash|null, parent|null], got {ext!r}")
    toks = v.get("tokens")
    if toks is not None:
        if not isinstance(toks, list) or len(toks) > 2**16:
            raise InvalidInput(f"tokens must be a list of at most 65536 u32, got {toks!r:.60}")
        for t in toks:
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < 2**32:
                raise InvalidInput(f"token must be a u32, got {t!r}")
    return Block(
        _u64(v["hash"], "hash"),
        _u64(v.get("block_hash", 0), "block_hash"),
        _opt_u64(v.get("parent"), "parent"),
        _opt_u64(ext[0], "external hash"),
        _opt_u64(ext[1], "external parent"),
        None if toks is None else tuple(toks),
    )


@attrs.define
class RegHandle:
    """``RegistrationHandle``: one per announced (hash[, tier]); ``strong`` is its Arc count."""

    id: int
    block: Block
    tier: str
    registered: bool  # created by register_block (False: the tests' create_publish_handle helper)
    scope: str = ""  # the global registry it was created under ("" for the helper)
    strong: int = 0

    @property
    def alive(self) -> bool:
        return self.strong > 0

    @property
    def published_hash(self) -> int:
        return self.block.external if self.block.external is not None else self.block.sequence_hash

    @property
    def published_parent(self) -> int | None:
        return self.block.external_parent if self.block.external_parent is not None else self.block.parent


@attrs.define
class BlockHandle:
    """``BlockHandle``: unique per registration in a pool; owned by one Registered state."""

    id: int
    pool: str
    sequence_hash: int
    alive: bool = True


@attrs.define
class BlockState:
    """``BlockState``: Reset, Partial(tokens), Complete(block) or Registered(reg, block handle)."""

    kind: Literal["Reset", "Partial", "Complete", "Registered"] = "Reset"
    block: Block | None = None
    tokens: tuple[int, ...] = ()
    page_size: int = 0
    salt: int = 0
    reg: int | None = None
    bh: int | None = None


@attrs.define
class PublishHandle:
    reg: int
    armed: bool = True


@attrs.define
class Publisher:
    handles: list[int] = attrs.field(factory=list)


@attrs.define
class BlockRegistry:
    """One ``BlockRegistry`` (``registry.rs``): its tier, the global registry it shares, its own
    map of sequence hashes to registration handles (weak) and its unregister channel."""

    name: str
    tier: str
    global_name: str
    blocks: dict[int, int] = attrs.field(factory=dict)  # sequence hash -> block handle id (weak)
    pending: list[int] = attrs.field(factory=list)  # hashes sent by dropped BlockHandles


@attrs.frozen
class RegEvent:
    """One entry of an event-manager message: ``Register`` or ``Remove`` of a handle."""

    kind: Literal["Register", "Remove"]
    sequence_hash: int
    tier: str | None  # None in the untiered revision (the wire event has no tier)
    handle: int  # ghost: which RegistrationHandle
    batch: int  # ghost: index of the message it belongs to

    def text(self) -> str:
        return (
            f"{self.kind}({self.sequence_hash})"
            if self.tier is None
            else f"{self.kind}({self.sequence_hash}, {self.tier})"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "sequence_hash": self.sequence_hash,
            "tier": self.tier,
            "handle": self.handle,
            "batch": self.batch,
        }


Value = BlockState | PublishHandle | Publisher | int  # int: an Arc<RegistrationHandle> (handle id)
KIND_OF = {BlockState: "state", PublishHandle: "publish_handle", Publisher: "publisher", int: "arc"}


def _copy_value(v: Value) -> Value:
    if isinstance(v, BlockState | PublishHandle):
        return attrs.evolve(v)
    if isinstance(v, Publisher):
        return Publisher(list(v.handles))
    return v


def kind_of(v: Value) -> str:
    return KIND_OF[type(v)]


class RegistryWorld:
    """A world of :class:`BlockRegistry` s sharing global registries, with the values the caller
    owns (block states, publish handles, publishers, Arcs) by name: the Rust-shaped calls
    (``register_block``, ``is_registered``, the unregister task as ``drain``, the block-state and
    publisher methods) and the world's plumbing (names, ``drop``, ``gc``, ``key``)."""

    def __init__(self, quirks: Iterable[str] | None = None) -> None:
        from kvmodel.model.quirks import resolve

        self.quirks = resolve("kvbm_block_registry", quirks)
        self.pools: dict[str, BlockRegistry] = {}
        self.globals: dict[str, dict[tuple[int, str | None], int]] = {}
        self.values: dict[str, Value] = {}
        self.handles: dict[int, RegHandle] = {}
        self.block_handles: dict[int, BlockHandle] = {}
        self.next_id = 0
        self.messages: list[list[RegEvent]] = []
        self._new: list[RegEvent] = []
        self.auto = 0

    # -- plumbing

    @property
    def untiered(self) -> bool:
        return "global_registry_untiered" in self.quirks

    def clone(self) -> RegistryWorld:
        """An independent copy (hand-written: ``deepcopy`` dominated the explorer's time)."""
        c = RegistryWorld.__new__(RegistryWorld)
        c.quirks = self.quirks
        c.pools = {
            n: BlockRegistry(p.name, p.tier, p.global_name, dict(p.blocks), list(p.pending))
            for n, p in self.pools.items()
        }
        c.globals = {g: dict(r) for g, r in self.globals.items()}
        c.values = {n: _copy_value(v) for n, v in self.values.items()}
        c.handles = {i: attrs.evolve(h) for i, h in self.handles.items()}
        c.block_handles = {i: attrs.evolve(b) for i, b in self.block_handles.items()}
        c.next_id, c.auto = self.next_id, self.auto
        c.messages = [list(m) for m in self.messages]
        c._new = list(self._new)
        return c

    def _fresh(self) -> int:
        self.next_id += 1
        return self.next_id

    def drain_events(self) -> list[RegEvent]:
        out, self._new = self._new, []
        return out

    def _message(self, events: list[tuple[str, RegHandle]]) -> None:
        batch = len(self.messages)
        msg = [
            RegEvent(kind, h.block.sequence_hash, None if self.untiered else h.tier, h.id, batch)  # type: ignore[arg-type]
            for kind, h in events
        ]
        self.messages.append(msg)
        self._new.extend(msg)

    def _acquire(self, rid: int) -> int:
        self.handles[rid].strong += 1
        return rid

    def _release(self, rid: int) -> None:
        """Drop one Arc; the last one runs ``RegistrationHandle::drop`` -> ``block_release``."""
        h = self.handles[rid]
        if h.strong <= 0:
            raise AssertionError(f"registration handle {rid} released below zero")
        h.strong -= 1
        if h.strong == 0:
            self._message([("Remove", h)])
            if "dead_global_entry_leaks" not in self.quirks:
                # ideal: the handle's death also clears its own global entry
                for reg in self.globals.values():
                    for k, v in list(reg.items()):
                        if v == rid:
                            del reg[k]

    def _publish(self, rids: list[int]) -> None:
        """``EventPublisher::publish(handles)``: one Register message, then the Vec's Arcs drop in order."""
        if rids:
            self._message([("Register", self.handles[r]) for r in rids])
            for r in rids:
                self._release(r)

    def _key(self, pool: BlockRegistry, h: int) -> tuple[int, str | None]:
        return (h, None if self.untiered else pool.tier)

    def _get(self, name: Any, kind: str) -> Any:
        if not isinstance(name, str):
            raise InvalidInput(f"a {kind} is named by a string, got {name!r}")
        v = self.values.get(name)
        if v is None:
            raise InvalidInput(f"no value named {name!r}")
        if kind_of(v) != kind:
            raise InvalidInput(f"{name!r} is a {kind_of(v)}, not a {kind}")
        return v

    def _pool(self, name: Any) -> BlockRegistry:
        if not isinstance(name, str) or name not in self.pools:
            raise InvalidInput(f"no registry named {name!r} (known: {sorted(self.pools)})")
        return self.pools[name]

    def _bind(self, name: Any, value: Value, prefix: str) -> str:
        if name is None:
            self.auto += 1
            name = f"{prefix}{self.auto}"
            while name in self.values or name in self.pools:
                self.auto += 1
                name = f"{prefix}{self.auto}"
        if not isinstance(name, str) or not name:
            raise InvalidInput(f"a name must be a non-empty string, got {name!r}")
        if name in self.values or name in self.pools:
            raise InvalidInput(f"the name {name!r} is already bound")
        self.values[name] = value
        return name

    def _free_name(self, name: Any) -> None:
        if name is not None and (not isinstance(name, str) or not name or name in self.values or name in self.pools):
            raise InvalidInput(f"the name {name!r} is already bound or not a string")

    # -- registries

    def new_registry(self, name: str, tier: str = "Device", global_name: str = "G") -> None:
        """``BlockRegistry::new(event_manager, global_registry, runtime[, tier])``."""
        self._free_name(name)
        if name is None:
            raise InvalidInput("a registry needs a name")
        if tier not in TIERS:
            raise InvalidInput(f"unknown storage tier {tier!r} (known: {list(TIERS)})")
        if not isinstance(global_name, str):
            raise InvalidInput(f"a global registry is named by a string, got {global_name!r}")
        self.pools[name] = BlockRegistry(name, tier, global_name)
        self.globals.setdefault(global_name, {})

    def is_registered(self, pool_name: str, h: int) -> bool:
        """``BlockRegistry::is_registered``: the pool's entry exists and upgrades."""
        pool = self._pool(pool_name)
        bid = pool.blocks.get(h)
        return bid is not None and self.block_handles[bid].alive

    def drain(self, pool_name: str) -> int | None:
        """One iteration of the pool's unregister task: receive one hash and clean up.

        The seed (1.0.2) removes the per-pool entry only if it no longer upgrades; commit
        403dd259 removes it unconditionally (``cleanup_erases_live_entry``, §6 #19). Then the
        global entry is removed if it no longer upgrades. Returns the hash processed (None: the
        channel is empty)."""
        pool = self._pool(pool_name)
        if not pool.pending:
            return None
        h = pool.pending.pop(0)
        bid = pool.blocks.get(h)
        if bid is not None and ("cleanup_erases_live_entry" in self.quirks or not self.block_handles[bid].alive):
            del pool.blocks[h]
        glob = self.globals[pool.global_name]
        k = self._key(pool, h)
        rid = glob.get(k)
        if rid is not None and not self.handles[rid].alive:
            del glob[k]
        return h

    # -- block states (block/state.rs)

    def new_state(self, name: str | None = None) -> str:
        self._free_name(name)
        return self._bind(name, BlockState(), "state")

    def state_from_block(self, name: str | None, block: Block) -> str:
        """``BlockState::Reset`` followed by ``apply_token_block(block)``: a Complete state."""
        self._free_name(name)
        return self._bind(name, BlockState("Complete", block), "state")

    def apply_token_block(self, name: str, block: Block) -> None:
        st: BlockState = self._get(name, "state")
        if st.kind != "Reset":
            raise StateNotReset(f"state {name!r} is {st.kind}")
        st.kind, st.block = "Complete", block

    def initialize_sequence(self, name: str, page_size: int, salt: int = 0) -> None:
        """``BlockState::initialize_sequence(page_size, salt_hash)``: Reset -> Partial (an empty
        root block of ``page_size as u32`` tokens; Rust checks neither value)."""
        st: BlockState = self._get(name, "state")
        if isinstance(page_size, bool) or not isinstance(page_size, int) or not 0 <= page_size < 2**64:
            raise InvalidInput(f"page_size must be a usize, got {page_size!r}")
        _u64(salt, "salt")
        if st.kind != "Reset":
            raise StateNotReset(f"state {name!r} is {st.kind}")
        st.kind, st.tokens, st.page_size, st.salt = "Partial", (), page_size % 2**32, salt

    @staticmethod
    def _check_tokens(tokens: Any) -> list[int]:
        if not isinstance(tokens, list | tuple):
            raise InvalidInput(f"tokens must be a list of u32, got {tokens!r}")
        for t in tokens:
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < 2**32:
                raise InvalidInput(f"token must be a u32, got {t!r}")
        return list(tokens)

    def _partial(self, name: str) -> BlockState:
        st: BlockState = self._get(name, "state")
        if st.kind != "Partial":
            raise StateNotPartial(f"state {name!r} is {st.kind}")
        return st

    def add_token(self, name: str, token: int) -> None:
        """``add_token``: ``push_token`` fails ``TokenBlock is full`` on a full block."""
        (t,) = self._check_tokens([token])
        st = self._partial(name)
        if len(st.tokens) >= st.page_size:
            raise TokenBlockFull(f"block of {st.page_size} tokens is full")
        st.tokens = (*st.tokens, t)

    def add_tokens(self, name: str, tokens: list[int]) -> list[int]:
        """``add_tokens``: ``push_tokens`` adds what fits and returns the rest (all of them when
        the block is already full; never an error). Returns the tokens not added."""
        toks = self._check_tokens(tokens)
        st = self._partial(name)
        room = max(0, st.page_size - len(st.tokens))
        st.tokens = st.tokens + tuple(toks[:room])
        return toks[room:]

    def pop_token(self, name: str) -> None:
        """``pop_token``: the last token goes; ``TokenBlock is empty`` when there is none."""
        st = self._partial(name)
        if not st.tokens:
            raise TokenBlockEmpty(f"state {name!r} holds no token")
        st.tokens = st.tokens[:-1]

    def pop_tokens(self, name: str, count: int) -> None:
        """``pop_tokens(count)``: the last ``count`` tokens go; ``TokenBlock has insufficient
        tokens`` when fewer are held."""
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count < 2**64:
            raise InvalidInput(f"count must be a usize, got {count!r}")
        st = self._partial(name)
        if len(st.tokens) < count:
            raise TokenBlockInsufficient(f"{len(st.tokens)} tokens, {count} to pop")
        st.tokens = st.tokens[: len(st.tokens) - count]

    def commit(self, name: str) -> None:
        """``commit``: Partial -> Complete when exactly page_size tokens (a root block: no parent;
        its sequence hash is its block hash, XXH3 of the tokens seeded with the salt)."""
        st = self._partial(name)
        if len(st.tokens) != st.page_size:
            raise TokenBlockIncomplete(f"{len(st.tokens)} of {st.page_size} tokens")
        bh = _block_hash(st.tokens, st.salt)
        st.kind, st.block, st.tokens = "Complete", Block(bh, bh, None, tokens=st.tokens), ()

    STATE_QUERIES = ("len", "remaining", "is_empty", "tokens", "is_reset", "is_complete", "is_registered")

    def state_query(self, name: str, query: str) -> Any:
        """The read-only accessors of ``BlockState``: ``len`` (None when Registered; a Complete
        block's token count), ``remaining`` (0 unless Partial), ``is_empty``, ``tokens`` (None when
        Reset or Registered), ``is_reset``, ``is_complete`` (Complete or Registered),
        ``is_registered``."""
        st: BlockState = self._get(name, "state")
        if query not in self.STATE_QUERIES:
            raise InvalidInput(f"unknown BlockState query {query!r} (known: {list(self.STATE_QUERIES)})")
        complete_len = None if st.block is None else st.block.size
        if query == "len":
            return {"Reset": 0, "Partial": len(st.tokens), "Complete": complete_len, "Registered": None}[st.kind]
        if query == "remaining":
            return max(0, st.page_size - len(st.tokens)) if st.kind == "Partial" else 0
        if query == "is_empty":
            return st.kind == "Reset" or (st.kind == "Partial" and not st.tokens)
        if query == "tokens":
            if st.kind == "Partial":
                return list(st.tokens)
            if st.kind == "Complete":
                return None if st.block is None or st.block.tokens is None else list(st.block.tokens)
            return None
        if query == "is_reset":
            return st.kind == "Reset"
        if query == "is_complete":
            return st.kind in ("Complete", "Registered")
        return st.kind == "Registered"

    # -- registration (registry.rs)

    def register_block(
        self,
        pool_name: str,
        state_name: str,
        as_name: str | None = None,
        event_hashes: tuple[int | None, int | None] | None = None,
    ) -> str | None:
        """``BlockRegistry::register_block(&mut state) -> Result<Option<PublishHandle>, _>``.

        Returns the name the new ``PublishHandle`` is bound to, or None for ``Ok(None)``
        (the global registry already holds a live handle for the key: reused, no Register).
        Errors leave every value untouched (§3.7 #4)."""
        pool = self._pool(pool_name)
        st: BlockState = self._get(state_name, "state")
        self._free_name(as_name)
        if event_hashes is not None:
            if self.untiered:
                raise InvalidInput(
                    "register_block takes event hashes only in the tiered revisions (e3d00b899); "
                    "the seed's (1.0.2) takes the block state alone"
                )
            if not isinstance(event_hashes, list | tuple) or len(event_hashes) != 2:
                raise InvalidInput(f"event_hashes must be [hash|null, parent|null], got {event_hashes!r}")
            event_hashes = (_opt_u64(event_hashes[0], "event hash"), _opt_u64(event_hashes[1], "event parent"))
        if st.kind == "Reset":
            raise InvalidState("Block is in Reset state")
        if st.kind == "Partial":
            raise InvalidState("Block is in Partial state")
        assert st.block is not None
        if st.kind == "Registered":
            assert st.reg is not None
            raise BlockAlreadyRegistered(str(self.handles[st.reg].block.sequence_hash))
        h = st.block.sequence_hash
        if self.is_registered(pool_name, h):
            raise BlockAlreadyRegistered(str(h))
        bid = self._fresh()
        self.block_handles[bid] = BlockHandle(bid, pool.name, h)
        glob = self.globals[pool.global_name]
        k = self._key(pool, h)
        rid = glob.get(k)
        ph_name: str | None = None
        if rid is not None and self.handles[rid].alive:
            self._acquire(rid)  # the state's Arc
        else:
            block = st.block
            if event_hashes is not None:
                block = attrs.evolve(block, external=event_hashes[0], external_parent=event_hashes[1])
            rid = self._fresh()
            self.handles[rid] = RegHandle(rid, block, pool.tier, True, pool.global_name)
            self._acquire(rid)  # the PublishHandle's Arc
            ph_name = self._bind(as_name, PublishHandle(rid), "ph")
            self._acquire(rid)  # remove_handle(): the state's Arc
            glob[k] = rid
        pool.blocks[h] = bid
        st.kind, st.reg, st.bh = "Registered", rid, bid
        return ph_name

    def create_publish_handle(self, as_name: str | None, block: Block, tier: str = "Device") -> str:
        """The tests' private helper: a ``RegistrationHandle`` in a ``PublishHandle``, outside any registry."""
        self._free_name(as_name)
        if tier not in TIERS:
            raise InvalidInput(f"unknown storage tier {tier!r}")
        rid = self._fresh()
        self.handles[rid] = RegHandle(rid, block, tier, False)
        self._acquire(rid)
        return self._bind(as_name, PublishHandle(rid), "ph")

    # -- publication (events.rs)

    def remove_handle(self, ph_name: str, as_name: str | None = None) -> str:
        """``PublishHandle::remove_handle``: another Arc clone; it does **not** disarm (§6 #21)."""
        ph: PublishHandle = self._get(ph_name, "publish_handle")
        self._free_name(as_name)
        return self._bind(as_name, self._acquire(ph.reg), "arc")

    def new_publisher(self, as_name: str | None = None) -> str:
        self._free_name(as_name)
        return self._bind(as_name, Publisher(), "pub")

    def take_handle(self, pub_name: str, ph_name: str, as_name: str | None = None) -> str | None:
        """``Publisher::take_handle(ph)``: clone into the pending list, disarm and drop ``ph``,
        return a clone (dropped at once when not bound to a name)."""
        pub: Publisher = self._get(pub_name, "publisher")
        ph: PublishHandle = self._get(ph_name, "publish_handle")
        self._free_name(as_name)
        rid = self._acquire(ph.reg)  # remove_handle()
        pub.handles.append(self._acquire(rid))  # the pending clone
        del self.values[ph_name]
        self._release(rid)  # the disarmed PublishHandle drops its own Arc
        if as_name is None:
            self._release(rid)  # the returned Arc, discarded
            return None
        return self._bind(as_name, rid, "arc")

    def publish(self, pub_name: str) -> None:
        """``Publisher::publish``: all pending handles in one message, if any."""
        pub: Publisher = self._get(pub_name, "publisher")
        rids, pub.handles = pub.handles, []
        self._publish(rids)

    def clone_publisher(self, pub_name: str, as_name: str | None = None) -> str:
        """``Publisher`` derives ``Clone``: the clone carries Arc clones of the pending handles,
        so both copies publish them (``publisher_clone_shares_pending``). The ideal clone
        starts empty."""
        pub: Publisher = self._get(pub_name, "publisher")
        self._free_name(as_name)
        if "publisher_clone_shares_pending" in self.quirks:
            return self._bind(as_name, Publisher([self._acquire(r) for r in pub.handles]), "pub")
        return self._bind(as_name, Publisher(), "pub")

    def drop(self, name: str) -> None:
        """Rust ``drop`` of a caller-owned value."""
        if not isinstance(name, str) or name not in self.values:
            raise InvalidInput(f"no value named {name!r}")
        v = self.values.pop(name)
        if isinstance(v, BlockState):
            if v.kind == "Registered":
                assert v.reg is not None and v.bh is not None
                self._release(v.reg)  # Registered(Arc<RegistrationHandle>, Arc<BlockHandle>): fields in order
                bh = self.block_handles[v.bh]
                bh.alive = False
                self.pools[bh.pool].pending.append(bh.sequence_hash)
        elif isinstance(v, PublishHandle):
            if v.armed:
                self._publish([self._acquire(v.reg)])
            self._release(v.reg)
        elif isinstance(v, Publisher):
            self._publish(v.handles)
        else:
            self._release(v)

    # -- observation

    def live_block_handles(self, pool: str) -> dict[int, list[int]]:
        """hash -> ids of live BlockHandles of ``pool`` (owned by Registered states)."""
        out: dict[int, list[int]] = {}
        for b in self.block_handles.values():
            if b.alive and b.pool == pool:
                out.setdefault(b.sequence_hash, []).append(b.id)
        return out

    def gc(self) -> None:
        """Forget dead objects nothing refers to any more (keeps the state finite)."""
        referenced_bh = {b for p in self.pools.values() for b in p.blocks.values()}
        for bid in [b for b, bh in self.block_handles.items() if not bh.alive and b not in referenced_bh]:
            del self.block_handles[bid]
        referenced = {r for g in self.globals.values() for r in g.values()}
        for rid in [r for r, h in self.handles.items() if not h.alive and r not in referenced]:
            del self.handles[rid]

    def snapshot(self) -> dict[str, Any]:
        def val(v: Value) -> Any:
            if isinstance(v, BlockState):
                d: dict[str, Any] = {"kind": v.kind}
                if v.block is not None:
                    d["hash"] = v.block.sequence_hash
                if v.kind == "Partial":
                    d["tokens"] = list(v.tokens)
                if v.reg is not None:
                    d["registration"], d["block_handle"] = v.reg, v.bh
                return d
            if isinstance(v, PublishHandle):
                return {"kind": "publish_handle", "registration": v.reg, "armed": v.armed}
            if isinstance(v, Publisher):
                return {"kind": "publisher", "pending": list(v.handles)}
            return {"kind": "arc", "registration": v}

        return {
            "registries": {
                n: {
                    "tier": p.tier,
                    "blocks": {
                        str(h): {"block_handle": b, "live": self.block_handles[b].alive}
                        for h, b in sorted(p.blocks.items())
                    },
                    "pending": list(p.pending),
                }
                for n, p in sorted(self.pools.items())
            },
            "global": {
                g: [
                    {"hash": k[0], "tier": k[1], "registration": r, "live": self.handles[r].alive}
                    for k, r in sorted(reg.items(), key=lambda x: (x[0][0], str(x[0][1])))
                ]
                for g, reg in sorted(self.globals.items())
            },
            "registrations": {
                str(r): {"hash": h.block.sequence_hash, "tier": h.tier, "arcs": h.strong}
                for r, h in sorted(self.handles.items())
                if h.alive
            },
            "values": {n: val(v) for n, v in sorted(self.values.items())},
        }

    def key(self, registers: Any = None) -> tuple[Any, ...]:
        """A canonical, hashable form of the state: handle ids renamed in order of first
        appearance (ids are fresh counters, so two runs reaching the same situation through
        different histories get the same key). ``registers`` (handle id -> Register count,
        the monitor's ghost) is folded in for live handles, capped at 2: the invariants only
        tell 0, 1 and "more than one" apart."""
        names: dict[tuple[str, int], int] = {}

        def n(kind: str, i: int | None) -> int | None:
            if i is None:
                return None
            return names.setdefault((kind, i), len(names))

        pools = tuple(
            (
                p.name,
                tuple((h, n("b", b), self.block_handles[b].alive) for h, b in sorted(p.blocks.items())),
                tuple(p.pending),
            )
            for _, p in sorted(self.pools.items())
        )
        values: list[Any] = []
        for name, v in sorted(self.values.items()):
            if isinstance(v, BlockState):
                values.append((name, v.kind, v.block, v.tokens, v.page_size, v.salt, n("r", v.reg), n("b", v.bh)))
            elif isinstance(v, PublishHandle):
                values.append((name, "ph", n("r", v.reg), v.armed))
            elif isinstance(v, Publisher):
                values.append((name, "pub", tuple(n("r", r) for r in v.handles)))
            else:
                values.append((name, "arc", n("r", v)))
        glob = tuple(
            (
                g,
                tuple(
                    (k, n("r", r), self.handles[r].alive)
                    for k, r in sorted(reg.items(), key=lambda x: (x[0][0], str(x[0][1])))
                ),
            )
            for g, reg in sorted(self.globals.items())
        )
        regs = tuple(
            (i, h.block, h.tier, h.registered, h.scope, h.strong, min(2, (registers or {}).get(rid, 0)))
            for (kind, rid), i in sorted(names.items(), key=lambda x: x[1])
            if kind == "r"
            for h in [self.handles[rid]]
        )
        return (pools, tuple(values), glob, regs)
