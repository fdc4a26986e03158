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
        progress=progress,
    )
    out = rep.to_json()
    out["model_revision"] = rev
    return out


def diverges(ops: Any) -> bool:
    from kvmodel.conformance import radix

    return bool(radix.diverges(ops))


def describe(out: dict[str, Any]) -> list[str]:
    lines = [
        f"{out['workloads']} workloads, {out['events']} events ({out['operations']} operations), "
        f"{out['divergences']} divergences, {out['seconds']:.2f}s ({out['events_per_second']} events/s, both sides)"
    ]
    d = out["first_divergence"]
    if d:
        lines.append(f"DIVERGENCE at step {d['step']} ({d['what']}): model {d['model']}, real {d['real']}")
        lines.append("minimal operations:")
        lines += [f"  {json.dumps(op, sort_keys=True)}" for op in out["counterexample"]]
    return lines
