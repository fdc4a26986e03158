"""The G1 manager with the KVBM backend: the three engines, peers run in the same script.

* Hypothesis throughput of the g1_kvbm machine (ideal), against the anchors' toy block-pool
  machine (``shared/reference/examples/anchors-bench/hyp_pool.py``) with identical settings.
* Time for Hypothesis to find each KVBM quirk (seeds 0-4), and the counterexample's length
  against the BFS minimum in the ``kvmodel check`` world.
* What the machine's drawn worlds cover (prompts, block counts, chunk shapes, pushed tokens).
* Explorer: states, transitions and states/s for the manifest's kvbm entries.
* Z3: the proof's time; per quirk the spec reaches, BMC's depth and time against a BFS of the
  executable system through the spec's own operations finding the same violation (the peer,
  same process); the exhaustive spec-versus-model agreement search.

Writes ``benchmarks/results/kvbm.json``. Usage: ``python benchmarks/kvbm.py``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from component_bench import exploring, finding, g1_coverage, save, versus_peer

from kvmodel.components.g1_kvbm.space import KvbmSpace
from kvmodel.model.errors import InvalidInput
from kvmodel.model.quirks import QUIRKS
from kvmodel.specs.engine import Step

ROOT = Path(__file__).resolve().parents[1]
C = "g1_kvbm"
CHECK_SPACE = {"owners": 1, "prompts": 5, "pushes": 0, "decode": 0}
CHECK_CONFIG = {"max_capacity": 2}


def _bfs_spec_world(cfg: dict[str, Any], quirk: str, invariant: str) -> tuple[int | None, float]:
    """The peer: breadth-first search of the executable system through the spec's own
    operations (same world, no Z3), stopping at the first step that breaks ``invariant``."""
    from collections import deque

    from kvmodel.components.g1_kvbm.system import G1KvbmSystem
    from kvmodel.specs import make_spec

    t = time.perf_counter()
    spec = make_spec(C, cfg, (quirk,))
    steps = [spec.step_json(Step(o.name, {}, action=o.action)) for o in spec.ts.operations]
    start = G1KvbmSystem(spec.exec_config(), (quirk,))
    seen = {start.key()}
    queue = deque([(start, 0)])
    while queue:
        system, depth = queue.popleft()
        for name, args in steps:
            nxt = system.clone()
            out = nxt.apply(name, nxt.decode(name, args), args)
            if isinstance(out.error, InvalidInput):  # outside the system's contract: not a step
                continue
            if any(v.invariant == invariant for v in out.violations):
                return depth + 1, time.perf_counter() - t
            if out.violations:
                continue
            k = nxt.key()
            if k not in seen:
                seen.add(k)
                queue.append((nxt, depth + 1))
    return None, time.perf_counter() - t


def z3_engine() -> dict[str, Any]:
    from kvmodel.specs import make_spec
    from kvmodel.specs.kvbm import MODELLED, agreement
    from kvmodel.specs.runner import prove, run_bmc

    out: dict[str, Any] = {"prove": {}, "bmc": {}, "agreement": {}}
    for name, cfg in (
        ("default (2 requests, capacity 3)", {}),
        ("3 requests, capacity 3", {"owners": 3, "capacity": 3}),
        ("3 requests, capacity 4", {"owners": 3, "capacity": 4}),
    ):
        rep = prove(C, cfg, max_k=1)
        out["prove"][name] = {
            "all_proved": rep["all_proved"],
            "properties": len(rep["invariants"]),
            "seconds": rep["seconds"],
        }
        print(f"  prove {name}: {rep['all_proved']} in {rep['seconds']}s")
    small = {"owners": 1, "capacity": 3}
    props = {p.name for p in make_spec(C, small).ts.properties}
    for q in sorted(MODELLED):
        want = [b for b in QUIRKS[q].breaks if b in props]
        t = time.perf_counter()
        rep = run_bmc(C, 6, small, (q,), properties=want[:1], induction=False)
        bmc_s = time.perf_counter() - t
        row = rep["invariants"][0]
        bfs_depth, bfs_s = _bfs_spec_world(small, q, row["invariant"])
        out["bmc"][q] = {
            "invariant": row["invariant"],
            "depth": row["k"],
            "bfs_depth": bfs_depth,
            "seconds": round(bmc_s, 3),
            "bfs_seconds": round(bfs_s, 3),
            "bmc_over_bfs": round(bmc_s / bfs_s, 2),
        }
        print(f"  bmc {q}: depth {row['k']} in {bmc_s:.2f}s (BFS depth {bfs_depth} in {bfs_s:.2f}s)")
    for mode in [(), ("failed_use_reorders_inactive",)]:
        t = time.perf_counter()
        rep = agreement(small, mode)
        key = mode[0] if mode else "ideal"
        out["agreement"][key] = {
            "states": rep["states"],
            "transitions": rep["transitions"],
            "complete": rep["complete"],
            "differences": len(rep["diffs"]),
            "seconds": round(time.perf_counter() - t, 2),
        }
        print(f"  agreement {key}: {out['agreement'][key]}")
    return out


def main() -> int:
    return save(
        "kvbm",
        {
            "hypothesis": versus_peer(C),
            "time_to_find": finding(C, KvbmSpace(**CHECK_SPACE), CHECK_CONFIG),
            "machine_coverage": g1_coverage(C),
            "explore": exploring(C, lambda sp: KvbmSpace(**sp)),
            "z3": z3_engine(),
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
