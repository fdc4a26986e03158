"""A worked example: *your* KV router indexer, checked against kvmodel's invariants.

``MyRouterAdapter`` is a radix-tree indexer of KV events (what ``lib/kv-router/src/indexer/
radix_tree.rs`` does for Dynamo's router) written the way a user would write one, from the contract
in ``docs/contracts.md``: one node per (parent node, tokens hash, block hash), each with the
workers ``(worker_id, dp_rank)`` that hold it, a lookup table per worker from block hash to node,
and pruning of nodes no worker holds and no held node hangs below. It removes the known hashes of a
partly invalid Removed, rejects a Stored that would make a block its own ancestor, keeps other
workers' blocks below a removed one and clears only the Cleared event's dp_rank: correct, and
unlike the 1.6.1 binary, so it passes invariant mode (``check="invariants"``) and fails equality
with the faithful model. ``BUGS`` lists planted mistakes (``MyRouterAdapter(bug=...)``), each of
the kind one of the router's invariants exists for.

Run it: ``python examples/my_router.py``.
"""

from __future__ import annotations

from typing import Any

BUGS = {
    "remove_stops_at_unknown": "a Removed stops at its first unknown hash (the rest of the batch stays)",
    "self_parent_accepted": "a Stored that lists its parent among its blocks is applied",
    "score_plus_one": "find_matches scores one block too many",
    "drop_subtree": "a node whose last worker left takes its subtree, every worker's, with it",
    "stale_lookup": "a Removed leaves the worker's lookup entry behind",
    "no_prune": "nodes no worker holds stay in the tree",
}


class MyRouterAdapter:
    """The tree and its adapter in one (the contract's operations are the tree's own calls).
    ``snapshot``: answer ``state`` (content, lookup, dead nodes) with every step."""

    operations = None

    def __init__(self, bug: str | None = None, snapshot: bool = False) -> None:
        self.bug, self.snapshot = bug, snapshot
        self.name = f"MyRouter(bug={bug})" if bug else "MyRouter"

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


if __name__ == "__main__":
    from kvmodel.api import check_implementation

    print(check_implementation(MyRouterAdapter(snapshot=True), "router", check="invariants").explain())
    print(check_implementation(MyRouterAdapter(), "router", quirks="faithful").explain().splitlines()[0])
    for bug in BUGS:
        rep = check_implementation(MyRouterAdapter(bug, snapshot=True), "router", check="invariants")
        print(rep.explain().splitlines()[0])
