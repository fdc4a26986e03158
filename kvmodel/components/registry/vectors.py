"""The ``kvbm_block_registry`` harness: ``registry.rs``, ``state.rs`` and ``events.rs``.

The revision comes from the vector's ``source_version``: dynamo-llm 1.0.2 (the seed, the
default), commit 403dd259, or the tiered commit e3d00b899 (``e3d00b899``); 403dd259's tests (the event
tests it shares with 403dd259) run on 403dd259.

Operations take the Rust method names; values the caller owns are named (``as``):
``new_registry {as, tier?, global_registry?}``, ``new_state {as}``,
``state_from_reset_apply_token_block {as, block}``, ``apply_token_block {state, block}``,
``initialize_sequence {state, page_size, salt?}``, ``add_token {state, token}``,
``add_tokens {state, tokens}``, ``pop_token {state}``, ``pop_tokens {state, count}``,
``commit {state}``, ``register_block {registry, state, as?, event_hashes?}`` (``state`` may be
``"Complete(blocks[i])"``), ``is_registered {registry, hash}``, ``drain {registry}`` (one
iteration of the unregister task), ``create_publish_handle {block, as, tier?}``,
``remove_handle {publish_handle, as}``, ``new_publisher {as}``, ``take_handle {publisher,
publish_handle, as? | discard_returned_arc}``, ``publish {publisher}``, ``clone_publisher
{publisher, as}``, ``drop {value}``, ``sync_external_sequence_hashes {hashes}``,
``registration_handle_from_token_block {block, tier?, as?}`` and the state accessors
``len``, ``remaining``, ``is_empty``, ``tokens``, ``is_reset``, ``is_complete``,
``is_registered`` as ``state_<accessor> {state}``.

Blocks are ``blocks[i]`` of the tests' ``create_sequence()`` fixture (tokens 1..10, block size 4,
salt 1337) or a block object; ``H<i>`` names ``blocks[i].sequence_hash``. Operations that
return ``Result`` in Rust report ``returns`` as ``Ok(...)`` or ``Err(Variant(...))`` (with
``is_ok`` / ``is_err``); they do not panic. Observations: ``messages`` (the event batches this
step sent on the mock channel, as ``Register(H0)`` / ``Remove(H0[, Tier])`` strings; alias
``message``), every named value (a publish handle's ``registration`` with ``sequence_hash``,
``storage_tier``, ``external_sequence_hash``, ``published_sequence_hash``...; a state's
``kind``, ``len``, ``tokens``...), and each registry's ``blocks`` and ``pending`` channel.
The constructor's ``event_manager`` is ``MockEventManager`` (the default) or
``NullEventManager``, under which no message is sent.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from kvmodel.model.errors import ModelError
from kvmodel.model.hashing import TokenBlockSequence
from kvmodel.model.registry import (
    Block,
    BlockAlreadyRegistered,
    BlockState,
    InvalidState,
    Publisher,
    PublishHandle,
    RegHandle,
    RegistryWorld,
    StateNotPartial,
    StateNotReset,
    TokenBlockEmpty,
    TokenBlockFull,
    TokenBlockIncomplete,
    TokenBlockInsufficient,
    block_from_json,
)
from kvmodel.vectors.harness import Harness
from kvmodel.vectors.notation import Uninterpretable


def fixture_blocks() -> list[Block]:
    """``create_sequence()`` of the registry tests: tokens 1..10, block size 4, salt 1337."""
    seq = TokenBlockSequence(range(1, 11), 4, 1337)
    return [Block(b.sequence_hash, b.block_hash, b.parent_sequence_hash, tokens=tuple(b.tokens)) for b in seq.blocks]


def _variant(e: ModelError) -> str:
    if isinstance(e, BlockAlreadyRegistered):
        return f"BlockAlreadyRegistered({e.detail})"
    if isinstance(e, InvalidState):
        return f'InvalidState("{e.detail}")'
    if isinstance(e, StateNotReset | StateNotPartial):
        return f'BlockStateInvalid("{e.id.split(": ", 1)[1]}")'
    for cls, name in (
        (TokenBlockFull, "Full"),
        (TokenBlockIncomplete, "Incomplete"),
        (TokenBlockEmpty, "Empty"),
        (TokenBlockInsufficient, "InsufficientTokens"),
    ):
        if isinstance(e, cls):
            return name
    return type(e).__name__


class RegistryHarness(Harness):
    component = "kvbm_block_registry"
    model_component = "kvbm_block_registry"
    event_aliases = ("messages", "message")
    revisions = (
        (r"403dd259", "403dd259"),
        (r"\bR1[23]\b", "e3d00b899"),
        (r"e3d00b899", "e3d00b899"),
        (r"\bR11\b", "403dd259"),
        (r"1\.0\.2", "1.0.2"),
    )

    # Rust methods returning Result: an Err is a value, not a panic
    RESULT_OPS = frozenset(
        {
            "register_block",
            "apply_token_block",
            "initialize_sequence",
            "add_token",
            "add_tokens",
            "pop_token",
            "pop_tokens",
            "commit",
        }
    )

    def __init__(self, vector: dict[str, Any], quirks: frozenset[str]) -> None:
        super().__init__(vector, quirks)
        self.m = RegistryWorld(quirks)
        self.blocks = fixture_blocks()
        self.seen = 0
        # the tests' event manager: ``MockEventManager`` (events.rs's test module: each publish or
        # release reaches the test's channel as one message) or ``NullEventManager`` (events.rs,
        # dynamo-llm 1.0.2: ``publish`` and ``block_release`` do nothing, so no message is ever
        # sent); the registry behaves alike under both
        em = str(self.constructor.get("event_manager", "MockEventManager")).strip()
        kind = re.match(r"(\w+)", em)
        if kind is None or kind.group(1) not in ("MockEventManager", "NullEventManager"):
            raise Uninterpretable(f"event_manager {em!r:.80}: MockEventManager or NullEventManager")
        self.silent = kind.group(1) == "NullEventManager"
        self.loose: dict[str, Any] = {}  # registration handles built outside the registry

    # -- values
    def block(self, spec: Any) -> Block:
        if isinstance(spec, dict):
            return block_from_json(spec)
        mm = re.fullmatch(r"\s*(?:Complete\()?\s*blocks\[(\d+)\]\s*\)?\s*", str(spec))
        if not mm or int(mm.group(1)) >= len(self.blocks):
            raise Uninterpretable(f"unknown block {spec!r} (blocks[0] .. blocks[{len(self.blocks) - 1}])")
        return self.blocks[int(mm.group(1))]

    def _sym(self) -> dict[int, str]:
        return {b.sequence_hash: f"H{k}" for k, b in enumerate(fixture_blocks())}

    def _text(self, e: Any) -> str:
        t: str = e.text()
        return t.replace(str(e.sequence_hash), self._sym().get(e.sequence_hash, str(e.sequence_hash)))

    def _reg_view(self, h: RegHandle) -> dict[str, Any]:
        return {
            "sequence_hash": h.block.sequence_hash,
            "block_hash": h.block.block_hash,
            "parent_sequence_hash": h.block.parent,
            "storage_tier": None if self.m.untiered else h.tier,
            "external_sequence_hash": h.block.external,
            "external_parent_sequence_hash": h.block.external_parent,
            "published_sequence_hash": h.published_hash,
            "published_parent_sequence_hash": h.published_parent,
            "block_size": h.block.size,
            "tokens": None if h.block.tokens is None else list(h.block.tokens),
            "strong_count": h.strong,
        }

    def _value_view(self, name: str, v: Any) -> dict[str, Any]:
        m = self.m
        if isinstance(v, BlockState):
            out: dict[str, Any] = {q: m.state_query(name, q) for q in m.STATE_QUERIES}
            out["kind"] = v.kind
            if v.block is not None:
                out["sequence_hash"] = v.block.sequence_hash
            if v.reg is not None:
                out["registration"] = self._reg_view(m.handles[v.reg])
            return out
        if isinstance(v, PublishHandle):
            return {"kind": "PublishHandle", "armed": v.armed, "registration": self._reg_view(m.handles[v.reg])}
        if isinstance(v, Publisher):
            return {"kind": "Publisher", "handles": [self._reg_view(m.handles[r]) for r in v.handles]}
        return {
            "kind": "Arc<RegistrationHandle>",
            "registration": self._reg_view(m.handles[v]),
            **self._reg_view(m.handles[v]),
        }

    def named_views(self) -> dict[str, Any]:
        out = {n: self._value_view(n, v) for n, v in self.m.values.items()}
        out.update(self.loose)
        for n, p in self.m.pools.items():
            out[n] = {
                "tier": p.tier,
                "blocks": {str(h): self.m.block_handles[b].alive for h, b in sorted(p.blocks.items())},
                "pending": list(p.pending),
                "is_registered": {str(h): self.m.is_registered(n, h) for h in sorted(p.blocks)},
            }
        return out

    def observe(self) -> dict[str, Any]:
        return {"fixture": {"blocks": [attrs.asdict(b) for b in self.blocks]}}

    def drain(self) -> list[Any]:
        """The batches this step sent on the mock channel (one list of texts per message)."""
        self.m.drain_events()
        msgs = [[self._text(e) for e in batch] for batch in self.m.messages[self.seen :]]
        self.seen = len(self.m.messages)
        return [] if self.silent else msgs  # a NullEventManager sends nothing

    def call(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        if op not in self.RESULT_OPS:
            return super().call(op, args)
        try:
            out = super().call(op, args)
        except ModelError as e:
            out = {"returns": f"Err({_variant(e)})", "error": str(e)}
        r = out.get("returns")
        ok = not (isinstance(r, str) and r.startswith("Err("))
        out.update(is_ok=ok, is_err=not ok)
        return out

    # -- registries and block states
    def op_new_registry(self, a: dict[str, Any]) -> None:
        self.m.new_registry(a.get("as") or a.get("name"), a.get("tier", "Device"), a.get("global_registry", "G"))  # type: ignore[arg-type]

    def op_new_state(self, a: dict[str, Any]) -> None:
        self.m.new_state(a.get("as"))

    def op_state_from_reset_apply_token_block(self, a: dict[str, Any]) -> None:
        self.m.state_from_block(a.get("as"), self.block(a["block"]))

    def op_apply_token_block(self, a: dict[str, Any]) -> str:
        self.m.apply_token_block(a["state"], self.block(a["block"]))
        return "Ok(())"

    def op_initialize_sequence(self, a: dict[str, Any]) -> str:
        self.m.initialize_sequence(a["state"], a["page_size"], a.get("salt", a.get("salt_hash", 0)))
        return "Ok(())"

    def op_add_token(self, a: dict[str, Any]) -> str:
        self.m.add_token(a["state"], a["token"])
        return "Ok(())"

    def op_add_tokens(self, a: dict[str, Any]) -> dict[str, Any]:
        rest = self.m.add_tokens(a["state"], a["tokens"])
        return {"returns": rest, "leftover": rest, "remaining_tokens": rest}

    def op_pop_token(self, a: dict[str, Any]) -> str:
        self.m.pop_token(a["state"])
        return "Ok(())"

    def op_pop_tokens(self, a: dict[str, Any]) -> str:
        self.m.pop_tokens(a["state"], a["count"])
        return "Ok(())"

    def op_commit(self, a: dict[str, Any]) -> str:
        self.m.commit(a["state"])
        return "Ok(())"

    def _state_query(self, q: str) -> Any:
        def fn(a: dict[str, Any]) -> Any:
            return self.m.state_query(a["state"], q)

        return fn

    def __getattr__(self, name: str) -> Any:
        if name.startswith("op_state_") and name[len("op_state_") :] in RegistryWorld.STATE_QUERIES:
            return self._state_query(name[len("op_state_") :])
        raise AttributeError(name)

    # -- registration
    def op_register_block(self, a: dict[str, Any]) -> dict[str, Any]:
        state = a["state"]
        if str(state).startswith("Complete("):
            state = self.m.state_from_block(None, self.block(state))
        eh = a.get("event_hashes")
        ph = self.m.register_block(a["registry"], state, a.get("as"), None if eh is None else eh)
        return {
            "returns": "Ok(Some(publish_handle))" if ph is not None else "Ok(None)",
            "returns_publish_handle": ph is not None,
            "publish_handle": ph,
        }

    def op_is_registered(self, a: dict[str, Any]) -> bool:
        return self.m.is_registered(a["registry"], a["hash"])

    def op_drain(self, a: dict[str, Any]) -> Any:
        return self.m.drain(a["registry"])

    def op_create_publish_handle(self, a: dict[str, Any]) -> None:
        self.m.create_publish_handle(a.get("as"), self.block(a["block"]), a.get("tier", "Device"))

    # -- publication
    def op_remove_handle(self, a: dict[str, Any]) -> None:
        self.m.remove_handle(a["publish_handle"], a.get("as"))

    def op_new_publisher(self, a: dict[str, Any]) -> None:
        self.m.new_publisher(a.get("as"))

    def op_take_handle(self, a: dict[str, Any]) -> None:
        self.m.take_handle(a["publisher"], a["publish_handle"], a.get("as"))

    def op_publish(self, a: dict[str, Any]) -> None:
        self.m.publish(a["publisher"])

    def op_clone_publisher(self, a: dict[str, Any]) -> None:
        self.m.clone_publisher(a["publisher"], a.get("as"))

    def op_drop(self, a: dict[str, Any]) -> None:
        self.m.drop(str(a.get("value", a.get("name"))))

    # -- external (event) hashes, commit e3d00b899
    def op_sync_external_sequence_hashes(self, a: dict[str, Any]) -> None:
        hs = list(a["hashes"])
        self.blocks = [
            attrs.evolve(b, external=hs[k], external_parent=hs[k - 1] if k else None) if k < len(hs) else b
            for k, b in enumerate(self.blocks)
        ]

    def op_registration_handle_from_token_block(self, a: dict[str, Any]) -> dict[str, Any]:
        h = RegHandle(0, self.block(a["block"]), a.get("tier", "Device"), False)
        view = self._reg_view(h)
        view["storage_tier"] = h.tier
        if a.get("as"):
            self.loose[str(a["as"])] = view
        return dict(view)


HARNESSES = (RegistryHarness,)
