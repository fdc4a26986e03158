"""Correct implementations of revisions kvmodel does not model, written from the contract
(docs/contracts.md) without kvmodel's model code: fixtures that invariant mode must pass and
equality mode must fail (each differs from every modelled revision somewhere legitimately).

``KvManagerPromoteFixed`` — the old mocker KV manager as cc4c3516b (#3833) left Promote: a
Promote takes a partial held exactly once (any other count is refused, with no trace), adds one
reference to a full block already active or reactivates a cached one, and stores only a hash that
is new; besides, it publishes one Store per new full block, at once, where the seed batches a
run into one Store after the loop, and its prefill cost is the longest resident prefix
(d22ca5231). It can plant one defect (``bug``) for the tests.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

Block = tuple[str, Any]  # ("F", hash) or ("P", name)


def _block(obj: dict[str, Any]) -> Block:
    ((k, v),) = obj.items()
    return (k, v)


def _json(b: Block) -> dict[str, Any]:
    return {b[0]: b[1]}


class KvManagerPromoteFixed:
    """See the module docstring. ``bug``: ``None``, or one planted defect —
    ``"prefill_any_resident"`` (every resident block counts as cached),
    ``"store_batch_parent"`` (every Store of a Use names the Use's first predecessor),
    ``"deref_silently"`` (a Deref of a block not held is ignored)."""

    operations = None

    def __init__(self, bug: str | None = None, snapshot: bool = True) -> None:
        self.bug, self.snapshot = bug, snapshot
        self.name = "KV manager, Promote as in cc4c3516b" + (f" (bug {bug})" if bug else "")

    def reset(self, config: dict[str, Any]) -> None:
        self.cap, self.bs, self.channel = config["max_capacity"], config["block_size"], config["channel"]
        self.active: dict[Block, int] = {}
        self.cached: list[Block] = []  # inactive, least recently released first
        self.events: list[dict[str, Any]] = []

    # -- helpers
    def resident(self, b: Block) -> bool:
        return b in self.active or b in self.cached

    def emit(self, kind: str, blocks: list[Any], parent: Any = None) -> None:
        if self.channel and blocks:
            body: dict[str, Any] = {"blocks": blocks}
            if kind == "Store":
                body["parent_hash"] = parent
            self.events.append({kind: body})

    def state(self) -> dict[str, Any]:
        key = lambda b: (0 if b[0] == "F" else 1, str(b[1]))  # noqa: E731
        return {
            "active": [[_json(b), n] for b, n in sorted(self.active.items(), key=lambda x: key(x[0]))],
            "inactive": [_json(b) for b in self.cached],
            "all_blocks": [_json(b) for b in sorted({*self.active, *self.cached}, key=key)],
        }

    def answer(self, returns: Any = None, error: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"error": error} if error else {"returns": returns}
        out["events"], self.events = self.events, []
        if self.snapshot:
            out["state"] = self.state()
        return out

    # -- operations
    def step(self, op: str, args: Any) -> dict[str, Any]:
        if op == "process":
            ((kind, body),) = args.items()
            return getattr(self, kind.lower())(body)
        if op == "probe_new_blocks":
            return self.answer(sum(not self.resident(_block(b)) for b in args["blocks"]))
        if op == "current_capacity":
            return self.answer(len(self.active) + len(self.cached))
        if op == "num_active_blocks":
            return self.answer(len(self.active))
        if op == "num_inactive_blocks":
            return self.answer(len(self.cached))
        if op == "get_prefill_cost":
            blocks = [_block(b) for b in args["unique_blocks"]]
            if self.bug == "prefill_any_resident":
                hit = sum(self.resident(b) for b in blocks)
            else:
                hit = 0
                while hit < len(blocks) and self.resident(blocks[hit]):
                    hit += 1
            n = args["num_input_tokens"]
            return self.answer({"new_blocks": len(blocks) - hit, "new_tokens": n - min(hit * self.bs, n)})
        raise ValueError(f"unknown operation {op}")

    def use(self, body: list[Any]) -> dict[str, Any]:
        blocks = [_block(b) for b in body]
        if any(b[0] == "P" for b in blocks[:-1]):
            return self.answer(error="PartialNotLast")
        saved = (dict(self.active), list(self.cached))
        for i, b in enumerate(blocks):
            if b in self.active:
                self.active[b] += 1
                continue
            if b in self.cached:
                self.cached.remove(b)
                self.active[b] = 1
                continue
            if len(self.active) + len(self.cached) >= self.cap:
                if not self.cached:
                    self.active, self.cached = saved
                    self.events = []
                    return self.answer(False)
                gone = self.cached.pop(0)
                if gone[0] == "F":
                    self.emit("Remove", [gone[1]])
            self.active[b] = 1
            if b[0] == "F":
                parent = blocks[i - 1][1] if i > 0 else None
                if self.bug == "store_batch_parent":
                    first_new = next(j for j, x in enumerate(blocks) if x == b)
                    parent = blocks[0][1] if first_new > 0 else None
                self.emit("Store", [b[1]], parent)
        return self.answer(True)

    def deref(self, body: list[Any]) -> dict[str, Any]:
        blocks = [_block(b) for b in body]
        need = Counter(blocks)
        if self.bug != "deref_silently" and any(self.active.get(b, 0) < n for b, n in need.items()):
            return self.answer(error="DerefNotHeld")
        for b in reversed(blocks):
            if b not in self.active:
                continue
            self.active[b] -= 1
            if self.active[b] == 0:
                del self.active[b]
                if b[0] == "F":
                    self.cached.append(b)
        return self.answer(True)

    def destroy(self, body: list[Any]) -> dict[str, Any]:
        blocks = [_block(b) for b in body]
        if any(self.active.get(b, 0) < n for b, n in Counter(blocks).items()):
            return self.answer(error="DestroyNotActive")
        gone = []
        for b in reversed(blocks):
            self.active[b] -= 1
            if self.active[b] == 0:
                del self.active[b]
                if b[0] == "F":
                    gone.append(b[1])
        gone.reverse()
        self.emit("Remove", gone)
        return self.answer(True)

    def promote(self, body: dict[str, Any]) -> dict[str, Any]:
        partial, full = ("P", body["uuid"]), ("F", body["hash"])
        parent = body.get("parent_hash")
        if self.active.get(partial) != 1:
            return self.answer(error="PromoteMissing")
        if parent is not None and (parent == body["hash"] or not self.resident(("F", parent))):
            return self.answer(error="PromoteParentUnknown")
        del self.active[partial]
        if full in self.active:
            self.active[full] += 1
        elif full in self.cached:
            self.cached.remove(full)
            self.active[full] = 1
        else:
            self.active[full] = 1
            self.emit("Store", [body["hash"]], parent)
        return self.answer(True)


class OneBlockPerStored:
    """A G1 publisher that announces one block per Stored (as several upstream publishers do):
    the ``inner`` adapter's answers with every Stored of n blocks split into n Storeds, each
    naming the block before it as parent, and the event ids renumbered to stay consecutive. The
    router's view is the same, so it is correct; every multi-block Stored differs from the
    model's. ``bug="batch_parent"``: each piece names the batch's parent (a real publisher bug)."""

    operations = None

    def __init__(self, inner: Any, bug: str | None = None) -> None:
        self.inner, self.bug = inner, bug
        self.name = "one block per Stored" + (f" (bug {bug})" if bug else "")

    def reset(self, config: dict[str, Any]) -> None:
        self.inner.reset(config)
        self.next_id = 0

    def step(self, op: str, args: Any) -> dict[str, Any]:
        out = dict(self.inner.step(op, args))
        events = []
        for e in out.get("events", []):
            stored = e["data"].get("stored") if isinstance(e["data"], dict) else None
            pieces = [e["data"]]
            if stored is not None:
                parent, pieces = stored["parent_hash"], []
                for b in stored["blocks"]:
                    pieces.append({"stored": {**stored, "parent_hash": parent, "blocks": [b]}})
                    if self.bug != "batch_parent":
                        parent = b["block_hash"]
            for data in pieces:
                events.append({**e, "event_id": self.next_id, "data": data})
                self.next_id += 1
        out["events"] = events
        return out


class TreeRouter:
    """A router indexer written from the contract, as a tree: one node per (parent node, tokens
    hash, block hash), each with the workers that hold it, a lookup table per worker
    ``(worker_id, dp_rank)`` from block hash to node, and pruning of nodes no worker holds and no
    held node hangs below. It removes the known hashes of a partly invalid Removed, rejects a
    Stored that would make a block its own ancestor, keeps other workers' blocks below a removed
    one, and clears only the Cleared event's dp_rank: correct, and unlike the 1.6.1 binary. It
    answers ``state`` (content, lookup, dead nodes) when ``snapshot``.

    ``bug``: ``None`` or one planted defect — ``"remove_stops_at_unknown"`` (a Removed stops at its
    first unknown hash), ``"self_parent_accepted"`` (a Stored listing its parent is applied),
    ``"score_plus_one"``, ``"drop_subtree"`` (a node whose last worker left takes its subtree with
    it, every worker's), ``"stale_lookup"`` (a Removed leaves the lookup entry), ``"no_prune"``
    (nodes no worker holds stay)."""

    operations = None

    def __init__(self, bug: str | None = None, snapshot: bool = False) -> None:
        self.bug, self.snapshot = bug, snapshot
        self.name = "tree router" + (f" (bug {bug})" if bug else "")

    def reset(self, config: dict[str, Any]) -> None:
        # node id -> [parent id | None, block hash, tokens hash, workers, children {(t, h): id}]
        self.nodes: dict[int, list[Any]] = {0: [None, None, None, set(), {}]}
        self.look: dict[tuple[int, int], dict[int, int]] = {}
        self.next = 1

    def answer(self, returns: Any = None, error: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"error": error} if error else {"returns": returns}
        out["events"] = []
        if self.snapshot:
            out["state"] = self.state()
        return out

    # -- tree
    def _prune(self, n: int) -> None:
        while n != 0 and not self.nodes[n][3] and not self.nodes[n][4] and self.bug != "no_prune":
            parent, h, t = self.nodes[n][0], self.nodes[n][1], self.nodes[n][2]
            del self.nodes[parent][4][(t, h)]
            del self.nodes[n]
            n = parent

    def _drop(self, w: tuple[int, int], h: int) -> None:
        n = self.look[w][h]
        if self.bug != "stale_lookup":
            del self.look[w][h]
        if n not in self.nodes:
            return
        self.nodes[n][3].discard(w)
        if self.bug == "drop_subtree" and not self.nodes[n][3]:
            todo = list(self.nodes[n][4].values())
            self.nodes[n][4] = {}
            while todo:
                c = todo.pop()
                todo += list(self.nodes[c][4].values())
                del self.nodes[c]
        self._prune(n)

    def _alive(self, n: int) -> bool:
        return bool(self.nodes[n][3]) or any(self._alive(c) for c in self.nodes[n][4].values())

    def state(self) -> dict[str, Any]:
        rows, look = [], []
        for n, (parent, h, t, workers, _) in self.nodes.items():
            if n == 0:
                continue
            ph = None if parent == 0 else self.nodes[parent][1]
            rows += [[w, r, ph, h, t] for w, r in workers]
        for (w, r), table in self.look.items():
            look += [[w, r, h] for h in table]
        dead = sum(1 for n in self.nodes if n != 0 and not self._alive(n))
        key = lambda x: [(-1 if v is None else v) for v in x]  # noqa: E731
        return {"content": sorted(rows, key=key), "lookup": sorted(look), "dead_nodes": dead}

    # -- operations
    def step(self, op: str, args: Any) -> dict[str, Any]:
        if op == "apply_event":
            ev = args["event"]
            w = (args["worker_id"], ev.get("dp_rank", 0))
            data = ev["data"]
            if data == "cleared":
                for h in list(self.look.get(w, {})):
                    self._drop(w, h)
                self.look.pop(w, None)
                return self.answer()
            if "removed" in data:
                return self.removed(w, data["removed"]["block_hashes"])
            return self.stored(w, data["stored"]["parent_hash"], data["stored"]["blocks"])
        if op in ("remove_worker", "clear_all_blocks"):
            for w in [k for k in self.look if k[0] == args["worker_id"]]:
                for h in list(self.look[w]):
                    self._drop(w, h)
                self.look.pop(w)
            return self.answer()
        if op == "find_matches":
            return self.answer(self.find(list(args["local_hashes"]), bool(args.get("early_exit", False))))
        if op == "dump_tree":
            return self.answer(self.state()["content"])
        raise ValueError(f"unknown operation {op}")

    def stored(self, w: tuple[int, int], parent: int | None, blocks: list[dict[str, Any]]) -> dict[str, Any]:
        table = self.look.setdefault(w, {})
        hashes = [b["block_hash"] for b in blocks]
        if len(set(hashes)) != len(hashes) or (parent in hashes and self.bug != "self_parent_accepted"):
            return self.answer(error="InvalidBlockSequence")
        if parent is not None and (parent not in table or table[parent] not in self.nodes):
            return self.answer(error="ParentBlockNotFound")
        up, n = set(), (table[parent] if parent is not None else 0)
        while n != 0 and table.get(self.nodes[n][1]) == n:  # the worker's own chain above the parent
            up.add(self.nodes[n][1])
            n = self.nodes[n][0]
        if up & set(hashes) and self.bug != "self_parent_accepted":
            return self.answer(error="InvalidBlockSequence")
        cur = table[parent] if parent is not None else 0
        for b in blocks:
            h, t = b["block_hash"], b["tokens_hash"]
            if h in table:
                self._drop(w, h)  # stored again: it moves under its new parent
            if cur not in self.nodes:  # the parent node went with the move (a self-parent bug)
                cur = 0
            child = self.nodes[cur][4].get((t, h))
            if child is None:
                child = self.next
                self.next += 1
                self.nodes[child] = [cur, h, t, set(), {}]
                self.nodes[cur][4][(t, h)] = child
            self.nodes[child][3].add(w)
            table[h] = child
            cur = child
        return self.answer()

    def removed(self, w: tuple[int, int], hashes: list[int]) -> dict[str, Any]:
        table = self.look.setdefault(w, {})
        missing = False
        for h in hashes:
            if h not in table:
                missing = True
                if self.bug == "remove_stops_at_unknown":
                    break
                continue
            self._drop(w, h)
        return self.answer(error="BlockNotFound" if missing else None)

    def chain(self, w: tuple[int, int], q: list[int]) -> int:
        best, frontier = 0, [0]
        for d, want in enumerate(q):
            frontier = [
                c for n in frontier for (t, _), c in self.nodes[n][4].items() if t == want and w in self.nodes[c][3]
            ]
            if not frontier:
                break
            best = d + 1
        return best

    def find(self, q: list[int], early_exit: bool) -> list[list[int]]:
        workers = sorted({w for n in self.nodes.values() for w in n[3]})
        scores = {w: c for w in workers if (c := self.chain(w, q)) > 0}
        if early_exit:
            for d in range(1, len(q) + 1):
                alive = [w for w, c in scores.items() if c >= d]
                if len(alive) <= 1:
                    if alive:
                        scores[alive[0]] = d
                    break
        plus = 1 if self.bug == "score_plus_one" else 0
        return [[w, r, n + plus] for (w, r), n in sorted(scores.items())]
