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
