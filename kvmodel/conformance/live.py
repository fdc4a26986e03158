"""Cross-check on the live path: the real mocker served in-process, its KV events read over ZMQ.

``dynamo-runtime.md`` §3.4: a ``DistributedRuntime`` with in-memory discovery and the ZMQ event
plane, the mocker engine with ``zmq_kv_events_port`` and ``zmq_replay_port`` set, requests sent
strictly one after another through a client (token ids given directly). The engine's replay
socket (a ROUTER keeping the last batches) returns every batch in order, so nothing is lost to
a late subscriber. Each batch is msgpack ``[ts, [events], dp_rank]`` in vLLM's wire format:
``{"type": "BlockStored", "block_hashes", "parent_block_hash", "token_ids", ...}`` and
``{"type": "BlockRemoved", "block_hashes"}``.

:func:`live_run` returns the events flattened as ``(kind, block hashes, parent)`` plus the token
ids of every Stored, the generated tokens and the cached tokens per request, for comparison with
:func:`kvmodel.conformance.mocker.model_run` fed the same generated tokens. Only documented
configuration knobs are used, so this path survives if the offline ``_runtime`` entry point goes.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from kvmodel.conformance.deployed import free_port
from kvmodel.conformance.mocker import Workload


def available() -> str | None:
    try:
        import msgpack  # noqa: F401
        import zmq  # noqa: F401

        os.environ.setdefault("DYN_LOG", "error")
        from dynamo._core import DistributedRuntime, make_engine  # noqa: F401
    except ImportError as e:
        return f"the live path needs ai-dynamo-runtime, pyzmq and msgpack (kvmodel[real]): {e}"
    return None


async def _run(w: Workload) -> dict[str, Any]:
    import msgpack
    import zmq
    import zmq.asyncio
    from dynamo._core import (
        DistributedRuntime,
        EngineType,
        EntrypointArgs,
        ModelRuntimeConfig,
        _normalize_mocker_config,
        make_engine,
        run_input,
    )

    os.environ.setdefault("DYN_SELF_HOST_METADATA", "0")
    pub, replay = free_port(), free_port()
    rt = DistributedRuntime(asyncio.get_running_loop(), "mem", "tcp", event_plane="zmq")
    cfg = _normalize_mocker_config(
        {
            "engine": {"block_size": w.block_size, "num_gpu_blocks": w.num_gpu_blocks, "speedup_ratio": 100.0},
            "dynamo": {"zmq_kv_events_port": pub, "zmq_replay_port": replay},
        }
    )
    rc = ModelRuntimeConfig()
    rc.total_kv_blocks = w.num_gpu_blocks
    rc.kv_event_publishing_enabled = True
    endpoint = "dyn://kvmodel.mocker.generate"
    args = EntrypointArgs(
        EngineType.Mocker,
        model_name="mock",
        endpoint_id=endpoint,
        mocker_engine_args=cfg,
        runtime_config=rc,
        kv_cache_block_size=w.block_size,
    )
    engine = await make_engine(rt, args)
    serve = asyncio.ensure_future(run_input(rt, endpoint, engine))
    client = await rt.endpoint("kvmodel.mocker.generate").client()
    await asyncio.wait_for(client.wait_for_instances(), 20)
    generated: list[list[int]] = []
    cached: list[int | None] = []
    try:
        for prompt, n_out in zip(w.prompts, w.outputs, strict=True):
            req = {
                "model": "mock",
                "token_ids": list(prompt),
                "stop_conditions": {"max_tokens": n_out, "ignore_eos": True},
                "sampling_options": {},
                "output_options": {},
                "eos_token_ids": [],
                "annotations": [],
            }
            toks: list[int] = []
            last: dict[str, Any] = {}
            async for item in await client.generate(req):
                last = item.data()
                toks += list(last.get("token_ids") or [])
            generated.append(toks)
            usage = (last.get("completion_usage") or {}).get("prompt_tokens_details") or {}
            cached.append(usage.get("cached_tokens"))
        await asyncio.sleep(0.2)
        ctx = zmq.asyncio.Context()
        dealer = ctx.socket(zmq.DEALER)
        dealer.connect(f"tcp://127.0.0.1:{replay}")
        await dealer.send_multipart([b"", (0).to_bytes(8, "big")])
        events: list[dict[str, Any]] = []
        while True:
            frames = await asyncio.wait_for(dealer.recv_multipart(), 10)
            if int.from_bytes(frames[-2], "big", signed=True) == -1:
                break
            _, batch, _ = msgpack.unpackb(frames[-1], strict_map_key=False)
            events += list(batch)
        dealer.close(0)
        ctx.term()
    finally:
        rt.shutdown()
        await asyncio.sleep(0.5)
        serve.cancel()
    return {"events": events, "generated": generated, "cached": cached}


def live_run(w: Workload) -> dict[str, Any]:
    """Serve the mocker live and run ``w``'s requests one after another (about 1-2 s)."""
    return asyncio.run(_run(w))


def flatten_live(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for e in events:
        if e.get("type") == "BlockStored":
            out.append(("stored", tuple(e["block_hashes"]), e.get("parent_block_hash")))
        elif e.get("type") == "BlockRemoved":
            out.append(("removed", tuple(e["block_hashes"])))
        else:
            out.append(("other", e.get("type")))
    return out


def flatten_model(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    from kvmodel.conformance.mocker import flatten

    out: list[tuple[Any, ...]] = []
    for x in flatten(events):
        out.append(("stored", x[2], x[4]) if x[1] == "stored" else ("removed", x[2]))
    return out


def canonical(flat: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Hashes renamed ``h0, h1, ...`` in order of first appearance. The live engine's sampled
    tokens are not the ones its client sees (they are remapped for the client), so decode blocks'
    hashes cannot be predicted from the client side; the stream's shape can, exactly."""
    names: dict[Any, str] = {}

    def nm(h: Any) -> Any:
        return None if h is None else names.setdefault(h, f"h{len(names)}")

    out: list[tuple[Any, ...]] = []
    for x in flat:
        if x[0] == "stored":
            out.append(("stored", tuple(nm(h) for h in x[1]), nm(x[2])))
        else:
            out.append((x[0], tuple(nm(h) for h in x[1]) if isinstance(x[1], tuple) else x[1]))
    return out


def compare(w: Workload) -> tuple[str | None, dict[str, Any]]:
    """Live run vs the model (sampled tokens only rename decode blocks' hashes): same canonical
    event sequence, same cached tokens per request, and every hash the
    model can know (prompt blocks) identical. ``None`` when they agree."""
    from kvmodel.conformance.mocker import model_run

    r = live_run(w)
    # stand-in sampled tokens, distinct per request (the engine's own are random and unseen)
    m = model_run(w, [[1_000_000 + 1000 * i + j for j in range(o)] for i, o in enumerate(w.outputs)])
    a, b = flatten_model(m.events), flatten_live(r["events"])
    if canonical(a) != canonical(b):
        return f"event sequence: model {canonical(a)}, live {canonical(b)}", r
    if m.cached != r["cached"]:
        return f"cached tokens: model {m.cached}, live {r['cached']}", r
    prompt_hashes = set()
    from kvmodel.model.hashing import local_block_hashes, sequence_hashes

    for p in w.prompts:
        prompt_hashes |= set(sequence_hashes(local_block_hashes(p, w.block_size)))
    for x, y in zip(a, b, strict=True):
        for hx, hy in zip(x[1], y[1], strict=True):
            if (hx in prompt_hashes or hy in prompt_hashes) and hx != hy:
                return f"prompt block hash: model {hx}, live {hy}", r
    return None, r
