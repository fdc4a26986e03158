"""The native backend's conformance targets: the real mocker of ``ai-dynamo-runtime==1.6.1``
(:mod:`kvmodel.conformance.mocker`) and vLLM's real ``BlockPool`` (:mod:`kvmodel.conformance.vllm_pool`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def mocker_run(
    *,
    workloads: int,
    seed: int,
    max_ops: int = 24,
    revision: str | None = None,
    progress: Callable[[int], None] | None = None,
    path: str = "raw",
) -> dict[str, Any]:
    from kvmodel.conformance import mocker
    from kvmodel.conformance.deployed import PathError
    from kvmodel.harness import HarnessError

    try:
        rep = mocker.run(workloads=workloads, seed=seed, component="g1_native", progress=progress, path=path)
    except PathError as e:
        raise HarnessError(str(e)) from None
    out: dict[str, Any] = rep.to_json()
    return out


def mocker_describe(out: dict[str, Any]) -> list[str]:
    cov = out["coverage"]
    rate = round(out["events"] / out["seconds"], 1) if out["seconds"] else None
    lines = [
        "ai-dynamo-runtime 1.6.1 mocker, sequential and concurrent requests: "
        f"{out['workloads']} workloads, {out['requests']} requests, {out['events']} events, "
        f"{out['divergences']} divergences, {out['seconds']:.2f}s ({rate} events/s, both sides)",
        f"  exercised: {cov.get('concurrent_requests', 0)} concurrent requests, "
        f"{cov.get('chunked_prefills', 0)} chunked prefills, {cov.get('preemptions', 0)} preemptions, "
        f"{cov.get('rejected', 0)} rejections, {cov.get('stalled_workloads', 0)} stalled workloads",
    ]
    if out.get("path", "raw") != "raw":
        lines.append(
            f"  the {out['path']} path (Dynamo's real one, each of {out.get('path_events', 0)} real events relayed "
            "and drained): its router agreed with the model of that path after every event; the modelled path "
            f"differed from the raw path after {out.get('path_differs_from_raw', 0)} event(s)"
        )
    d = out["first_divergence"]
    if d:
        lines.append(f"DIVERGENCE ({d['what']}): model {d['model']}, real {d['implementation']}")
        lines.append(f"  engine: {json.dumps(out['config'], sort_keys=True)}")
        lines.append(f"  workload: {json.dumps(out['counterexample'][0][1], sort_keys=True)}")
    return lines


def vllm_run(
    *,
    workloads: int,
    seed: int,
    max_ops: int = 24,
    revision: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    from kvmodel.conformance import vllm_pool

    real = vllm_pool.VllmPool()
    rep = vllm_pool.run(
        vllm_pool.ModelPool(),
        real,
        workloads=workloads,
        seed=seed,
        max_ops=max_ops,
        component="g1_native",
        progress=progress,
    )
    out: dict[str, Any] = rep.to_json()
    out["duplicate_copy_witness"] = vllm_pool.duplicate_witness(real)
    return out


def vllm_describe(out: dict[str, Any]) -> list[str]:
    rate = round(out["steps"] / out["seconds"], 1) if out["seconds"] else None
    lines = [
        f"{out['implementation']}: {out['workloads']} workloads, {out['steps']} operations, "
        f"{out['divergences']} divergences, {out['seconds']:.2f}s ({rate} operations/s, "
        f"both sides); {out['duplicate_events']} per-copy events beyond the per-hash transitions (documented)"
    ]
    d = out["first_divergence"]
    if d:
        lines.append(
            f"DIVERGENCE at step {d['step']} ({d['what']}), capacity {out['config'].get('capacity')}: "
            f"model {d['model']}, real {d['implementation']}"
        )
        lines += [f"  {op} {json.dumps(args, sort_keys=True)}" for op, args in out["counterexample"]]
    return lines
