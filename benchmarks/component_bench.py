"""Shared pieces of the per-component benchmarks (``registry.py``, ``g1.py``, ``kvbm.py``):
Hypothesis throughput of a component's machine, time for Hypothesis to find each quirk (to the
first failure, and to the shrunk counterexample) against the BFS minimum, what the G1 world
machines' drawn worlds cover, and the explorer over the manifest's entries for the component."""

from __future__ import annotations

import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis.stateful import run_state_machine_as_test
from hypothesis_throughput import _settings

from kvmodel import __version__, explorer, jsonio, machines
from kvmodel.model.quirks import quirks_of

ROOT = Path(__file__).resolve().parents[1]


def save(name: str, parts: dict[str, Any]) -> int:
    """Write ``benchmarks/results/<name>.json`` (atomically): the versions it was measured with,
    then ``parts``."""
    out = {"kvmodel": __version__, "python": platform.python_version(), "machine": platform.machine(), **parts}
    path = ROOT / "benchmarks" / "results" / f"{name}.json"
    jsonio.write_text(path, json.dumps(out, indent=2, sort_keys=True) + "\n")
    print(f"wrote {path}")
    return 0


def ours(component: str, n: int) -> dict[str, Any]:
    m = machines.machine_for(component, {}, quirks=())
    t = time.perf_counter()
    run_state_machine_as_test(m, settings=_settings(n))
    dt = time.perf_counter() - t
    steps = m.steps_run[0]
    return {"examples": n, "steps": steps, "seconds": round(dt, 3), "steps_per_s": round(steps / dt, 1)}


def versus_peer(component: str, n: int = 1000) -> dict[str, Any]:
    """Three runs of the component's machine and of the anchors' toy pool machine, interleaved."""
    from hypothesis_throughput import peer

    runs, peers = [], []
    for _ in range(3):
        runs.append(ours(component, n))
        p = peer(n)
        if p:
            peers.append(p)
    sps = statistics.median(r["steps_per_s"] for r in runs)
    psps = statistics.median(p["steps_per_s"] for p in peers) if peers else None
    print(f"hypothesis: {component} machine {sps:,.0f} steps/s" + (f", peer {psps:,.0f} steps/s" if psps else ""))
    return {
        "ours": runs,
        "peer": peers,
        "steps_per_s": sps,
        "peer_steps_per_s": psps,
        "ratio_vs_peer": round(sps / psps, 3) if psps else None,
    }


def finding(component: str, space: Any, config: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    rows = []
    for q in quirks_of(component):
        bfs = explorer.explore(config or {}, (q.name,), space)
        per_seed = []
        for seed in range(5):
            r = machines.run(component, quirks=(q.name,), target=q.breaks, max_examples=3000, seed=seed)
            assert r.trace is not None and r.violation is not None, (q.name, seed)
            inv = r.violation["invariant"]
            per_seed.append(
                {
                    "seed": seed,
                    "seconds": round(r.seconds, 3),
                    "seconds_to_first_failure": round(r.seconds_to_first_failure or 0.0, 3),
                    "examples": r.examples,
                    "invariant": inv,
                    "steps": len(r.trace["steps"]),
                    "bfs_minimum": bfs.violations[inv]["depth"],
                }
            )
        row = {
            "quirk": q.name,
            "median_seconds": round(statistics.median(x["seconds"] for x in per_seed), 3),
            "median_seconds_to_first_failure": round(
                statistics.median(x["seconds_to_first_failure"] for x in per_seed), 3
            ),
            "max_length_over_minimum": round(max(x["steps"] / x["bfs_minimum"] for x in per_seed), 2),
            "seeds": per_seed,
        }
        rows.append(row)
        print(f"  {q.name:<34} median {row['median_seconds']:.2f}s, length/min <= {row['max_length_over_minimum']}")
    return rows


def g1_coverage(component: str, examples: int = 300) -> dict[str, Any]:
    """What a G1 machine's worlds cover in ``examples`` ideal examples of 30 steps (seed 0): the
    distinct prompts its requests and destinations start from, their block counts, their chunk
    shapes (full blocks, tokens in the partial tail), the distinct pushed tokens."""
    seen: list[tuple[str, Any]] = []
    run_json = machines.Machine._run_json

    def recording(self: Any, op: str, args: Any) -> Any:
        seen.append((op, args))
        return run_json(self, op, args)

    machines.Machine._run_json = recording  # type: ignore[method-assign]
    try:
        r = machines.run(component, max_examples=examples, steps=30, seed=0)
    finally:
        machines.Machine._run_json = run_json  # type: ignore[method-assign]
    bs = machines.machine_class(component).config.get("block_size", 2)
    prompts = {tuple(a["tokens"]) for op, a in seen if op in ("new_request", "reserve_destination")}
    return {
        "examples": examples,
        "steps": r.steps,
        "steps_per_s": round(r.steps_per_second, 1),
        "distinct_prompts": len(prompts),
        "block_counts": sorted({-(-len(p) // bs) for p in prompts}),
        "chunk_shapes": len({(len(p) // bs, len(p) % bs) for p in prompts}),
        "pushed_tokens": len({a["token"] for op, a in seen if op in ("push", "decode_push")}),
    }


def exploring(component: str, space_of: Callable[[dict[str, Any]], Any]) -> list[dict[str, Any]]:
    man = json.loads((ROOT / "specs" / "manifest.json").read_text())["entries"]
    rows = []
    for e in man:
        if e["component"] != component or e["engine"] != "explore":
            continue
        r = explorer.explore(e["config"], e["quirks"], space_of(e["space"]))
        rows.append(
            {
                "entry": e["name"],
                "states": r.states,
                "transitions": r.transitions,
                "depth": r.depth,
                "seconds": round(r.seconds, 3),
                "states_per_s": round(r.states_per_second, 1),
                "transitions_per_s": round(r.transitions / r.seconds, 1),
            }
        )
        print(f"  {e['name']:<46} {r.states:>6} states {r.transitions:>7} transitions {r.seconds:6.2f}s")
    return rows
