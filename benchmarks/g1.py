"""The G1 manager with the native backend: engines and conformance, peers run in the same script.

* Hypothesis throughput of the g1_native machine (ideal), against the anchors' toy block-pool
  machine (``shared/reference/examples/anchors-bench/hyp_pool.py``) with identical settings.
* Time for Hypothesis to find each native quirk (seeds 0-4), and the counterexample's length
  against the BFS minimum (explorer, the ``kvmodel check`` world).
* What the machine's drawn worlds cover (prompts, block counts, chunk shapes, pushed tokens).
* Explorer: states, transitions and states/s for the manifest's g1 entries.
* Conformance: the real mocker (events/s, both sides) and vLLM's BlockPool (operations/s), with
  the real side alone timed in the same run as the peer.

Writes ``benchmarks/results/g1.json``. Usage: ``python benchmarks/g1.py``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from component_bench import exploring, finding, g1_coverage, save, versus_peer

from kvmodel import explorer
from kvmodel.components.g1_native.space import G1Space

ROOT = Path(__file__).resolve().parents[1]
C = "g1_native"
CHECK_SPACE = {"owners": 2, "prompts": 2, "pushes": 1, "decode": 1}


def conformance() -> dict[str, Any]:
    from kvmodel.conformance import mocker, vllm_pool

    out: dict[str, Any] = {}
    if mocker.available() is None:
        reps = [mocker.run(workloads=1000, seed=s).to_json() for s in (0, 1, 2)]
        # the real side alone, on the same workloads' shape: one run of a fixed workload (three
        # requests arriving together, chunked, one preempted), timed
        a, b = [10, 11, 12, 13], [20, 21, 22, 23]
        w = mocker.Workload([[*a, *b, 90], [*a, 30, 31], [*b, 91, 92]], [6, 6, 3], 4, 4, [0, 0, 0], 3)
        t = time.perf_counter()
        for _ in range(200):
            mocker.real_run(w)
        real_alone = (time.perf_counter() - t) / 200
        t = time.perf_counter()
        gen = mocker.real_run(w).generated
        for _ in range(200):
            mocker.model_run(w, gen)
        model_alone = (time.perf_counter() - t) / 200
        out["dynamo_mocker"] = {
            "runs": [
                {k: r[k] for k in ("seed", "workloads", "requests", "events", "coverage", "divergences", "seconds")}
                for r in reps
            ],
            "real_seconds_per_workload": round(real_alone, 6),
            "model_seconds_per_workload": round(model_alone, 6),
            "model_over_real": round(model_alone / real_alone, 3),
        }
        print(
            f"  mocker: {[r['divergences'] for r in reps]} divergences; model/real time per workload "
            f"{out['dynamo_mocker']['model_over_real']}"
        )
    if vllm_pool.real_available() is None:
        real = vllm_pool.VllmPool()
        reps = [vllm_pool.run(vllm_pool.ModelPool(), real, workloads=1000, seed=s).to_json() for s in (0, 1, 2)]
        ops = [{"op": "start", "seq": 0, "partial": True}, {"op": "cache", "k": 0}, {"op": "free", "k": 0}] * 10
        times = {}
        for name, side in (("model", vllm_pool.ModelPool()), ("vllm", real)):
            t = time.perf_counter()
            for _ in range(100):
                side.reset({"capacity": 5})
                for k, o in enumerate(ops):
                    c = {"op": o["op"], "req": k // 3, **({"seq": 0, "partial": True} if o["op"] == "start" else {})}
                    side.apply(c)
            times[name] = (time.perf_counter() - t) / (100 * len(ops))
        out["vllm_block_pool"] = {
            "vllm": real.version,
            "runs": [
                {k: r[k] for k in ("seed", "workloads", "steps", "divergences", "duplicate_events", "seconds")}
                for r in reps
            ],
            "model_seconds_per_op": round(times["model"], 7),
            "vllm_seconds_per_op": round(times["vllm"], 7),
            "model_over_vllm": round(times["model"] / times["vllm"], 3),
        }
        print(
            f"  vllm: {[r['divergences'] for r in reps]} divergences; model/vLLM time per op "
            f"{out['vllm_block_pool']['model_over_vllm']}"
        )
    return out


def z3_engine() -> dict[str, Any]:
    """Proof times per universe; per quirk, BMC's depth and time against the explorer's BFS
    finding the same violation in the same world (the peer, same process); agreement steps/s."""
    from kvmodel.model.quirks import faithful, quirks_of
    from kvmodel.specs.g1 import UNIVERSES, trace_agreement
    from kvmodel.specs.runner import prove, run_bmc

    out: dict[str, Any] = {"prove": {}, "bmc": {}, "agreement": {}}
    for name, cfg in UNIVERSES.items():
        rep = prove(C, cfg, max_k=1)
        out["prove"][name] = {
            "all_proved": rep["all_proved"],
            "properties": len(rep["invariants"]),
            "seconds": rep["seconds"],
        }
        print(f"  prove {name}: {rep['all_proved']} in {rep['seconds']}s")
    for q in quirks_of(C):
        t = time.perf_counter()
        rep = run_bmc(C, 6, CHECK_SPACE, (q.name,), properties=q.breaks, induction=False)
        bmc_s = time.perf_counter() - t
        t = time.perf_counter()
        res = explorer.explore({}, (q.name,), G1Space(**CHECK_SPACE), stop_on_violation=True)
        bfs_s = time.perf_counter() - t
        (row,) = rep["invariants"]
        out["bmc"][q.name] = {
            "invariant": row["invariant"],
            "depth": row["k"],
            "bfs_depth": res.violations[row["invariant"]]["depth"],
            "seconds": round(bmc_s, 3),
            "bfs_seconds": round(bfs_s, 3),
            "bmc_over_bfs": round(bmc_s / bfs_s, 2),
        }
        print(f"  bmc {q.name}: depth {row['k']} in {bmc_s:.1f}s (BFS {bfs_s:.1f}s)")
    for mode, qs in (("ideal", ()), ("faithful", tuple(faithful(C)))):
        t = time.perf_counter()
        n = trace_agreement({}, qs, runs=5, steps=40, seed=0)
        out["agreement"][mode] = {"steps": n, "steps_per_second": round(n / (time.perf_counter() - t), 1)}
    return out


def main() -> int:
    return save(
        "g1",
        {
            "hypothesis": versus_peer(C),
            "time_to_find": finding(C, G1Space(**CHECK_SPACE)),
            "machine_coverage": g1_coverage(C),
            "explore": exploring(C, lambda sp: G1Space(**sp)),
            "conformance": conformance(),
            "z3": z3_engine(),
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
