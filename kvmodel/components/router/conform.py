"""The router's conformance target: the radix-tree model against the real ``RadixTree`` of
``ai-dynamo-runtime==1.6.1`` (:mod:`kvmodel.conformance.radix`, ``docs/router.md``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def run(
    *,
    workloads: int,
    seed: int,
    max_ops: int = 24,
    revision: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    from kvmodel.conformance import radix
    from kvmodel.model.quirks import breakable
    from kvmodel.model.quirks import revision as named

    rev = revision or "1.6.1"
    assert rev in ("1.6.1", "4276866"), rev
    # the real tree's observations are also judged by the router's invariants; what the real
    # binary's revision (1.6.1) is recorded to break is counted, anything else is a divergence
    known = breakable("kv_router_radix_tree", named("kv_router_radix_tree", "1.6.1").quirks)
    rep = radix.run(
        radix.ModelRadixTree(rev),  # type: ignore[arg-type]
        radix.InvariantWatch(radix.RealRadixTree(), sorted(known)),
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
    inv = out.get("invariants")
    if inv:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(inv["violated_steps"].items())) or "none"
        lines.append(
            f"the real tree judged by {len(inv['judged'])} invariants after every step; steps violating each "
            f"(all recorded breaks of revision 1.6.1): {counts}"
        )
    d = out["first_divergence"]
    if d:
        lines.append(f"DIVERGENCE at step {d['step']} ({d['what']}): model {d['model']}, real {d['implementation']}")
        lines.append("minimal operations:")
        lines += [f"  {op} {json.dumps(args, sort_keys=True)}" for op, args in out["counterexample"]]
    return lines
