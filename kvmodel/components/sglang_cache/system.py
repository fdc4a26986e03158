"""What SGLang 0.5.23's prefix cache promises, as a system: the model ``kvmodel conform --target
sglang-radix-cache`` runs beside the real caches, and the one a failing schedule's trace replays on.

Followed: ``sglang/srt/mem_cache/radix_cache.py`` (``RadixCache``: ``insert``/``_insert_helper``,
``match_prefix``/``_match_prefix_helper``, ``_split_node``, ``evict``, ``inc_lock_ref``/
``dec_lock_ref``, ``reset``), ``mem_cache/events.py`` (``KVCacheEventRecorder``: one BlockStored
per new node, coalesced; one BlockRemoved per evicted node, coalesced), ``mem_cache/utils.py`` and
``cpp_utils/hash_binding.cpp`` (the block hashes), ``disaggregation/kv_events.py`` (the event
structs and the ``dynamo`` format's re-keyed hashes), all of sglang 0.5.23 (PyPI). The
``UnifiedRadixCache`` (Python and Rust TreeCores) publishes the same stream.

A namespace whose ``extra_key`` has a LoRA name registered (config ``lora_names``) publishes the
name and, in the default format too, hashes re-keyed by its ``extra_key``.

The tree is kept at page granularity, per namespace (``[extra_key, cache_salt]``: two namespaces
never share a node, ``RadixKey.child_key``), with the node boundaries SGLang's splits make: a node
ends where an insert's new pages end, and where an insert's matched prefix or a match ends inside
a node (``_split_node``). Operations (what the harness does to SGLang, ``sglang_worker.py``):

* ``insert {tokens, ns}`` — the key cut to whole pages; ``"no_room"`` when the allocator has fewer
  free slots than the key's length (nothing changes); else the matched prefix's length, and the
  pages past it become one node, announced by one BlockStored (its parent the last matched page,
  ``None`` at the root). Partial pages are never cached nor announced.
* ``match {tokens, ns}`` / ``probe {keys}`` — the longest cached whole-page prefix, in tokens.
* ``lock {tokens, ns}`` — ``match_prefix`` then ``inc_lock_ref`` on its last node: every page of
  the matched prefix is locked once more; returns the handle (numbered from 1 in a run);
  ``unlock {handle}`` — ``dec_lock_ref`` (an unknown handle is an error, as SGLang's KeyError).
* ``evict {num_tokens, victims}`` — SGLang picks leaves by its LRU clock, which the model does not
  predict: ``victims`` names the pages SGLang removed (each ``[ns, tokens up to that page]``, in
  the order they were announced). The model removes the node holding each, in that order, and
  announces each node's pages root to leaf, the nodes in one BlockRemoved (``RadixCache`` and
  the Python TreeCore: ``KVCacheEventRecorder.enqueue`` merges consecutive removals) or one per
  run of nodes of one ``extra_key`` (the Rust TreeCore's event queue, ``rust_tree_core/
  adapter.py``: its removals carry their ``extra_key`` and only those of one are merged). What it checks is what SGLang
  promises: ``evicts_cached`` (a victim is cached), ``evicts_unlocked`` (no locked page is
  evicted), ``evicts_leaves`` (a node goes only when no cached node hangs below it),
  ``evicts_no_more`` (no node is taken once ``num_tokens`` are evicted) and ``evicts_enough``
  (fewer than ``num_tokens`` only when nothing evictable is left). Returns the tokens evicted.
* ``flush {}`` — the scheduler's cache flush: ``reset()`` (one AllBlocksCleared, no removals) and
  the allocator cleared; held handles are dropped.

The snapshot is the allocator's free slots and the cache's evictable and protected sizes (tokens),
which SGLang reports too: the size less every cached token is free (no slot leaks).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Collection, Iterable, Sequence
from typing import Any, ClassVar

from kvmodel.components.sglang_cache import NAME
from kvmodel.invariants import Violation
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.quirks import resolve
from kvmodel.systems import Outcome, System, check_config

CACHES = ("unified-rust", "unified-python", "radix")
OPS = ("insert", "match", "probe", "lock", "unlock", "evict", "flush")
MAX_TOKENS = 1 << 16  # tokens in one key: the model builds what it is given
U32 = (1 << 32) - 1
SALT_TAG = b"sglang-cache-salt-v1\0"  # mem_cache/utils.py compute_node_event_hash_values
NAMESPACE_TAG = b"sglang-kv-event-namespace-v1"  # disaggregation/kv_events.py _NAMESPACE_SEED_TAG

Ns = tuple[str | None, str | None]
Pages = tuple[tuple[int, ...], ...]


class UnknownHandle(ModelError):
    """``unlock`` of a handle that is not held (SGLang's harness raises ``KeyError``)."""

    id = "unknown handle"


# ------------------------------------------------------------------------------ the hashes


def page_digest(prior: bytes | None, page: Sequence[int]) -> bytes:
    """One page's SHA-256 (``hash_binding.cpp`` ``hash_page``): the prior digest, then the
    tokens as u32 little-endian — or, when a token does not fit in u32, a ``0xff`` tag and the
    tokens as u64 little-endian."""
    h = hashlib.sha256(prior or b"")
    if any(t > U32 for t in page):
        h.update(b"\xff" + b"".join(t.to_bytes(8, "little") for t in page))
    else:
        h.update(b"".join(t.to_bytes(4, "little") for t in page))
    return h.digest()


def event_hash(digest: bytes) -> int:
    """``hash_str_to_int64``: the digest's first 8 bytes, big-endian, as a signed int64."""
    return int.from_bytes(digest[:8], "big", signed=True)


def chain_seed(ns: Ns) -> bytes | None:
    """Where a namespace's event chain starts: the salt's digest (``sglang-cache-salt-v1``) when
    it has a ``cache_salt``, else no prior (an ``extra_key`` alone does not enter the chain)."""
    salt = ns[1]
    return None if salt is None else hashlib.sha256(SALT_TAG + salt.encode()).digest()


def namespace_seed(ns: Ns, event_format: str, loras: Collection[str] = ()) -> bytes | None:
    """``kv_event_namespace_seed``: in the ``dynamo`` format the hashes are re-keyed by
    ``(extra_key, cache_salt)``; in the default format by the ``extra_key`` alone, and only when a
    LoRA name is registered for it (``loras``: those extra keys; ``KVCacheEventRecorder.
    _namespace_seed``)."""
    if event_format == "dynamo":
        key = ns
    else:
        key = (ns[0], None) if ns[0] is not None and ns[0] in loras else (None, None)
    if key == (None, None):
        return None
    d = hashlib.sha256(NAMESPACE_TAG)
    for part in key:
        if part is None:
            d.update(b"\x00")
        else:
            b = part.encode()
            d.update(b"\x01" + len(b).to_bytes(8, "little") + b)
    return d.digest()


def rekey(h: int, seed: bytes | None) -> int:
    """``namespaced_block_hash``."""
    if seed is None:
        return h
    return event_hash(hashlib.sha256(seed + h.to_bytes(8, "big", signed=True)).digest())


def block_hashes(pages: Pages, ns: Ns, event_format: str = "default", loras: Collection[str] = ()) -> list[int]:
    """The event hashes of every page on a path from the root."""
    seed, d, out = namespace_seed(ns, event_format, loras), chain_seed(ns), []
    for p in pages:
        d = page_digest(d, p)
        out.append(rekey(event_hash(d), seed))
    return out


# ------------------------------------------------------------------------------ the system


def _ns(v: Any, what: str) -> Ns:
    if not (isinstance(v, list) and len(v) == 2 and all(x is None or isinstance(x, str) for x in v)):
        raise InvalidInput(f"{what} must be [extra_key, cache_salt], each a string or null, got {v!r:.60}")
    if any(x is not None and len(x) > 256 for x in v):
        raise InvalidInput(f"{what}: a namespace string is at most 256 characters")
    return (v[0], v[1] or None)


def _tokens(v: Any, what: str) -> list[int]:
    if not isinstance(v, list) or len(v) > MAX_TOKENS:
        raise InvalidInput(f"{what} must be a list of at most {MAX_TOKENS} token ids, got {v!r:.60}")
    for t in v:
        if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < 1 << 63:
            raise InvalidInput(f"{what}: a token id is a non-negative int64, got {t!r:.60}")
    return v


def _args(v: Any, op: str, keys: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise InvalidInput(f"{op}: args must be an object, got {v!r:.60}")
    extra = set(v) - set(keys)
    missing = [k for k in keys if k not in v and not (op == "evict" and k == "victims")]
    if extra or missing:
        raise InvalidInput(f"{op}: args take {', '.join(keys) or 'nothing'} (got {sorted(v)!r:.80})")
    return v


class Ev:
    """One SGLang KV event in its builtins form (msgspec's: tagged map, ``None`` optionals left
    out except ``parent_block_hash`` and ``lora_id``)."""

    __slots__ = ("d",)

    def __init__(self, d: dict[str, Any]) -> None:
        self.d = d

    def to_json(self) -> dict[str, Any]:
        return self.d


class SglangCacheSystem(System):
    """See the module docstring."""

    OPS = OPS
    DEFAULTS: ClassVar[dict[str, Any]] = {
        "page_size": 4,
        "size": 64,
        "format": "default",
        "cache": "unified-rust",
        "lora_names": [],  # [extra_key, LoRA name] pairs registered with the cache's event recorder
    }
    BOUNDS: ClassVar[dict[str, tuple[int, int]]] = {"page_size": (1, 1025), "size": (1, 1 << 20)}

    def __init__(self, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> None:
        self.component = NAME
        self.config = check_config(NAME, config or {}, self.DEFAULTS, bounds=self.BOUNDS)
        if self.config["format"] not in ("default", "dynamo"):
            raise InvalidInput(f"{NAME}: config format is default or dynamo, got {self.config['format']!r:.40}")
        if self.config["cache"] not in CACHES:
            raise InvalidInput(f"{NAME}: config cache is one of {', '.join(CACHES)}, got {self.config['cache']!r:.40}")
        if self.config["size"] % self.config["page_size"]:
            raise InvalidInput(f"{NAME}: config size must be a multiple of page_size")
        loras = self.config["lora_names"]
        if not all(isinstance(x, list) and len(x) == 2 and all(isinstance(y, str) for y in x) for x in loras):
            raise InvalidInput(f"{NAME}: config lora_names is a list of [extra_key, name] string pairs")
        self.loras: dict[str, str] = {k: v for k, v in loras}
        self.quirks = resolve(NAME, quirks)
        self.ps: int = self.config["page_size"]
        self.model = None
        self.monitor = None
        self.cached: dict[tuple[Ns, Pages], int] = {}  # page path -> its lock count
        self.ends: set[tuple[Ns, Pages]] = set()  # page paths at which a node ends
        self.handles: dict[int, tuple[Ns, Pages]] = {}
        self.next_handle = 0

    def clone(self) -> SglangCacheSystem:
        c = copy.copy(self)
        c.cached, c.ends, c.handles = dict(self.cached), set(self.ends), dict(self.handles)
        return c

    # -- decoding
    def decode(self, op: str, args: Any) -> Any:
        if op in ("insert", "match", "lock"):
            a = _args(args, op, ("tokens", "ns"))
            return (_tokens(a["tokens"], f"{op}: tokens"), _ns(a["ns"], f"{op}: ns"))
        if op == "probe":
            a = _args(args, op, ("keys",))
            if not isinstance(a["keys"], list) or len(a["keys"]) > 256:
                raise InvalidInput("probe: keys must be a list of at most 256 [tokens, ns] pairs")
            out = []
            for k in a["keys"]:
                if not (isinstance(k, list) and len(k) == 2):
                    raise InvalidInput(f"probe: a key is [tokens, ns], got {k!r:.60}")
                out.append((_tokens(k[0], "probe: tokens"), _ns(k[1], "probe: ns")))
            return out
        if op == "unlock":
            h = _args(args, op, ("handle",))["handle"]
            if isinstance(h, bool) or not isinstance(h, int):
                raise InvalidInput(f"unlock: handle must be an integer, got {h!r:.60}")
            return h
        if op == "evict":
            a = _args(args, op, ("num_tokens", "victims"))
            n = a["num_tokens"]
            if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < 1 << 63:
                raise InvalidInput(f"evict: num_tokens must be a non-negative integer, got {n!r:.60}")
            vs = a.get("victims", [])
            if not isinstance(vs, list) or len(vs) > 4096:
                raise InvalidInput("evict: victims must be a list of at most 4096 [ns, tokens] pairs")
            victims = []
            for v in vs:
                if not (isinstance(v, list) and len(v) == 2):
                    raise InvalidInput(f"evict: a victim is [ns, tokens], got {v!r:.60}")
                victims.append((_ns(v[0], "evict: victim ns"), _tokens(v[1], "evict: victim tokens")))
            return (n, victims)
        if op == "flush":
            _args(args, op, ())
            return None
        raise InvalidInput(f"unknown {NAME} operation {op!r:.60} (known: {', '.join(OPS)})")

    # -- the tree
    def pages(self, tokens: Sequence[int]) -> Pages:
        ps = self.ps
        return tuple(tuple(tokens[i : i + ps]) for i in range(0, len(tokens) // ps * ps, ps))

    def matched(self, ns: Ns, pages: Pages) -> int:
        """How many leading pages of ``pages`` are cached in ``ns``."""
        k = 0
        while k < len(pages) and (ns, pages[: k + 1]) in self.cached:
            k += 1
        return k

    def _split_at(self, ns: Ns, pages: Pages, k: int) -> None:
        if k > 0:
            self.ends.add((ns, pages[:k]))

    def children(self, path: tuple[Ns, Pages]) -> list[tuple[Ns, Pages]]:
        ns, pages = path
        n = len(pages)
        return [p for p in self.cached if p[0] == ns and len(p[1]) == n + 1 and p[1][:n] == pages]

    def node_of(self, path: tuple[Ns, Pages]) -> list[tuple[Ns, Pages]]:
        """The page paths of the node holding ``path``, root to leaf."""
        ns, pages = path
        start = len(pages) - 1
        while start > 0 and (ns, pages[:start]) not in self.ends and (ns, pages[:start]) in self.cached:
            start -= 1
        out = [(ns, pages[: i + 1]) for i in range(start, len(pages))]
        cur = path
        while cur not in self.ends:
            kids = self.children(cur)
            if len(kids) != 1:  # a branching point is always a node's end; defensive
                break
            cur = kids[0]
            out.append(cur)
        return out

    def hashes(self, pages: Pages, ns: Ns) -> list[int]:
        """The event hashes of a path in ``ns``, as this cache publishes them."""
        return block_hashes(pages, ns, self.config["format"], self.loras)

    def stored_event(self, ns: Ns, pages: Pages, k: int) -> dict[str, Any]:
        hs = self.hashes(pages, ns)
        d: dict[str, Any] = {
            "type": "BlockStored",
            "block_hashes": hs[k:],
            "parent_block_hash": hs[k - 1] if k else None,
            "token_ids": [t for p in pages[k:] for t in p],
            "block_size": self.ps,
            "lora_id": None,
            "medium": "GPU",
        }
        if ns[1] is not None:
            d["cache_salt"] = ns[1]
        if ns[0] in self.loras:
            d["lora_name"] = self.loras[ns[0]]
        return d

    # -- the operations
    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        out = Outcome(op, args_json)
        try:
            out.result = getattr(self, "_" + op)(decoded, out)
        except ModelError as e:
            out.error = e.with_traceback(None)
        return out

    def _insert(self, a: tuple[list[int], Ns], out: Outcome) -> Any:
        tokens, ns = a
        pages = self.pages(tokens)
        if len(pages) * self.ps > self.free():
            return "no_room"
        k = self.matched(ns, pages)
        self._split_at(ns, pages, k)
        if k < len(pages):
            for i in range(k, len(pages)):
                self.cached[(ns, pages[: i + 1])] = 0
            self.ends.add((ns, pages))
            out.events.append(Ev(self.stored_event(ns, pages, k)))
        return k * self.ps

    def _match(self, a: tuple[list[int], Ns], out: Outcome) -> int:
        tokens, ns = a
        pages = self.pages(tokens)
        k = self.matched(ns, pages)
        self._split_at(ns, pages, k)
        return k * self.ps

    def _probe(self, keys: list[tuple[list[int], Ns]], out: Outcome) -> list[int]:
        return [self._match(k, out) for k in keys]

    def _lock(self, a: tuple[list[int], Ns], out: Outcome) -> int:
        tokens, ns = a
        pages = self.pages(tokens)
        k = self._match(a, out) // self.ps
        for i in range(k):
            self.cached[(ns, pages[: i + 1])] += 1
        self.next_handle += 1
        self.handles[self.next_handle] = (ns, pages[:k])
        return self.next_handle

    def _unlock(self, h: int, out: Outcome) -> None:
        if h not in self.handles:
            raise UnknownHandle(f"handle {h} is not held")
        ns, pages = self.handles.pop(h)
        for i in range(len(pages)):
            self.cached[(ns, pages[: i + 1])] -= 1

    def _evict(self, a: tuple[int, list[tuple[Ns, list[int]]]], out: Outcome) -> int:
        n, victims = a
        bad = out.violations
        removed: list[tuple[str | None, list[int]]] = []  # (extra_key, hashes) per node
        gone: set[tuple[Ns, Pages]] = set()  # a victim named twice (two pages of one node)
        evicted = 0
        for ns, tokens in victims:
            path = (ns, self.pages(tokens))
            if path not in self.cached:
                if path not in gone:
                    bad.append(Violation("evicts_cached", f"a removed page is not cached: {_show(path)}"))
                continue
            node = self.node_of(path)
            leaf = node[-1]
            if self.children(leaf):
                bad.append(Violation("evicts_leaves", f"a node is evicted above a cached one: {_show(leaf)}"))
            if any(self.cached[p] for p in node):
                bad.append(Violation("evicts_unlocked", f"a locked node is evicted: {_show(leaf)}"))
            if evicted >= n:
                bad.append(Violation("evicts_no_more", f"{evicted} of {n} tokens were evicted, and one more node"))
            hs = self.hashes(leaf[1], ns)
            removed.append((ns[0], hs[len(leaf[1]) - len(node) :]))
            for p in node:
                del self.cached[p]
                self.ends.discard(p)
                gone.add(p)
            evicted += len(node) * self.ps
        if evicted < n and any(c == 0 for c in self.cached.values()):
            bad.append(Violation("evicts_enough", f"{evicted} of {n} tokens evicted while unlocked pages remain"))
        # the Python recorder merges consecutive removals; the Rust TreeCore's queue only those of
        # one extra_key (its tagged tuples carry the extra_key the Python side re-keys by)
        batches: list[tuple[str | None, list[int]]] = []
        for key, hs in removed:
            if batches and (self.config["cache"] != "unified-rust" or batches[-1][0] == key):
                batches[-1][1].extend(hs)
            else:
                batches.append((key, list(hs)))
        for _, hs in batches:
            out.events.append(Ev({"type": "BlockRemoved", "block_hashes": hs, "medium": "GPU"}))
        return evicted

    def _flush(self, _: None, out: Outcome) -> None:
        self.cached.clear()
        self.ends.clear()
        self.handles.clear()
        out.events.append(Ev({"type": "AllBlocksCleared"}))

    # -- what SGLang reports too
    def free(self) -> int:
        return int(self.config["size"]) - len(self.cached) * self.ps

    def snapshot(self) -> dict[str, Any]:
        locked = sum(1 for c in self.cached.values() if c)
        return {
            "free": self.free(),
            "evictable": (len(self.cached) - locked) * self.ps,
            "protected": locked * self.ps,
        }

    def key(self) -> Any:
        return (tuple(sorted(self.cached.items(), key=repr)), tuple(sorted(self.ends, key=repr)))


def _show(path: tuple[Ns, Pages]) -> str:
    ns, pages = path
    return f"ns {list(ns)} tokens {[t for p in pages for t in p]}"[:200]
