"""The router indexer's operations as typed actions (:mod:`kvmodel.actions`).

``RadixTree`` of ``lib/kv-router/src/indexer/radix_tree.rs`` (the Python binding of
``ai-dynamo-runtime==1.6.1`` exposes the same calls): ``apply_event(worker_id, event)`` with the
wire ``KvCacheEvent`` JSON (``kvmodel.model.events``), ``remove_worker(worker_id)``,
``clear_all_blocks(worker_id)``, ``find_matches(local_hashes, early_exit)`` and ``dump_tree()``
(``dump_tree_as_events``, as rows). Returns in JSON:

* ``apply_event``, ``remove_worker``, ``clear_all_blocks``: ``null`` (an event's rejection is the
  error: ``ParentBlockNotFound``, ``BlockNotFound``, ``InvalidBlockSequence``);
* ``find_matches``: ``[[worker_id, dp_rank, score], ...]`` sorted, workers with a positive score;
* ``dump_tree``: ``[[worker_id, dp_rank, parent_hash | null, block_hash, tokens_hash], ...]``
  sorted (nulls first): one row per block a worker holds in the tree.

A world (``kvmodel.components.router.space``) names its workers ``(worker_id, dp_rank)``, its
block hashes and the tokens hash of each, the longest Stored, and the probe sequences of
``find_matches``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import attrs

from kvmodel import argspec as A
from kvmodel.actions import Action, Actions
from kvmodel.argspec import OPTIONAL as O
from kvmodel.argspec import REQUIRED as R
from kvmodel.model.errors import InvalidInput
from kvmodel.model.events import KvCacheEvent, event_from_json

NAME = "kv_router_radix_tree"
MAX_HASHES = 4096  # local hashes in one find_matches: a bound on what one step may ask for


@A.typed("KvCacheEvent JSON ({event_id, data: stored|removed|cleared, dp_rank})")
def _event(v: Any, what: str) -> KvCacheEvent:
    return event_from_json(v)


@A.typed("[u64]")
def _hashes(v: Any, what: str) -> tuple[int, ...]:
    if not isinstance(v, list) or len(v) > MAX_HASHES:
        raise InvalidInput(f"{what} must be a list of at most {MAX_HASHES} u64 local hashes, got {v!r:.60}")
    return tuple(A.u64(h, f"{what}[{i}]") for i, h in enumerate(v))


def score_rows(scores: Mapping[tuple[int, int], int]) -> list[list[int]]:
    """``find_matches`` scores as the contract's rows (positive scores only, sorted)."""
    return [[w, r, n] for (w, r), n in sorted(scores.items()) if n > 0]


def content_rows(content: Mapping[tuple[int, int], list[tuple[int | None, int, int]]]) -> list[list[Any]]:
    """A tree's content as the contract's ``dump_tree`` rows, sorted (a null parent first)."""
    rows = [[w, r, p, h, t] for (w, r), triples in content.items() for p, h, t in triples]
    return sorted(rows, key=lambda x: (x[0], x[1], -1 if x[2] is None else x[2], x[3], x[4]))


@attrs.frozen
class ApplyEvent(Action):
    """``apply_event(worker_id, event)``: one ``KvCacheEvent`` of the worker (its ``dp_rank``
    inside the event)."""

    op = "apply_event"
    RETURNS = "null"
    MEANS = "`null`; a rejected event is the error `ParentBlockNotFound`, `BlockNotFound` or `InvalidBlockSequence`"
    ARGS: ClassVar[A.Spec] = {"worker_id": (R, A.u64), "event": (R, _event)}
    worker_id: int
    event: KvCacheEvent

    def to_json(self) -> dict[str, Any]:
        return {"worker_id": self.worker_id, "event": self.event.to_json()}

    def run(self, model: Any) -> None:
        model.apply_event(self.worker_id, self.event)


@attrs.frozen
class RemoveWorker(Action):
    """``remove_worker(worker_id)``: every dp_rank of the worker leaves the tree."""

    op = "remove_worker"
    RETURNS = "null"
    MEANS = "`null`; every dp_rank of the worker leaves the tree"
    ARGS: ClassVar[A.Spec] = {"worker_id": (R, A.u64)}
    worker_id: int

    def run(self, model: Any) -> None:
        model.remove_worker(self.worker_id)


@attrs.frozen
class ClearAllBlocks(Action):
    """``clear_all_blocks(worker_id)``: every dp_rank of the worker loses its blocks."""

    op = "clear_all_blocks"
    RETURNS = "null"
    MEANS = "`null`; every dp_rank of the worker loses its blocks"
    ARGS: ClassVar[A.Spec] = {"worker_id": (R, A.u64)}
    worker_id: int

    def run(self, model: Any) -> None:
        model.clear_all_blocks(self.worker_id)


@attrs.frozen
class FindMatches(Action):
    """``find_matches(local_hashes, early_exit=false)``: each worker's prefix score."""

    op = "find_matches"
    RETURNS = "[[u64]]"
    MEANS = "`[[worker_id, dp_rank, score], ...]`, sorted, workers with a positive score only"
    ARGS: ClassVar[A.Spec] = {"local_hashes": (R, _hashes), "early_exit": (O, A.boolean)}
    local_hashes: tuple[int, ...]
    early_exit: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"local_hashes": list(self.local_hashes), "early_exit": self.early_exit}

    def run(self, model: Any) -> list[list[int]]:
        return score_rows(model.find_matches(list(self.local_hashes), self.early_exit))


@attrs.frozen
class DumpTree(Action):
    """``dump_tree()``: the tree's content, one row per block a worker holds."""

    op = "dump_tree"
    RETURNS = "[[u64 | null]]"
    MEANS = (
        "`[[worker_id, dp_rank, parent_hash|null, block_hash, tokens_hash], ...]` sorted (a "
        "null parent first): one row per block a worker holds, as `dump_tree_as_events` lists "
        "them"
    )

    def run(self, model: Any) -> list[list[Any]]:
        model._alive()
        return content_rows(model.content())


ACTIONS = Actions(NAME, (ApplyEvent, RemoveWorker, ClearAllBlocks, FindMatches, DumpTree))
