"""The KV router's radix-tree indexer (semantics §4, RTREE; ``dynamo-runtime.md`` §2).

Real code: ``lib/kv-router/src/indexer/radix_tree.rs`` (``RadixTree``). The tree maps
*local* block hashes (``tokens_hash``) along paths from the root; each node records the
workers ``(worker_id, dp_rank)`` that hold it, and each worker has a lookup table from
its *sequence* hashes (``block_hash``) to nodes. The model keeps one node per block (the
real code compresses chains into edges; that is not observable through the Python API,
whose observables — the error an event raises, the tree content per worker as
``dump_tree_as_events`` reports it, and ``find_matches`` scores — the model reproduces).

Two revisions, two classes:

* :class:`CompressedRadixTree` — ``"1.6.1"`` (default): the ``ai-dynamo-runtime==1.6.1``
  binary, the conformance target, whose tree is *compressed*
  (``lib/kv-router/src/indexer/radix_tree.rs`` with ``compressed_radix.rs``): a node holds
  an edge of consecutive blocks, and a worker covers either the whole edge or a prefix of
  it (a cutoff). Compression is observable: a chain stored across events extends a leaf
  edge; a removal in the middle of an edge uncovers the rest of it for that worker (those
  hashes leave its lookup at once); a Stored walking an edge matches by local hash only.
  A Stored that lists its own parent among its blocks is rejected before anything is
  applied; Cleared clears the event's ``(worker_id, dp_rank)`` only.
* :class:`RadixTree` — ``"4276866"``: one node per block, the revision the unit-test
  vectors come from (``lib/kv-router/src/radix_tree.rs`` at commit 4276866): the
  self-referencing block is inserted as its own child before the borrow failure, later
  blocks are not applied, and Cleared clears every dp_rank of the worker.

The odd parts, kept in both: a Stored with a parent unknown *for this worker* is rejected
whole (the worker's lookup entry is still created); a Removed with unknown hashes raises
but removes the known ones; a node whose worker set becomes empty loses its children (the
worker's descendants vanish, other workers' too); a shared ancestor removed by one of two
workers leaves that worker listed on the descendants (stale, unscored); event ids are
ignored.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, Literal

import attrs

from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.events import Cleared, KvCacheEvent, Removed, Stored, StoredBlock

Revision = Literal["1.6.1", "4276866"]
Worker = tuple[int, int]  # (worker_id, dp_rank)


class ParentBlockNotFound(ModelError):
    """``KvCacheEventError::ParentBlockNotFound`` ("Failed to find parent block")."""

    id = "ParentBlockNotFound"


class BlockNotFound(ModelError):
    """``KvCacheEventError::BlockNotFound`` ("Failed to find block")."""

    id = "BlockNotFound"


class InvalidBlockSequence(ModelError):
    """``KvCacheEventError::InvalidBlockSequence`` ("Invalid block sequence")."""

    id = "InvalidBlockSequence"


# the event errors are ``Result::Err`` values the caller handles and goes on from, not panics
ParentBlockNotFound.returned = BlockNotFound.returned = InvalidBlockSequence.returned = True  # type: ignore[attr-defined]


class TreeTaskPanicked(ModelError):
    """The 1.6.1 tree's background task panicked on this request (``split_node``,
    ``lib/kv-router/src/indexer/radix_tree.rs:566``: ``Option::unwrap()`` on the lookup table of a
    worker still listed on the edge being split, whose table a Cleared or a removal dropped); the
    Python binding answers "RadixTree request was cancelled"."""

    id = "RadixTree request was cancelled"


class TreeTaskGone(ModelError):
    """Every call after the background task panicked: "RadixTree background task has shut down"."""

    id = "RadixTree background task has shut down"


@attrs.define
class Node:
    tokens_hash: int | None
    block_hash: int | None
    children: dict[int, int] = attrs.field(factory=dict)  # tokens_hash -> node id
    workers: set[Worker] = attrs.field(factory=set)


class _WorkerOps(abc.ABC):
    """What both trees do the same way: clearing or removing every dp_rank of a worker."""

    lookup: dict[Worker, dict[int, int]]

    @abc.abstractmethod
    def _clear(self, w: Worker, keep_entry: bool) -> None: ...

    @abc.abstractmethod
    def _stored(self, w: Worker, data: Stored) -> None: ...

    @abc.abstractmethod
    def _removed(self, w: Worker, data: Removed) -> None: ...

    @abc.abstractmethod
    def _cleared(self, w: Worker) -> None: ...

    gone = False  # the 1.6.1 tree's background task panicked: every later call fails

    def _alive(self) -> None:
        if self.gone:
            raise TreeTaskGone("an earlier request panicked the tree's task")

    def apply_event(self, worker_id: int, event: KvCacheEvent) -> None:
        """Apply one event of ``worker_id``; raises the event's error after any partial effect."""
        self._alive()
        w: Worker = (worker_id, event.dp_rank)
        self.lookup.setdefault(w, {})  # created even if the event then fails
        data = event.data
        if isinstance(data, Stored):
            self._stored(w, data)
        elif isinstance(data, Removed):
            self._removed(w, data)
        elif isinstance(data, Cleared):
            self._cleared(w)
        else:
            raise InvalidInput(f"not a KvCacheEventData: {data!r}")

    def clear_all_blocks(self, worker_id: int) -> None:
        """Every dp_rank of ``worker_id`` loses its blocks; the lookup entries stay (empty)."""
        self._alive()
        for w in sorted(k for k in self.lookup if k[0] == worker_id):
            self._clear(w, keep_entry=True)

    def remove_worker(self, worker_id: int) -> None:
        """Every dp_rank of ``worker_id`` loses its blocks and its lookup entry."""
        self._alive()
        for w in sorted(k for k in self.lookup if k[0] == worker_id):
            self._clear(w, keep_entry=False)


class RadixTree(_WorkerOps):
    """``RadixTree`` with one node per block (revision ``"4276866"``, the unit-test vectors'):
    ``apply_event``, ``find_matches``, ``remove_worker``, ``clear_all_blocks``. The 1.6.1
    binary is :class:`CompressedRadixTree`; :func:`make_tree` picks by revision."""

    revision: Revision = "4276866"

    def __init__(self) -> None:
        self.nodes: list[Node] = [Node(None, None)]  # node 0 is the root
        self.lookup: dict[Worker, dict[int, int]] = {}

    def clone(self) -> RadixTree:
        c = RadixTree()
        c.nodes = [Node(n.tokens_hash, n.block_hash, dict(n.children), set(n.workers)) for n in self.nodes]
        c.lookup = {w: dict(t) for w, t in self.lookup.items()}
        return c

    # ------------------------------------------------------------------ events

    def _cleared(self, w: Worker) -> None:
        self.clear_all_blocks(w[0])  # every dp_rank of the worker, in this revision

    def _stored(self, w: Worker, data: Stored) -> None:
        table = self.lookup[w]
        if data.parent_hash is None:
            cur = 0
        else:
            found = table.get(data.parent_hash)
            if found is None:
                raise ParentBlockNotFound(f"parent {data.parent_hash} unknown for worker {w}")
            cur = found
        for b in data.blocks:
            child = self.nodes[cur].children.get(b.tokens_hash)
            if child is None:
                reuse = table.get(b.block_hash)  # the worker's node for this hash, re-hung here
                if reuse is None:
                    self.nodes.append(Node(b.tokens_hash, b.block_hash))
                    reuse = len(self.nodes) - 1
                child = reuse
                self.nodes[cur].children[b.tokens_hash] = child
            if child == cur:  # the old revision's borrow failure, after the self edge went in
                raise InvalidBlockSequence(f"block {b.block_hash} is listed under itself")
            self.nodes[child].workers.add(w)
            table[b.block_hash] = child
            cur = child

    def _drop(self, w: Worker, node: int) -> None:
        n = self.nodes[node]
        n.workers.discard(w)
        if not n.workers:
            n.children.clear()

    def _removed(self, w: Worker, data: Removed) -> None:
        table = self.lookup[w]
        missing: list[int] = []
        for h in data.block_hashes:
            node = table.pop(h, None)
            if node is None:
                missing.append(h)
                continue
            self._drop(w, node)
        if missing:
            raise BlockNotFound(f"blocks {missing} unknown for worker {w}")

    def _clear(self, w: Worker, keep_entry: bool) -> None:
        for node in self.lookup.get(w, {}).values():
            self._drop(w, node)
        if keep_entry:
            self.lookup[w] = {}
        else:
            self.lookup.pop(w, None)

    # ------------------------------------------------------------------ queries

    def find_matches(self, local_hashes: list[int], early_exit: bool = False) -> dict[Worker, int]:
        """Walk the root's children by local hash; a worker scores the depth of the deepest
        node it holds with every node above it on the path."""
        self._alive()
        scores: dict[Worker, int] = {}
        cur, depth = 0, 0
        active: set[Worker] | None = None
        for h in local_hashes:
            child = self.nodes[cur].children.get(h)
            if child is None:
                break
            held = self.nodes[child].workers
            if active is None:
                active = set(held)
            else:
                for w in active - held:
                    scores[w] = depth
                active &= held
            if not active:
                break
            depth += 1
            if early_exit and len(active) == 1:
                break
            cur = child
        for w in active or ():
            scores[w] = depth
        return scores

    def content(self) -> dict[Worker, list[tuple[int | None, int, int]]]:
        """What ``dump_tree_as_events`` shows: per worker, every node reachable from the root
        that lists the worker, as ``(parent block hash or None, block hash, tokens hash)``."""
        out: dict[Worker, set[tuple[int | None, int, int]]] = {}
        seen: set[tuple[int, int]] = set()
        stack = [(0, c) for c in self.nodes[0].children.values()]
        while stack:
            parent, node = stack.pop()
            if (parent, node) in seen:
                continue
            seen.add((parent, node))
            n = self.nodes[node]
            assert n.block_hash is not None and n.tokens_hash is not None
            ph = self.nodes[parent].block_hash
            for w in n.workers:
                out.setdefault(w, set()).add((ph, n.block_hash, n.tokens_hash))
            stack.extend((node, c) for c in n.children.values())
        return {w: sorted(v, key=_triple_key) for w, v in sorted(out.items())}

    def inspect(self) -> dict[str, Any]:
        """Internal counts the unit-test vectors assert (``lookup`` sizes, node fan-out)."""
        return {
            "lookup_len": len(self.lookup),
            "lookup_size": {w: len(t) for w, t in self.lookup.items()},
        }


def _triple_key(t: tuple[int | None, int, int]) -> tuple[int, int, int]:
    return (-1 if t[0] is None else t[0], t[1], t[2])


# ----------------------------------------------------------------------------- compressed (1.6.1)


@attrs.define
class Edge:
    """A node of the compressed tree: its edge of ``(tokens_hash, block_hash)`` pairs, the
    position of each block hash on it (the last occurrence wins), the workers covering the
    whole edge and those covering a proper prefix (``cut[w] = k``: the first k blocks)."""

    edge: list[tuple[int, int]]
    full: set[Worker] = attrs.field(factory=set)
    cut: dict[Worker, int] = attrs.field(factory=dict)
    children: dict[int, int] = attrs.field(factory=dict)  # first tokens_hash of the child's edge -> node
    internal: bool = False  # once it has had children, a node is never extended as a leaf
    # block hash -> position, maintained as the real code maintains it: built with the last
    # occurrence winning, extended on append, and on a split every hash of the suffix is
    # taken out of the prefix's index (even one that also occurs in the prefix).
    pos: dict[int, int] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        if not self.pos:
            self.pos = {h: i for i, (_, h) in enumerate(self.edge)}

    def index(self, block_hash: int) -> int | None:
        return self.pos.get(block_hash)

    def covers(self, w: Worker, pos: int) -> bool:
        return w in self.full or self.cut.get(w, 0) > pos

    def cutoff(self, w: Worker) -> int:
        return len(self.edge) if w in self.full else self.cut.get(w, 0)

    def has_workers(self) -> bool:
        return bool(self.full or self.cut)

    def promote(self, w: Worker) -> None:
        self.cut.pop(w, None)
        self.full.add(w)

    def cover_prefix(self, w: Worker, k: int) -> None:
        if k <= 0 or w in self.full:
            return
        if k >= len(self.edge):
            self.promote(w)
        else:
            self.cut[w] = max(self.cut.get(w, 0), k)

    def drop(self, w: Worker) -> None:
        self.full.discard(w)
        self.cut.pop(w, None)


class CompressedRadixTree(_WorkerOps):
    """The compressed ``RadixTree`` of ``ai-dynamo-runtime==1.6.1`` (see the module docstring)."""

    revision: Revision = "1.6.1"

    def __init__(self) -> None:
        self.nodes: list[Edge] = [Edge([], internal=True)]  # node 0 is the root
        self.lookup: dict[Worker, dict[int, int]] = {}

    def clone(self) -> CompressedRadixTree:
        c = CompressedRadixTree()
        c.nodes = [Edge(list(n.edge), set(n.full), dict(n.cut), dict(n.children), n.internal) for n in self.nodes]
        for copy, n in zip(c.nodes, self.nodes, strict=True):
            copy.pos = dict(n.pos)  # as it is, even emptied by a split (the constructor would rebuild it)
        c.lookup = {w: dict(t) for w, t in self.lookup.items()}
        c.gone = self.gone
        return c

    def _new(self, blocks: Sequence[StoredBlock], w: Worker) -> int:
        self.nodes.append(Edge([(b.tokens_hash, b.block_hash) for b in blocks], {w}))
        return len(self.nodes) - 1

    def _point(self, w: Worker, blocks: Sequence[StoredBlock], node: int) -> None:
        table = self.lookup[w]
        for b in blocks:
            table[b.block_hash] = node

    def _cleared(self, w: Worker) -> None:
        self._clear(w, keep_entry=False)  # the event's (worker_id, dp_rank) only

    # Stored ------------------------------------------------------------------------

    def _stored(self, w: Worker, data: Stored) -> None:
        blocks = list(data.blocks)
        parent_hash = data.parent_hash
        if parent_hash is not None and any(b.block_hash == parent_hash for b in blocks):
            raise InvalidBlockSequence(f"store lists its parent {parent_hash} among its blocks")
        cur = 0
        if parent_hash is not None:
            found = self.lookup[w].get(parent_hash)
            if found is None:
                raise ParentBlockNotFound(f"parent {parent_hash} unknown for worker {w}")
            node = self.nodes[found]
            pos = node.index(parent_hash)
            if pos is None:
                raise ParentBlockNotFound(f"parent {parent_hash} is not on its node's edge")
            if not node.covers(w, pos):
                del self.lookup[w][parent_hash]
                raise ParentBlockNotFound(f"worker {w} no longer covers parent {parent_hash}")
            suffix = node.edge[pos + 1 :]
            pairs = [(b.tokens_hash, b.block_hash) for b in blocks]
            if len(blocks) <= len(suffix) and suffix[: len(blocks)] == pairs:
                node.cover_prefix(w, pos + 1 + len(blocks))  # the store repeats what the edge holds
                self._point(w, blocks, found)
                return
            if not node.internal and len(blocks) > len(suffix) and pairs[: len(suffix)] == suffix:
                self._append(found, w, blocks[len(suffix) :])  # extends the leaf edge
                self._point(w, blocks, found)
                return
            if not (node.edge and node.edge[-1][1] == parent_hash):
                self._split(found, pos + 1)
            cur = found
        remaining = blocks
        while remaining:
            parent = self.nodes[cur]
            child = parent.children.get(remaining[0].tokens_hash)
            if child is not None and not self.nodes[child].has_workers():
                child = None  # a node no worker holds any more is replaced (observed on 1.6.1)
            if child is None:
                if parent.edge and not parent.internal and parent.covers(w, len(parent.edge) - 1):
                    self._append(cur, w, remaining)
                    self._point(w, remaining, cur)
                    return
                new = self._new(remaining, w)
                parent.internal = True
                parent.children[remaining[0].tokens_hash] = new
                self._point(w, remaining, new)
                return
            c = self.nodes[child]
            match = 0
            for (local, _), b in zip(c.edge, remaining, strict=False):
                if local != b.tokens_hash:
                    break
                match += 1
            if match < len(c.edge):
                if match == len(remaining):
                    c.cover_prefix(w, match)
                    self._point(w, remaining, child)
                    return
                self._split(child, match)
                c.promote(w)
                self._point(w, remaining[:match], child)
                tail = remaining[match:]
                tail_node = self._new(tail, w)
                c.internal = True
                c.children[tail[0].tokens_hash] = tail_node
                self._point(w, tail, tail_node)
                return
            c.promote(w)
            self._point(w, remaining[: len(c.edge)], child)
            remaining = remaining[len(c.edge) :]
            cur = child

    def _append(self, node: int, w: Worker, blocks: Sequence[StoredBlock]) -> None:
        """Extend a leaf edge: the other full workers now cover only the old edge."""
        n = self.nodes[node]
        old = len(n.edge)
        for other in [x for x in n.full if x != w]:
            n.full.discard(other)
            n.cut[other] = old
        n.promote(w)
        for b in blocks:
            n.pos[b.block_hash] = len(n.edge)
            n.edge.append((b.tokens_hash, b.block_hash))

    def _split(self, node: int, pos: int) -> None:
        """Cut the edge at ``pos``: the suffix becomes the only child of the prefix."""
        n = self.nodes[node]
        moved = {*n.full, *(w for w, k in n.cut.items() if k > pos)}  # the workers the suffix keeps
        stale = sorted(w for w in moved if w not in self.lookup)
        if stale:  # the real split unwraps each listed worker's lookup table
            self.gone = True
            raise TreeTaskPanicked(f"split_node: worker {stale[0]} is listed on the edge but has no lookup table")
        suffix_edge = n.edge[pos:]
        n.edge = n.edge[:pos]
        for _, h in suffix_edge:
            n.pos.pop(h, None)
        suffix = Edge(suffix_edge, set(n.full), {}, n.children, n.internal)
        for w, k in list(n.cut.items()):
            if k < pos:
                continue
            del n.cut[w]
            n.full.add(w)
            if k - pos > 0:
                suffix.cut[w] = k - pos
        self.nodes.append(suffix)
        sid = len(self.nodes) - 1
        n.children = {suffix_edge[0][0]: sid}
        n.internal = True
        for w in suffix.full:
            for _, h in suffix_edge:
                self.lookup[w][h] = sid
        for w, k in suffix.cut.items():
            for _, h in suffix_edge[:k]:
                self.lookup[w][h] = sid

    # Removed / Cleared -------------------------------------------------------------

    def _removed(self, w: Worker, data: Removed) -> None:
        table = self.lookup[w]
        error = False
        dropped: set[int] = set()
        hashes = list(data.block_hashes)
        i = 0
        while i < len(hashes):
            h = hashes[i]
            i += 1
            node = table.pop(h, None)
            if node is None:
                if h not in dropped:
                    error = True
                continue
            n = self.nodes[node]
            first = n.index(h)
            if first is None:
                table[h] = node
                error = True
                continue
            low, low_hash = first, h
            if n.covers(w, first):  # consecutive hashes on the same edge go in one cut
                while i < len(hashes):
                    c = hashes[i]
                    if table.get(c) != node:
                        break
                    cpos = n.index(c)
                    if cpos is None or not n.covers(w, cpos):
                        break
                    if cpos < low:
                        low, low_hash = cpos, c
                    i += 1
            if low >= n.cutoff(w):
                stale = [low_hash]
            else:
                # The blocks the worker covered from the removed one on leave its lookup.
                # (Only those it covered: on the 1.6.1 binary a hash of the edge's uncovered
                # tail that the worker re-stored elsewhere stays in its lookup.)
                stale = [bh for _, bh in n.edge[low : n.cutoff(w)]]
                if low == 0:
                    n.drop(w)
                else:
                    n.full.discard(w)
                    n.cut[w] = low
            if not n.full:
                n.children.clear()
            for s in stale:
                table.pop(s, None)
                dropped.add(s)
        if error:
            raise BlockNotFound(f"some of {hashes} unknown for worker {w}")

    def _clear(self, w: Worker, keep_entry: bool) -> None:
        table = self.lookup.pop(w, None)
        if table is not None:
            for node in sorted(set(table.values())):
                n = self.nodes[node]
                n.drop(w)
                if not n.full:
                    n.children.clear()
        if keep_entry:
            self.lookup[w] = {}

    # queries -----------------------------------------------------------------------

    def find_matches(self, local_hashes: list[int], early_exit: bool = False) -> dict[Worker, int]:
        """Walk edges from the root; a worker scores how far along the walk it covers."""
        self._alive()
        scores: dict[Worker, int] = {}
        if not local_hashes:
            return scores
        nxt = self.nodes[0].children.get(local_hashes[0])
        active: set[Worker] = set()
        depth, pos, first = 0, 0, True
        while pos < len(local_hashes) and nxt is not None:
            n = self.nodes[nxt]
            walk = min(len(n.edge), len(local_hashes) - pos)
            m = 0
            while m < walk and n.edge[m][0] == local_hashes[pos + m]:
                m += 1
            if m == 0:
                break
            if first:
                active = set(n.full)
                for w, k in n.cut.items():
                    if min(k, m) > 0:
                        scores[w] = min(k, m)
                first = False
            else:
                for w in list(active):
                    if w in n.full:
                        continue
                    scores[w] = depth + min(n.cut[w], m) if w in n.cut else depth
                    active.discard(w)
            depth += m
            if not active or m < len(n.edge) or depth == len(local_hashes) or (early_exit and len(active) == 1):
                break
            pos += m
            nxt = n.children.get(local_hashes[pos])
        for w in active:
            scores[w] = depth
        return scores

    def content(self) -> dict[Worker, list[tuple[int | None, int, int]]]:
        """What ``dump_tree_as_events`` shows, per worker: each covered block as
        ``(parent block hash or None, block hash, tokens hash)``; subtrees with no worker
        and no children are left out."""
        out: dict[Worker, set[tuple[int | None, int, int]]] = {}
        stack: list[tuple[int, int | None]] = [(c, None) for c in self.nodes[0].children.values()]
        while stack:
            node, parent = stack.pop()
            n = self.nodes[node]
            if not n.has_workers() and not n.children:
                continue
            prev = parent
            for i, (local, h) in enumerate(n.edge):
                for w in n.full | {x for x, k in n.cut.items() if k > i}:
                    out.setdefault(w, set()).add((prev, h, local))
                prev = h
            stack.extend((c, n.edge[-1][1]) for c in n.children.values())
        return {w: sorted(v, key=_triple_key) for w, v in sorted(out.items())}

    def inspect(self) -> dict[str, Any]:
        return {"lookup_len": len(self.lookup), "lookup_size": {w: len(t) for w, t in self.lookup.items()}}


# ----------------------------------------------------------------------------- ideal


class RouterIndex(_WorkerOps):
    """The ideal indexer: what a radix tree is meant to hold, with no tree to get wrong. Each
    worker ``(worker_id, dp_rank)`` has its blocks, ``block_hash -> (parent block hash or None,
    tokens_hash)``, as the accepted Stored events minus the Removed ones, hash by hash.

    * Stored: rejected whole, nothing changed, with ``InvalidBlockSequence`` when a block would
      be its own ancestor (it names its parent, repeats a hash of the batch, or is an ancestor of
      the parent: both revisions reject the first only) and else with ``ParentBlockNotFound``
      when the worker does not hold the parent; otherwise every block is the worker's, under the
      block before it (a hash stored again moves under its new parent).
    * Removed: every named hash the worker holds goes; ``BlockNotFound`` afterwards if any was not
      held (as both revisions do). The worker's other blocks stay, under parents it may no
      longer hold (they are no longer reachable from the root for it).
    * Cleared: the event's ``(worker_id, dp_rank)`` only (as 1.6.1); ``clear_all_blocks`` and
      ``remove_worker``: every dp_rank of the worker.
    * ``find_matches``: a worker scores the longest chain of its blocks from the root whose
      tokens hashes are the query's prefix (no entry at 0); with ``early_exit`` the walk stops at
      the first depth where one worker alone is left, which scores that depth.
    """

    revision = "ideal"

    def __init__(self) -> None:
        self.lookup: dict[Worker, dict[int, tuple[int | None, int]]] = {}  # type: ignore[assignment]

    def clone(self) -> RouterIndex:
        c = RouterIndex()
        c.lookup = {w: dict(t) for w, t in self.lookup.items()}
        return c

    def _cleared(self, w: Worker) -> None:
        self._clear(w, keep_entry=False)

    def _clear(self, w: Worker, keep_entry: bool) -> None:
        self.lookup.pop(w, None)
        if keep_entry:
            self.lookup[w] = {}

    def _ancestors(self, table: dict[int, tuple[int | None, int]], h: int | None) -> set[int]:
        out: set[int] = set()
        while h is not None and h not in out:
            out.add(h)
            entry = table.get(h)
            h = None if entry is None else entry[0]
        return out

    def _stored(self, w: Worker, data: Stored) -> None:
        table = self.lookup[w]
        hashes = [b.block_hash for b in data.blocks]
        parent = data.parent_hash
        if len(set(hashes)) != len(hashes) or (parent is not None and parent in hashes):
            raise InvalidBlockSequence(f"store repeats a hash or lists its parent {parent} among {hashes}")
        if parent is not None and parent not in table:
            raise ParentBlockNotFound(f"parent {parent} unknown for worker {w}")
        if self._ancestors(table, parent) & set(hashes):
            raise InvalidBlockSequence(f"store under {parent} would make one of {hashes} its own ancestor")
        prev = parent
        for b in data.blocks:
            table[b.block_hash] = (prev, b.tokens_hash)
            prev = b.block_hash

    def _removed(self, w: Worker, data: Removed) -> None:
        table = self.lookup[w]
        missing = [h for h in data.block_hashes if table.pop(h, None) is None]
        if missing:
            raise BlockNotFound(f"blocks {missing} unknown for worker {w}")

    def chain(self, w: Worker, local_hashes: Sequence[int]) -> int:
        """The longest chain of ``w``'s blocks from the root along ``local_hashes``."""
        table = self.lookup.get(w, {})
        kids: dict[int | None, list[tuple[int, int]]] = {}
        for h, (p, t) in table.items():
            kids.setdefault(p, []).append((h, t))
        best = 0
        frontier: list[int | None] = [None]
        for depth, want in enumerate(local_hashes):
            frontier = [h for p in frontier for h, t in kids.get(p, ()) if t == want]
            if not frontier:
                break
            best = depth + 1
        return best

    def find_matches(self, local_hashes: list[int], early_exit: bool = False) -> dict[Worker, int]:
        chains = {w: self.chain(w, local_hashes) for w in sorted(self.lookup)}
        scores = {w: c for w, c in chains.items() if c > 0}
        if early_exit:
            for d in range(1, len(local_hashes) + 1):
                alive = [w for w, c in scores.items() if c >= d]
                if len(alive) <= 1:
                    if alive:
                        scores[alive[0]] = d
                    break
        return scores

    def content(self) -> dict[Worker, list[tuple[int | None, int, int]]]:
        return {
            w: sorted(((p, h, t) for h, (p, t) in table.items()), key=_triple_key)
            for w, table in sorted(self.lookup.items())
            if table
        }

    def inspect(self) -> dict[str, Any]:
        return {"lookup_len": len(self.lookup), "lookup_size": {w: len(t) for w, t in self.lookup.items()}}


AnyTree = RadixTree | CompressedRadixTree
AnyIndex = RadixTree | CompressedRadixTree | RouterIndex


def dead_nodes(tree: AnyIndex) -> int:
    """Nodes reachable from the root that hold no worker and have no descendant that does (the
    per-block tree of 4276866 keeps a node whose last worker left attached to its parent; the
    compressed tree prunes on the walk, not on removal). The ideal index has no nodes: 0."""
    if isinstance(tree, RouterIndex):
        return 0
    nodes: list[Any] = tree.nodes
    seen: set[int] = set()
    stack = list(nodes[0].children.values())
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(nodes[n].children.values())
    live = {n for n in seen if (nodes[n].workers if isinstance(tree, RadixTree) else nodes[n].has_workers())}
    grew = True
    while grew:
        grew = False
        for n in seen - live:
            if any(c in live for c in nodes[n].children.values()):
                live.add(n)
                grew = True
    return len(seen - live)


def lookup_hashes(tree: AnyIndex) -> dict[Worker, list[int]]:
    """Each worker's lookup table, as the sorted block hashes it maps (what a per-worker size counts)."""
    tables: dict[Worker, dict[int, Any]] = tree.lookup
    return {w: sorted(t) for w, t in sorted(tables.items()) if t}


COMPRESSED, PER_BLOCK = "compressed_tree_1_6_1", "per_block_tree_4276866"


def tree_for(quirks: frozenset[str] | set[str]) -> AnyIndex:
    """The indexer a quirk set stands for: the compressed tree of the 1.6.1 binary when it has
    ``compressed_tree_1_6_1`` (the per-block quirk then has no effect), the per-block tree of
    4276866 when it has ``per_block_tree_4276866``, the ideal :class:`RouterIndex` otherwise."""
    if COMPRESSED in quirks:
        return CompressedRadixTree()
    if PER_BLOCK in quirks:
        return RadixTree()
    return RouterIndex()


def make_tree(revision: Revision = "1.6.1") -> AnyTree:
    """The tree of a revision: compressed for the 1.6.1 binary, per block for 4276866."""
    if revision == "1.6.1":
        return CompressedRadixTree()
    if revision == "4276866":
        return RadixTree()
    raise InvalidInput(f"revision must be '1.6.1' or '4276866', got {revision!r}")
