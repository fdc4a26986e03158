"""What the SGLang target costs (issue 60): per cache kind, the worker's start-up (a new
interpreter importing torch and SGLang, then a cache built), then ``kvmodel conform --target
sglang-radix-cache`` over the same schedules — schedules/s and SGLang operations/s (every step
sent to the worker: operations, probes, evictions for room) — and whether two runs at one seed
give the same report bytes. No peer engine runs the same schedules: the figures are read
against the vLLM engine target's (``benchmarks/vllm_engine.py``) in ``docs/performance.md``.

Writes ``benchmarks/results/sglang.json``. Usage: ``python benchmarks/sglang.py [--workloads N]
[--seed S]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from kvmodel import jsonio
from kvmodel.conformance import sglang as sg

OUT = Path(__file__).resolve().parent / "results" / "sglang.json"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", type=int, default=500)
    ap.add_argument("--seed", type=int, default=20261207)
    a = ap.parse_args()
    why = sg.available()
    if why is not None:
        print(f"SGLang is not available: {why}")
        return 2
    rows = []
    for cache in sg.CACHES:
        t0 = time.perf_counter()
        w = sg.worker(cache, 4, "default")
        start = time.perf_counter() - t0
        try:
            reports = []
            for _ in range(2):
                t1 = time.perf_counter()
                out = sg.run(workloads=a.workloads, seed=a.seed, cache=cache, workers={cache: w})
                secs = time.perf_counter() - t1
                reports.append(json.dumps(out, sort_keys=True))
        finally:
            w.close()
        c = out["counts"]
        rows.append(
            {
                "cache": cache,
                "verdict": "violation" if out["divergences"] else "pass",
                "start_up_seconds": round(start, 1),
                "schedules": c["schedules"],
                "steps": c["steps"],
                "seconds": round(secs, 1),
                "schedules_per_second": round(c["schedules"] / secs, 1),
                "operations_per_second": round(c["steps"] / secs),
                "same_report_twice": reports[0] == reports[1],
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    doc = {
        "benchmark": "sglang-radix-cache: start-up, schedules/s, operations/s, determinism per cache kind",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "workloads": a.workloads,
        "seed": a.seed,
        "rows": rows,
    }
    jsonio.write_text(OUT, json.dumps(doc, indent=2) + "\n")
    return 0 if all(r["verdict"] == "pass" and r["same_report_twice"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
