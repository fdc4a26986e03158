"""Dynamo's deployed KV-event paths, for real (``ai-dynamo-runtime`` 1.6.1).

An engine publishes its KV events on a ZMQ socket in vLLM's wire format (SGLang's publisher
speaks the same); what reaches the router depends on the path a deployment runs:

* ``publisher`` — the worker's ``KvEventPublisher`` in relay mode subscribes to the engine's
  socket, converts, deduplicates and sends the events over the event plane to the router's
  indexer (``KvRouter``). Started in-process on a ``DistributedRuntime`` with the ``mem``
  discovery backend, the ``tcp`` request plane and the ``zmq`` event plane (no etcd, no NATS);
  the worker serves an endpoint and registers a model card (``register_llm`` with
  ``skip_model_assets``), which is how the router finds it. Rust:
  ``lib/llm/src/kv_router/publisher/`` (the dedup filter: ``dedup.rs``).
* ``indexer`` — the standalone ``python -m dynamo.indexer`` subscribes to the engine's socket
  itself and answers ``/query`` over HTTP on loopback.

Both are fed by :class:`EngineSocket` (one ZMQ PUB on 127.0.0.1, the engine's side) and read by
overlap scores. A step is drained deterministically by a *barrier*: a marker block (its own
tokens, a fresh hash each time) is published after the step's events and the path is polled
until the router reports it; events of one worker are applied in order, so every event before
the marker has then been applied. A marker that does not appear within the timeout is a
:class:`PathTimeout` (never a pass). The previous marker is removed in the same message.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from kvmodel.harness import HarnessError

# Dynamo's tokens_hash of a stored event's blocks: (tokens, lora_name, cache_salt) -> per block
LocalHash = Callable[[Sequence[int], Any, Any], list[int]]

os.environ.setdefault("DYN_LOG", "error")  # before the first import of the wheel: read once

MODEL = "kvmodel"
WORKER = 7  # the indexer's worker id for the engine's socket
MARK_TOKEN = 900_000_000  # marker blocks' tokens start here (far from any prompt's tokens)
MARK_HASH = 1 << 62  # marker blocks' engine hashes start here


class PathError(HarnessError):
    """A deployed path could not be started or answered wrongly (one line): no verdict, as any
    harness failure (``kvmodel conform`` exits 2, never a pass or a violation)."""


class PathTimeout(PathError):
    """The path did not apply a barrier's marker in time: nothing after it is judged."""


def available() -> str | None:
    """``None`` when the deployed paths can run here, else why not (one line)."""
    os.environ.setdefault("DYN_LOG", "error")
    try:
        import msgpack  # noqa: F401
        import zmq  # noqa: F401
        from dynamo.llm import KvEventPublisher, KvRouter, register_llm  # noqa: F401
    except ImportError as e:
        return f"the deployed paths need ai-dynamo-runtime, pyzmq and msgpack ({e}); install kvmodel[real]"
    return None


def free_port() -> int:
    """A TCP port free on loopback now (for a socket about to bind it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EngineSocket:
    """The engine's side: a ZMQ PUB on loopback sending ``[topic, seq (8 bytes, big endian),
    msgpack([timestamp, events, dp_rank])]``, vLLM's KV-event wire format."""

    def __init__(self) -> None:
        import zmq

        self.port = free_port()
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.PUB)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.bind(f"tcp://127.0.0.1:{self.port}")
        self.seq = 0

    @property
    def address(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def send(self, events: list[Any], dp_rank: int = 0) -> None:
        import msgpack

        self._sock.send_multipart([b"", self.seq.to_bytes(8, "big"), msgpack.packb([0.0, events, dp_rank])])
        self.seq += 1

    def send_raw(self, payload: bytes, topic: bytes = b"") -> None:
        """Relay an engine's batch as it was sent (its own sequence number replaced by ours)."""
        self._sock.send_multipart([topic, self.seq.to_bytes(8, "big"), payload])
        self.seq += 1

    def close(self) -> None:
        self._sock.close(0)
        self._ctx.term()


class Reader(Protocol):
    def overlap(self, tokens: Sequence[int]) -> int: ...
    def close(self) -> None: ...


class DeployedPath:
    """An engine socket, a path to a router, and the barrier between them."""

    def __init__(self, kind: str, block_size: int, timeout: float = 10.0) -> None:
        why = available()
        if why is not None:
            raise PathError(why)
        if kind not in ("publisher", "indexer"):
            raise PathError(f"unknown path {kind!r}: publisher or indexer")
        self.kind, self.block_size, self.timeout = kind, block_size, timeout
        self.engine = EngineSocket()
        self._marks = 0
        self._last_mark: int | None = None
        try:
            self.reader: Reader = (
                _PublisherReader(self.engine.address, block_size)
                if kind == "publisher"
                else _IndexerReader(self.engine.address, block_size)
            )
        except BaseException:
            self.engine.close()
            raise
        try:
            self._join()
        except BaseException:
            self.close()  # the path's runtime or subprocess too, not only the socket
            raise

    # -- the barrier
    def _marker(self) -> tuple[list[int], dict[str, Any]]:
        k = self._marks
        self._marks += 1
        toks = [MARK_TOKEN + k * self.block_size + i for i in range(self.block_size)]
        ev = {
            "type": "BlockStored",
            "block_hashes": [MARK_HASH + k],
            "parent_block_hash": None,
            "token_ids": toks,
            "block_size": self.block_size,
        }
        return toks, ev

    def _seen(self, toks: list[int], until: float) -> bool:
        while time.monotonic() < until:
            if self.reader.overlap(toks) >= 1:
                return True
            time.sleep(0.005)
        return False

    def _join(self) -> None:
        """Send markers until one arrives (a ZMQ subscriber misses what was sent before it joined)."""
        end = time.monotonic() + self.timeout
        while time.monotonic() < end:
            toks, ev = self._marker()
            self.engine.send([ev])
            if self._seen(toks, min(end, time.monotonic() + 0.25)):
                self._last_mark = MARK_HASH + self._marks - 1
                return
        raise PathTimeout(f"the {self.kind} path never delivered an event within {self.timeout} s")

    def drain(self) -> None:
        """Return once every event sent so far has been applied by the router."""
        toks, ev = self._marker()
        out: list[Any] = [ev]
        if self._last_mark is not None:
            out.insert(0, {"type": "BlockRemoved", "block_hashes": [self._last_mark]})
        self.engine.send(out)
        if not self._seen(toks, time.monotonic() + self.timeout):
            raise PathTimeout(f"the {self.kind} path did not apply a barrier within {self.timeout} s")
        self._last_mark = MARK_HASH + self._marks - 1

    def step(self, events: list[Any], dp_rank: int = 0) -> None:
        """Publish one engine message and wait until the router has applied it."""
        self.engine.send(events, dp_rank)
        self.drain()

    def overlap(self, tokens: Sequence[int]) -> int:
        """The router's overlap, in blocks, of ``tokens`` with the engine's worker."""
        return self.reader.overlap(tokens)

    def close(self) -> None:
        try:
            self.reader.close()
        finally:
            self.engine.close()

    def __enter__(self) -> DeployedPath:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _PublisherReader:
    """The worker's ``KvEventPublisher`` relaying the engine socket to an in-process ``KvRouter``,
    on a runtime whose asyncio loop runs in a thread of its own."""

    def __init__(self, address: str, block_size: int) -> None:
        self.block_size = block_size
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="kvmodel-dynamo-runtime", daemon=True)
        self.thread.start()
        self.worker_id: int | None = None
        self._serving: Any = None
        self.rt: Any = None
        self.publisher: Any = None
        try:
            self._call(self._start(address), 30.0)
        except BaseException as e:
            self.close()
            if isinstance(e, Exception) and not isinstance(e, PathError):
                raise PathError(f"the Dynamo runtime's worker path did not start: {e}") from None
            raise

    def _call(self, coro: Any, timeout: float) -> Any:
        try:
            return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)
        except TimeoutError:
            raise PathTimeout(f"the Dynamo runtime did not answer within {timeout} s") from None

    async def _start(self, address: str) -> None:
        from dynamo._core import DistributedRuntime
        from dynamo.llm import (
            KvEventPublisher,
            KvRouter,
            KvRouterConfig,
            ModelInput,
            ModelType,
            WorkerType,
            register_llm,
        )

        async def generate(request: Any, context: Any = None) -> Any:
            yield {}

        self.rt = DistributedRuntime(asyncio.get_running_loop(), "mem", "tcp", event_plane="zmq")
        ep = self.rt.endpoint("kvmodel.worker.generate")
        self._serving = asyncio.ensure_future(ep.serve_endpoint(generate))
        await asyncio.sleep(0.05)
        await register_llm(
            ModelInput.Tokens,
            ModelType.Chat,
            ep,
            MODEL,
            model_name=MODEL,
            kv_cache_block_size=self.block_size,
            skip_model_assets=True,
            worker_type=WorkerType.Aggregated,
        )
        self.worker_id = int(ep.connection_id())
        self.publisher = KvEventPublisher(
            ep, worker_id=self.worker_id, kv_block_size=self.block_size, zmq_endpoint=address
        )
        self.router = KvRouter(ep, self.block_size, KvRouterConfig())

    async def _overlap(self, tokens: list[int]) -> int:
        r = await self.router.get_overlap_scores(tokens)
        return max((int(w["device_blocks"]) for w in r["workers"] if w["worker_id"] == self.worker_id), default=0)

    def overlap(self, tokens: Sequence[int]) -> int:
        return int(self._call(self._overlap(list(tokens)), 10.0))

    async def _stop(self) -> None:
        if self.publisher is not None:
            self.publisher.shutdown()
        if self._serving is not None:
            self._serving.cancel()
        if self.rt is not None:
            self.rt.shutdown()

    def close(self) -> None:
        try:
            self._call(self._stop(), 10.0)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10.0)


class _IndexerReader:
    """``python -m dynamo.indexer`` subscribed to the engine socket, read over HTTP."""

    def __init__(self, address: str, block_size: int) -> None:
        self.port, self.block_size = free_port(), block_size
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dynamo.indexer",
                "--block-size",
                str(block_size),
                "--port",
                str(self.port),
                "--threads",
                "1",
                "--model-name",
                MODEL,
                "--workers",
                f"{WORKER}={address}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "DYN_LOG": "error"},
        )
        end = time.monotonic() + 30.0
        while True:
            try:
                self._http("/workers")
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > end:
                    err = (self.proc.stderr.read() if self.proc.stderr else b"").decode(errors="replace")
                    self.close()
                    raise PathError(f"python -m dynamo.indexer did not start: {err.strip()[-300:]}") from None
                time.sleep(0.05)

    def _http(self, path: str, body: Any = None) -> Any:
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.loads(r.read())

    def overlap(self, tokens: Sequence[int]) -> int:
        try:
            got = self._http("/query", {"token_ids": list(tokens), "model_name": MODEL})
        except urllib.error.HTTPError as e:
            raise PathError(f"dynamo.indexer /query answered {e.code}") from None
        # the indexer scores in tokens (whole blocks matched times the block size)
        return max((int(v) for v in got.get("scores", {}).get(str(WORKER), {}).values()), default=0) // self.block_size

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr is not None:
            self.proc.stderr.close()


# -- the model's side: the same engine messages through the modelled path


def router_events(
    message: Sequence[Any], block_size: int, dp_rank: int = 0, local: LocalHash | None = None
) -> list[Any]:
    """The router's events for one engine message (vLLM's or SGLang's wire events, dict form, or
    ``["AllBlocksCleared"]``), as Dynamo converts them: a BlockStored's blocks keep the engine's
    hashes as ``block_hash`` (as u64) and get ``tokens_hash`` from their tokens (XXH3, seed 1337;
    ``local(tokens, lora_name, cache_salt)`` when the event's namespace enters the hash)."""
    from kvmodel.model.events import Cleared, KvCacheEvent, Removed, Stored, StoredBlock
    from kvmodel.model.hashing import local_block_hashes

    out: list[Any] = []
    for e in message:
        kind = e[0] if isinstance(e, list) else e.get("type")
        if kind == "BlockStored":
            if local is None:
                lhs = local_block_hashes(e["token_ids"], block_size)
            else:
                lhs = local(e["token_ids"], e.get("lora_name"), e.get("cache_salt"))
            blocks = tuple(StoredBlock(_u64(h), lh) for h, lh in zip(e["block_hashes"], lhs, strict=True))
            parent = e.get("parent_block_hash")
            out.append(KvCacheEvent(0, Stored(None if parent is None else _u64(parent), blocks), dp_rank))
        elif kind == "BlockRemoved":
            out.append(KvCacheEvent(0, Removed(tuple(_u64(h) for h in e["block_hashes"])), dp_rank))
        elif kind == "AllBlocksCleared":
            out.append(KvCacheEvent(0, Cleared(), dp_rank))
        else:
            raise PathError(f"not an engine KV event: {e!r:.120}")
    return out


def _u64(h: Any) -> int:
    """An engine hash as Dynamo reads it (``BlockHashValue::into_u64``: a signed one cast)."""
    return int(h) & 0xFFFFFFFFFFFFFFFF


class ModelPath:
    """The router model (the 1.6.1 compressed tree) fed each engine message, through the modelled
    publisher (``publisher``: the ``kv_event_publisher`` component's model at its default revision,
    or with ``dedup=False`` the revision before #8012) or straight (``indexer``, and the raw path)."""

    def __init__(self, kind: str, block_size: int, dedup: bool | None = None, local: LocalHash | None = None) -> None:
        from kvmodel.model.publisher import KvEventPublisher
        from kvmodel.model.router import CompressedRadixTree

        self.block_size = block_size
        self.local = local
        self.tree = CompressedRadixTree()
        self.publisher: KvEventPublisher | None = None
        if kind == "publisher":
            self.publisher = KvEventPublisher(() if dedup is not False else ("removed_passes_every_copy",))

    def step(self, message: Sequence[Any], dp_rank: int = 0) -> None:
        from kvmodel.model.errors import ModelError

        for ev in router_events(message, self.block_size, dp_rank, self.local):
            passed = ev if self.publisher is None else self.publisher.publish(ev)
            if passed is None:
                continue
            try:
                self.tree.apply_event(WORKER, passed)
            except ModelError:
                pass  # the indexer logs an event's error and goes on

    def overlap(self, tokens: Sequence[int], dp_rank: int = 0) -> int:
        from kvmodel.model.hashing import local_block_hashes

        scores = self.tree.find_matches(local_block_hashes(list(tokens), self.block_size))
        return int(scores.get((WORKER, dp_rank), 0))
