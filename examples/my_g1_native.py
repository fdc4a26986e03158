"""A worked example for ``docs/api.md``: *your* G1 native (vLLM-style) KV manager, checked against kvmodel.

``MyNativeManager`` is a port, as a user would write one, of the native G1 backend Dynamo's mocker
runs: the request-table ``VllmKvManager`` of ``lib/mocker/src/kv_manager/vllm_backend.rs`` over the
block pool of ``lib/mocker/src/cache/vllm_block_pool.rs``, driven the way ``g1_manager.rs`` drives
it, with a small request-side sequence (``common/sequence.rs``) producing the Use / Promote / Deref
signals. It follows the manager *as it should be* — kvmodel's ideal ``g1_native`` model: a
destination's transferable tokens are the prompt tokens it can hold, ``num_active_blocks`` counts
resident blocks in use only, a terminal Deref may name the request's tail in any order, and
finalizing a request with no block table is refused.

Plain dictionaries and lists: a pool of physical copies (private, or cached under a hash with
references and pins), the idle cached copies in least-recently-released order, per-request block
tables, and a numbered event outbox. ``BUGS`` lists planted one-line mistakes
(``MyG1NativeAdapter(bug=...)``) that the differential check finds.

Run it: ``python examples/my_g1_native.py``.
"""

from __future__ import annotations

import copy
import struct
from typing import Any

import xxhash

BUGS = {
    "local_hash_counts_fresh_only": "a fresh block after a reused prefix takes the prefix's local hash",
    "evict_most_recent": "eviction takes the most recently released idle copy",
    "group_parent_of_last": "a run of stored blocks names the last block's parent, not the first's",
    "promote_always_stores": "a promoted tail is announced even when its hash was already cached",
    "release_root_first": "a terminal Deref releases the root first, so the leaf outlives it in the LRU",
    "cancel_root_first": "cancelling a reservation unpins the root first",
    "active_counts_reserved": "num_active_blocks counts reserved slots as active blocks",
    "transfer_counts_whole_blocks": "transferable tokens count every fresh block as full",
    "deref_keeps_partial_name": "releasing a partial block leaves its UUID marked as allocated",
    "reuse_whole_prompt": "prefix reuse may cover the prompt's last full block",
    "release_decode_keeps_slots": "releasing a decode reservation keeps its slots reserved",
    "activation_announces_duplicates": "an activated destination announces blocks whose hash was cached",
}

SALT = 1337


def _local_hash(tokens: list[int]) -> int:
    return int(xxhash.xxh3_64_intdigest(struct.pack(f"<{len(tokens)}I", *tokens), seed=SALT))


def _chain(parent: int, local: int) -> int:
    return int(xxhash.xxh3_64_intdigest(struct.pack("<QQ", parent, local), seed=SALT))


class Panic(Exception):
    """The Rust code would panic with this message."""


# -- the request side -----------------------------------------------------------------------


class Request:
    """A request's tokens and the blocks it names: ``("F", hash)`` or ``("P", uuid)``."""

    def __init__(self, owner: int, tokens: list[int], bs: int) -> None:
        self.owner, self.bs = owner, bs
        self.tokens: list[int] = []
        self.prompt = len(tokens)
        self.allocated = 0  # tokens covered by allocation signals so far
        self.computed = 0  # the finalization watermark
        self.hashes: list[int] = []  # sequence hashes of the full blocks
        self.locals: list[int] = []  # their local (token) hashes
        self.blocks: list[tuple[str, Any]] = []
        self.uuids = 0
        for t in tokens:
            self.tokens.append(t)
            self._hash_new_full_blocks()
        self.blocks = [("F", h) for h in self.hashes]
        if len(self.tokens) % bs:
            self.blocks.append(("P", self._new_uuid()))

    def _new_uuid(self) -> str:
        u = f"r{self.owner}.u{self.uuids}"
        self.uuids += 1
        return u

    def _hash_new_full_blocks(self) -> None:
        while len(self.hashes) < len(self.tokens) // self.bs:
            i = len(self.hashes)
            local = _local_hash(self.tokens[i * self.bs : (i + 1) * self.bs])
            self.locals.append(local)
            self.hashes.append(local if i == 0 else _chain(self.hashes[-1], local))

    def promote_tail(self) -> tuple[str, int, int | None, int] | None:
        """(uuid, hash, parent hash, local hash) when the last block is a completed partial."""
        if not self.blocks or self.blocks[-1][0] != "P" or len(self.blocks) > len(self.hashes):
            return None
        i = len(self.blocks) - 1
        uuid = self.blocks[i][1]
        self.blocks[i] = ("F", self.hashes[i])
        parent = self.blocks[i - 1][1] if i and self.blocks[i - 1][0] == "F" else None
        return uuid, self.hashes[i], parent, self.locals[i]


# -- the manager ----------------------------------------------------------------------------


class MyNativeManager:
    def __init__(self, capacity: int, bs: int, caching: bool, publishers: bool, dp_rank: int, bug: str | None) -> None:
        self.capacity, self.bs, self.caching, self.publishers, self.dp_rank = capacity, bs, caching, publishers, dp_rank
        self.bug = bug
        self.copies: dict[int, dict[str, Any]] = {}  # id -> {"hash", "refs", "pins"}
        self.by_hash: dict[int, list[int]] = {}  # hash -> copy ids, the first answers lookups
        self.idle: list[int] = []  # cached copies nobody holds, least recently released first
        self.reserved = 0
        self.next_copy = 0
        self.tables: dict[int, list[dict[str, Any]]] = {}
        self.partials: set[str] = set()
        self.events: list[dict[str, Any]] = []
        self.next_event = 0

    # events
    def _emit(self, data: dict[str, Any]) -> None:
        if not self.caching or not self.publishers:
            return
        self.events.append({"event_id": self.next_event, "data": data, "dp_rank": self.dp_rank})
        self.next_event += 1

    def _emit_removed(self, hashes: list[int]) -> None:
        if hashes:
            self._emit({"removed": {"block_hashes": hashes}})

    def _emit_runs(self, stores: list[tuple[int, dict[str, Any]] | None]) -> None:
        run: list[tuple[int, dict[str, Any]]] = []
        for s in [*stores, None]:
            if s is not None and run and (run[0][1]["local"] is None) != (s[1]["local"] is None):
                self._flush(run)
                run = []
            if s is None:
                self._flush(run)
                run = []
            else:
                run.append(s)

    def _flush(self, run: list[tuple[int, dict[str, Any]]]) -> None:
        if not run:
            return
        parent = run[-1 if self.bug == "group_parent_of_last" else 0][1]["parent"]
        blocks = [{"block_hash": h, "tokens_hash": m["local"] or 0, "mm_extra_info": None} for h, m in run]
        self._emit({"stored": {"parent_hash": parent, "start_position": None, "blocks": blocks}})

    # pool
    def _is_idle(self, c: dict[str, Any]) -> bool:
        return c["hash"] is not None and c["refs"] == 0 and c["pins"] == 0

    def reserve(self, prefix: list[int], fresh: int) -> tuple[dict[str, Any], list[int]] | None:
        hits = [self.by_hash[h][0] for h in prefix]
        free = self.capacity - len(self.copies) - self.reserved
        needed = max(0, fresh - free)
        pinned_idle = len({i for i in hits if self._is_idle(self.copies[i])})
        if needed > len(self.idle) - pinned_idle:
            return None
        for i in hits:
            if self._is_idle(self.copies[i]):
                self.idle.remove(i)
            self.copies[i]["pins"] += 1
        removed = []
        for _ in range(needed):
            i = self.idle.pop(-1 if self.bug == "evict_most_recent" else 0)
            h = self.copies.pop(i)["hash"]
            self.by_hash[h].remove(i)
            if not self.by_hash[h]:
                del self.by_hash[h]
                removed.append(h)
        self.reserved += fresh
        return {"prefix": hits, "fresh": fresh}, removed

    def cancel(self, r: dict[str, Any]) -> None:
        order = r["prefix"] if self.bug == "cancel_root_first" else list(reversed(r["prefix"]))
        for i in order:
            c = self.copies[i]
            c["pins"] -= 1
            if self._is_idle(c):
                self.idle.append(i)
        r["prefix"] = []
        self.reserved -= r["fresh"]
        r["fresh"] = 0

    def _new_private(self, r: dict[str, Any]) -> int:
        r["fresh"] -= 1
        self.reserved -= 1
        i = self.next_copy
        self.next_copy += 1
        self.copies[i] = {"hash": None, "refs": 0, "pins": 0}
        return i

    def _cache(self, i: int, h: int) -> bool:
        self.copies[i].update(hash=h, refs=1, pins=0)
        self.by_hash.setdefault(h, []).append(i)
        return len(self.by_hash[h]) == 1

    def _release(self, i: int) -> None:
        c = self.copies[i]
        if c["hash"] is None:
            del self.copies[i]
            return
        c["refs"] -= 1
        if self._is_idle(c):
            self.idle.append(i)

    # the manager's operations
    def _check_layout(
        self, owner: int, blocks: list[tuple[str, Any]], locals_: list[int], parent: Any, reuse: int
    ) -> None:
        fulls = sum(1 for k, _ in blocks if k == "F")
        if locals_ and len(locals_) != fulls:
            raise Panic("local hashes must be empty or align with full blocks")
        if parent is not None and parent[0] == "P":
            raise Panic("assertion failed: !matches!(parent, Some(UniqueBlock::PartialBlock(_)))")
        seen: set[str] = set()
        for k, v in blocks:
            if k == "P":
                if v in self.partials or v in seen:
                    raise Panic(f"partial block {v} is already allocated")
                seen.add(v)
        if reuse > len(blocks):
            raise Panic("assertion failed: reusable_prefix_blocks <= blocks.len()")
        if reuse and not self.caching:
            raise Panic("assertion failed: self.enable_prefix_caching || reusable_prefix_blocks == 0")
        if reuse and self.tables.get(owner):
            raise Panic("only a request's first allocation may reuse a prefix")
        if any(k != "F" for k, _ in blocks[:reuse]):
            raise Panic("a reusable prefix can contain only full blocks")

    def _commit(
        self,
        owner: int,
        blocks: list[tuple[str, Any]],
        locals_: list[int],
        parent: Any,
        r: dict[str, Any],
        cache_now: bool,
    ) -> None:
        table = self.tables.setdefault(owner, [])
        prefix = r["prefix"]
        r["prefix"] = []
        for i in prefix:
            self.copies[i]["pins"] -= 1
            self.copies[i]["refs"] += 1
        cursor = parent[1] if parent is not None else None
        stores: list[tuple[int, dict[str, Any]] | None] = []
        n_full = fresh_full = 0
        for pos, (kind, v) in enumerate(blocks):
            if kind == "P":
                table.append({"copy": self._new_private(r), "hash": None, "uuid": v, "pending": None})
                self.partials.add(v)
                stores.append(None)
                continue
            idx = fresh_full if self.bug == "local_hash_counts_fresh_only" else n_full
            n_full += 1
            if pos < len(prefix):
                table.append({"copy": prefix[pos], "hash": v, "uuid": None, "pending": None})
                cursor = v
                continue
            fresh_full += 1
            meta = {"parent": cursor, "local": locals_[idx] if idx < len(locals_) else None}
            c = self._new_private(r)
            if cache_now:
                first = self._cache(c, v)
                table.append({"copy": c, "hash": v, "uuid": None, "pending": None})
                stores.append((v, meta) if first or self.bug == "activation_announces_duplicates" else None)
            else:
                table.append({"copy": c, "hash": v, "uuid": None, "pending": meta if self.caching else None})
            cursor = v
        if cache_now:
            self._emit_runs(stores)

    def use(self, owner: int, blocks: list[tuple[str, Any]], locals_: list[int], parent: Any, reuse: int) -> str:
        self._check_layout(owner, blocks, locals_, parent, reuse)
        got = self.reserve([v for _, v in blocks[:reuse]], len(blocks) - reuse)
        if got is None:
            return "CapacityExhausted"
        r, removed = got
        self._emit_removed(removed)
        self._commit(owner, blocks, locals_, parent, r, False)
        self.cancel(r)
        return f"Ready({len(blocks)})"

    def finalize(self, owner: int, before: int, after: int) -> None:
        if not self.caching:
            return
        table = self.tables.get(owner)
        if table is None:
            raise Panic(f"request {owner} owns no block table")
        first, last = before // self.bs, min(after // self.bs, len(table))
        stores: list[tuple[int, dict[str, Any]] | None] = []
        for e in table[first:last]:
            if e["hash"] is None:
                break
            meta, e["pending"] = e["pending"], None
            if meta is None:
                stores.append(None)
            else:
                stores.append((e["hash"], meta) if self._cache(e["copy"], e["hash"]) else None)
        self._emit_runs(stores)

    def promote(self, owner: int, uuid: str, h: int, parent: int | None, local: int | None) -> None:
        table = self.tables.get(owner)
        if table is None:
            raise Panic(f"request {owner} owns no block table")
        if not table:
            raise Panic("Promote requires a request-owned partial tail")
        e = table[-1]
        if e["hash"] is not None:
            raise Panic("Promote requires a partial tail")
        if e["uuid"] != uuid:
            raise Panic(
                f"assertion `left == right` failed: Promote partial UUID mismatch\n  left: {e['uuid']}\n right: {uuid}"
            )
        if self.caching:
            first = self._cache(e["copy"], h)
            if first or self.bug == "promote_always_stores":
                blk = {"block_hash": h, "tokens_hash": local or 0, "mm_extra_info": None}
                self._emit({"stored": {"parent_hash": parent, "start_position": None, "blocks": [blk]}})
        self.partials.discard(uuid)
        e.update(hash=h, uuid=None, pending=None)

    def deref(self, owner: int, blocks: list[tuple[str, Any]]) -> None:
        table = self.tables.get(owner)
        if table is None:
            raise Panic(f"request {owner} owns no block table")
        if len(blocks) > len(table):
            raise Panic("request releases too many blocks")
        tail = table[len(table) - len(blocks) :]
        unmatched = list(tail)
        for kind, v in blocks:
            for e in unmatched:
                if (kind == "F" and e["hash"] == v) or (kind == "P" and e["hash"] is None and e["uuid"] == v):
                    unmatched.remove(e)
                    break
            else:
                raise Panic("Deref does not name the request's tail")
        del table[len(table) - len(blocks) :]
        if not table:
            del self.tables[owner]
        for e in tail if self.bug == "release_root_first" else reversed(tail):
            if e["hash"] is None and self.bug != "deref_keeps_partial_name":
                self.partials.discard(e["uuid"])
            self._release(e["copy"])

    def counts(self) -> dict[str, int]:
        active = len(self.copies) - len(self.idle) + (self.reserved if self.bug == "active_counts_reserved" else 0)
        refs = sum(1 if c["hash"] is None else c["refs"] for c in self.copies.values())
        return {"num_active_blocks": active, "num_inactive_blocks": len(self.idle), "num_active_block_refs": refs}


# -- the adapter ----------------------------------------------------------------------------


class MyG1NativeAdapter:
    """The adapter: kvmodel's request-level operations (``docs/contracts.md``, ``g1_native``)."""

    def __init__(self, bug: str | None = None) -> None:
        self.bug = bug
        self.name = f"MyNativeManager(bug={bug})" if bug else "MyNativeManager"
        self.reset({})

    def reset(self, config: dict[str, Any]) -> None:
        c: dict[str, Any] = {
            "max_capacity": 4,
            "block_size": 2,
            "enable_prefix_caching": True,
            "publishers": True,
            "dp_rank": 0,
        }
        c.update(config)
        self.bs = c["block_size"]
        self.m = MyNativeManager(
            c["max_capacity"], self.bs, c["enable_prefix_caching"], c["publishers"], c["dp_rank"], self.bug
        )
        self.requests: dict[int, Request] = {}
        self.decodes: list[dict[str, Any]] = []
        self.dest: dict[int, dict[str, Any]] = {}

    def step(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        saved = copy.deepcopy(self.requests.get(args.get("owner", -1)))
        try:
            out: dict[str, Any] = {"returns": self._do(op, args)}
        except Panic as e:  # the manager's state is as the panic left it; the request's is not
            o = args.get("owner")
            if saved is not None and o is not None:
                self.requests[o] = saved
            out = {"error": str(e)}
        out["events"], self.m.events = self.m.events, []
        return out

    def _promote(self, owner: int, req: Request) -> None:
        p = req.promote_tail()
        if p is not None:
            self.m.promote(owner, *p)

    def _do(self, op: str, a: dict[str, Any]) -> Any:
        m, bs = self.m, self.bs
        o = a.get("owner", -1)
        req = self.requests.get(o)
        if op == "new_request":
            self.requests[o] = Request(o, list(a["tokens"]), bs)
            return None
        if op == "allocate":
            assert req is not None
            start = min(-(-req.allocated // bs), len(req.blocks))
            blocks = req.blocks[start:]
            if not blocks:
                return "Ready(0)"
            reuse = 0
            if a.get("reuse") and req.allocated == 0 and o not in m.tables:
                cap = len(req.tokens) // bs if self.bug == "reuse_whole_prompt" else (len(req.tokens) - 1) // bs
                for kind, v in blocks[:cap]:
                    if kind != "F" or v not in m.by_hash:
                        break
                    reuse += 1
            fulls = [i for i in range(start, len(req.blocks)) if req.blocks[i][0] == "F"]
            locals_ = [req.locals[i] for i in fulls] if m.caching else []
            parent = req.blocks[start - 1] if start else None
            out = m.use(o, blocks, locals_, parent, reuse)
            if out != "CapacityExhausted":
                req.allocated = len(req.tokens)
                req.computed = max(req.computed, reuse * bs)
            return out
        if op == "push":
            assert req is not None
            req.tokens.append(a["token"])
            req._hash_new_full_blocks()
            if len(req.tokens) % bs != 1:
                return []
            results = []
            p = req.promote_tail()
            if p is not None:
                m.promote(o, *p)
                results.append("Ready(1)")
            uuid = req._new_uuid()
            req.blocks.append(("P", uuid))
            results.append(m.use(o, [("P", uuid)], [], None, 0))
            return results
        if op == "finalize":
            assert req is not None
            after = len(req.tokens)
            m.finalize(o, req.computed, after)
            if after and after % bs == 0:
                self._promote(o, req)
            req.computed = after
            return None
        if op in ("free", "deref_in_order"):
            assert req is not None
            n = min(-(-len(req.tokens) // bs), len(req.blocks))
            named = req.blocks[:n] if op == "deref_in_order" else list(reversed(req.blocks[:n]))
            m.deref(o, named)
            del self.requests[o]
            return "Ready(1)"
        if op == "reserve_decode":
            got = m.reserve([], a["count"])
            if got is None:
                return "CapacityExhausted"
            m._emit_removed(got[1])
            self.decodes.append(got[0])
            return "Ready"
        if op == "release_decode":
            r = self.decodes.pop(0)
            if self.bug == "release_decode_keeps_slots":
                r["fresh"] = 0
            m.cancel(r)
            return None
        if op == "reserve_destination":
            new = Request(o, list(a["tokens"]), bs)
            if o in m.tables:
                raise Panic("destination request already owns a block table")
            locals_ = list(new.locals) if m.caching else []
            m._check_layout(o, new.blocks, locals_, None, 0)
            prefix: list[int] = []
            for kind, v in new.blocks if m.caching else []:
                if kind != "F" or v not in m.by_hash:
                    break
                prefix.append(v)
            got = m.reserve(prefix, len(new.blocks) - len(prefix))
            if got is None:
                return "CapacityExhausted"
            m._emit_removed(got[1])
            fresh = got[0]["fresh"]
            self.requests[o] = new
            self.dest[o] = {"res": got[0], "blocks": new.blocks, "locals": locals_}
            uncached = max(0, new.prompt - len(prefix) * bs)
            transfer = fresh * bs if self.bug == "transfer_counts_whole_blocks" else min(fresh * bs, uncached)
            return {"transferable_prompt_tokens": transfer, "uncached_prompt_tokens": uncached}
        if op == "activate_destination":
            d = self.dest[o]
            if o in m.tables:
                raise Panic("destination request already owns a block table")
            if d["blocks"]:
                m._check_layout(o, d["blocks"], d["locals"], None, 0)
                m._commit(o, list(d["blocks"]), d["locals"], None, d["res"], m.caching)
            m.cancel(d["res"])
            assert req is not None
            req.allocated = req.computed = req.prompt
            del self.dest[o]
            return None
        if op == "cancel_destination":
            m.cancel(self.dest.pop(o)["res"])
            del self.requests[o]
            return None
        if op == "counts":
            return m.counts()
        raise ValueError(f"unknown operation {op!r}")


if __name__ == "__main__":
    from kvmodel.api import check_implementation

    print(check_implementation(MyG1NativeAdapter(), "g1_native").explain())
    for bug in BUGS:
        print(check_implementation(MyG1NativeAdapter(bug), "g1_native").explain().splitlines()[0])
