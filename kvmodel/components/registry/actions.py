"""The KVBM block registry's operations as typed actions (:mod:`kvmodel.actions`).

dynamo-llm 1.0.2 (``lib/llm/src/block_manager/block/registry.rs``, ``block/state.rs``,
``events.rs``; seed 004): registries, the caller's block states, ``register_block``, publish
handles and publishers, dropping a value (the Rust ``Drop`` of whatever it names), a registry
task's ``drain`` and ``is_registered``. The caller names the values it holds (``as``; ``None``
or absent is an unnamed temporary), and the actions name them back. The JSON keys are the trace
format's; ``as`` is the field ``as_``. Every action is checked as a whole before the model is
touched (unknown or missing keys, names, blocks), in the order the trace format has always
reported them.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from kvmodel import argspec as A
from kvmodel.actions import ABSENT as ABSENT  # re-exported: the registry's callers name it here
from kvmodel.actions import Action, Actions
from kvmodel.model.errors import InvalidInput
from kvmodel.model.registry import Block, block_from_json

NAME = "kvbm_block_registry"
# the keys that name a value the caller holds
_NAMED = frozenset({"as", "state", "registry", "publisher", "publish_handle", "value", "global_registry"})


def _or(v: Any, default: Any) -> Any:
    """The key's value, or the Rust default the model takes where the caller left it out."""
    return default if v is ABSENT else v


class RegistryAction(Action):
    """What every registry action shares: its required and optional keys, the checks on them,
    and the JSON with ``as`` for the field ``as_``: exactly the keys the caller gave (an optional
    field left out is :data:`ABSENT`)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ()
    OPTIONAL: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_json(cls, where: str, args: Any) -> Action:
        op = cls.op
        args = {} if args is None else args
        if not isinstance(args, dict):
            raise InvalidInput(f"{op} arguments must be an object, got {args!r:.60}")
        known = set(cls.REQUIRED) | set(cls.OPTIONAL)
        for k in args:
            if k not in known:
                raise InvalidInput(f"{where}: unknown argument {k!r:.40} (known: {sorted(known) or 'none'})")
        for k in cls.REQUIRED:
            if k not in args:
                raise InvalidInput(f"{op} needs {k!r}")
        for k in _NAMED & set(args):
            if not (args[k] is None and k == "as"):
                A.name(args[k], f"{where}: {k}")
        out = dict(args)
        if "block" in out:
            out["block"] = block_from_json(out["block"])
        cls.check(out)
        return cls(**{("as_" if k == "as" else k): v for k, v in out.items()})

    @classmethod
    def check(cls, a: dict[str, Any]) -> None:
        """The operation's own checks on its decoded arguments (none by default)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in attrs.fields(type(self)):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            k = "as" if f.name == "as_" else f.name
            if v is ABSENT:
                continue
            out[k] = v.to_json() if isinstance(v, Block) else v
        return out


@attrs.frozen
class NewRegistry(RegistryAction):
    op = "new_registry"
    RETURNS = "null"
    MEANS = "`null`; a registry (pool) sharing the named global registry (default `G`)"
    TYPES: ClassVar[dict[str, str]] = {"as": "name", "tier?": "Device|HostPinned|Disk", "global_registry?": "name"}
    REQUIRED = ("as",)
    OPTIONAL = ("tier", "global_registry")
    as_: str
    tier: str | None = ABSENT
    global_registry: str | None = ABSENT

    def run(self, model: Any) -> Any:
        return model.new_registry(self.as_, _or(self.tier, "Device"), _or(self.global_registry, "G"))


@attrs.frozen
class NewState(RegistryAction):
    op = "new_state"
    RETURNS = "name"
    MEANS = "the name of a new Reset block state"
    TYPES: ClassVar[dict[str, str]] = {"as?": "name"}
    OPTIONAL = ("as",)
    as_: str | None = ABSENT

    def run(self, model: Any) -> Any:
        return model.new_state(_or(self.as_, None))


@attrs.frozen
class StateFromResetApplyTokenBlock(RegistryAction):
    op = "state_from_reset_apply_token_block"
    RETURNS = "name"
    MEANS = "the name of a new Complete block state"
    TYPES: ClassVar[dict[str, str]] = {
        "block": "{hash: u64, parent: u64|null, block_hash?: u64, external?: [u64|null, u64|null], tokens?: [u32]}",
        "as?": "name",
    }
    REQUIRED = ("block",)
    OPTIONAL = ("as",)
    block: Block
    as_: str | None = ABSENT

    def run(self, model: Any) -> Any:
        return model.state_from_block(_or(self.as_, None), self.block)


@attrs.frozen
class ApplyTokenBlock(RegistryAction):
    op = "apply_token_block"
    RETURNS = "null"
    MEANS = "`null`; Reset -> Complete"
    TYPES: ClassVar[dict[str, str]] = {
        "state": "name",
        "block": "{hash: u64, parent: u64|null, block_hash?: u64, external?: [u64|null, u64|null], tokens?: [u32]}",
    }
    REQUIRED = ("state", "block")
    state: str
    block: Block

    def run(self, model: Any) -> Any:
        return model.apply_token_block(self.state, self.block)


@attrs.frozen
class InitializeSequence(RegistryAction):
    op = "initialize_sequence"
    RETURNS = "null"
    MEANS = "`null`; Reset -> Partial (an empty block of `page_size as u32` tokens)"
    TYPES: ClassVar[dict[str, str]] = {"state": "name", "page_size": "usize", "salt?": "u64"}
    REQUIRED = ("state", "page_size")
    OPTIONAL = ("salt",)
    state: str
    page_size: Any
    salt: Any = ABSENT

    def run(self, model: Any) -> Any:
        return model.initialize_sequence(self.state, self.page_size, _or(self.salt, 0))


@attrs.frozen
class AddToken(RegistryAction):
    op = "add_token"
    RETURNS = "null"
    MEANS = "`null`"
    TYPES: ClassVar[dict[str, str]] = {"state": "name", "token": "u32"}
    REQUIRED = ("state", "token")
    state: str
    token: Any

    def run(self, model: Any) -> Any:
        return model.add_token(self.state, self.token)


@attrs.frozen
class AddTokens(RegistryAction):
    op = "add_tokens"
    RETURNS = "[u32]"
    MEANS = "the tokens that did not fit (list)"
    TYPES: ClassVar[dict[str, str]] = {"state": "name", "tokens": "[u32]"}
    REQUIRED = ("state", "tokens")
    state: str
    tokens: Any

    @classmethod
    def check(cls, a: dict[str, Any]) -> None:
        if not isinstance(a["tokens"], list):
            raise InvalidInput(f"tokens must be a list, got {a['tokens']!r}")

    def run(self, model: Any) -> Any:
        return model.add_tokens(self.state, self.tokens)


@attrs.frozen
class PopToken(RegistryAction):
    op = "pop_token"
    RETURNS = "null"
    MEANS = "`null`"
    TYPES: ClassVar[dict[str, str]] = {"state": "name"}
    REQUIRED = ("state",)
    state: str

    def run(self, model: Any) -> Any:
        return model.pop_token(self.state)


@attrs.frozen
class PopTokens(RegistryAction):
    op = "pop_tokens"
    RETURNS = "null"
    MEANS = "`null`"
    TYPES: ClassVar[dict[str, str]] = {"state": "name", "count": "usize"}
    REQUIRED = ("state", "count")
    state: str
    count: Any

    def run(self, model: Any) -> Any:
        return model.pop_tokens(self.state, self.count)


@attrs.frozen
class Commit(RegistryAction):
    op = "commit"
    RETURNS = "null"
    MEANS = "`null`; Partial -> Complete (a root block hashed with the salt)"
    TYPES: ClassVar[dict[str, str]] = {"state": "name"}
    REQUIRED = ("state",)
    state: str

    def run(self, model: Any) -> Any:
        return model.commit(self.state)


@attrs.frozen
class StateQuery(RegistryAction):
    op = "state_query"
    RETURNS = "usize | boolean | [u32] | null"
    MEANS = (
        "the accessor's value (integer, boolean, list or `null`). `len` and `tokens` of a "
        "Complete state are its block's token count and tokens (a Rust `TokenBlock` always "
        "holds them; the generated workloads always give them); of a block given without "
        "`tokens` (a hand-written trace) they are `null`, where Rust would answer `Some(..)`"
    )
    TYPES: ClassVar[dict[str, str]] = {
        "state": "name",
        "query": "len|remaining|is_empty|tokens|is_reset|is_complete|is_registered",
    }
    REQUIRED = ("state", "query")
    state: str
    query: Any

    def run(self, model: Any) -> Any:
        return model.state_query(self.state, self.query)


@attrs.frozen
class RegisterBlock(RegistryAction):
    op = "register_block"
    RETURNS = "name | null"
    MEANS = "the name of the new publish handle, or `null` when the registration already existed"
    TYPES: ClassVar[dict[str, str]] = {
        "registry": "name",
        "state": "name",
        "as?": "name",
        "event_hashes?": "[u64|null, u64|null] (e3d00b899)",
    }
    REQUIRED = ("registry", "state")
    OPTIONAL = ("as", "event_hashes")
    registry: str
    state: str
    as_: str | None = ABSENT
    event_hashes: Any = ABSENT

    @classmethod
    def check(cls, a: dict[str, Any]) -> None:
        eh = a.get("event_hashes")
        if eh is not None and (not isinstance(eh, list) or len(eh) != 2):
            raise InvalidInput(f"event_hashes must be [hash|null, parent|null], got {eh!r}")

    def run(self, model: Any) -> Any:
        eh = _or(self.event_hashes, None)
        hashes = None if eh is None else (eh[0], eh[1])
        return model.register_block(self.registry, self.state, _or(self.as_, None), hashes)


@attrs.frozen
class CreatePublishHandle(RegistryAction):
    op = "create_publish_handle"
    RETURNS = "name"
    MEANS = "the name of a new publish handle (the Rust tests' helper)"
    TYPES: ClassVar[dict[str, str]] = {
        "block": "{hash: u64, parent: u64|null, block_hash?: u64, external?: [u64|null, u64|null], tokens?: [u32]}",
        "as?": "name",
        "tier?": "Device|HostPinned|Disk",
    }
    REQUIRED = ("block",)
    OPTIONAL = ("as", "tier")
    block: Block
    as_: str | None = ABSENT
    tier: str | None = ABSENT

    def run(self, model: Any) -> Any:
        return model.create_publish_handle(_or(self.as_, None), self.block, _or(self.tier, "Device"))


@attrs.frozen
class RemoveHandle(RegistryAction):
    op = "remove_handle"
    RETURNS = "name"
    MEANS = "the name of the registration Arc it gives up"
    TYPES: ClassVar[dict[str, str]] = {"publish_handle": "name", "as?": "name"}
    REQUIRED = ("publish_handle",)
    OPTIONAL = ("as",)
    publish_handle: str
    as_: str | None = ABSENT

    def run(self, model: Any) -> Any:
        return model.remove_handle(self.publish_handle, _or(self.as_, None))


@attrs.frozen
class NewPublisher(RegistryAction):
    op = "new_publisher"
    RETURNS = "name"
    MEANS = "the name of a new publisher"
    TYPES: ClassVar[dict[str, str]] = {"as?": "name"}
    OPTIONAL = ("as",)
    as_: str | None = ABSENT

    def run(self, model: Any) -> Any:
        return model.new_publisher(_or(self.as_, None))


@attrs.frozen
class TakeHandle(RegistryAction):
    op = "take_handle"
    RETURNS = "name | null"
    MEANS = "the name of the Arc kept, or `null`"
    TYPES: ClassVar[dict[str, str]] = {"publisher": "name", "publish_handle": "name", "as?": "name"}
    REQUIRED = ("publisher", "publish_handle")
    OPTIONAL = ("as",)
    publisher: str
    publish_handle: str
    as_: str | None = ABSENT

    def run(self, model: Any) -> Any:
        return model.take_handle(self.publisher, self.publish_handle, _or(self.as_, None))


@attrs.frozen
class Publish(RegistryAction):
    op = "publish"
    RETURNS = "null"
    MEANS = "`null`; one message: a Register per taken handle, in take order"
    TYPES: ClassVar[dict[str, str]] = {"publisher": "name"}
    REQUIRED = ("publisher",)
    publisher: str

    def run(self, model: Any) -> Any:
        return model.publish(self.publisher)


@attrs.frozen
class ClonePublisher(RegistryAction):
    op = "clone_publisher"
    RETURNS = "name"
    MEANS = "the name of the clone"
    TYPES: ClassVar[dict[str, str]] = {"publisher": "name", "as?": "name"}
    REQUIRED = ("publisher",)
    OPTIONAL = ("as",)
    publisher: str
    as_: str | None = ABSENT

    def run(self, model: Any) -> Any:
        return model.clone_publisher(self.publisher, _or(self.as_, None))


@attrs.frozen
class Drop(RegistryAction):
    op = "drop"
    RETURNS = "null"
    MEANS = "`null`; Rust's drop of the named value (a last Arc sends its Remove)"
    TYPES: ClassVar[dict[str, str]] = {"value": "name"}
    REQUIRED = ("value",)
    value: str

    def run(self, model: Any) -> Any:
        return model.drop(self.value)


@attrs.frozen
class Drain(RegistryAction):
    op = "drain"
    RETURNS = "u64 | null"
    MEANS = "the hash the unregister task received and handled, or `null`"
    TYPES: ClassVar[dict[str, str]] = {"registry": "name"}
    REQUIRED = ("registry",)
    registry: str

    def run(self, model: Any) -> Any:
        return model.drain(self.registry)


@attrs.frozen
class IsRegistered(RegistryAction):
    op = "is_registered"
    RETURNS = "boolean"
    MEANS = "whether the registry holds a live handle (boolean)"
    TYPES: ClassVar[dict[str, str]] = {"registry": "name", "hash": "u64"}
    REQUIRED = ("registry", "hash")
    registry: str
    hash: Any

    @classmethod
    def check(cls, a: dict[str, Any]) -> None:
        if isinstance(a["hash"], bool) or not isinstance(a["hash"], int):
            raise InvalidInput(f"hash must be an integer, got {a['hash']!r}")

    def run(self, model: Any) -> Any:
        return model.is_registered(self.registry, self.hash)


ACTIONS = Actions(
    NAME,
    (
        NewRegistry,
        NewState,
        StateFromResetApplyTokenBlock,
        ApplyTokenBlock,
        InitializeSequence,
        AddToken,
        AddTokens,
        PopToken,
        PopTokens,
        Commit,
        StateQuery,
        RegisterBlock,
        CreatePublishHandle,
        RemoveHandle,
        NewPublisher,
        TakeHandle,
        Publish,
        ClonePublisher,
        Drop,
        Drain,
        IsRegistered,
    ),
)
