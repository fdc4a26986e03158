"""Conformance A: the model against the real Dynamo mocker (``ai-dynamo-runtime==1.6.1``).

The 1.6.1 mocker engine is aisimulate-core's vLLM backend: ``VllmKvManager`` with native
block *leases* (``lib/mocker/src/kv_manager/vllm_backend.rs`` at commit 22507053 in Dynamo,
``crates/core/src/engine/kv_manager/vllm_backend.rs`` in aisimulate) over the native block pool.
The real side runs offline through the wheel's internal ``_runtime.run_replay_with_artifacts_json``
(``dynamo-runtime.md`` §3.3; guarded by :func:`available`) and gives every KV event, the first
output's ``cached_tokens`` per request and the generated token ids.

The model side is :class:`LeaseScheduler`: the scheduler's calls for *sequential* requests (each
arrives after the previous finished) on the model's :class:`~kvmodel.model.g1.pool.NativePool`
and the native manager's event publication:

* admission: the longest cached prefix of the prompt's full blocks, capped at
  ``(n - 1) // block_size`` blocks (vLLM leaves the last prompt token to compute), is pinned and
  the other prompt blocks reserved (``allocate_lease``; Removed for evicted last copies first);
* prefill: ``finalize_lease_computed_prefix(hits·bs, n)`` caches the prompt's full blocks and
  publishes one Stored per run of newly visible blocks, parent the previous block;
* decode step ``j`` computes position ``p = n + j - 1``: a new block is allocated when ``p`` starts
  one, and ``finalize(p, p + 1)`` publishes the block ``p`` completes (identities from the real
  generated tokens: the model does not predict sampling);
* finish: the lease's blocks are released leaf first.

Both streams are flattened (event id, kind, block hashes, tokens hashes, parent) and compared,
and so are the per-request cached tokens. Overlapping arrivals (batching, chunked prefill,
preemption) are not modelled yet.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from kvmodel import determinism
from kvmodel.conformance import dynamo_runtime
from kvmodel.model.events import KvCacheEvent, Removed, Stored, StoredBlock
from kvmodel.model.g1.pool import NativePool
from kvmodel.model.hashing import DEFAULT_SALT, chain_hash, local_block_hashes


def available() -> str | None:
    """``None`` when the real mocker's offline event path can be used, else why not."""
    why = dynamo_runtime.available()
    if why is not None:
        return why
    try:
        rt = dynamo_runtime._runtime()
    except Exception as e:
        return f"the wheel's _runtime module cannot be loaded ({type(e).__name__}: {e})"
    if not hasattr(rt, "run_replay_with_artifacts_json"):
        return "the wheel's _runtime module has no run_replay_with_artifacts_json (not ai-dynamo-runtime 1.6.1?)"
    return None


@attrs.define
class Workload:
    """Sequential requests: prompts (token lists) and output token counts, on one engine."""

    prompts: list[list[int]]
    outputs: list[int]
    block_size: int = 4
    num_gpu_blocks: int = 8

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.define
class Run:
    events: list[dict[str, Any]]
    cached: list[int | None]
    generated: list[list[int]] = attrs.field(factory=list)
    rejected: list[bool] = attrs.field(factory=list)
    stalled: bool = False  # a lone request's decode could not get a block: the engine cannot progress


def real_run(w: Workload, gap_ms: float = 10_000.0) -> Run:
    """The real mocker on ``w``, requests ``gap_ms`` apart (each finishes before the next)."""
    try:
        art = dynamo_runtime.replay_artifacts(
            w.prompts, w.outputs, block_size=w.block_size, num_gpu_blocks=w.num_gpu_blocks, gap_ms=gap_ms
        )
    except RuntimeError as e:
        if "effect-free zero-duration pass" not in str(e):
            raise
        return Run([], [], stalled=True)  # the replay aborts: no artifacts
    ids = [r["request_id"] for r in sorted(art["requests"], key=lambda r: r["observed_at_ms"])]
    gen: dict[str, list[int]] = {i: [] for i in ids}
    first: dict[str, int | None] = {}
    rejected: dict[str, bool] = {}
    for o in art["outputs"]:
        rid = o["request_id"]
        if o.get("rejected"):
            rejected[rid] = True
            continue
        gen.setdefault(rid, []).append(int(o["token_id"]))
        if rid not in first:
            first[rid] = o.get("cached_tokens")
    return Run(
        [e["event"] for e in art["kv_events"]],
        [first.get(i) for i in ids],
        [gen.get(i, []) for i in ids],
        [rejected.get(i, False) for i in ids],
    )


class LeaseScheduler:
    """The model's prediction of the mocker for sequential requests (see the module docstring)."""

    def __init__(self, block_size: int, capacity: int) -> None:
        self.bs = block_size
        self.pool = NativePool(capacity)
        self.events: list[KvCacheEvent] = []
        self.stalled = False

    def _publish(self, data: Stored | Removed) -> None:
        self.events.append(KvCacheEvent(len(self.events), data, 0))

    def _removed(self, hashes: Sequence[int]) -> None:
        if hashes:
            self._publish(Removed(tuple(hashes)))

    def request(self, prompt: Sequence[int], generated: Sequence[int], outputs: int) -> int | None:
        """Run one request to completion; its cached tokens (None when it cannot ever fit)."""
        bs, pool = self.bs, self.pool
        n = len(prompt)
        gen = list(generated)[: max(0, outputs - 1)]
        tokens = list(prompt) + gen + [0] * (max(0, outputs - 1) - len(gen))  # placeholders: a stalled real run
        local = local_block_hashes(tokens, bs, DEFAULT_SALT)
        seq: list[int] = []
        for lh in local:
            seq.append(lh if not seq else chain_hash(seq[-1], lh, DEFAULT_SALT))
        prompt_blocks = -(-n // bs)
        if prompt_blocks > pool.capacity:
            return None
        cap = (n - 1) // bs
        hits: list[int] = []
        for h in seq[: min(cap, n // bs)]:
            if h not in pool.by_hash:
                break
            hits.append(h)
        out = pool.reserve(hits, prompt_blocks - len(hits))
        if out is None:
            return None  # cannot happen with sequential requests: everything else is evictable
        self._removed(out.removed)
        copies = [c for _, c in pool.activate_prefix(out.reservation)]
        copies += [pool.allocate_private(out.reservation) for _ in range(prompt_blocks - len(hits))]
        cached = len(copies[: len(hits)])
        self._finalize(copies, seq, local, len(hits), n)
        for j in range(1, outputs):
            p = n + j - 1
            if p % bs == 0:
                r = pool.reserve([], 1)
                if r is None:  # nothing else holds blocks: the request can never continue
                    self.stalled = True
                    return cached * bs
                self._removed(r.removed)
                copies.append(pool.allocate_private(r.reservation))
            self._finalize(copies, seq, local, p // bs, p + 1)
        for c in reversed(copies):
            pool.release(c)
        return cached * bs

    def _finalize(self, copies: list[int], seq: list[int], local: list[int], first: int, after: int) -> None:
        """Blocks ``[first, after // bs)`` are computed: each not yet cached enters the cache; runs of
        newly visible blocks are published, parent the block before the run."""
        group: list[int] = []
        start = first

        def flush() -> None:
            if group:
                parent = seq[group[0] - 1] if group[0] else None
                self._publish(Stored(parent, tuple(StoredBlock(seq[k], local[k]) for k in group)))
                group.clear()

        for k in range(start, after // self.bs):
            c = self.pool.copies[copies[k]]
            if c.hash is not None:  # reused prefix, or cached by an earlier finalize
                flush()
                continue
            if self.pool.cache_private(copies[k], seq[k]):
                group.append(k)
            else:
                flush()
        flush()


def model_run(w: Workload, generated: Sequence[Sequence[int]]) -> Run:
    s = LeaseScheduler(w.block_size, w.num_gpu_blocks)
    cached: list[int | None] = []
    for p, g, o in zip(w.prompts, generated or [[]] * len(w.prompts), w.outputs, strict=True):
        cached.append(s.request(p, g, o))
        if s.stalled:
            return Run([], [], stalled=True)
    return Run([e.to_json() for e in s.events], cached, [list(g) for g in generated])


def flatten(events: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for e in events:
        d = e["data"]
        if "stored" in d:
            st = d["stored"]
            out.append(
                (
                    e["event_id"],
                    "stored",
                    tuple(b["block_hash"] for b in st["blocks"]),
                    tuple(b["tokens_hash"] for b in st["blocks"]),
                    st.get("parent_hash"),
                )
            )
        elif "removed" in d:
            out.append((e["event_id"], "removed", tuple(d["removed"]["block_hashes"])))
        else:
            out.append((e["event_id"], "other", json.dumps(d, sort_keys=True)))
    return out


@attrs.define
class MockerDivergence:
    what: str
    index: int
    model: Any
    real: Any

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def compare(w: Workload) -> tuple[MockerDivergence | None, int]:
    """Run ``w`` on both sides; the first difference (events, then cached tokens) and the number of
    real events."""
    real = real_run(w)
    model = model_run(w, real.generated)
    if model.stalled or real.stalled:
        if model.stalled != real.stalled:
            return MockerDivergence("stall", 0, model.stalled, real.stalled), 0
        return None, 0
    a, b = flatten(model.events), flatten(real.events)
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return MockerDivergence("event", i, list(x), list(y)), len(b)
    if len(a) != len(b):
        i = min(len(a), len(b))
        return MockerDivergence("event count", i, a[i : i + 3], b[i : i + 3]), len(b)
    if len(model.cached) != len(real.cached):
        return MockerDivergence("requests", 0, len(model.cached), len(real.cached)), len(b)
    for i, (cx, cy) in enumerate(zip(model.cached, real.cached, strict=True)):
        if cx != cy:
            return MockerDivergence("cached_tokens", i, cx, cy), len(b)
    return None, len(b)


def workload_strategy(max_requests: int = 6) -> Any:
    """Prompts over a small alphabet of token blocks (shared prefixes, forks, exact repeats,
    partial tails), 1 to 9 output tokens, 3 to 12 GPU blocks of 4 tokens: eviction pressure."""
    from hypothesis import strategies as st

    bs = 4
    blocks = [[10 * k + j for j in range(bs)] for k in range(1, 6)]

    def prompt(path: list[int], tail: int) -> list[int]:
        out = [t for k in path for t in blocks[k]]
        return out + [90 + j for j in range(tail)] or [1]

    p = st.builds(prompt, st.lists(st.integers(0, 2), min_size=0, max_size=3), st.integers(0, 3))
    return st.builds(
        lambda reqs, n: Workload([r[0] for r in reqs], [r[1] for r in reqs], bs, n),
        st.lists(st.tuples(p, st.integers(1, 9)), min_size=1, max_size=max_requests),
        st.integers(3, 12),
    )


@attrs.define
class MockerReport:
    target: str = "dynamo-mocker"
    workloads: int = 0
    requests: int = 0
    events: int = 0
    divergences: int = 0
    seconds: float = 0.0
    seed: int = 0
    first: dict[str, Any] | None = None
    counterexample: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "workloads": self.workloads,
            "requests": self.requests,
            "events": self.events,
            "divergences": self.divergences,
            "seconds": round(self.seconds, 3),
            "events_per_second": round(self.events / self.seconds, 1) if self.seconds else None,
            "seed": self.seed,
            "first_divergence": self.first,
            "counterexample": self.counterexample,
        }


def run(*, workloads: int, seed: int = 0, progress: Callable[[int], None] | None = None) -> MockerReport:
    """Generate ``workloads`` sequential workloads (seeded); on the first divergence shrink it."""
    from kvmodel.conformance.search import failing_examples

    determinism.pin()
    rep = MockerReport(seed=seed)
    t0 = time.perf_counter()

    def diverges(w: Workload, shrinking: bool) -> bool:
        d, n_events = compare(w)
        if not shrinking:
            rep.workloads += 1
            rep.requests += len(w.prompts)
            rep.events += n_events
            if progress is not None:
                progress(rep.workloads)
        return d is not None

    failing = failing_examples(workload_strategy(), workloads=workloads, seed=seed, diverges=diverges)
    if failing:
        w = min(failing, key=lambda x: (len(x.prompts), sum(map(len, x.prompts))))
        d, _ = compare(w)
        rep.divergences = 1
        rep.first = None if d is None else d.to_json()
        rep.counterexample = w.to_json()
    rep.seconds = time.perf_counter() - t0
    return rep
