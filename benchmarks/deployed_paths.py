"""What a deployed event path costs (issue 61): ``kvmodel conform --target vllm-engine`` over the
raw path (vLLM's stream into ``RadixTree``), the publisher path (relayed through the worker's real
``KvEventPublisher`` to a ``KvRouter``) and the standalone indexer's path, in one run on one
engine, the same schedules each: seconds, schedules/s, the steps at which each path's router
reported less of a prompt than the engine caches, and the steps at which its view differed from
the raw path's. The raw path is the peer.

Writes ``benchmarks/results/deployed_paths.json``. Usage: ``python benchmarks/deployed_paths.py
[--workloads N] [--seed S]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from kvmodel.conformance import vllm_engine as ve

OUT = Path(__file__).resolve().parent / "results" / "deployed_paths.json"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    eng = ve.Engine()
    rows = []
    try:
        for path in ve.PATHS:
            t0 = time.perf_counter()
            out = ve.run(workloads=a.workloads, seed=a.seed, engine=eng, path=path)
            secs = time.perf_counter() - t0
            c = out["counts"]
            rows.append(
                {
                    "path": path,
                    "verdict": out["verdict"] if "verdict" in out else ("violation" if out["divergences"] else "pass"),
                    "schedules": c["schedules"],
                    "steps": c["steps"],
                    "seconds": round(secs, 1),
                    "schedules_per_second": round(c["schedules"] / secs, 2),
                    "per_copy_removed_events": c["per_copy_removed"],
                    "raw_named_difference_steps": out["named_differences"].get("vllm.per_copy_removed", 0),
                    "path_behind_engine_steps": c.get("path_behind_engine"),
                    "path_differs_from_raw_steps": c.get("path_differs_from_raw"),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    finally:
        eng.close()
    raw = rows[0]["seconds"]
    doc = {
        "benchmark": "deployed event paths: vllm-engine schedules over each path, one engine, one run",
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
        "workloads": a.workloads,
        "seed": a.seed,
        "rows": rows,
        "cost_vs_raw": {r["path"]: round(r["seconds"] / raw, 2) for r in rows},
    }
    OUT.write_text(json.dumps(doc, indent=2) + "\n")
    return 0 if all(r["verdict"] == "pass" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
