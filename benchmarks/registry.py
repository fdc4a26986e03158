"""The KVBM block registry on the three engines, with the Hypothesis peer run in the same script.

* Hypothesis throughput of the registry machine (ideal), against the anchors' toy block-pool
  machine (``shared/reference/examples/anchors-bench/hyp_pool.py``) with identical settings.
* Time for Hypothesis to find each registry quirk (seeds 0-4), and the counterexample's length
  against the BFS minimum (explorer, same bounded world as ``kvmodel check``).
* Explorer: states, transitions and states/s for the manifest's registry entries.
* Z3: k-induction of the ideal invariants in three universes; BMC of each quirk to depth 8.

Writes ``benchmarks/results/registry.json``. Usage: ``python benchmarks/registry.py``.
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from hypothesis.stateful import run_state_machine_as_test

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hypothesis_throughput import _settings, peer

from kvmodel import __version__, explorer, machines
from kvmodel.model.quirks import quirks_of
from kvmodel.specs.runner import prove, run_bmc

ROOT = Path(__file__).resolve().parents[1]
C = "kvbm_block_registry"
CHECK_SPACE = {"hashes": 1, "states": 2, "publish_handles": 1, "arcs": 0, "publishers": 2, "max_pending": 1}


def ours(n: int) -> dict[str, Any]:
    m = machines.machine_for(C, {}, quirks=())
    t = time.perf_counter()
    run_state_machine_as_test(m, settings=_settings(n))
    dt = time.perf_counter() - t
    steps = m.steps_run[0]
    return {"examples": n, "steps": steps, "seconds": round(dt, 3), "steps_per_s": round(steps / dt, 1)}


def finding() -> list[dict[str, Any]]:
    space = explorer.RegSpace(**CHECK_SPACE)
    rows = []
    for q in quirks_of(C):
        bfs = explorer.explore({}, (q.name,), space)
        per_seed = []
        for seed in range(5):
            r = machines.run(C, quirks=(q.name,), target=q.breaks, max_examples=3000, seed=seed)
            assert r.trace is not None and r.violation is not None, (q.name, seed)
            inv = r.violation["invariant"]
            per_seed.append(
                {
                    "seed": seed,
                    "seconds": round(r.seconds, 3),
                    "invariant": inv,
                    "steps": len(r.trace["steps"]),
                    "bfs_minimum": bfs.violations[inv]["depth"],
                }
            )
        row = {
            "quirk": q.name,
            "median_seconds": round(statistics.median(x["seconds"] for x in per_seed), 3),
            "max_length_over_minimum": round(max(x["steps"] / x["bfs_minimum"] for x in per_seed), 2),
            "seeds": per_seed,
        }
        rows.append(row)
        print(f"  {q.name:<34} median {row['median_seconds']:.2f}s, length/min <= {row['max_length_over_minimum']}")
    return rows


def exploring() -> list[dict[str, Any]]:
    man = json.loads((ROOT / "specs" / "manifest.json").read_text())["entries"]
    rows = []
    for e in man:
        if e["component"] != C:
            continue
        r = explorer.explore(e["config"], e["quirks"], explorer.RegSpace(**e["space"]))
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


def z3_rows() -> dict[str, Any]:
    from kvmodel.specs.registry import UNIVERSES as universes

    proofs = {}
    for name, cfg in universes.items():
        rep = prove(C, cfg, max_k=1)
        proofs[name] = {"universe": rep["universe"], "all_proved": rep["all_proved"], "seconds": rep["seconds"]}
        print(f"  prove {name}: {rep['all_proved']} in {rep['seconds']:.2f}s")
    bmcs = []
    for q in quirks_of(C):
        rep = run_bmc(C, 8, {}, (q.name,), properties=q.breaks)
        got = {r["invariant"]: r["k"] for r in rep["invariants"] if r["status"] == "violated"}
        bmcs.append({"quirk": q.name, "depths": got, "seconds": rep["seconds"]})
        print(f"  bmc {q.name}: {got} in {rep['seconds']:.2f}s")
    return {"prove": proofs, "bmc_depth_8": bmcs}


def main() -> int:
    n = 1000
    runs, peers = [], []
    for _ in range(3):
        runs.append(ours(n))
        p = peer(n)
        if p:
            peers.append(p)
    sps = statistics.median(r["steps_per_s"] for r in runs)
    psps = statistics.median(p["steps_per_s"] for p in peers) if peers else None
    print(f"hypothesis: registry machine {sps:,.0f} steps/s" + (f", peer {psps:,.0f} steps/s" if psps else ""))
    out = {
        "kvmodel": __version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "hypothesis": {
            "ours": runs,
            "peer": peers,
            "steps_per_s": sps,
            "peer_steps_per_s": psps,
            "ratio_vs_peer": round(sps / psps, 3) if psps else None,
        },
        "time_to_find": finding(),
        "explore": exploring(),
        "z3": z3_rows(),
    }
    path = ROOT / "benchmarks" / "results" / "registry.json"
    path.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
