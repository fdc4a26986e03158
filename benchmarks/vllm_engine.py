"""The cost of checking vLLM's real engine (``kvmodel conform --target vllm-engine``, issue 24).

* **kvmodel**: one engine serves every schedule (isolated by aborting, resetting the prefix cache
  and draining the queued events; ``stateful_tests/test_vllm_engine.py`` shows a reused engine
  gives what a fresh one gives). Measured: engine start-up, then 200 and 1000 generated schedules
  (seed 0): schedules/s, engine steps/s, events/s.
* **Peer**: a fresh engine per schedule, as the reference probe runs it (one process per schedule,
  ``shared/reference/examples/vllm-engine/run_engine.py``; here a new ``LLM`` in the same process,
  which leaves out ``import vllm``): measured on the first 3 schedules of the same run, and the
  ratio of seconds per schedule.

Writes ``benchmarks/results/vllm_engine.json``. Usage: ``python benchmarks/vllm_engine.py``.
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from kvmodel import jsonio
from kvmodel.conformance import vllm_engine as ve

OUT = Path(__file__).parent / "results" / "vllm_engine.json"


def first_schedules(n: int) -> list[ve.Schedule]:
    got: list[ve.Schedule] = []

    @settings(max_examples=n, database=None, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(ve.schedule_strategy())
    def collect(s: ve.Schedule) -> None:
        got.append(s)

    collect()
    return got[:n]


def main() -> int:
    t0 = time.perf_counter()
    eng = ve.Engine()
    init = time.perf_counter() - t0
    rows = {}
    for n in (200, 1000):
        t = time.perf_counter()
        out = ve.run(workloads=n, seed=0, engine=eng)
        dt = time.perf_counter() - t
        c = out["counts"]
        rows[str(n)] = {
            "seconds": round(dt, 1),
            "schedules_per_second": round(c["schedules"] / dt, 1),
            "steps_per_second": round(c["steps"] / dt, 1),
            "events_per_second": round(c["events"] / dt, 1),
            "divergences": out["divergences"],
            "counts": c,
            "named_differences": out["named_differences"],
        }
        print(n, json.dumps(rows[str(n)]), flush=True)
    eng.close()
    scheds = first_schedules(3)
    t = time.perf_counter()
    for s in scheds:
        e = ve.Engine()
        ve.check_schedule(e, s)
        e.close()
    peer = (time.perf_counter() - t) / len(scheds)
    ours = rows["200"]["seconds"] / 200
    doc = {
        "benchmark": "kvmodel conform --target vllm-engine: one reused engine against a fresh engine per schedule",
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
        "engine_start_seconds": round(init, 1),
        "runs": rows,
        "peer_fresh_engine_seconds_per_schedule": round(peer, 2),
        "kvmodel_seconds_per_schedule": round(ours, 3),
        "ratio_peer_over_kvmodel": round(peer / ours, 1),
    }
    jsonio.write_text(OUT, json.dumps(doc, indent=2) + "\n")
    print(json.dumps({k: v for k, v in doc.items() if k != "runs"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
