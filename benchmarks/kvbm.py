"""The G1 manager with the KVBM backend: the three engines, peers run in the same script.

* Hypothesis throughput of the g1_kvbm machine (ideal), against the anchors' toy block-pool
  machine (``shared/reference/examples/anchors-bench/hyp_pool.py``) with identical settings.
* Time for Hypothesis to find each KVBM quirk (seeds 0-4), and the counterexample's length
  against the BFS minimum in the ``kvmodel check`` world.
* Explorer: states, transitions and states/s for the manifest's kvbm entries.
* Z3: the proof's time; per quirk the spec reaches, BMC's depth and time against the explorer's
  BFS finding the same violation in the spec's world (the peer, same process).

Writes ``benchmarks/results/kvbm.json``. Usage: ``python benchmarks/kvbm.py``.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from component_bench import exploring, finding, versus_peer

from kvmodel import __version__, explorer
from kvmodel.model.quirks import QUIRKS

ROOT = Path(__file__).resolve().parents[1]
C = "g1_kvbm"
CHECK_SPACE = {"owners": 1, "prompts": 5, "pushes": 0, "decode": 0}
CHECK_CONFIG = {"max_capacity": 2}


def z3_engine() -> dict[str, Any]:
    from kvmodel.specs import make_spec
    from kvmodel.specs.kvbm import MODELLED
    from kvmodel.specs.runner import prove, run_bmc

    out: dict[str, Any] = {"prove": {}, "bmc": {}}
    for name, cfg in (
        ("default (2 requests, capacity 2)", {}),
        ("3 requests, capacity 3", {"owners": 3, "capacity": 3}),
    ):
        rep = prove(C, cfg, max_k=1)
        out["prove"][name] = {
            "all_proved": rep["all_proved"],
            "properties": len(rep["invariants"]),
            "seconds": rep["seconds"],
        }
        print(f"  prove {name}: {rep['all_proved']} in {rep['seconds']}s")
    small = {"owners": 1, "capacity": 1}
    props = {p.name for p in make_spec(C, small).ts.properties}
    for q in sorted(MODELLED):
        want = [b for b in QUIRKS[q].breaks if b in props]
        t = time.perf_counter()
        rep = run_bmc(C, 5, small, (q,), properties=want, induction=False)
        bmc_s = time.perf_counter() - t
        # the peer: the explorer's BFS on the same single-block world (prompts 0-3, one request)
        t = time.perf_counter()
        res = explorer.explore(
            {"max_capacity": 1},
            (q,),
            explorer.KvbmSpace(owners=1, prompts=4, pushes=0, decode=0, bad=False),
            stop_on_violation=True,
        )
        bfs_s = time.perf_counter() - t
        row = rep["invariants"][0]
        out["bmc"][q] = {
            "invariant": row["invariant"],
            "depth": row["k"],
            "bfs_depth": res.violations.get(row["invariant"], {}).get("depth"),
            "seconds": round(bmc_s, 3),
            "bfs_seconds": round(bfs_s, 3),
            "bmc_over_bfs": round(bmc_s / bfs_s, 2),
        }
        print(f"  bmc {q}: depth {row['k']} in {bmc_s:.2f}s (BFS {bfs_s:.2f}s)")
    return out


def main() -> int:
    out = {
        "kvmodel": __version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "hypothesis": versus_peer(C),
        "time_to_find": finding(C, explorer.KvbmSpace(**CHECK_SPACE), CHECK_CONFIG),
        "explore": exploring(C, lambda sp: explorer.KvbmSpace(**sp)),
        "z3": z3_engine(),
    }
    path = ROOT / "benchmarks" / "results" / "kvbm.json"
    path.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
