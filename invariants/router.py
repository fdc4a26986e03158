"""Invariants of the router's indexer (``lib/kv-router/src/indexer/radix_tree.rs``): its own
structure, checked after every step against the event stream it was given.

The monitor keeps the stream's ghost: the ideal index (:class:`~kvmodel.model.router.RouterIndex`)
fed with the same operations, so the ghost knows, for every worker ``(worker_id, dp_rank)``, the
blocks Stored minus Removed hash by hash, which events must be rejected and with what, and each
worker's longest chain along a query. The invariants compare the indexer with it:

* what it says of an event (accepted, or rejected with the documented error) and of a query
  (``find_matches`` scores) — from its answers alone;
* its content (``dump_tree``: one row per block a worker holds) and its shape (no block its own
  ancestor) — from a dump or a state;
* its lookup tables and retained nodes — from a state that shows them.

The tree models' own structures are read through :class:`TreeView`, the shape an implementation's
state takes in invariant mode (``docs/contracts.md``).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import attrs

from kvmodel.invariants.core import Invariant, MonitorFault, StepContext, Witness
from kvmodel.model.errors import ModelError
from kvmodel.model.events import Removed, Stored
from kvmodel.model.router import RouterIndex, Worker, dead_nodes, lookup_hashes

C = "kv_router_radix_tree"
Triple = tuple[int | None, int, int]


@attrs.frozen
class TreeView:
    """What the invariants read of an indexer's state: the content per worker (sorted triples
    ``(parent or None, block_hash, tokens_hash)``), and, where known, each worker's lookup hashes
    and the number of dead nodes (``None``: not shown)."""

    content: Mapping[Worker, tuple[Triple, ...]]
    lookup: Mapping[Worker, tuple[int, ...]] | None = None
    dead: int | None = None


def view(model: Any) -> TreeView | None:
    """The view of a model tree (or the view itself, or ``None`` when nothing is shown)."""
    if model is None or isinstance(model, TreeView):
        return model
    return TreeView(
        {w: tuple(v) for w, v in model.content().items()},
        {w: tuple(v) for w, v in lookup_hashes(model).items()},
        dead_nodes(model),
    )


class RouterMonitor:
    """The stream's ghost (the ideal index fed with the same operations) and the step's faults."""

    def __init__(self) -> None:
        self.ghost = RouterIndex()
        self.faults: dict[str, str] = {}
        self.partial_remove = False  # the step's Removed removed held hashes and named unknown ones
        self.parent_rejected = False  # the step's Stored named a parent the worker does not hold

    def copy(self) -> RouterMonitor:
        m = RouterMonitor()
        m.ghost = self.ghost.clone()
        return m

    def key(self) -> tuple[Any, ...]:
        return tuple((w, tuple(sorted(t.items(), key=_item_key))) for w, t in sorted(self.ghost.lookup.items()) if t)

    def observe(self, op: str, action: Any, result: Any, error_id: str | None) -> None:
        """Apply the step to the ghost; record a fault where the indexer's answer is not the
        documented one (``error_id``: the error it raised, ``None`` when it accepted)."""
        self.faults = {}
        self.partial_remove = self.parent_rejected = False
        g = self.ghost
        if op in ("apply_event", "remove_worker", "clear_all_blocks"):
            before = {w: set(t) for w, t in g.lookup.items()}
            want: str | None = None
            try:
                action.run(g)
            except ModelError as e:
                want = str(e.id)
            if op == "apply_event":
                data = action.event.data
                w = (action.worker_id, action.event.dp_rank)
                if isinstance(data, Removed) and want is not None:
                    self.partial_remove = bool(before.get(w, set()) & set(data.block_hashes))
                self.parent_rejected = isinstance(data, Stored) and want == "ParentBlockNotFound"
            if error_id != want:
                what = "accepted it" if error_id is None else f"raised {error_id}"
                doc = "acceptance" if want is None else want
                self.faults["router.rejections_as_documented"] = (
                    f"{op} {_short(action)}: the indexer {what}, the stream calls for {doc}"
                )
        elif op == "find_matches" and error_id is None:
            self.judge_scores(action, result)

    def judge_scores(self, action: Any, result: Any) -> None:
        """Record a fault when ``result`` (score rows) is not the scores the stream calls for on
        ``action``'s query (``local_hashes``, ``early_exit``)."""
        got = _score_map(result)
        if got is None:
            self.faults["router.scores_longest_chain"] = f"find_matches answered {result!r:.120}, not score rows"
            return
        q = list(action.local_hashes)
        chains = {w: c for w in sorted(self.ghost.lookup) if (c := self.ghost.chain(w, q)) > 0}
        if not action.early_exit:
            if got != chains:
                self.faults["router.scores_longest_chain"] = (
                    f"find_matches({q}) scored {_fmt(got)}; the longest stored chains are {_fmt(chains)}"
                )
        elif set(got) != set(chains) or any(not 0 < n <= chains[w] for w, n in got.items()):
            self.faults["router.scores_longest_chain"] = (
                f"find_matches({q}, early_exit) scored {_fmt(got)}: not within the longest stored chains {_fmt(chains)}"
            )


def _item_key(item: tuple[int, tuple[int | None, int]]) -> tuple[int, int, int]:
    h, (p, t) = item
    return (h, -1 if p is None else p, t)


def _short(action: Any) -> str:
    return str(action.to_json())[:160]


def _fmt(scores: Mapping[Worker, int]) -> str:
    return "{" + ", ".join(f"{w[0]}:{w[1]}={n}" for w, n in sorted(scores.items())) + "}"


def _score_map(result: Any) -> dict[Worker, int] | None:
    if not isinstance(result, list):
        return None
    out: dict[Worker, int] = {}
    for row in result:
        if not (
            isinstance(row, list) and len(row) == 3 and all(isinstance(x, int) and not isinstance(x, bool) for x in row)
        ):
            return None
        out[(row[0], row[1])] = row[2]
    return out


def _ghost_content(ctx: StepContext) -> dict[Worker, tuple[Triple, ...]]:
    return {w: tuple(v) for w, v in ctx.monitor.ghost.content().items()}


def _content_matches(ctx: StepContext) -> str | None:
    v = view(ctx.model)
    if v is None:
        return None
    want = _ghost_content(ctx)
    got = {w: tuple(t) for w, t in v.content.items() if t}
    if got == want:
        return None
    for w in sorted(set(got) | set(want)):
        a, b = set(got.get(w, ())), set(want.get(w, ()))
        if a != b:
            extra, lost = sorted(a - b, key=str), sorted(b - a, key=str)
            return (
                f"worker {w[0]}:{w[1]}: the tree holds {extra or 'nothing'} the stream does not, "
                f"and lacks {lost or 'nothing'} the stream Stored and did not Remove "
                "(rows are (parent, block_hash, tokens_hash))"
            )
    return "the content differs from the stream"  # pragma: no cover - the loop finds the worker


def _acyclic(ctx: StepContext) -> str | None:
    v = view(ctx.model)
    if v is None:
        return None
    for w, triples in sorted(v.content.items()):
        parents: dict[int, set[int | None]] = {}
        for p, h, _ in triples:
            parents.setdefault(h, set()).add(p)
        for h in sorted(parents):
            seen: set[int] = set()
            todo: list[int | None] = list(parents[h])
            while todo:
                p = todo.pop()
                if p is None or p in seen:
                    continue
                if p == h:
                    return f"worker {w[0]}:{w[1]}: block {h} is its own ancestor in the tree"
                seen.add(p)
                todo.extend(parents.get(p, ()))
    return None


def _lookup_matches(ctx: StepContext) -> str | None:
    v = view(ctx.model)
    if v is None or v.lookup is None:
        return None
    for w in sorted(set(v.lookup) | set(v.content)):
        held = sorted({h for _, h, _ in v.content.get(w, ())})
        look = sorted(set(v.lookup.get(w, ())))
        if held != look:
            return (
                f"worker {w[0]}:{w[1]}: its lookup has {len(look)} hashes {look}, the tree shows it holding "
                f"{len(held)} {held} (a per-worker size counts the lookup)"
            )
    return None


def _no_dead_nodes(ctx: StepContext) -> str | None:
    v = view(ctx.model)
    if v is None or v.dead is None or v.dead == 0:
        return None
    return f"{v.dead} node(s) hold no worker and have no descendant that does, yet stay in the tree"


INVARIANTS: tuple[Invariant, ...] = (
    Invariant(
        "router.rejections_as_documented",
        C,
        "step",
        "An event is rejected exactly when the stream makes it invalid, with the documented error: a "
        "Stored naming a parent the worker does not hold (ParentBlockNotFound) or making a block its own "
        "ancestor (InvalidBlockSequence), a Removed naming a hash the worker does not hold (BlockNotFound, "
        "after removing the ones it holds); worker removal and clearing always succeed.",
        MonitorFault("router.rejections_as_documented"),
        witnesses=("router.w.parent_rejected", "router.w.partial_remove"),
        needs=("events",),
    ),
    Invariant(
        "router.scores_longest_chain",
        C,
        "step",
        "find_matches scores each worker with the longest chain of its stored blocks from the root "
        "along the query (no entry at 0); with early_exit no score exceeds it.",
        MonitorFault("router.scores_longest_chain"),
        witnesses=("router.w.shared_score",),
        needs=("events",),
    ),
    Invariant(
        "router.content_matches_stream",
        C,
        "state",
        "Per worker and dp_rank, the tree's content is the Stored events minus the Removed ones, hash by "
        "hash, each block under the parent it was Stored with.",
        _content_matches,
        witnesses=("router.w.shared_block", "router.w.orphan_kept"),
        needs=("events", "dump"),
    ),
    Invariant(
        "router.acyclic",
        C,
        "state",
        "No block is its own ancestor in the tree.",
        _acyclic,
        witnesses=("router.w.deep_chain",),
        needs=("events", "dump"),
    ),
    Invariant(
        "router.lookup_matches_content",
        C,
        "state",
        "Each worker's lookup holds exactly the hashes the tree shows it holding: its size is its number "
        "of blocks, and no entry points at a node cut off from the root.",
        _lookup_matches,
        witnesses=("router.w.orphan_kept",),
        needs=("events", "tree"),
    ),
    Invariant(
        "router.no_dead_nodes",
        C,
        "state",
        "No node stays in the tree without a worker or a descendant that has one.",
        _no_dead_nodes,
        witnesses=("router.w.partial_remove",),
        needs=("events", "tree"),
    ),
)


def _shared_block(c: StepContext) -> bool:
    tables = [set(t) for t in c.monitor.ghost.lookup.values()]
    return any(a & b for a, b in itertools.combinations(tables, 2))


def _orphan_kept(c: StepContext) -> bool:
    for t in c.monitor.ghost.lookup.values():
        if any(p is not None and p not in t for p, _ in t.values()):
            return True
    return False


def _deep_chain(c: StepContext) -> bool:
    for t in c.monitor.ghost.lookup.values():
        for p, _ in t.values():
            if p is not None and p in t and t[p][0] is None:
                return True
    return False


WITNESSES: tuple[Witness, ...] = (
    Witness(
        "router.w.parent_rejected",
        C,
        "A Stored is rejected: its worker does not hold its parent.",
        lambda c: c.monitor.parent_rejected,
    ),
    Witness(
        "router.w.partial_remove",
        C,
        "A Removed names hashes its worker holds and one it does not.",
        lambda c: c.monitor.partial_remove,
    ),
    Witness(
        "router.w.shared_score",
        C,
        "find_matches scores two workers.",
        lambda c: c.op == "find_matches" and isinstance(c.result, list) and len(c.result) >= 2,
    ),
    Witness("router.w.shared_block", C, "Two workers hold the same block hash.", _shared_block),
    Witness(
        "router.w.orphan_kept",
        C,
        "A worker holds a block whose parent it no longer holds.",
        _orphan_kept,
    ),
    Witness("router.w.deep_chain", C, "A worker holds a chain of two blocks from the root.", _deep_chain),
)
