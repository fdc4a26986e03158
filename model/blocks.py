"""Value types of the old mocker era (OLDPROTO): UniqueBlock, MoveBlock, MoveBlockResponse.

Real code: ``lib/llm/src/tokens/blocks.rs`` (``UniqueBlock``) and
``lib/llm/src/mocker/protocols.rs`` (``MoveBlock``, ``MoveBlockResponse``).
A ``PartialBlock`` is identified by a UUID in Rust; here by a symbolic name (only
equality matters). JSON forms follow the vector notation: ``{"F": hash}``,
``{"P": "name"}``.
"""

from __future__ import annotations

import functools
from typing import Any, TypeAlias

import attrs

from kvmodel.model.errors import InvalidInput

U64_MAX = (1 << 64) - 1


@attrs.frozen(order=False, cache_hash=True)
class FullBlock:
    """``UniqueBlock::FullBlock(u64)``: a block identified by its sequence hash."""

    hash: int

    def to_json(self) -> dict[str, Any]:
        return {"F": self.hash}

    def sort_key(self) -> tuple[int, int, str]:
        return (0, self.hash, "")


@attrs.frozen(order=False, cache_hash=True)
class PartialBlock:
    """``UniqueBlock::PartialBlock(Uuid)``: a still-filling block with a fresh identity."""

    uuid: str

    def to_json(self) -> dict[str, Any]:
        return {"P": self.uuid}

    def sort_key(self) -> tuple[int, int, str]:
        return (1, 0, self.uuid)


UniqueBlock: TypeAlias = FullBlock | PartialBlock


def block_from_json(obj: Any) -> UniqueBlock:
    """Decode ``{"F": n}`` / ``{"P": "name"}``; anything else is ``InvalidInput``."""
    if isinstance(obj, dict) and len(obj) == 1:
        if "F" in obj:
            h = obj["F"]
            if isinstance(h, int) and not isinstance(h, bool) and 0 <= h <= U64_MAX:
                return FullBlock(h)
            raise InvalidInput(f"FullBlock hash must be a u64, got {h!r}")
        if "P" in obj:
            u = obj["P"]
            if isinstance(u, str) and u:
                return PartialBlock(u)
            raise InvalidInput(f"PartialBlock uuid must be a non-empty string, got {u!r}")
    raise InvalidInput(f"not a block: {obj!r} (expected {{'F': u64}} or {{'P': name}})")


def blocks_from_json(obj: Any) -> tuple[UniqueBlock, ...]:
    if not isinstance(obj, list):
        raise InvalidInput(f"expected a list of blocks, got {obj!r}")
    return tuple(block_from_json(b) for b in obj)


@functools.lru_cache(maxsize=1024)
def block_text(b: UniqueBlock) -> str:
    """The block's JSON as a rejection's message spells it (``{'F': 3}``), kept for the blocks met
    most recently (a search rejects the same few blocks thousands of times)."""
    return str(b.to_json())


def check_block(b: object) -> UniqueBlock:
    if isinstance(b, _BLOCKS):
        return b
    raise InvalidInput(f"not a UniqueBlock: {b!r}")


_BLOCKS = (FullBlock, PartialBlock)


def check_blocks(blocks: Any) -> tuple[UniqueBlock, ...]:
    """The blocks as a tuple, each a ``UniqueBlock`` (else ``InvalidInput`` naming the first that
    is not): :func:`check_block` over a list, without building a new tuple for one."""
    t = blocks if type(blocks) is tuple else tuple(blocks)
    for b in t:
        if not isinstance(b, _BLOCKS):
            check_block(b)  # raises, with its message
    return t


# --- MoveBlock signals ------------------------------------------------------------------


@attrs.frozen
class Use:
    """``MoveBlock::Use(Vec<UniqueBlock>)``."""

    blocks: tuple[UniqueBlock, ...]

    def to_json(self) -> dict[str, Any]:
        return {"Use": [b.to_json() for b in self.blocks]}


@attrs.frozen
class Destroy:
    """``MoveBlock::Destroy(Vec<UniqueBlock>)``."""

    blocks: tuple[UniqueBlock, ...]

    def to_json(self) -> dict[str, Any]:
        return {"Destroy": [b.to_json() for b in self.blocks]}


@attrs.frozen
class Deref:
    """``MoveBlock::Deref(Vec<UniqueBlock>)``."""

    blocks: tuple[UniqueBlock, ...]

    def to_json(self) -> dict[str, Any]:
        return {"Deref": [b.to_json() for b in self.blocks]}


@attrs.frozen
class Promote:
    """``MoveBlock::Promote(uuid, SequenceHash, Option<u64> parent_hash)``."""

    uuid: str
    hash: int
    parent_hash: int | None

    def to_json(self) -> dict[str, Any]:
        return {"Promote": {"uuid": self.uuid, "hash": self.hash, "parent_hash": self.parent_hash}}


MoveBlock: TypeAlias = Use | Destroy | Deref | Promote


def _u64(v: Any, what: str, optional: bool = False) -> int | None:
    if v is None and optional:
        return None
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= U64_MAX:
        return v
    raise InvalidInput(f"{what} must be a u64{' or null' if optional else ''}, got {v!r}")


def move_block_from_json(obj: Any) -> MoveBlock:
    """Decode the vector notation: ``{"Use": [..]}``, ``{"Promote": {uuid, hash, parent_hash}}``."""
    if not isinstance(obj, dict) or len(obj) != 1:
        raise InvalidInput(f"not a MoveBlock: {obj!r}")
    ((kind, body),) = obj.items()
    if kind == "Use":
        return Use(blocks_from_json(body))
    if kind == "Destroy":
        return Destroy(blocks_from_json(body))
    if kind == "Deref":
        return Deref(blocks_from_json(body))
    if kind == "Promote":
        if not isinstance(body, dict) or not {"uuid", "hash"} <= set(body):
            raise InvalidInput(f"Promote needs uuid and hash, got {body!r}")
        extra = sorted(str(k) for k in set(body) - {"uuid", "hash", "parent_hash"})
        if extra:
            raise InvalidInput(f"Promote: unknown argument {extra[0]!r:.40} (known: hash, parent_hash, uuid)")
        uuid = body["uuid"]
        if not isinstance(uuid, str) or not uuid:
            raise InvalidInput(f"Promote uuid must be a non-empty string, got {uuid!r}")
        h = _u64(body["hash"], "Promote hash")
        assert h is not None
        return Promote(uuid, h, _u64(body.get("parent_hash"), "Promote parent_hash", True))
    raise InvalidInput(f"unknown MoveBlock kind {kind!r}")


# --- MoveBlockResponse ---------------------------------------------------------------


@attrs.frozen
class Store:
    """``MoveBlockResponse::Store(Vec<SequenceHash>, Option<u64> parent_hash)``."""

    blocks: tuple[int, ...]
    parent_hash: int | None

    def to_json(self) -> dict[str, Any]:
        return {"Store": {"blocks": list(self.blocks), "parent_hash": self.parent_hash}}


@attrs.frozen
class Remove:
    """``MoveBlockResponse::Remove(Vec<SequenceHash>)``."""

    blocks: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"Remove": {"blocks": list(self.blocks)}}


MoveBlockResponse: TypeAlias = Store | Remove
