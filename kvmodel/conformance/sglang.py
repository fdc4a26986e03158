"""``kvmodel conform --target sglang-radix-cache``: SGLang 0.5.23's real prefix caches, their KV
events checked step by step against what the cache promises, Dynamo's router (real and
modelled) and SGLang's own ``match_prefix``.

SGLang runs in its own interpreter (the venv ``tools/install-sglang.sh`` builds: SGLang's torch
and transformers pins conflict with vLLM's), driven by :mod:`kvmodel.conformance.sglang_worker`
over the harness protocol under :class:`kvmodel.harness.ExecAdapter`'s supervision (its own
process group, a bound on every answer, killed at exit). The caches: ``unified-rust`` (the
scheduler's default), ``unified-python`` and ``radix`` (``--cache``; ``all`` runs the three and
checks their answers and streams are identical).

Schedules are generated and shrunk by Hypothesis: prompts built from a few page-long segments
(shared prefixes, a segment differing from another in its last token, partial tails), in five
namespaces (none, two ``extra_key`` tenants, a ``cache_salt``, a tenant with the salt), and the
operations insert (evicting first when the allocator is short, as the scheduler does), match,
lock and unlock, evict, and flush (every held lock released first). After every operation a
probe asks ``match_prefix`` of every prompt in every namespace the schedule uses (a probe is a
step: it splits nodes and refreshes SGLang's LRU clock, so the model runs it too).

After every step, four checks:

* **the model** (:mod:`kvmodel.components.sglang_cache.system`): the step's answer, its events
  and the cache's sizes equal the model's, and the model's promises hold (an evict takes
  unlocked leaf nodes, no more than asked, enough when it can);
* **the stream invariants**, on SGLang's events alone: every block hash recomputes with SGLang's
  recipe from its parent's chain and its tokens (``hash_recomputes``); a stored block's parent
  is stored (``parent_announced``); a removal names a stored hash (``removes_stored``); no block
  stays stored below a removed one at the end of an event (``lineage``); whole pages only
  (``whole_pages``);
* **the router**: the events converted as Dynamo 1.6.1's ZMQ ingress converts them
  (``lib/llm/src/kv_router/publisher``: hashes cast to u64, ``tokens_hash`` recomputed per block
  from its tokens with the event's ``lora_name`` and ``cache_salt`` as ``cache_namespace``,
  AllBlocksCleared as ``cleared``) are applied to the real ``RadixTree`` of
  ``ai-dynamo-runtime==1.6.1`` and to kvmodel's router model; their content must be equal;
* **the router against SGLang**: after each probe, the router's overlap for every probed prompt
  equals SGLang's ``match_prefix`` in pages. A difference explained by a removal of blocks that
  another ``extra_key`` namespace still holds under the same router identity (same tokens, same
  salt: Dynamo's tree has one node for both) is the named difference
  ``sglang.namespace_removed``; one below tokens a tenant stored under other hashes than another
  namespace of the same identity (the ``dynamo`` format: the tree keeps one hash per tokens node)
  is ``sglang.namespace_rehashed``; any other fails the run.

``--path publisher|indexer`` also relays each step's batch, as SGLang's publisher encodes it,
through Dynamo's deployed path (:mod:`kvmodel.conformance.deployed`), drained after every
probe and compared with that path's model.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from kvmodel.components.sglang_cache import NAME
from kvmodel.components.sglang_cache.system import (
    Ns,
    Pages,
    SglangCacheSystem,
    chain_seed,
    event_hash,
    namespace_seed,
    page_digest,
    rekey,
)
from kvmodel.harness import HarnessError, HarnessFailure

CACHES = ("unified-rust", "unified-python", "radix")
PATHS = ("raw", "publisher", "indexer")
NAMESPACES: tuple[Ns, ...] = (
    (None, None),
    ("tenant-a", None),
    ("tenant-b", None),
    (None, "salt-1"),
    ("tenant-a", "salt-1"),
    ("lora-a", None),
)
LORAS = [["lora-a", "adapter-a"]]  # extra keys with a LoRA name registered with the event recorder
SEGMENTS = 6  # segment 5 is segment 0 with its last token changed
PAGES = 8  # the allocator's size, in pages: small, so that inserts evict
STEP_TIMEOUT = 120.0  # seconds for one answer (the first one imports torch and SGLang: 5–20 s)
ROUTER_WORKER = 0
MAX_ASSIGNMENTS = 64  # ways to give twin hashes to namespaces tried per evict
NAMED = "sglang.namespace_removed"
# the dynamo format: a tenant stores tokens another namespace holds under other hashes; Dynamo's tree
# keeps one hash per tokens node, so blocks stored below the other hash are refused (the router
# under-reports) and removals naming it fail (the router over-reports)
REHASHED = "sglang.namespace_rehashed"
# --cache all: the Rust TreeCore batches consecutive removals per extra_key, the Python caches all
BATCHING = "sglang.rust_core_batches_removals_per_extra_key"


class SglangError(HarnessError):
    """The SGLang side could not be run (no verdict: ``kvmodel conform`` exits 2)."""


def python() -> Path:
    """The SGLang venv's interpreter: ``$KVMODEL_SGLANG_PYTHON``, else that of
    ``$KVMODEL_SGLANG_VENV`` or of ``.venv-sglang`` beside the checkout (where
    ``tools/install-sglang.sh`` builds it)."""
    env = os.environ.get("KVMODEL_SGLANG_PYTHON")
    if env:
        return Path(env)
    venv = os.environ.get("KVMODEL_SGLANG_VENV")
    root = Path(venv) if venv else Path(__file__).resolve().parents[2] / ".venv-sglang"
    return root / "bin" / "python"


def available() -> str | None:
    """``None`` when the SGLang venv and Dynamo's RadixTree are there, else why not."""
    from kvmodel.conformance.radix import real_available

    why = real_available()
    if why:
        return why
    py = python()
    if not os.access(py, os.X_OK):
        return f"no SGLang interpreter at {py} (run ./tools/install-sglang.sh, or set KVMODEL_SGLANG_PYTHON)"
    site = list(py.parent.parent.glob("lib/python3*/site-packages/sglang"))
    if not site and "KVMODEL_SGLANG_PYTHON" not in os.environ:
        return f"SGLang is not installed in {py.parent.parent} (run ./tools/install-sglang.sh)"
    return None


# ------------------------------------------------------------------------------ schedules


@attrs.frozen
class Schedule:
    """Prompts as segment indices plus a partial tail's length; operations over them."""

    prompts: tuple[tuple[tuple[int, ...], int], ...]
    ops: tuple[tuple[Any, ...], ...]

    def tokens(self, i: int, ps: int) -> list[int]:
        segs, tail = self.prompts[i % len(self.prompts)]
        out: list[int] = []
        for s in segs:
            base = 1000 * (1 + s % 5)
            seg = [base + t for t in range(ps)]
            if s == 5:  # segment 0 with its last token changed
                seg[-1] = 999
            out += seg
        return out + [9000 + t for t in range(tail)]

    def to_json(self) -> dict[str, Any]:
        return {"prompts": [[list(s), t] for s, t in self.prompts], "ops": [list(o) for o in self.ops]}

    @staticmethod
    def from_json(d: dict[str, Any]) -> Schedule:
        return Schedule(
            tuple((tuple(s), int(t)) for s, t in d["prompts"]),
            tuple(tuple(o) for o in d["ops"]),
        )


def schedule_strategy(page_size: int, max_ops: int = 24) -> Any:
    from hypothesis import strategies as st

    prompt = st.tuples(
        st.lists(st.integers(0, SEGMENTS - 1), min_size=1, max_size=4).map(tuple),
        st.integers(0, page_size - 1),
    )
    idx, ns = st.integers(0, 3), st.sampled_from((0, 0, 1, 1, 2, 2, 3, 4, 5))
    op = st.one_of(
        st.tuples(st.just("insert"), idx, ns),
        st.tuples(st.just("insert"), idx, ns),
        st.tuples(st.just("match"), idx, ns),
        st.tuples(st.just("lock"), idx, ns),
        st.tuples(st.just("unlock"), st.integers(0, 3)),
        st.tuples(st.just("evict"), st.integers(1, 4)),
        st.tuples(st.just("flush")),
    )
    return st.builds(
        lambda ps, os_: Schedule(tuple(ps), tuple(os_)),
        st.lists(prompt, min_size=1, max_size=4),
        st.lists(op, min_size=min(4, max_ops), max_size=max_ops),
    )


# ------------------------------------------------------------------------------ the checks


def _u64(h: int) -> int:
    return h & 0xFFFFFFFFFFFFFFFF


class StreamCheck:
    """The stream invariants on SGLang's events alone (the module docstring). A hash's chain
    digest is known from its parent's (or, at the root, the namespace's salt seed); in the
    ``dynamo`` format the published hash is re-keyed by a namespace seed the wire does not carry,
    so each seed of the run's namespaces is tried."""

    def __init__(self, ps: int, event_format: str, namespaces: Sequence[Ns]) -> None:
        self.ps, self.format = ps, event_format
        self.namespaces = list(namespaces)
        self.loras = {k for k, _ in LORAS}
        self.copies: dict[int, int] = {}  # hash -> namespaces holding it (default format: twins)
        self.chain: dict[int, tuple[bytes, Ns]] = {}  # hash -> (its chain digest, its namespace)
        self.parent: dict[int, int | None] = {}
        self.violations: list[dict[str, Any]] = []

    def _bad(self, step: int, what: str, **kw: Any) -> None:
        self.violations.append({"step": step, "invariant": what, **kw})

    def on_events(self, step: int, events: Sequence[dict[str, Any]]) -> None:
        for e in events:
            kind = e.get("type")
            if kind == "BlockStored":
                self._stored(step, e)
            elif kind == "BlockRemoved":
                gone = []
                for h in e.get("block_hashes", []):
                    n = self.copies.get(h, 0)
                    if n == 0:
                        self._bad(step, "removes_stored", block_hash=h)
                        continue
                    if n == 1:
                        del self.copies[h]
                        gone.append(h)
                    else:
                        self.copies[h] = n - 1
                for h in gone:
                    self.parent.pop(h, None)
                orphans = sorted(h for h, p in self.parent.items() if p is not None and p in gone)
                if orphans:
                    self._bad(step, "lineage", removed=gone, still_stored_below=orphans)
            elif kind == "AllBlocksCleared":
                self.copies.clear()
                self.parent.clear()
            else:
                self._bad(step, "known_event_type", event=e)

    def _stored(self, step: int, e: dict[str, Any]) -> None:
        ps = self.ps
        hashes, toks = e.get("block_hashes", []), e.get("token_ids") or []
        parent = e.get("parent_block_hash")
        if e.get("block_size") != ps or len(toks) != ps * len(hashes):
            self._bad(step, "whole_pages", block_size=e.get("block_size"), tokens=len(toks), blocks=len(hashes))
            return
        if parent is not None and parent not in self.copies:
            self._bad(step, "parent_announced", parent=parent)
        salt = e.get("cache_salt")
        if parent is not None and parent in self.chain:
            starts = [self.chain[parent]]
        else:
            lora = e.get("lora_name")
            nss = [n for n in self.namespaces if n[1] == salt and (n[0] in self.loras) == (lora is not None)]
            nss = nss or [(None, salt)]
            starts = [(chain_seed(n) or b"", n) for n in nss] if parent is None else []
        pages = [toks[i * ps : (i + 1) * ps] for i in range(len(hashes))]
        for d0, ns in starts:
            d, ok, digests = d0 or None, True, []
            seed = namespace_seed(ns, self.format, self.loras)
            for p, h in zip(pages, hashes, strict=True):
                d = page_digest(d, p)
                digests.append(d)
                if rekey(event_hash(d), seed) != h:
                    ok = False
                    break
            if ok:
                for h, dg in zip(hashes, digests, strict=True):
                    self.chain[h] = (dg, ns)
                break
        else:
            if starts:
                self._bad(step, "hash_recomputes", block_hashes=hashes)
        prev = parent
        for h in hashes:
            self.copies[h] = self.copies.get(h, 0) + 1
            self.parent[h] = prev
            prev = h


def local_hashes(tokens: Sequence[int], ps: int, lora: str | None, salt: str | None) -> list[int]:
    """Dynamo's ``tokens_hash`` of each whole block: the wheel's own ``compute_block_hash_for_seq``
    (XXH3, seed 1337, the LoRA name and the cache namespace mixed into the seed), the function
    its ZMQ ingress calls."""
    from dynamo._core import compute_block_hash_for_seq

    return [int(h) for h in compute_block_hash_for_seq(list(tokens), ps, lora_name=lora, cache_namespace=salt)]


def router_data(e: dict[str, Any], ps: int) -> Any:
    """One SGLang event as Dynamo 1.6.1's ZMQ ingress converts it (``convert_event``): the JSON
    ``data`` of a ``KvCacheEvent``. A block whose size is not the router's ends the event's
    conversion ("Block not published")."""
    kind = e.get("type")
    if kind == "AllBlocksCleared":
        return "cleared"
    if kind == "BlockRemoved":
        return {"removed": {"block_hashes": [_u64(h) for h in e.get("block_hashes", [])]}}
    toks = e.get("token_ids") or []
    n = len(e.get("block_hashes", [])) if e.get("block_size") == ps else 0
    local = local_hashes(toks[: n * ps], ps, e.get("lora_name"), e.get("cache_salt"))
    blocks = [
        {"block_hash": _u64(h), "tokens_hash": lh, "mm_extra_info": None}
        for h, lh in zip(e.get("block_hashes", [])[:n], local, strict=True)
    ]
    parent = e.get("parent_block_hash")
    pu = None if parent is None else _u64(parent)
    return {"stored": {"parent_hash": pu, "start_position": None, "blocks": blocks}}


class RouterCheck:
    """The converted stream into the real ``RadixTree`` and the router model; their content
    compared after every step, and the router's overlap compared with SGLang's probes."""

    def __init__(self, ps: int) -> None:
        from kvmodel.conformance.radix import ModelRadixTree, RealRadixTree

        self.ps = ps
        self.real, self.model = RealRadixTree(), ModelRadixTree()
        self.event_id = 0
        self.divergences: list[dict[str, Any]] = []
        self.named: list[dict[str, Any]] = []
        self.unnamed: list[dict[str, Any]] = []
        # router identities (LoRA name, salt, pages) removed while another extra_key namespace
        # held them
        self.twin_removed: set[tuple[str | None, str | None, Pages]] = set()
        # router identities stored by one namespace while another held them under other hashes
        # (the dynamo format): the router keeps the first hash, so the second is no parent
        self.rehashed: set[tuple[str | None, str | None, Pages]] = set()

    def on_events(
        self,
        step: int,
        events: Sequence[dict[str, Any]],
        before: SglangCacheSystem,
        insert: dict[str, Any] | None = None,
    ) -> None:
        if insert is not None and events:
            self._note_rehashed(insert, before)
        for e in events:
            if e.get("type") == "BlockRemoved":
                self._note_twins(e, before)
            elif e.get("type") == "AllBlocksCleared":
                self.twin_removed.clear()
                self.rehashed.clear()
            ev = {"event_id": self.event_id, "data": router_data(e, self.ps), "dp_rank": 0}
            self.event_id += 1
            op = {"op": "apply_event", "worker_id": ROUTER_WORKER, "event": ev}
            a, b = self.real.apply(op), self.model.apply(op)
            if a != b:
                self.divergences.append({"step": step, "event": ev, "real": a, "model": b})
        ra, rm = self.real.content(), self.model.observe([])["content"]
        if ra != rm:
            self.divergences.append({"step": step, "real": ra, "model": rm})

    def _note_twins(self, e: dict[str, Any], before: SglangCacheSystem) -> None:
        removed = set(e.get("block_hashes", []))
        for ns, pages in list(before.cached):
            if before.hashes(pages, ns)[-1] not in removed:
                continue
            me = identity(ns)
            if any(p2 == pages and n2 != ns and identity(n2) == me for (n2, p2) in before.cached):
                self.twin_removed.add((*me, pages))

    def _note_rehashed(self, insert: dict[str, Any], before: SglangCacheSystem) -> None:
        ns = (insert["ns"][0], insert["ns"][1])
        pages = before.pages(insert["tokens"])
        me = identity(ns)
        for i in range(before.matched(ns, pages), len(pages)):
            path = pages[: i + 1]
            mine = before.hashes(path, ns)[-1]
            for n2, p2 in before.cached:
                if p2 == path and n2 != ns and identity(n2) == me and before.hashes(p2, n2)[-1] != mine:
                    self.rehashed.add((*me, path))
                    break

    def overlap(self, tokens: Sequence[int], ns: Ns) -> int:
        lora, salt = identity(ns)
        hs = local_hashes(tokens, self.ps, lora, salt)
        scores = self.model.tree.find_matches(hs)
        return int(scores.get((ROUTER_WORKER, 0), 0))

    def on_probe(self, step: int, keys: Sequence[tuple[list[int], Ns]], engine: Sequence[int]) -> None:
        """Dynamo sees a block's tokens, LoRA name and salt, not its ``extra_key``: the router's
        overlap for a prompt under an identity is compared with the most any ``extra_key``
        namespace of that identity holds in SGLang (copies under two tenants are one block to the
        router)."""
        most: dict[tuple[tuple[int, ...], str | None, str | None], int] = {}
        rep: dict[tuple[tuple[int, ...], str | None, str | None], Ns] = {}
        for (tokens, ns), got in zip(keys, engine, strict=True):
            k = (tuple(tokens), *identity(ns))
            most[k] = max(most.get(k, 0), got // self.ps)
            rep.setdefault(k, ns)
        for (toks, lora, salt), want in most.items():
            tokens = list(toks)
            have = self.overlap(tokens, rep[(toks, lora, salt)])
            if have == want:
                continue
            pages = tuple(tuple(tokens[i * self.ps : (i + 1) * self.ps]) for i in range(max(want, have)))
            removed = have < want and any((lora, salt, pages[: j + 1]) in self.twin_removed for j in range(have + 1))
            # under- or over-reported below a tokens path another namespace published otherwise
            rehashed = any((lora, salt, pages[: j + 1]) in self.rehashed for j in range(min(have + 1, len(pages))))
            name = NAMED if removed else REHASHED if rehashed else None
            d = {
                "step": step,
                "tokens": tokens,
                "lora_name": lora,
                "cache_salt": salt,
                "router_blocks": have,
                "engine_blocks": want,
            }
            (self.named if name else self.unnamed).append({**d, "name": name} if name else d)


def identity(ns: Ns) -> tuple[str | None, str | None]:
    """What Dynamo's router sees of a namespace: the LoRA name its ``extra_key`` has, and its salt."""
    lora = dict((k, v) for k, v in LORAS).get(ns[0]) if ns[0] is not None else None
    return (lora, ns[1])


def merged(obs: dict[str, Any]) -> dict[str, Any]:
    """An answer with its consecutive BlockRemoved events merged into one."""
    evs: list[dict[str, Any]] = []
    for e in obs.get("events", []):
        if evs and e.get("type") == "BlockRemoved" and evs[-1].get("type") == "BlockRemoved":
            evs[-1] = {**evs[-1], "block_hashes": evs[-1]["block_hashes"] + e["block_hashes"]}
        else:
            evs.append(e)
    return {**obs, "events": evs}


# ------------------------------------------------------------------------------ one run


def worker(cache: str, page_size: int, event_format: str) -> Any:
    """A started SGLang worker (:class:`kvmodel.harness.ExecAdapter`)."""
    from kvmodel.harness import ExecAdapter

    script = Path(__file__).with_name("sglang_worker.py")
    w = ExecAdapter([str(python()), "-I", str(script)], step_timeout=STEP_TIMEOUT)
    w.config = {  # type: ignore[attr-defined]
        "cache": cache,
        "page_size": page_size,
        "size": PAGES * page_size,
        "format": event_format,
        "lora_names": LORAS,
    }
    try:
        w.start()
        w.reset(w.config)  # type: ignore[attr-defined]
        v = w.step("versions", {})
    except (HarnessError, HarnessFailure) as e:
        w.close()
        raise SglangError(f"the SGLang worker ({cache}) did not start: {e}") from None
    w.versions = v.get("returns")  # type: ignore[attr-defined]
    return w


class ScheduleRun:
    """One schedule on one cache: the steps done to SGLang as the model system's trace steps
    (SGLang's observations recorded), and every check's findings."""

    def __init__(self, w: Any, s: Schedule, ps: int, event_format: str, path: Any = None) -> None:
        self.w, self.s, self.ps, self.format = w, s, ps, event_format
        self.path = path
        cfg = {"page_size": ps, "size": PAGES * ps, "format": event_format, "cache": w.config["cache"]}
        cfg["lora_names"] = w.config.get("lora_names", [])
        self.model = SglangCacheSystem(cfg, [])
        used = sorted({o[2] for o in s.ops if len(o) == 3})
        self.namespaces = [NAMESPACES[i] for i in used] or [NAMESPACES[0]]
        self.stream = StreamCheck(ps, event_format, self.namespaces)
        self.router = RouterCheck(ps)
        self.steps: list[dict[str, Any]] = []
        self.answers: list[Any] = []  # SGLang's answers, for --cache all
        self.model_divergences: list[dict[str, Any]] = []
        self.model_violations: list[dict[str, Any]] = []
        self.free = PAGES * ps
        self.path_divergences: list[dict[str, Any]] = []
        self.batching = 0  # --cache all: steps whose removals another cache batched otherwise
        self.counts = {"steps": 0, "events": 0, "stored_blocks": 0, "removed": 0, "cleared": 0, "evictions": 0}
        self.counts |= {"locks": 0, "no_room": 0, "probes": 0}

    def keys(self) -> list[tuple[list[int], Ns]]:
        k = [(self.s.tokens(i, self.ps), ns) for i in range(len(self.s.prompts)) for ns in self.namespaces]
        r = len(self.steps) % len(k)  # rotated: the probes' order sets SGLang's LRU clock
        return k[r:] + k[:r]

    def _call(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        try:
            real: dict[str, Any] = self.w.step(op, args)
        except HarnessFailure as e:
            raise SglangError(f"the SGLang worker failed at {op}: {e}") from None
        return real

    def do(self, op: str, args: dict[str, Any]) -> Any:
        """One operation on SGLang, then on the model, and every check. An evict whose removed
        hashes two namespaces publish alike (``extra_key`` twins in the default format) is
        followed by a probe of the candidates, which tells which copy SGLang took."""
        real = self._call(op, args)
        side: tuple[dict[str, Any], dict[str, Any]] | None = None
        margs = dict(args)
        if op == "evict":
            twins = self._twins(real.get("events", []))
            gone: set[tuple[Ns, Pages]] = set()
            if twins:
                keys = [[[t for p in pages for t in p], list(ns)] for ns, pages in twins]
                got = self._call("probe", {"keys": keys})
                side = ({"keys": keys}, got)
                ret = got.get("returns")
                lens: list[Any] = ret if isinstance(ret, list) else []
                gone = {c for c, n in zip(twins, lens, strict=False) if n < len(c[1]) * self.ps}
            margs["victims"] = self._victims(args["num_tokens"], real.get("events", []), gone, real)
        out = self._record(op, margs, real)
        if side is not None:
            self._record("probe", *side)
        return out

    def _record(self, op: str, margs: dict[str, Any], real: dict[str, Any]) -> Any:
        k = len(self.steps)
        events = real.get("events", [])
        state = dict(real.get("state") or {})
        wire = state.pop("wire", None)
        state.pop("backend", None)
        obs: dict[str, Any] = {"returns": real.get("returns")} if "error" not in real else {"error": real["error"]}
        obs["events"] = events
        obs["state"] = state
        self.answers.append(obs)
        before = self.model.clone()
        out = self.model.step(op, margs)
        got = out.observation(self.model.snapshot())
        if got != obs and not self.model_divergences:
            self.model_divergences.append({"step": k, "op": op, "model": got, "sglang": obs})
        self.model_violations += [{"step": k, "invariant": v.invariant, "message": v.message} for v in out.violations]
        self.steps.append({"op": op, "args": margs, "observe": obs})
        self.counts["steps"] += 1
        self.counts["events"] += len(events)
        for e in events:
            t = e.get("type")
            if t == "BlockStored":
                self.counts["stored_blocks"] += len(e.get("block_hashes", []))
            elif t == "BlockRemoved":
                self.counts["removed"] += len(e.get("block_hashes", []))
            elif t == "AllBlocksCleared":
                self.counts["cleared"] += 1
        self.stream.on_events(k, events)
        self.router.on_events(k, events, before, margs if op == "insert" else None)
        if self.path is not None and wire is not None:
            self.path.forward(base64.b64decode(wire), events)
        if isinstance(state.get("free"), int):
            self.free = state["free"]
        return obs.get("returns")

    def _index(self) -> dict[int, list[tuple[Ns, Pages]]]:
        index: dict[int, list[tuple[Ns, Pages]]] = {}
        for ns, pages in self.model.cached:
            index.setdefault(self.model.hashes(pages, ns)[-1], []).append((ns, pages))
        return index

    def _twins(self, events: Sequence[dict[str, Any]]) -> list[tuple[Ns, Pages]]:
        """The cached pages of every removed hash more than one namespace holds."""
        index = self._index()
        out: list[tuple[Ns, Pages]] = []
        for e in events:
            if e.get("type") == "BlockRemoved":
                for h in e.get("block_hashes", []):
                    if len(index.get(h, [])) > 1:
                        out += [c for c in index[h] if c not in out]
        return out

    def _victims(
        self, num_tokens: int, events: Sequence[dict[str, Any]], gone: set[tuple[Ns, Pages]], real: dict[str, Any]
    ) -> list[list[Any]]:
        """The pages SGLang's BlockRemoved named, as ``[ns, tokens]`` in announcement order. Of
        twins, only copies the probe found gone are candidates, and of the ways to give the
        removed hashes to them (at most :data:`MAX_ASSIGNMENTS`), the first whose evict the model
        answers as SGLang did (the Rust TreeCore batches removals per ``extra_key``, which tells
        the order); else the first."""
        import itertools

        index = self._index()
        hashes = [h for e in events if e.get("type") == "BlockRemoved" for h in e.get("block_hashes", [])]
        options: list[list[tuple[Ns, Pages] | None]] = []
        for h in hashes:
            cands = index.get(h, [])
            twins = [c for c in cands if c in gone] if len(cands) > 1 else cands
            options.append(list(twins or cands) or [None])
        first: list[list[Any]] | None = None
        want = {k: real.get(k) for k in ("returns", "events")}
        for combo in itertools.islice(itertools.product(*options), MAX_ASSIGNMENTS):
            picked = [c for c in combo if c is not None]
            if len(set(picked)) != len(picked):
                continue
            victims = [[[None, None], []] if c is None else [list(c[0]), [t for p in c[1] for t in p]] for c in combo]
            if first is None:
                first = victims
            got = self.model.clone().step("evict", {"num_tokens": num_tokens, "victims": victims})
            if {"returns": got.result, "events": [e.to_json() for e in got.events]} == want:
                return victims
        return first if first is not None else []

    def probe(self) -> None:
        keys = self.keys()
        got = self.do("probe", {"keys": [[t, list(ns)] for t, ns in keys]})
        self.counts["probes"] += 1
        if isinstance(got, list) and len(got) == len(keys):
            self.router.on_probe(len(self.steps) - 1, keys, got)
            if self.path is not None:
                self.path.on_probe(len(self.steps) - 1, keys, got)

    def run(self) -> None:
        ps, held = self.ps, []
        for o in self.s.ops:
            kind = o[0]
            if kind in ("insert", "match", "lock"):
                tokens, ns = self.s.tokens(o[1], ps), list(NAMESPACES[o[2]])
                if kind == "insert":
                    need = len(tokens) // ps * ps
                    if need > self.free:  # the scheduler evicts for room first
                        self.do("evict", {"num_tokens": need - self.free})
                        self.counts["evictions"] += 1
                    if self.do("insert", {"tokens": tokens, "ns": ns}) == "no_room":
                        self.counts["no_room"] += 1
                elif kind == "match":
                    self.do("match", {"tokens": tokens, "ns": ns})
                else:
                    h = self.do("lock", {"tokens": tokens, "ns": ns})
                    if isinstance(h, int):
                        held.append(h)
                        self.counts["locks"] += 1
            elif kind == "unlock":
                if not held:
                    continue
                self.do("unlock", {"handle": held.pop(o[1] % len(held))})
            elif kind == "evict":
                self.do("evict", {"num_tokens": o[1] * ps})
                self.counts["evictions"] += 1
            elif kind == "flush":
                while held:  # the scheduler flushes only when no request holds the cache
                    self.do("unlock", {"handle": held.pop()})
                self.do("flush", {})
            self.probe()
        if self.path is not None:  # the relay is shared across schedules: keep what it saw of this one
            self.path_divergences = list(self.path.divergences)

    def failed(self) -> bool:
        r = self.router
        return bool(
            self.model_divergences
            or self.model_violations
            or self.stream.violations
            or r.divergences
            or r.unnamed
            or self.path_divergences
        )


class PathRelay:
    """A deployed path behind SGLang (``kvmodel/conformance/deployed.py``): each step's batch, as
    SGLang's publisher encodes it, relayed unchanged; after each probe the path is drained and
    its router's overlap for every probed prompt must equal its model's."""

    def __init__(self, kind: str, ps: int) -> None:
        from kvmodel.conformance import deployed

        self.kind, self.ps = kind, ps
        try:
            self.path = deployed.DeployedPath(kind, ps)
        except deployed.PathError as e:
            raise SglangError(str(e)) from None
        self.start()

    def start(self) -> None:
        from kvmodel.conformance import deployed

        self.path.step([["AllBlocksCleared"]])
        self.model = deployed.ModelPath(self.kind, self.ps, local=_path_local(self.ps))
        self.raw = deployed.ModelPath("raw", self.ps, dedup=False, local=_path_local(self.ps))
        self.divergences: list[dict[str, Any]] = []
        self.differs = self.behind = 0

    def forward(self, payload: bytes, events: Sequence[dict[str, Any]]) -> None:
        self.path.engine.send_raw(payload)
        self.model.step(events)
        self.raw.step(events)

    def on_probe(self, step: int, keys: Sequence[tuple[list[int], Ns]], engine: Sequence[int]) -> None:
        self.path.drain()
        behind = differs = False
        for (tokens, ns), got in zip(keys, engine, strict=True):
            if identity(ns) != (None, None):  # a router query carries no namespace: not asked
                continue
            real, want = self.path.overlap(tokens), self.model.overlap(tokens)
            if real != want and len(self.divergences) < 5:
                self.divergences.append({"step": step, "tokens": tokens, "ns": list(ns), "path": real, "model": want})
            behind = behind or real < got // self.ps
            differs = differs or want != self.raw.overlap(tokens)
        self.differs += differs
        self.behind += behind

    def close(self) -> None:
        self.path.close()


def _path_local(ps: int) -> Callable[[Sequence[int], str | None, str | None], list[int]]:
    return lambda toks, lora, salt: local_hashes(toks, ps, lora, salt)


# ------------------------------------------------------------------------------ the target


def run(
    workloads: int = 200,
    seed: int = 0,
    max_ops: int = 24,
    revision: str | None = None,
    progress: Callable[[int], None] | None = None,
    path: str = "raw",
    cache: str = "unified-rust",
    page_size: int = 4,
    event_format: str = "default",
    workers: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``workloads`` generated schedules of at most ``max_ops`` operations on ``cache`` (``all``:
    the three, their answers compared). The report (deterministic for a seed: no timings) has
    the totals, the named differences counted, and the first failing schedule shrunk, as a trace
    of the model system. ``workers``: started workers to use (the tests share them)."""
    from kvmodel.conformance.search import failing_examples

    if path not in PATHS:
        raise SglangError(f"unknown path {path!r}: one of {', '.join(PATHS)}")
    kinds = list(CACHES) if cache == "all" else [cache]
    if any(k not in CACHES for k in kinds):
        raise SglangError(f"unknown cache {cache!r}: one of {', '.join(CACHES)}, all")
    own: list[Any] = []
    pool = dict(workers or {})
    relay: PathRelay | None = None
    totals: dict[str, int] = {"schedules": 0}
    named: dict[str, int] = {}
    first: list[tuple[Schedule, ScheduleRun, str]] = []
    try:
        for k in kinds:
            if k not in pool:
                pool[k] = worker(k, page_size, event_format)
                own.append(pool[k])
            cfg = pool[k].config
            if (cfg["page_size"], cfg["format"]) != (page_size, event_format):
                raise SglangError(f"the {k} worker runs page size {cfg['page_size']}, format {cfg['format']}")
        if path != "raw":
            relay = PathRelay(path, page_size)

        def one(s: Schedule) -> tuple[ScheduleRun, str | None]:
            runs = []
            for i, k in enumerate(kinds):
                pool[k].reset(pool[k].config)
                r = ScheduleRun(pool[k], s, page_size, event_format, relay if i == 0 else None)
                if relay is not None and i == 0:
                    relay.start()
                r.run()
                runs.append(r)
                if r.failed():
                    return r, k
            for k, r in zip(kinds[1:], runs[1:], strict=True):
                for at, (a, b) in enumerate(zip(runs[0].answers, r.answers, strict=True)):
                    if a == b:
                        continue
                    if merged(a) == merged(b):  # the same removals, batched otherwise
                        runs[0].batching += 1
                        continue
                    runs[0].model_divergences.append(
                        {"step": at, "op": r.steps[at]["op"], "caches": [kinds[0], k], kinds[0]: a, k: b}
                    )
                    return runs[0], kinds[0]
            return runs[0], None

        def diverges(s: Schedule, shrinking: bool) -> bool:
            r, bad = one(s)
            if not shrinking:
                totals["schedules"] += 1
                for key, v in r.counts.items():
                    totals[key] = totals.get(key, 0) + v
                for name in sorted({d["name"] for d in r.router.named}):  # probes at which it is seen
                    named[name] = named.get(name, 0) + len({d["step"] for d in r.router.named if d["name"] == name})
                if r.batching:
                    named[BATCHING] = named.get(BATCHING, 0) + r.batching
                if relay is not None:
                    totals["path_differs_from_raw"] = totals.get("path_differs_from_raw", 0) + relay.differs
                    totals["path_behind_engine"] = totals.get("path_behind_engine", 0) + relay.behind
                if progress:
                    progress(totals["schedules"])
            if bad is not None:
                item = (s, r, bad)
                first.insert(0, item) if shrinking else first.append(item)
            return bad is not None

        failing_examples(schedule_strategy(page_size, max_ops), workloads=workloads, seed=seed, diverges=diverges)
        versions = pool[kinds[0]].versions
    finally:
        if relay is not None:
            relay.close()
        for w in own:
            w.close()
    out: dict[str, Any] = {
        "target": "sglang-radix-cache",
        "path": path,
        "engine": {
            "sglang": versions.get("sglang"),
            "caches": kinds,
            "page_size": page_size,
            "size_pages": PAGES,
            "event_format": event_format,
        },
        "workloads": workloads,
        "seed": seed,
        "counts": totals,
        "named_differences": dict(sorted(named.items())),
        "divergences": 0,
    }
    if first:
        s, r, kind = min(first, key=lambda x: (len(x[0].ops), json.dumps(x[0].to_json())))
        out["divergences"] = 1
        out["counterexample"] = s.to_json()
        out["first_divergence"] = {
            "cache": kind,
            "model_divergences": r.model_divergences[:3],
            "model_violations": r.model_violations[:5],
            "stream_violations": r.stream.violations[:5],
            "router_divergences": r.router.divergences[:3],
            "unnamed_router_vs_engine": r.router.unnamed[:3],
            "path_divergences": r.path_divergences[:3],
        }
        out["trace"] = trace(s, r, seed, kind)
    return out


def trace(s: Schedule, r: ScheduleRun, seed: int, cache: str) -> dict[str, Any]:
    """A failing schedule as a trace of the model system (``kvmodel replay`` / ``kvmodel show``):
    the steps done to SGLang with SGLang's observations recorded, so that a replay shows where the
    model and SGLang part, or which promise SGLang broke. A failure the model does not see (the
    stream or the router) is the trace's ``violation``, at its step."""
    from kvmodel.traces import engine_trace

    origin: dict[str, Any] = {
        "engine": "conform",
        "target": "sglang-radix-cache",
        "implementation": f"SGLang {cache} cache",
        "seed": seed,
        "schedule": s.to_json(),
    }
    found: list[tuple[int, str, dict[str, Any]]] = []
    for v in r.model_violations:
        found.append((v["step"], v["invariant"], v))
    for v in r.stream.violations:
        found.append((v["step"], f"sglang stream: {v['invariant']}", v))
    for d in r.router.divergences:
        found.append((d["step"], "router: the real RadixTree equals the model", d))
    for d in r.router.unnamed:
        found.append((d["step"], "router: its overlap is SGLang's match_prefix", d))
    md = r.model_divergences[0] if r.model_divergences else None
    divergence = None if md is None else (md["step"], md.get("model"), md.get("sglang"))
    return engine_trace(NAME, dict(r.model.config), origin, r.steps, found, divergence)


def describe(out: dict[str, Any]) -> list[str]:
    c, e = out["counts"], out["engine"]
    head = (
        f"{c.get('schedules', 0)} schedules on {', '.join(e['caches'])} (page size {e['page_size']}, "
        f"{e['event_format']} format): {c.get('steps', 0)} steps, {c.get('events', 0)} events "
        f"({c.get('stored_blocks', 0)} blocks stored, {c.get('removed', 0)} removed, {c.get('cleared', 0)} cleared); "
        f"{c.get('evictions', 0)} evictions, {c.get('locks', 0)} locks, {c.get('no_room', 0)} inserts with no room, "
        f"{c.get('probes', 0)} probes"
    )
    lines = [head if not out["divergences"] else "FAILED — " + head]
    lines.append(
        "  every step: SGLang's answer, events and sizes equal the model's; the stream invariants; the real "
        "RadixTree equals the router model; the router's overlap equals SGLang's match_prefix"
    )
    for name, n in out["named_differences"].items():
        if name == BATCHING:
            lines.append(f"  named difference {name}: the same removals batched otherwise at {n} step(s)")
        else:
            lines.append(f"  named difference {name}: router and SGLang differ at {n} probe(s)")
    if out.get("path", "raw") != "raw":
        lines.append(
            f"  the {out['path']} path (Dynamo's real one, drained after every probe): its router agreed with the "
            f"model of that path; it reported less than SGLang caches at {c.get('path_behind_engine', 0)} probe(s); "
            f"its view differed from the raw path's at {c.get('path_differs_from_raw', 0)} probe(s)"
        )
    if out["divergences"]:
        lines.append("  shrunk schedule: " + json.dumps(out["counterexample"], sort_keys=True))
        lines.append("  " + json.dumps(out["first_divergence"], sort_keys=True)[:2000])
    return lines


if __name__ == "__main__":  # pragma: no cover - a quick manual run
    print(json.dumps(run(workloads=int(sys.argv[1]) if len(sys.argv) > 1 else 5), indent=1)[:4000])
