"""Access to the real Dynamo Rust code in the ``ai-dynamo-runtime==1.6.1`` wheel.

* :func:`compute_block_hash_for_seq` — the router's local block hashes
  (``dynamo._core.compute_block_hash_for_seq``).
* :func:`mocker_kv_events` — the real mocker's per-block KV event stream, from the
  internal ``run_replay_with_artifacts_json`` of the aisimulate-core module that the same
  shared object exports (``dynamo-runtime.md`` §3.3). It is not a documented API, so it is
  behind a capability check: :func:`available` says whether this installation has it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
from collections.abc import Sequence
from typing import Any

PINNED = "1.6.1"


def available() -> str | None:
    """``None`` when the real wheel and its mocker event path can be used, else why not."""
    os.environ.setdefault("DYN_LOG", "error")  # before the first import: the Rust logger reads it once
    try:
        import dynamo._core as core
    except ImportError as e:
        return f"ai-dynamo-runtime is not installed ({e}); install kvmodel[real]"
    if not hasattr(core, "compute_block_hash_for_seq") or not hasattr(core, "_normalize_mocker_config"):
        return "dynamo._core lacks compute_block_hash_for_seq or _normalize_mocker_config"
    try:
        rt = _runtime()
    except Exception as e:
        return f"cannot load the mocker runtime module: {e}"
    if not hasattr(rt, "run_replay_with_artifacts_json"):
        return "the mocker runtime has no run_replay_with_artifacts_json"
    return None


def version() -> str | None:
    try:
        from importlib.metadata import version as v

        return v("ai-dynamo-runtime")
    except Exception:
        return None


def compute_block_hash_for_seq(tokens: Sequence[int], block_size: int) -> list[int]:
    import dynamo._core as core

    return list(core.compute_block_hash_for_seq(list(tokens), block_size))


_RT: Any = None


def _runtime() -> Any:
    global _RT
    if _RT is None:
        os.environ.setdefault("DYN_LOG", "error")
        import dynamo._core as core

        loader = importlib.machinery.ExtensionFileLoader("_runtime", core.__file__)
        spec = importlib.util.spec_from_file_location("_runtime", core.__file__, loader=loader)
        assert spec is not None
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        _RT = mod
    return _RT


def replay_artifacts(
    prompts: Sequence[Sequence[int]],
    outputs: Sequence[int],
    *,
    block_size: int,
    num_gpu_blocks: int,
    gap_ms: float,
    arrivals: Sequence[float] | None = None,
    engine_args: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The real mocker offline (one aggregated worker), request ``i`` arriving at ``arrivals[i]``
    milliseconds (default ``i * gap_ms``) with ``outputs[i]`` output tokens; ``engine_args`` adds
    engine knobs (``max_num_batched_tokens``, ``max_num_seqs``, ...). The replay's artifacts
    (``kv_events``, ``outputs``, ``requests``). Raises the engine's ``RuntimeError`` when the
    replay aborts."""
    import dynamo._core as core

    knobs = {"block_size": block_size, "num_gpu_blocks": num_gpu_blocks, **(engine_args or {})}
    engine = core._normalize_mocker_config({"engine": knobs})
    times = list(arrivals) if arrivals is not None else [gap_ms * i for i in range(len(prompts))]
    payload = {
        "version": 1,
        "topology": {"kind": "aggregated", "workers": {"initial_workers": 1}},
        "engine": {"dp_size": 1, "rank": engine["engine"]},
        "requests": [
            {
                "id": f"r{i}",
                "arrival_time_ms": times[i],
                "input_tokens": len(p),
                "input_token_ids": list(p),
                "output_tokens": o,
            }
            for i, (p, o) in enumerate(zip(prompts, outputs, strict=True))
        ],
    }
    out: dict[str, Any] = json.loads(_runtime().run_replay_with_artifacts_json(json.dumps(payload)))
    return out["artifacts"]  # type: ignore[no-any-return]


def mocker_kv_events(
    prompts: Sequence[Sequence[int]],
    *,
    block_size: int = 16,
    num_gpu_blocks: int = 64,
    output_tokens: int = 1,
    gap_ms: float = 1000.0,
) -> list[dict[str, Any]]:
    """Run the real mocker offline on sequential requests; return its KV events in order."""
    art = replay_artifacts(
        prompts, [output_tokens] * len(prompts), block_size=block_size, num_gpu_blocks=num_gpu_blocks, gap_ms=gap_ms
    )
    return [e["event"] for e in art["kv_events"]]
