"""Explorer throughput: kvmodel's BFS of the KV manager, with and without symmetry, and how
it grows with capacity; the anchors' plain-Python BFS (a toy pool with tuple states and a
hand-written successor function, ``shared/reference/examples/anchors-bench/model.py``) runs
in the same script as the peer.

Writes ``benchmarks/results/explore.json``. Usage: python benchmarks/explore.py [--full-limit S]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

from kvmodel import __version__, explorer, jsonio
from kvmodel.components.kv_manager.space import KvSpace

ROOT = Path(__file__).resolve().parents[1]
PEER = ROOT.parent / "shared" / "reference" / "examples" / "anchors-bench" / "model.py"


def ours(cap: int, symmetry: bool) -> dict[str, Any]:
    space = KvSpace(n_full=cap + 2, partials=1, max_batch=2, max_refcount=2)
    r = explorer.explore({"max_capacity": cap}, (), space, symmetry=symmetry)
    return {
        "capacity": cap,
        "space": space.to_json(),
        "symmetry": symmetry,
        "states": r.states,
        "concrete_states": r.concrete_states,
        "transitions": r.transitions,
        "depth": r.depth,
        "seconds": round(r.seconds, 3),
        "states_per_s": round(r.states / r.seconds, 1),
        "concrete_states_per_s": round((r.concrete_states or 0) / r.seconds, 1),
        "transitions_per_s": round(r.transitions / r.seconds, 1),
        "bytes_per_state": round(r.bytes_per_state, 1),
        "violations": sorted(r.violations),
    }


def peer() -> dict[str, Any] | None:
    if not PEER.exists():
        return None
    spec = importlib.util.spec_from_file_location("anchor_model", PEER)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    t = time.perf_counter()
    states, trans = mod.bfs(5, 6, 2)
    dt = time.perf_counter() - t
    return {
        "model": "anchors toy pool N=5 H=6 MAXREF=2",
        "states": states,
        "transitions": trans,
        "seconds": round(dt, 3),
        "states_per_s": round(states / dt, 1),
        "transitions_per_s": round(trans / dt, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-capacity", type=int, default=5)
    ap.add_argument("--full-limit", type=float, default=60.0, help="skip unreduced runs expected to take longer")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "explore.json"))
    a = ap.parse_args()
    rows = []
    last_full = 0.0
    for cap in range(1, a.max_capacity + 1):
        rows.append(ours(cap, True))
        print(json.dumps(rows[-1]), flush=True)
        if last_full * 8 < a.full_limit:
            rows.append(ours(cap, False))
            last_full = rows[-1]["seconds"]
            print(json.dumps(rows[-1]), flush=True)
    p = peer()
    print("peer:", json.dumps(p), flush=True)
    c4 = {r["symmetry"]: r for r in rows if r["capacity"] == 4}
    result = {
        "benchmark": "explore",
        "kvmodel_version": __version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "rows": rows,
        "peer_anchor_python_bfs": p,
        "capacity4_6ids_symmetry_speedup": round(c4[False]["seconds"] / c4[True]["seconds"], 1)
        if False in c4 and True in c4
        else None,
        "transitions_per_s_ratio_kvmodel_over_peer": round(c4[False]["transitions_per_s"] / p["transitions_per_s"], 3)
        if p and False in c4
        else None,
    }
    jsonio.write_text(Path(a.out), json.dumps(result, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
