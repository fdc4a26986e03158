"""What a deployed event path costs (issue 61): ``kvmodel conform --target vllm-engine`` (and
``--target sglang-radix-cache`` when SGLang is installed) over the raw path (the engine's stream
into ``RadixTree``), the publisher path (relayed through the worker's real ``KvEventPublisher`` to
a ``KvRouter``) and the standalone indexer's path, in one run on one engine, the same schedules
each: seconds, schedules/s, the steps at which each path's router reported less of a prompt than
the engine caches, and the steps at which its view differed from the raw path's. The raw path is
the peer.

Writes ``benchmarks/results/deployed_paths.json``. Usage: ``python benchmarks/deployed_paths.py
[--workloads N] [--seed S] [--sglang-workloads N]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from kvmodel import jsonio
from kvmodel.conformance import vllm_engine as ve

OUT = Path(__file__).resolve().parent / "results" / "deployed_paths.json"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sglang-workloads", type=int, default=200)
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
    sg_rows = sglang_rows(a.sglang_workloads, a.seed)
    doc = {
        "benchmark": "deployed event paths: vllm-engine schedules over each path, one engine, one run",
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
        "workloads": a.workloads,
        "seed": a.seed,
        "rows": rows,
        "cost_vs_raw": {r["path"]: round(r["seconds"] / raw, 2) for r in rows},
        "sglang": sg_rows,
    }
    jsonio.write_text(OUT, json.dumps(doc, indent=2) + "\n")
    return 0 if all(r["verdict"] == "pass" for r in rows + sg_rows) else 1


def sglang_rows(workloads: int, seed: int) -> list[dict[str, object]]:
    """SGLang's unified-rust cache over each path, one worker, the same schedules each (default
    event format): seconds, schedules/s, and the probes at which the path's router was behind
    SGLang or differed from the raw path's view; the raw path is the peer."""
    from kvmodel.conformance import sglang as sg

    if sg.available() is not None:
        print(f"sglang: skipped ({sg.available()})")
        return []
    w = sg.worker("unified-rust", 4, "default")
    rows: list[dict[str, object]] = []
    try:
        for path in sg.PATHS:
            t0 = time.perf_counter()
            out = sg.run(workloads=workloads, seed=seed, path=path, workers={"unified-rust": w})
            secs = time.perf_counter() - t0
            c = out["counts"]
            rows.append(
                {
                    "engine": "sglang unified-rust",
                    "path": path,
                    "verdict": "violation" if out["divergences"] else "pass",
                    "schedules": c["schedules"],
                    "steps": c["steps"],
                    "probes": c["probes"],
                    "seconds": round(secs, 1),
                    "schedules_per_second": round(c["schedules"] / secs, 2),
                    "raw_named_difference_probes": out["named_differences"].get(sg.NAMED, 0),
                    "path_behind_engine_probes": c.get("path_behind_engine"),
                    "path_differs_from_raw_probes": c.get("path_differs_from_raw"),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    finally:
        w.close()
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
