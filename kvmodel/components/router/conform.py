"""The router's conformance target: the radix-tree model against the real ``RadixTree`` of
``ai-dynamo-runtime==1.6.1`` (:mod:`kvmodel.conformance.radix`, ``docs/router.md``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def available() -> str | None:
    from kvmodel.conformance import radix

    return radix.real_available()


def run(
    *,
    workloads: int,
    seed: int,
    max_ops: int = 24,
    revision: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    from kvmodel.conformance import radix

    rev = revision or "1.6.1"
    assert rev in ("1.6.1", "4276866"), rev
    rep = radix.run(
        radix.ModelRadixTree(rev),  # type: ignore[arg-type]
        radix.RealRadixTree(),
        workloads=workloads,
        seed=seed,
        max_ops=max_ops,
        component="router",
        progress=progress,
    )
    out = rep.to_json()
    out["model_revision"] = rev
    return out


def diverges(ops: Any) -> bool:
    from kvmodel.conformance import radix

    return bool(radix.diverges(ops))


def describe(out: dict[str, Any]) -> list[str]:
    rate = round(out["events"] / out["seconds"], 1) if out["seconds"] else None
    lines = [
        f"{out['workloads']} workloads, {out['events']} events ({out['steps']} operations), "
        f"{out['divergences']} divergences, {out['seconds']:.2f}s ({rate} events/s, both sides)"
    ]
    d = out["first_divergence"]
    if d:
        lines.append(f"DIVERGENCE at step {d['step']} ({d['what']}): model {d['model']}, real {d['implementation']}")
        lines.append("minimal operations:")
        lines += [f"  {op} {json.dumps(args, sort_keys=True)}" for op, args in out["counterexample"]]
    return lines
