"""Conformance A: the model against the real Dynamo mocker (``ai-dynamo-runtime==1.6.1``).

The 1.6.1 mocker engine is aisimulate-core's vLLM backend: ``VllmKvManager`` with native
block *leases* (``lib/mocker/src/kv_manager/vllm_backend.rs`` at commit 22507053 in Dynamo,
``crates/core/src/engine/kv_manager/vllm_backend.rs`` in aisimulate) over the native block pool.
The real side runs offline through the wheel's internal ``_runtime.run_replay_with_artifacts_json``
(``dynamo-runtime.md`` §3.3; guarded by :func:`available`) and gives every KV event, the first
output's ``cached_tokens`` per request and the generated token ids.

The model side is :class:`VllmScheduler`: the pass loop of the mocker's vLLM scheduler core
(batching, token budget and chunked prefill, ``max_num_seqs``, FCFS admission against the free
blocks, LIFO preemption with recompute) over the model's :class:`~kvmodel.model.g1.vllm_block_pool.NativePool`
with its faithful quirk ``prefix_hit_first_copy_only`` (§6 #16), and the native manager's event
publication:

* each scheduling decision grows the request's lease through its new token count: the cached
  prefix (capped at ``(len - 1) // block_size`` blocks: vLLM computes the last token) is pinned,
  the rest reserved, Removed published for evicted last copies first (``allocate_lease``);
* ``finalize_lease_computed_prefix(before, after)`` caches the blocks the decision completed and
  publishes one Stored per run of newly visible blocks, parent the previous block;
* a decode step computes the token sampled at the end of the previous pass (identities from the
  real generated tokens: the model does not predict sampling);
* finish and preemption release the lease leaf first.

Workloads are arrival *groups*: a group's requests arrive together and run concurrently, and
each group finishes before the next arrives (the harness checks it on the real side), so the
prediction does not depend on the engine's timing model. Both streams are flattened (event id,
kind, block hashes, tokens hashes, parent) and compared, and so are the per-request cached tokens.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from kvmodel.conformance import differential as differential_
from kvmodel.conformance import dynamo_runtime
from kvmodel.conformance.differential import Action, Difference, Divergence, Report
from kvmodel.model.events import KvCacheEvent, Removed, Stored, StoredBlock
from kvmodel.model.g1.vllm_block_pool import NativePool
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


GAP_MS = 10_000.0  # between arrival groups: every request of a group finishes before the next arrives


@attrs.define
class Workload:
    """Requests (prompts as token lists, output token counts) on one engine.

    ``groups[i]`` is the arrival group of request ``i`` (non-decreasing): a group's requests all
    arrive at ``group * GAP_MS`` and run concurrently (batched, chunked by
    ``max_num_batched_tokens``, preempted under pressure); without ``groups`` every request is its
    own group (sequential requests)."""

    prompts: list[list[int]]
    outputs: list[int]
    block_size: int = 4
    num_gpu_blocks: int = 8
    groups: list[int] | None = None
    max_num_batched_tokens: int = 8192
    max_num_seqs: int = 256

    def group_of(self) -> list[int]:
        return list(self.groups) if self.groups is not None else list(range(len(self.prompts)))

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.define
class Run:
    events: list[dict[str, Any]]
    cached: list[int | None]
    generated: list[list[int]] = attrs.field(factory=list)
    rejected: list[bool] = attrs.field(factory=list)
    stalled: bool = False  # a pass could change nothing: the engine cannot progress
    late: bool = False  # a request finished after the next group arrived (the harness's assumption broke)
    stats: dict[str, int] = attrs.field(factory=dict)  # the model's: preemptions, chunked prefills, ...


def real_run(w: Workload) -> Run:
    """The real mocker on ``w``: group ``g`` arrives at ``g * GAP_MS``."""
    groups = w.group_of()
    try:
        art = dynamo_runtime.replay_artifacts(
            w.prompts,
            w.outputs,
            block_size=w.block_size,
            num_gpu_blocks=w.num_gpu_blocks,
            gap_ms=GAP_MS,
            arrivals=[g * GAP_MS for g in groups],
            engine_args={"max_num_batched_tokens": w.max_num_batched_tokens, "max_num_seqs": w.max_num_seqs},
        )
    except RuntimeError as e:
        if "effect-free zero-duration pass" not in str(e):
            raise
        return Run([], [], stalled=True)  # the replay aborts: no artifacts
    ids = [r["request_id"] for r in art["requests"]]  # submission order (ties keep it)
    group = dict(zip(ids, groups, strict=True))
    gen: dict[str, list[int]] = {i: [] for i in ids}
    first: dict[str, int | None] = {}
    rejected: dict[str, bool] = {}
    late = False
    for o in art["outputs"]:
        rid = o["request_id"]
        late = late or o["observed_at_ms"] >= (group[rid] + 1) * GAP_MS
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
        late=late,
    )


@attrs.define(eq=False)
class _Request:
    """One request's scheduler state (``VllmRequestState`` with its ``RequestKvState`` and lease)."""

    index: int
    prompt_len: int
    max_output: int
    seq: list[int]  # sequence hash of every full block of the planned tokens
    local: list[int]  # local (tokens) hash of the same blocks
    generated: int = 0
    computed: int = 0
    allocated: int = 0  # the lease's allocation watermark, in tokens
    copies: list[int] = attrs.field(factory=list)  # resident copies, block order
    status: str = "waiting"  # waiting | running | preempted
    cached: int | None = None  # prefix tokens found cached at the first admission
    signaled: bool = False
    preemptions: int = 0
    chunked: bool = False  # a scheduling decision stopped inside the prompt (chunked prefill)

    @property
    def length(self) -> int:
        return self.prompt_len + self.generated


class VllmScheduler:
    """The model's prediction of the mocker's vLLM scheduler core over the native pool.

    ``crates/core/src/engine/scheduler/vllm/core.rs`` (``execute_pass_internal``,
    ``schedule_request``, ``emit_ready_tokens``, ``policy_preempt``) and ``policy.rs``
    (``decide_waiting_admission_with_cost``) in aisimulate, which the 1.6.1 wheel links. One pass:

    * running requests in order, each given ``min(remaining, budget)`` tokens; when the lease
      cannot grow the last running request is preempted (LIFO, possibly the current one): its
      blocks are released leaf first, its computed count reset and it goes to the waiting front;
    * unless a preemption happened, waiting requests in FCFS order while fewer than
      ``max_num_seqs`` run: a fresh request whose known blocks exceed the pool is rejected; one
      whose known blocks, less its *active* cached prefix, exceed the free blocks waits (and stops
      the loop); else its cached prefix (capped at ``(len-1)//bs`` blocks) is pinned and it is
      scheduled like a running one;
    * every scheduling decision allocates the lease through its new token count (Removed for
      evicted last copies first) and finalizes the blocks it completes (one Stored per run of
      newly visible blocks), so a later request of the same pass already sees them;
    * then every running request whose known tokens are all computed samples one token; one that
      reaches its output count finishes and releases its lease leaf first.

    A pass that changes nothing while requests remain is the engine's "effect-free zero-duration
    pass": the replay aborts, and the model reports ``stalled``.
    """

    def __init__(
        self, block_size: int, capacity: int, max_num_batched_tokens: int = 8192, max_num_seqs: int = 256
    ) -> None:
        self.bs = block_size
        # The real pool reports a prefix hit as active by its primary copy only (§6 #16).
        self.pool = NativePool(capacity, quirks={"prefix_hit_first_copy_only"})
        self.budget_per_pass = max_num_batched_tokens
        self.max_num_seqs = max_num_seqs
        self.events: list[KvCacheEvent] = []
        self.stalled = False
        self.requests: list[_Request] = []
        self.waiting: deque[_Request] = deque()
        self.running: list[_Request] = []
        self.first_cached: dict[int, int | None] = {}
        self.rejected: set[int] = set()
        self.finished: set[int] = set()
        self._effects = 0

    # -- events
    def _publish(self, data: Stored | Removed) -> None:
        self.events.append(KvCacheEvent(len(self.events), data, 0))
        self._effects += 1

    def _removed(self, hashes: Sequence[int]) -> None:
        if hashes:
            self._publish(Removed(tuple(hashes)))

    # -- requests
    def submit(self, prompt: Sequence[int], generated: Sequence[int], outputs: int) -> None:
        """A request arrives: ``generated`` are the tokens the engine will sample (taken from the
        real run; placeholders where a stalled run gives none)."""
        n, bs = len(prompt), self.bs
        planned = max(0, outputs - 1)
        gen = list(generated)[:planned]
        tokens = list(prompt) + gen + [0] * (planned - len(gen))
        local = local_block_hashes(tokens, bs, DEFAULT_SALT)
        seq: list[int] = []
        for lh in local:
            seq.append(lh if not seq else chain_hash(seq[-1], lh, DEFAULT_SALT))
        r = _Request(len(self.requests), n, outputs, seq, local)
        self.requests.append(r)
        self.waiting.append(r)

    def hit_cap(self, length: int) -> int:
        """Blocks of a cached prefix a request may reuse: vLLM computes at least its last token."""
        return (length - 1) // self.bs

    def release_order(self, copies: list[int]) -> list[int]:
        """``release_lease_entries``: leaf first."""
        return list(reversed(copies))

    def _release(self, r: _Request) -> None:
        for c in self.release_order(r.copies):
            self.pool.release(c)
        r.copies, r.allocated = [], 0
        self._effects += 1

    def _prefix(self, r: _Request) -> tuple[int, int]:
        """``get_lease_prefill_cost`` then the hit cap: (cached blocks, active cached blocks)."""
        hits = active = 0
        for h in r.seq[: r.length // self.bs]:
            hit = self.pool.prefix_hit(h)
            if hit is None:
                break
            hits += 1
            active += int(hit)
        cap = self.hit_cap(r.length)
        if hits > cap:
            hits = cap
            active = min(active, cap)
        return hits, active

    def _allocate(self, r: _Request, target: int, reusable: int) -> bool:
        """``allocate_lease``: grow the lease to ``target`` tokens, pinning the reusable prefix."""
        bs = self.bs
        previous, goal = -(-r.allocated // bs), -(-target // bs)
        if goal <= previous:
            r.allocated = max(r.allocated, target)
            return True
        new_prefix = max(0, reusable - previous)
        out = self.pool.reserve(r.seq[previous : previous + new_prefix], goal - previous - new_prefix)
        if out is None:
            return False
        self._removed(out.removed)
        r.copies += [c for _, c in self.pool.activate_prefix(out.reservation)]
        r.copies += [self.pool.allocate_private(out.reservation) for _ in range(goal - previous - new_prefix)]
        r.allocated = target
        self._effects += 1
        return True

    def _finalize(self, r: _Request, before: int, after: int) -> None:
        """``finalize_lease_computed_prefix``: blocks ``[before // bs, after // bs)`` are computed;
        each fresh one enters the cache; runs of newly visible blocks are published, parent the
        block before the run."""
        group: list[int] = []

        def flush() -> None:
            if group:
                parent = r.seq[group[0] - 1] if group[0] else None
                self._publish(Stored(parent, tuple(StoredBlock(r.seq[k], r.local[k]) for k in group)))
                group.clear()

        for k in range(before // self.bs, after // self.bs):
            c = self.pool.copies[r.copies[k]]
            if c.hash is not None:  # reused prefix, or cached by an earlier finalize
                flush()
                continue
            if self.pool.cache_private(r.copies[k], r.seq[k]):
                group.append(k)
            else:
                flush()
        flush()

    def _preempt(self) -> _Request | None:
        """``policy_preempt`` (LIFO): the last running request releases everything and waits first."""
        if not self.running:
            return None
        victim = self.running.pop()
        self._release(victim)
        victim.status, victim.computed = "preempted", 0
        victim.preemptions += 1
        self.waiting.appendleft(victim)
        return victim

    def _schedule(self, r: _Request, budget: list[int], scheduled: dict[int, int], cached_blocks: int) -> str:
        """``schedule_request``: 'scheduled', 'blocked' or 'preempted' (the request itself)."""
        cached = cached_blocks * self.bs if r.computed == 0 else 0
        before = r.computed + cached
        remaining = r.length - before
        desired = min(remaining, budget[0])
        if desired == 0 and remaining > 0:
            return "blocked"
        after = before + desired
        while not self._allocate(r, after, cached // self.bs):
            victim = self._preempt()
            if victim is None:
                after = before
                break
            self.preempted_any = True
            budget[0] += scheduled.pop(victim.index, 0)
            if victim is r:
                return "preempted"
        else:
            r.computed = after
        used = after - before
        if used == 0 and after < r.length:
            return "blocked"
        self._finalize(r, before, after)
        self._effects += used
        r.chunked = r.chunked or after < r.prompt_len
        scheduled[r.index] = used
        budget[0] -= used
        if r.status != "running":
            r.status = "running"
            self.running.append(r)
            if r.cached is None:
                r.cached = cached
        return "scheduled"

    def _signal(self, r: _Request) -> None:
        if not r.signaled:
            r.signaled = True
            self.first_cached[r.index] = r.cached

    def step(self) -> None:
        """One engine pass."""
        budget = [self.budget_per_pass]
        scheduled: dict[int, int] = {}
        self.preempted_any = False
        i = 0
        while i < len(self.running) and budget[0] > 0:
            out = self._schedule(self.running[i], budget, scheduled, 0)
            if out == "scheduled":
                i += 1
            elif out == "blocked":
                break
        while not self.preempted_any and len(self.running) < self.max_num_seqs and self.waiting:
            r = self.waiting[0]
            known = -(-r.length // self.bs)
            if r.status == "waiting" and known > self.pool.capacity:
                self.waiting.popleft()
                self.rejected.add(r.index)
                self.first_cached[r.index] = None
                self.finished.add(r.index)
                self._effects += 1
                continue
            hits, active = self._prefix(r)
            if known - active > self.pool.capacity - self.pool.num_active():
                break
            self.waiting.popleft()
            out = self._schedule(r, budget, scheduled, hits)
            if out != "scheduled":
                if r.status != "running" and r not in self.waiting:
                    self.waiting.appendleft(r)
                break
        for r in list(self.running):
            if r.computed < r.length:
                continue
            r.generated += 1
            self._signal(r)
            self._effects += 1
            if r.generated >= r.max_output:
                self.running.remove(r)
                self._release(r)
                self.finished.add(r.index)

    def run(self) -> None:
        """Passes until every submitted request finished, or the engine stalls."""
        while len(self.finished) < len(self.requests):
            self._effects = 0
            self.step()
            if self._effects == 0:
                self.stalled = True
                return


def model_run(w: Workload, generated: Sequence[Sequence[int]]) -> Run:
    """The model on ``w``: each arrival group is submitted once the previous one has finished."""
    s = VllmScheduler(w.block_size, w.num_gpu_blocks, w.max_num_batched_tokens, w.max_num_seqs)
    groups = w.group_of()
    gen = list(generated) or [[] for _ in w.prompts]
    i = 0
    while i < len(w.prompts):
        j = i
        while j < len(w.prompts) and groups[j] == groups[i]:
            s.submit(w.prompts[j], gen[j], w.outputs[j])
            j += 1
        s.run()
        if s.stalled:
            return Run([], [], stalled=True)
        i = j
    n = len(w.prompts)
    stats = {
        "preemptions": sum(r.preemptions for r in s.requests),
        "chunked_prefills": sum(r.chunked for r in s.requests),
        "concurrent_requests": sum(groups.count(g) > 1 for g in groups),
        "rejected": len(s.rejected),
    }
    return Run(
        [e.to_json() for e in s.events],
        [s.first_cached.get(k) for k in range(n)],
        [list(g) for g in gen],
        [k in s.rejected for k in range(n)],
        stats=stats,
    )


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


ENGINE = ("block_size", "num_gpu_blocks", "max_num_batched_tokens", "max_num_seqs")


def case(w: Workload) -> tuple[dict[str, Any], list[Action]]:
    """A workload as the conformance contract sees it: the engine's configuration and one step,
    ``("run", {"prompts", "outputs", "groups"})`` (the real mocker replays a workload whole)."""
    config = {k: getattr(w, k) for k in ENGINE}
    return config, [("run", {"prompts": w.prompts, "outputs": w.outputs, "groups": w.group_of()})]


def workload(config: dict[str, Any], args: dict[str, Any]) -> Workload:
    return Workload(args["prompts"], args["outputs"], groups=args["groups"], **{k: config[k] for k in ENGINE})


def _observation(r: Run) -> dict[str, Any]:
    return {
        "late": r.late,
        "stalled": r.stalled,
        "events": [list(e) for e in flatten(r.events)],
        "cached": r.cached,
        "generated": r.generated,
        "stats": r.stats,
    }


class RealMocker:
    """The real mocker (:func:`real_run`) behind the conformance contract."""

    name = "ai-dynamo-runtime 1.6.1 mocker"

    def __init__(self) -> None:
        self.config: dict[str, Any] = {}

    def reset(self, config: dict[str, Any]) -> None:
        self.config = dict(config)

    def step(self, op: str, args: Any) -> dict[str, Any]:
        return _observation(real_run(workload(self.config, args)))


class PathMocker(RealMocker):
    """The real mocker with its events also relayed through one of Dynamo's deployed paths
    (:mod:`kvmodel.conformance.deployed`, ``kvmodel conform --target dynamo-mocker --path``). The
    mocker replays a workload offline, so its stream is relayed after the replay, one event per
    engine message in vLLM's wire form (each Stored block's tokens recovered from the requests'
    tokens through its tokens hash, which the path recomputes), the path drained by its barrier
    after each; after each event the path router's overlap for every request's tokens must equal
    its model's (the router model through the modelled path), and the events at which the
    modelled path's view differs from the raw path's are counted. The mocker's own cache is not
    observable between events (offline replay); the model checks it by the event stream itself."""

    def __init__(self, kind: str) -> None:
        from kvmodel.conformance import deployed

        super().__init__()
        self.kind = kind
        self.path: Any = None
        self._deployed = deployed

    def _open(self, block_size: int) -> Any:
        if self.path is None or self.path.block_size != block_size:
            self.close()
            self.path = self._deployed.DeployedPath(self.kind, block_size)
        return self.path

    def step(self, op: str, args: Any) -> dict[str, Any]:
        w = workload(self.config, args)
        run = real_run(w)
        obs = _observation(run)
        if not (run.late or run.stalled):
            obs["path"] = self.relay(w, run)
        return obs

    def relay(self, w: Workload, run: Run) -> dict[str, Any]:
        d = self._deployed
        bs = w.block_size
        path = self._open(bs)
        path.step([{"type": "AllBlocksCleared"}])
        model, raw = d.ModelPath(self.kind, bs), d.ModelPath("raw", bs, dedup=False)
        seqs = [list(p) + list(g) for p, g in zip(w.prompts, run.generated or [[] for _ in w.prompts], strict=True)]
        tokens_of: dict[int, list[int]] = {}
        for toks in seqs:
            for i, lh in enumerate(local_block_hashes(toks, bs)):
                tokens_of.setdefault(lh, toks[i * bs : (i + 1) * bs])
        divergences: list[dict[str, Any]] = []
        differs = 0
        for e in run.events:
            message = [_wire(e, tokens_of)]
            path.step(message)
            model.step(message)
            raw.step(message)
            differs += any(model.overlap(t) != raw.overlap(t) for t in seqs)
            for k, t in enumerate(seqs):
                got, want = path.overlap(t), model.overlap(t)
                if got != want and len(divergences) < 3:
                    divergences.append({"event_id": e["event_id"], "request": k, "path": got, "model": want})
        return {"divergences": divergences, "differs": differs, "events": len(run.events)}

    def close(self) -> None:
        if self.path is not None:
            self.path.close()
            self.path = None


def _wire(e: dict[str, Any], tokens_of: dict[int, list[int]]) -> dict[str, Any]:
    """One mocker event in vLLM's wire form (what an engine's ZMQ socket carries)."""
    d = e["data"]
    if "stored" in d:
        st = d["stored"]
        toks = [t for b in st["blocks"] for t in tokens_of[b["tokens_hash"]]]
        return {
            "type": "BlockStored",
            "block_hashes": [b["block_hash"] for b in st["blocks"]],
            "parent_block_hash": st.get("parent_hash"),
            "token_ids": toks,
            "block_size": len(toks) // max(1, len(st["blocks"])),
        }
    if "removed" in d:
        return {"type": "BlockRemoved", "block_hashes": list(d["removed"]["block_hashes"])}
    return {"type": "AllBlocksCleared"}


class ModelMocker:
    """The model (:func:`model_run`) behind the conformance contract. Sampling is the engine's
    choice: ``given`` takes the tokens the real mocker generated, and the model computes them."""

    name = "kvmodel VllmScheduler"

    def __init__(self) -> None:
        self.config: dict[str, Any] = {}
        self.generated: list[list[int]] = []

    def reset(self, config: dict[str, Any]) -> None:
        self.config, self.generated = dict(config), []

    def given(self, observation: dict[str, Any]) -> None:
        self.generated = [list(g) for g in observation.get("generated", [])]

    def step(self, op: str, args: Any) -> dict[str, Any]:
        return _observation(model_run(workload(self.config, args), self.generated))


def lineage_fault(event: Sequence[Any]) -> str | None:
    """Why a flattened Stored event breaks lineage, else ``None``: its first block must be the
    chained hash of its parent and its own tokens hash (its tokens hash alone without a parent),
    each further block chained onto the one before (``lib/llm/src/tokens.rs``, XXH3 seed 1337) —
    the parent is the hash just before the first block in the sequence that stored it."""
    if len(event) < 5 or event[1] != "stored":
        return None
    _, _, blocks, tokens, parent = event
    prev = parent
    for b, t in zip(blocks, tokens, strict=True):
        want = t if prev is None else chain_hash(prev, t, DEFAULT_SALT)
        if b != want:
            return f"block {b} is not the chained hash of {prev} and tokens hash {t}"
        prev = b
    return None


def compare_runs(op: str, args: Any, model: dict[str, Any], real: Any, memo: dict[str, Any]) -> Difference | None:
    """The first difference of two runs: a real group finishing after the next one arrived
    (``timing``: the harness's assumption broke), a real Stored that breaks lineage (an
    invariant of every event stream, whatever the model says), stalls, then the flattened event
    streams, then the per-request cached tokens."""
    if real["late"]:
        return ("timing", "groups finish before the next arrives", "a group ran late")
    if real.get("path", {}).get("divergences"):  # the deployed path against its model
        return ("path", [], real["path"]["divergences"])
    for i, y in enumerate(real["events"]):
        why = lineage_fault(y)
        if why is not None:
            return (
                "lineage",
                {"index": i, "invariant": "a Stored's parent is the block before it"},
                {"index": i, "event": y, "why": why},
            )
    if model["stalled"] or real["stalled"]:
        return ("stall", model["stalled"], real["stalled"]) if model["stalled"] != real["stalled"] else None
    a, b = model["events"], real["events"]
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return ("event", {"index": i, "event": x}, {"index": i, "event": y})
    if len(a) != len(b):
        i = min(len(a), len(b))
        return ("event count", {"index": i, "events": a[i : i + 3]}, {"index": i, "events": b[i : i + 3]})
    if len(model["cached"]) != len(real["cached"]):
        return ("requests", len(model["cached"]), len(real["cached"]))
    for i, (cx, cy) in enumerate(zip(model["cached"], real["cached"], strict=True)):
        if cx != cy:
            return ("cached_tokens", {"request": i, "cached": cx}, {"request": i, "cached": cy})
    return None


def _tally(rep: Report, op: str, args: Any, model: dict[str, Any], real: dict[str, Any]) -> None:
    """Requests, real events and what the workload exercised (stalls, preemptions, chunked
    prefills, concurrent and rejected requests)."""
    rep.extra["requests"] += len(args["prompts"])
    if real["late"]:
        return
    cov = rep.extra["coverage"]
    cov["stalled_workloads"] = cov.get("stalled_workloads", 0) + int(real["stalled"])
    for k, v in model["stats"].items():
        cov[k] = cov.get(k, 0) + v
    if not (real["stalled"] or model["stalled"]):
        rep.extra["events"] += len(real["events"])
    if "path" in real:
        rep.extra["path_events"] = rep.extra.get("path_events", 0) + real["path"]["events"]
        rep.extra["path_differs_from_raw"] = rep.extra.get("path_differs_from_raw", 0) + real["path"]["differs"]


def compare(w: Workload) -> tuple[Divergence | None, int]:
    """Run ``w`` on both sides; the first difference and the number of real events."""
    config, steps = case(w)
    seen: list[int] = [0]

    def count(op: str, args: Any, model: dict[str, Any], real: dict[str, Any]) -> None:
        seen[0] = 0 if real["late"] or real["stalled"] else len(real["events"])

    d, _ = differential_.differential(ModelMocker(), RealMocker(), config, steps, compare_runs, on_step=count)
    return d, seen[0]


def workload_strategy(max_requests: int = 6) -> Any:
    """Prompts over a small alphabet of token blocks (shared prefixes, forks, exact repeats,
    partial tails), 1 to 9 output tokens, 3 to 12 GPU blocks of 4 tokens (eviction pressure), in
    arrival groups (a request opens a new one with probability 1/3: sequential or concurrent
    requests, batching, preemption), with a
    token budget that is unbounded or 2 to 9 tokens (chunked prefill) and 1, 2 or 256 running
    requests at most."""
    from hypothesis import strategies as st

    bs = 4
    blocks = [[10 * k + j for j in range(bs)] for k in range(1, 6)]

    def prompt(path: list[int], tail: int) -> list[int]:
        out = [t for k in path for t in blocks[k]]
        return out + [90 + j for j in range(tail)] or [1]

    def build(reqs: list[tuple[list[int], int, int]], n: int, budget: int, seqs: int) -> Workload:
        groups, g = [], 0
        for k, (_, _, new_group) in enumerate(reqs):
            g += int(k > 0 and new_group == 0)
            groups.append(g)
        return Workload([r[0] for r in reqs], [r[1] for r in reqs], bs, n, groups, budget, seqs)

    p = st.builds(prompt, st.lists(st.integers(0, 2), min_size=0, max_size=3), st.integers(0, 3))
    return st.builds(
        build,
        st.lists(st.tuples(p, st.integers(1, 9), st.integers(0, 2)), min_size=1, max_size=max_requests),
        st.integers(3, 12),
        st.one_of(st.just(8192), st.integers(2, 9)),
        st.sampled_from([256, 1, 2]),
    )


def run(
    *,
    workloads: int,
    seed: int = 0,
    component: str = "",
    progress: Callable[[int], None] | None = None,
    path: str = "raw",
) -> Report:
    """Generate ``workloads`` workloads (seeded); on the first divergence shrink it (Hypothesis).
    ``extra``: requests, real events, and the coverage (:func:`_tally`). ``path``: ``raw``, or
    ``publisher`` / ``indexer`` (the real events also relayed through that deployed path,
    :class:`PathMocker`)."""
    rep = Report(
        RealMocker.name,
        component,
        target="dynamo-mocker",
        seed=seed,
        extra={"requests": 0, "events": 0, "coverage": {}, "path": path},
    )
    real: RealMocker = RealMocker() if path == "raw" else PathMocker(path)
    try:
        return _run(rep, real, workloads, progress)
    finally:
        if isinstance(real, PathMocker):
            real.close()


def _run(rep: Report, real: RealMocker, workloads: int, progress: Callable[[int], None] | None) -> Report:
    return differential_.run(
        ModelMocker(),
        real,
        rep,
        strategy=workload_strategy(),
        case=case,
        compare=compare_runs,
        workloads=workloads,
        tally=_tally,
        size=lambda c: (len(c[1][0][1]["prompts"]), sum(map(len, c[1][0][1]["prompts"]))),
        progress=progress,
    )
