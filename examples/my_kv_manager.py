"""A worked example for ``docs/api.md``: *your* block manager, checked against kvmodel.

``MyKvManager`` is a small block pool written the way a user would write one — plain dicts
and an ``OrderedDict`` for the LRU, no kvmodel imports — with the semantics of the Dynamo
mocker's KV manager as it should be (the ideal model: failed operations leave no trace,
Destroy respects reference counts, Store names each new run's parent). ``MyAdapter`` is
the only kvmodel-specific part: it translates the trace-format operations to calls and
reports what happened. ``BUGS`` lists seeded mistakes (``MyKvManager(bug=...)``) that the
differential check finds, so the example also shows what a failure looks like.

Run it: ``python examples/my_kv_manager.py`` (or the test ``stateful_tests/test_api.py``).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

Block = tuple[str, Any]  # ("F", sequence hash) or ("P", uuid)

BUGS = {
    "destroy_drops_all_references": "Destroy frees a block even when others still hold it",
    "no_rollback_on_full": "a Use that runs out of space keeps the blocks it already took",
    "evict_most_recent": "the LRU evicts the most recently freed block",
    "partial_anywhere": "a Use may hold a partial block before its last entry",
    "full_one_early": "the pool counts itself full one block early",
    "evict_silently": "an evicted block announces no Remove",
    "store_without_parent": "a Store never names its parent",
    "reuse_keeps_cached_copy": "a Use of a cached block leaves it in the LRU as well",
    "deref_caches_partials": "a released partial block goes to the LRU like a full one",
    "destroy_silently": "a destroyed full block announces no Remove",
    "promote_keeps_partial": "Promote leaves the partial block behind",
    "promote_store_without_parent": "the Store of a Promote never names its parent",
    "probe_counts_resident": "probe_new_blocks counts the blocks that are already there",
    "prefill_without_block_size": "get_prefill_cost subtracts one token per cached block",
    "capacity_counts_active_only": "current_capacity leaves the cached blocks out",
    "inactive_off_by_one": "num_inactive_blocks is one short when anything is cached",
}


class Rejected(Exception):
    """An operation the pool refuses; ``kind`` names the reason."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class MyKvManager:
    """A reference-counted block pool with an LRU of freed full blocks and Store/Remove events."""

    def __init__(self, capacity: int, bug: str | None = None) -> None:
        self.capacity = capacity
        self.bug = bug
        self.refs: dict[Block, int] = {}  # blocks in use -> reference count
        self.lru: OrderedDict[Block, None] = OrderedDict()  # freed full blocks, oldest first
        self.events: list[tuple[str, list[int], int | None]] = []

    # -- helpers
    def _snapshot(self) -> tuple[Any, ...]:
        return dict(self.refs), OrderedDict(self.lru), len(self.events)

    def _restore(self, snap: tuple[Any, ...]) -> None:
        self.refs, self.lru = snap[0], snap[1]
        del self.events[snap[2] :]

    def _emit(self, kind: str, hashes: list[int], parent: int | None = None) -> None:
        if hashes:
            self.events.append((kind, hashes, parent))

    def used(self) -> int:
        return len(self.refs) + len(self.lru)

    # -- operations
    def acquire(self, blocks: list[Block]) -> bool:
        """Take a reference on each block, allocating (and evicting) as needed; False when full."""
        if any(b[0] == "P" for b in blocks[:-1]) and self.bug != "partial_anywhere":
            raise Rejected("PartialNotLast")
        snap = self._snapshot()
        runs: list[tuple[int | None, list[int]]] = []
        prev_was_new_full = False
        for i, b in enumerate(blocks):
            if b in self.refs:
                self.refs[b] += 1
                prev_was_new_full = False
                continue
            if b in self.lru:
                if self.bug != "reuse_keeps_cached_copy":
                    del self.lru[b]
                self.refs[b] = 1
                prev_was_new_full = False
                continue
            if self.used() >= self.capacity - (self.bug == "full_one_early"):
                if not self.lru:
                    if self.bug != "no_rollback_on_full":
                        self._restore(snap)
                    return False
                victim, _ = self.lru.popitem(last=self.bug == "evict_most_recent")
                if victim[0] == "F" and self.bug != "evict_silently":
                    self._emit("Remove", [victim[1]])
            self.refs[b] = 1
            if b[0] == "F":
                if prev_was_new_full:
                    runs[-1][1].append(b[1])
                else:
                    before = blocks[i - 1] if i else None
                    parent = before[1] if before and before[0] == "F" else None
                    runs.append((None if self.bug == "store_without_parent" else parent, [b[1]]))
            prev_was_new_full = b[0] == "F"
        for parent, run in runs:
            self._emit("Store", run, parent)
        return True

    def destroy(self, blocks: list[Block]) -> None:
        """Drop one reference per block (last listed first); a block at zero is gone for good."""
        snap = self._snapshot()
        gone: list[int] = []
        for b in reversed(blocks):
            if b not in self.refs:
                self._restore(snap)
                raise Rejected("DestroyNotActive")
            if self.refs[b] > 1 and self.bug != "destroy_drops_all_references":
                self.refs[b] -= 1
                continue
            del self.refs[b]
            if b[0] == "F" and self.bug != "destroy_silently":
                gone.append(b[1])
        self._emit("Remove", gone[::-1])

    def release(self, blocks: list[Block]) -> None:
        """Drop one reference per block (last listed first); a full block at zero is cached."""
        snap = self._snapshot()
        for b in reversed(blocks):
            if b not in self.refs:
                self._restore(snap)
                raise Rejected("DerefNotHeld")
            self.refs[b] -= 1
            if self.refs[b] == 0:
                del self.refs[b]
                if b[0] == "F" or self.bug == "deref_caches_partials":
                    self.lru[b] = None

    def promote(self, uuid: str, seq_hash: int, parent: int | None) -> None:
        """A partial block became full: it is now known by its sequence hash."""
        partial, full = ("P", uuid), ("F", seq_hash)
        if partial not in self.refs:
            raise Rejected("PromoteMissing")
        resident = lambda h: ("F", h) in self.refs or ("F", h) in self.lru  # noqa: E731
        if parent is not None and (parent == seq_hash or not resident(parent)):
            raise Rejected("PromoteParentUnknown")
        was_resident = resident(seq_hash)
        count = self.refs[partial] if self.bug == "promote_keeps_partial" else self.refs.pop(partial)
        self.refs[full] = self.refs.get(full, 0) + count
        self.lru.pop(full, None)
        if not was_resident:
            self._emit("Store", [seq_hash], None if self.bug == "promote_store_without_parent" else parent)

    def count_new(self, blocks: list[Block]) -> int:
        """How many of the listed blocks are not in the pool (in use or cached)."""
        new = sum(1 for b in blocks if b not in self.refs and b not in self.lru)
        return len(blocks) - new if self.bug == "probe_counts_resident" else new

    def prefill_cost(self, blocks: list[Block], tokens: int, block_size: int) -> dict[str, int]:
        """Blocks to allocate and tokens to compute for a prompt of ``tokens`` over ``blocks``: the
        longest prefix of blocks already there is reused (KV is computed in order), its tokens at
        most the prompt's."""
        hit = 0
        while hit < len(blocks) and (blocks[hit] in self.refs or blocks[hit] in self.lru):
            hit += 1
        cached = min(hit * (1 if self.bug == "prefill_without_block_size" else block_size), tokens)
        return {"new_blocks": len(blocks) - hit, "new_tokens": tokens - cached}

    def take_events(self) -> list[tuple[str, list[int], int | None]]:
        out, self.events = self.events, []
        return out


# ----------------------------------------------------------------------------- the adapter


def _blocks(items: list[dict[str, Any]]) -> list[Block]:
    return [("F", x["F"]) if "F" in x else ("P", x["P"]) for x in items]


class MyAdapter:
    """What kvmodel needs: ``reset(config)`` and ``step(op, args) -> {"returns"|"error", "events"}``."""

    name = "MyKvManager"

    def __init__(self, bug: str | None = None) -> None:
        self.bug = bug
        self.pool = MyKvManager(4, bug)
        self.block_size = 16
        if bug:
            self.name = f"MyKvManager(bug={bug})"

    def reset(self, config: dict[str, Any]) -> None:
        self.pool = MyKvManager(config["max_capacity"], self.bug)
        self.block_size = config["block_size"]

    def step(self, op: str, args: Any) -> dict[str, Any]:
        p = self.pool
        try:
            if op == "process":
                ((kind, body),) = args.items()
                if kind == "Use":
                    out: Any = p.acquire(_blocks(body))
                elif kind == "Destroy":
                    p.destroy(_blocks(body))
                    out = True
                elif kind == "Deref":
                    p.release(_blocks(body))
                    out = True
                else:
                    p.promote(body["uuid"], body["hash"], body["parent_hash"])
                    out = True
            elif op == "probe_new_blocks":
                out = p.count_new(_blocks(args["blocks"]))
            elif op == "get_prefill_cost":
                out = p.prefill_cost(_blocks(args["unique_blocks"]), args["num_input_tokens"], self.block_size)
            elif op == "current_capacity":
                out = len(p.refs) if self.bug == "capacity_counts_active_only" else p.used()
            elif op == "num_active_blocks":
                out = len(p.refs)
            elif op == "num_inactive_blocks":
                out = max(0, len(p.lru) - 1) if self.bug == "inactive_off_by_one" else len(p.lru)
            else:
                raise ValueError(f"unsupported operation {op}")
        except Rejected as e:
            return {"error": e.kind, "events": self._events()}
        return {"returns": out, "events": self._events()}

    def _events(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for kind, hashes, parent in self.pool.take_events():
            if kind == "Store":
                out.append({"Store": {"blocks": hashes, "parent_hash": parent}})
            else:
                out.append({"Remove": {"blocks": hashes}})
        return out


if __name__ == "__main__":
    from kvmodel.api import check_implementation

    print(check_implementation(MyAdapter(), "kv_manager").explain())
    for bug in BUGS:
        print(check_implementation(MyAdapter(bug), "kv_manager").explain())
