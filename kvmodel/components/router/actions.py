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

A world (the explorer's and the machine's, :meth:`Action.instances`) names its workers
``(worker_id, dp_rank)``, its block hashes and the tokens hash of each, the longest Stored, and
the probe sequences of ``find_matches``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs

from kvmodel import argspec as A
from kvmodel.actions import Action, Actions
from kvmodel.argspec import OPTIONAL as O
from kvmodel.argspec import REQUIRED as R
from kvmodel.model.errors import InvalidInput
from kvmodel.model.events import Cleared, KvCacheEvent, Removed, Stored, StoredBlock, event_from_json

NAME = "kv_router_radix_tree"
MAX_HASHES = 4096  # local hashes in one find_matches: a bound on what one step may ask for


def _event(v: Any, what: str) -> KvCacheEvent:
    return event_from_json(v)


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
    ARGS: ClassVar[A.Spec] = {"worker_id": (R, A.u64), "event": (R, _event)}
    worker_id: int
    event: KvCacheEvent

    def to_json(self) -> dict[str, Any]:
        return {"worker_id": self.worker_id, "event": self.event.to_json()}

    def run(self, model: Any) -> None:
        model.apply_event(self.worker_id, self.event)

    @classmethod
    def instances(cls, world: Mapping[str, Any]) -> list[Action]:
        out: list[Action] = []
        hashes, tok = list(world["hashes"]), world["tokens"]
        for w, r in world["workers"]:
            for parent in [None, *hashes]:
                for n in range(1, world["max_blocks"] + 1):
                    for seq in itertools.product(hashes, repeat=n):
                        blocks = tuple(StoredBlock(h, tok[h]) for h in seq)
                        out.append(cls(w, KvCacheEvent(0, Stored(parent, blocks), r)))
            for n in range(1, world["max_removed"] + 1):
                for seq in itertools.combinations(hashes, n):
                    out.append(cls(w, KvCacheEvent(0, Removed(tuple(seq)), r)))
            out.append(cls(w, KvCacheEvent(0, Cleared(), r)))
        return out


@attrs.frozen
class RemoveWorker(Action):
    """``remove_worker(worker_id)``: every dp_rank of the worker leaves the tree."""

    op = "remove_worker"
    ARGS: ClassVar[A.Spec] = {"worker_id": (R, A.u64)}
    worker_id: int

    def run(self, model: Any) -> None:
        model.remove_worker(self.worker_id)

    @classmethod
    def instances(cls, world: Mapping[str, Any]) -> list[Action]:
        return [cls(w) for w in sorted({w for w, _ in world["workers"]})]


@attrs.frozen
class ClearAllBlocks(Action):
    """``clear_all_blocks(worker_id)``: every dp_rank of the worker loses its blocks."""

    op = "clear_all_blocks"
    ARGS: ClassVar[A.Spec] = {"worker_id": (R, A.u64)}
    worker_id: int

    def run(self, model: Any) -> None:
        model.clear_all_blocks(self.worker_id)

    @classmethod
    def instances(cls, world: Mapping[str, Any]) -> list[Action]:
        return [cls(w) for w in sorted({w for w, _ in world["workers"]})]


@attrs.frozen
class FindMatches(Action):
    """``find_matches(local_hashes, early_exit=false)``: each worker's prefix score."""

    op = "find_matches"
    ARGS: ClassVar[A.Spec] = {"local_hashes": (R, _hashes), "early_exit": (O, A.boolean)}
    local_hashes: tuple[int, ...]
    early_exit: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"local_hashes": list(self.local_hashes), "early_exit": self.early_exit}

    def run(self, model: Any) -> list[list[int]]:
        return score_rows(model.find_matches(list(self.local_hashes), self.early_exit))

    @classmethod
    def instances(cls, world: Mapping[str, Any]) -> list[Action]:
        return [cls(tuple(p), e) for p in world["probes"] for e in (False, True)]


@attrs.frozen
class DumpTree(Action):
    """``dump_tree()``: the tree's content, one row per block a worker holds."""

    op = "dump_tree"

    def run(self, model: Any) -> list[list[Any]]:
        model._alive()
        return content_rows(model.content())


ACTIONS = Actions(NAME, (ApplyEvent, RemoveWorker, ClearAllBlocks, FindMatches, DumpTree))


def world(
    workers: int = 2,
    hashes: int = 2,
    conflict: bool = False,
    max_blocks: int = 2,
    max_removed: int = 2,
    probe_length: int = 2,
) -> dict[str, Any]:
    """A bounded world: ``workers`` worker keys, ``(0, 0), (0, 1), (1, 0), (1, 1), ...`` (two dp
    ranks of each worker id, so that Cleared and ``clear_all_blocks`` differ); block hashes
    ``1 .. hashes`` with tokens hash ``10 + hash`` (with ``conflict`` the last hash has the first
    one's tokens hash: two blocks a tree indexed by tokens cannot tell apart); every probe of
    those tokens hashes up to ``probe_length`` long."""
    ws = [(i // 2, i % 2) for i in range(workers)]
    hs = list(range(1, hashes + 1))
    tok = {h: 10 + h for h in hs}
    if conflict and hashes > 1:
        tok[hs[-1]] = tok[hs[0]]
    locals_ = sorted(set(tok.values()))
    probes = [list(p) for n in range(1, probe_length + 1) for p in itertools.product(locals_, repeat=n)]
    return {
        "workers": ws,
        "hashes": hs,
        "tokens": tok,
        "max_blocks": max_blocks,
        "max_removed": max_removed,
        "probes": probes,
    }
