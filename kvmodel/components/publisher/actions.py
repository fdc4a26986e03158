"""The publisher's input, as typed actions (:mod:`kvmodel.actions`): the engine's events.

Each operation is one event an engine publishes, as the relay's listener hands it to the event
processor (``lib/llm/src/kv_router/publisher/``): ``stored(dp_rank, parent_hash, blocks)``,
``removed(dp_rank, block_hashes)``, ``cleared(dp_rank)``. The engine's own event id is not an
argument: the publisher numbers what it sends itself. An operation returns ``null`` (the Rust loop
returns nothing); what reaches the router is the step's events. In the Z3 world an event names
one block, ``(r, h)``, with tokens hash ``TOKENS + h``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from kvmodel import argspec as A
from kvmodel.actions import ABSENT, Action, Actions
from kvmodel.argspec import OPTIONAL as O
from kvmodel.argspec import REQUIRED as R
from kvmodel.invariants.publisher import NAME
from kvmodel.model.errors import InvalidInput
from kvmodel.model.events import StoredBlock

MAX_BLOCKS = 4096  # blocks in one event: a bound on what one step may carry
TOKENS = 1000  # the world's tokens hash of block h


@A.typed("[{block_hash: u64, tokens_hash: u64}]")
def _blocks(v: Any, what: str) -> tuple[StoredBlock, ...]:
    if not isinstance(v, list) or len(v) > MAX_BLOCKS:
        raise InvalidInput(f"{what} must be a list of at most {MAX_BLOCKS} blocks, got {v!r:.60}")
    out = []
    for i, b in enumerate(v):
        if not isinstance(b, dict) or set(b) - {"block_hash", "tokens_hash", "mm_extra_info"}:
            raise InvalidInput(f"{what}[{i}] must be an object with block_hash and tokens_hash, got {b!r:.60}")
        for f in ("block_hash", "tokens_hash"):
            if f not in b:
                raise InvalidInput(f"{what}[{i}] is missing `{f}`")
        out.append(
            StoredBlock(
                A.u64(b["block_hash"], f"{what}[{i}].block_hash"), A.u64(b["tokens_hash"], f"{what}[{i}].tokens_hash")
            )
        )
    return tuple(out)


@A.typed("[u64]")
def _hashes(v: Any, what: str) -> tuple[int, ...]:
    if not isinstance(v, list) or len(v) > MAX_BLOCKS:
        raise InvalidInput(f"{what} must be a list of at most {MAX_BLOCKS} u64 hashes, got {v!r:.60}")
    return tuple(A.u64(h, f"{what}[{i}]") for i, h in enumerate(v))


@attrs.frozen
class PublishStored(Action):
    """A BlockStored: passes whole; each listed hash counts one more copy on the rank."""

    op = "stored"
    RETURNS = "null"
    MEANS = "`null`; the engine's BlockStored, passed to the router whole"
    ARGS: ClassVar[A.Spec] = {
        "dp_rank": (R, A.u32),
        "parent_hash": (O, A.optional(A.u64)),
        "blocks": (R, _blocks),
    }
    PARAMS = (("r", "int"), ("h", "int"))
    dp_rank: int
    blocks: tuple[StoredBlock, ...]
    parent_hash: int | None = ABSENT  # left out: no parent (a root block)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dp_rank": self.dp_rank}
        if self.parent_hash is not ABSENT:
            out["parent_hash"] = self.parent_hash
        out["blocks"] = [{"block_hash": b.block_hash, "tokens_hash": b.tokens_hash} for b in self.blocks]
        return out

    @property
    def parent(self) -> int | None:
        return None if self.parent_hash is ABSENT else self.parent_hash

    def run(self, model: Any) -> None:
        model.stored(self.dp_rank, self.parent, self.blocks)

    @property
    def hashes(self) -> tuple[int, ...]:
        return tuple(b.block_hash for b in self.blocks)

    @classmethod
    def effect(cls, spec: Any, s: Any, p: Any) -> Any:
        return spec.stored(s, p)


@attrs.frozen
class PublishRemoved(Action):
    """A BlockRemoved: the hashes whose last copy went reach the router."""

    op = "removed"
    RETURNS = "null"
    MEANS = "`null`; the engine's BlockRemoved, passed with the hashes whose last copy went (or not at all)"
    ARGS: ClassVar[A.Spec] = {"dp_rank": (R, A.u32), "block_hashes": (R, _hashes)}
    PARAMS = (("r", "int"), ("h", "int"))
    dp_rank: int
    block_hashes: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"dp_rank": self.dp_rank, "block_hashes": list(self.block_hashes)}

    def run(self, model: Any) -> None:
        model.removed(self.dp_rank, self.block_hashes)

    @property
    def hashes(self) -> tuple[int, ...]:
        return self.block_hashes

    @classmethod
    def effect(cls, spec: Any, s: Any, p: Any) -> Any:
        return spec.removed(s, p)


@attrs.frozen
class PublishCleared(Action):
    """An AllBlocksCleared: the rank's counts go; it reaches the router."""

    op = "cleared"
    RETURNS = "null"
    MEANS = "`null`; the engine's AllBlocksCleared, passed"
    ARGS: ClassVar[A.Spec] = {"dp_rank": (R, A.u32)}
    PARAMS = (("r", "int"),)
    dp_rank: int

    def run(self, model: Any) -> None:
        model.cleared(self.dp_rank)

    @property
    def hashes(self) -> tuple[int, ...]:
        return ()

    @classmethod
    def effect(cls, spec: Any, s: Any, p: Any) -> Any:
        return spec.cleared(s, p)


ACTIONS = Actions(NAME, (PublishStored, PublishRemoved, PublishCleared))


def world_moves(ranks: int, hashes: int) -> list[Action]:
    """The bounded world's moves: one-block events on each rank and hash, and a Cleared per rank."""
    out: list[Action] = []
    for r in range(ranks):
        out += [PublishStored(r, (StoredBlock(h, TOKENS + h),)) for h in range(hashes)]
        out += [PublishRemoved(r, (h,)) for h in range(hashes)]
        out.append(PublishCleared(r))
    return out
