"""KV cache events as the router consumes them (semantics §4, RPROTO).

Real code: ``lib/llm/src/kv_router/protocols.rs`` (``KvCacheEvent``, ``KvCacheEventData``,
``KvCacheStoreData``, ``KvCacheStoredBlockData``, ``KvCacheRemoveData``). The JSON codec
is byte-compatible with what the real ``RadixTree.apply_event`` of
``ai-dynamo-runtime==1.6.1`` accepts (serde, snake_case variants; ``dp_rank`` defaults
to 0; ``parent_hash``, ``start_position`` and ``mm_extra_info`` optional; hashes u64).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from kvmodel.model.blocks import MoveBlockResponse, Remove, Store
from kvmodel.model.errors import InvalidInput

U64 = 2**64


def _u64(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < U64:
        raise InvalidInput(f"{what} must be a u64, got {v!r}")
    return v


def _u32(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**32:
        raise InvalidInput(f"{what} must be a u32, got {v!r}")
    return v


@attrs.frozen
class StoredBlock:
    block_hash: int  # the chained sequence hash (ExternalSequenceBlockHash): parents and removals name it
    tokens_hash: int  # the local hash (LocalBlockHash): what find_matches walks

    def to_json(self) -> dict[str, Any]:
        return {"block_hash": self.block_hash, "tokens_hash": self.tokens_hash, "mm_extra_info": None}


@attrs.frozen
class Stored:
    parent_hash: int | None
    blocks: tuple[StoredBlock, ...]

    def data_json(self) -> dict[str, Any]:
        return {
            "stored": {
                "parent_hash": self.parent_hash,
                "start_position": None,
                "blocks": [b.to_json() for b in self.blocks],
            }
        }


@attrs.frozen
class Removed:
    block_hashes: tuple[int, ...]

    def data_json(self) -> dict[str, Any]:
        return {"removed": {"block_hashes": list(self.block_hashes)}}


@attrs.frozen
class Cleared:
    def data_json(self) -> Any:
        return "cleared"


EventData = Stored | Removed | Cleared


@attrs.frozen
class KvCacheEvent:
    event_id: int
    data: EventData
    dp_rank: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"event_id": self.event_id, "data": self.data.data_json(), "dp_rank": self.dp_rank}

    def to_bytes(self) -> bytes:
        """The bytes ``RadixTree.apply_event(worker_id, bytes)`` takes (compact JSON)."""
        return json.dumps(self.to_json(), separators=(",", ":")).encode()


def event_from_json(obj: Any) -> KvCacheEvent:
    """Decode one ``KvCacheEvent`` (the wire JSON); raises :class:`InvalidInput` with the
    serde-like reason on a malformed event."""
    if not isinstance(obj, dict):
        raise InvalidInput(f"a KvCacheEvent must be an object, got {obj!r}")
    if "event_id" not in obj:
        raise InvalidInput("missing field `event_id`")
    if "data" not in obj:
        raise InvalidInput("missing field `data`")
    eid = _u64(obj["event_id"], "event_id")
    dp = _u32(obj.get("dp_rank", 0), "dp_rank")
    data = obj["data"]
    if data == "cleared" or (isinstance(data, dict) and list(data) == ["cleared"] and data["cleared"] is None):
        return KvCacheEvent(eid, Cleared(), dp)
    if not isinstance(data, dict) or len(data) != 1:
        raise InvalidInput(f"data must be one of `stored`, `removed`, `cleared`, got {data!r}")
    ((kind, body),) = data.items()
    if kind == "stored":
        if not isinstance(body, dict) or "blocks" not in body:
            raise InvalidInput("missing field `blocks`")
        parent = body.get("parent_hash")
        blocks = []
        for b in body["blocks"]:
            if not isinstance(b, dict):
                raise InvalidInput(f"a stored block must be an object, got {b!r}")
            for f in ("block_hash", "tokens_hash"):
                if f not in b:
                    raise InvalidInput(f"missing field `{f}`")
            blocks.append(StoredBlock(_u64(b["block_hash"], "block_hash"), _u64(b["tokens_hash"], "tokens_hash")))
        return KvCacheEvent(eid, Stored(None if parent is None else _u64(parent, "parent_hash"), tuple(blocks)), dp)
    if kind == "removed":
        if not isinstance(body, dict) or "block_hashes" not in body:
            raise InvalidInput("missing field `block_hashes`")
        return KvCacheEvent(eid, Removed(tuple(_u64(h, "block_hash") for h in body["block_hashes"])), dp)
    raise InvalidInput(f"unknown variant `{kind}`, expected one of `stored`, `removed`, `cleared`")


def from_responses(
    responses: Iterable[MoveBlockResponse],
    tokens_hash: Callable[[int], int],
    *,
    first_event_id: int = 0,
    dp_rank: int = 0,
) -> list[KvCacheEvent]:
    """The old KV manager's ``Store``/``Remove`` responses as router events, in order.

    ``Store(blocks, parent)`` becomes ``stored`` with each block's sequence hash and the
    local hash ``tokens_hash(block_hash)`` gives (the manager's responses carry only
    sequence hashes); ``Remove(blocks)`` becomes ``removed``. Event ids count up.
    """
    out: list[KvCacheEvent] = []
    for r in responses:
        eid = first_event_id + len(out)
        if isinstance(r, Store):
            blocks = tuple(StoredBlock(h, tokens_hash(h)) for h in r.blocks)
            out.append(KvCacheEvent(eid, Stored(r.parent_hash, blocks), dp_rank))
        elif isinstance(r, Remove):
            out.append(KvCacheEvent(eid, Removed(tuple(r.blocks)), dp_rank))
        else:
            raise InvalidInput(f"not a MoveBlockResponse: {r!r}")
    return out
