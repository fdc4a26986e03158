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

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from component_bench import exploring, finding, save, versus_peer

from kvmodel.components.registry.space import RegSpace
from kvmodel.model.quirks import quirks_of
from kvmodel.specs.runner import prove, run_bmc

ROOT = Path(__file__).resolve().parents[1]
C = "kvbm_block_registry"
CHECK_SPACE = {"hashes": 1, "states": 2, "publish_handles": 1, "arcs": 0, "publishers": 2, "max_pending": 1}


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
    return save(
        "registry",
        {
            "hypothesis": versus_peer(C),
            "time_to_find": finding(C, RegSpace(**CHECK_SPACE)),
            "explore": exploring(C, lambda sp: RegSpace(**sp)),
            "z3": z3_rows(),
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
