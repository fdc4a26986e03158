"""Events per second: the radix-tree model against the real RadixTree, on the same events.

Workloads: KV manager runs (ideal and faithful, the explorer's move set, seeded) turned
into router events, plus seeded random adversarial workloads (few hashes, unknown
parents and removes, several workers and ranks, Cleared). Each side applies every event
of every workload from a fresh tree (``apply_event`` only, errors included), three
repeats, median. Also the differential runner's own rate (both sides plus the
observations compared after every event) for ``kvmodel conform --workloads 1000``.

Writes ``benchmarks/results/radix.json``. Usage: python benchmarks/radix.py
"""

from __future__ import annotations

import json
import platform
import random
import statistics
import time
from pathlib import Path
from typing import Any

from kvmodel import __version__, jsonio
from kvmodel.components.kv_manager.space import KvSpace
from kvmodel.components.kv_manager.system import KvManagerSystem
from kvmodel.conformance import radix
from kvmodel.model.events import from_responses
from kvmodel.model.quirks import faithful

ROOT = Path(__file__).resolve().parents[1]


def kv_workloads(n: int) -> list[list[dict[str, Any]]]:
    out = []
    moves = KvSpace(6, 1, 2, 2).actions()
    for seed in range(n):
        rng = random.Random(seed)
        sys_ = KvManagerSystem({"max_capacity": 4}, sorted(faithful("kv_manager")) if seed % 2 else [])
        ops: list[dict[str, Any]] = []
        for _ in range(400):
            out_ = sys_.step("process", moves[rng.randrange(len(moves))].to_json())
            for ev in from_responses(out_.events, lambda h: h + 1, first_event_id=len(ops)):
                ops.append({"op": "apply_event", "worker_id": 0, "event": ev.to_json()})
        out.append(ops)
    return out


def adversarial(n: int, seed: int = 0) -> list[list[dict[str, Any]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        ops = []
        for _ in range(rng.randrange(5, 25)):
            k = rng.randrange(10)
            if k < 5:
                blocks = []
                for _ in range(rng.randrange(0, 4)):
                    b = rng.randrange(100, 107)
                    blocks.append(
                        {"block_hash": b, "tokens_hash": b - 99 if rng.random() < 0.75 else rng.randrange(1, 5)}
                    )
                parent = rng.choice([None, None, 999, *range(100, 107)])
                data: Any = {"stored": {"parent_hash": parent, "blocks": blocks}}
            elif k < 9:
                data = {
                    "removed": {
                        "block_hashes": [rng.choice([999, *range(100, 107)]) for _ in range(rng.randrange(1, 3))]
                    }
                }
            else:
                data = "cleared"
            ev = {"event_id": len(ops), "data": data, "dp_rank": rng.randrange(2)}
            ops.append({"op": "apply_event", "worker_id": rng.randrange(3), "event": ev})
        out.append(ops)
    return out


def rate(adapter: radix.RadixAdapter, workloads: list[list[dict[str, Any]]]) -> float:
    n = sum(len(w) for w in workloads)
    t0 = time.perf_counter()
    for w in workloads:
        adapter.reset()
        for op in w:
            adapter.apply(op)
    return n / (time.perf_counter() - t0)


def main() -> None:
    sets = {"kv_manager_streams": kv_workloads(40), "adversarial": adversarial(2000)}
    out: dict[str, Any] = {"kvmodel": __version__, "python": platform.python_version(), "machine": platform.machine()}
    for name, wl in sets.items():
        model = [rate(radix.ModelRadixTree(), wl) for _ in range(3)]
        real = [rate(radix.RealRadixTree(), wl) for _ in range(3)]
        out[name] = {
            "workloads": len(wl),
            "events": sum(len(w) for w in wl),
            "model_events_per_second": round(statistics.median(model)),
            "real_events_per_second": round(statistics.median(real)),
            "ratio_model_over_real": round(statistics.median(model) / statistics.median(real), 3),
        }
        print(name, out[name], flush=True)
    rep = radix.run(radix.ModelRadixTree(), radix.RealRadixTree(), workloads=1000, seed=0)
    out["conform_1000"] = rep.to_json()
    print("conform", {k: v for k, v in out["conform_1000"].items() if k != "counterexample"})
    jsonio.write_text(ROOT / "benchmarks" / "results" / "radix.json", json.dumps(out, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
