"""``kvmodel swarm``: speed-up with 1 and 2 workers, scheduling overhead per task, and a simulation
for 8-64 workers (issue 26).

The peer is the same campaign's tasks run one after another in this process, without Dask
(:func:`kvmodel.swarm.tasks.run_task` in a loop): the 1-worker campaign against it is Dask's
overhead, the 2-worker campaign against it the speed-up. The three runs must give the same
report apart from timings (checked here).

* **Campaign**: the first ``--tasks`` tasks (default 48) of seed 1 over every component on
  Hypothesis and the explorer, Hypothesis capped at ``--max-examples`` (default 300).
* **Overhead**: ``--noop`` tasks (default 1000) that return at once, through the same
  sliding window, on 1 and 2 workers: wall time per task.
* **Ceiling**: the campaign's first ``--ceiling`` tasks (default 16) run one after another in
  one plain process, then in two plain processes at once (no Dask): how much slower a task runs
  when both cores compute — the most any scheduler can get from two workers on this machine
  is ``2 / slowdown``.
* **Simulation**: list scheduling in submission order of the measured task durations on W
  workers, each dispatch costing the measured per-task overhead at the (single) scheduler; its
  W = 2 prediction is compared with the measured run, then W = 1 .. 64 for this campaign and for
  one 20 times longer (the same durations, cycled).

Writes ``benchmarks/results/swarm.json``. Usage:
    python benchmarks/swarm.py [--tasks N] [--max-examples E] [--noop N]
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs

from kvmodel import components, jsonio
from kvmodel.swarm import campaign, merge, tasks

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "swarm.json"


def noop(desc: dict[str, Any]) -> dict[str, Any]:
    """A task that does nothing: what is left is the scheduling."""
    return {
        "id": desc["id"],
        "outcome": "pass",
        "steps": 0,
        "violation": None,
        "found": [],
        "error": None,
        "trace_doc": None,
        "timing": {"seconds": 0.0, "worker": None},
    }


def comparable(s: dict[str, Any]) -> dict[str, Any]:
    s = dict(s)
    s.pop("run")
    return s


CHILD = """
import json, sys, time, attrs
from kvmodel import components
from kvmodel.swarm import tasks
names = [c.name for c in components.registered()]
matrix = tasks.cells(names, ["hypothesis", "explore"])
dist = attrs.evolve(tasks.Distribution(), max_examples=int(sys.argv[2]))
plan = tasks.plan(matrix, 1, int(sys.argv[1]), dist)
t0 = time.perf_counter()
for t in plan:
    tasks.run_task(t.to_json())
print(json.dumps(time.perf_counter() - t0))
"""


def ceiling(n: int, max_examples: int) -> dict[str, Any]:
    """The same tasks in one plain process, then in two at once."""

    def start() -> subprocess.Popen[str]:
        argv = [sys.executable, "-c", CHILD, str(n), str(max_examples)]
        return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)

    def wait(p: subprocess.Popen[str]) -> float:
        out, _ = p.communicate()
        return float(json.loads(out.strip().splitlines()[-1]))

    alone = wait(start())
    pair = [start(), start()]
    both = [wait(p) for p in pair]
    slowdown = sum(both) / 2 / alone
    return {
        "tasks": n,
        "alone_seconds": round(alone, 2),
        "pair_seconds": [round(x, 2) for x in both],
        "slowdown_when_both_cores_compute": round(slowdown, 3),
        "best_possible_speedup_2": round(2 / slowdown, 3),
    }


def simulate(durations: list[float], workers: int, overhead: float) -> float:
    """Makespan of list scheduling in submission order: one scheduler dispatching a task every
    ``overhead`` seconds at most, each to the worker that frees up first."""
    free = [0.0] * workers
    heapq.heapify(free)
    sched = 0.0
    end = 0.0
    for d in durations:
        w = heapq.heappop(free)
        start = max(w, sched + overhead)
        sched = start
        fin = start + d
        end = max(end, fin)
        heapq.heappush(free, fin)
    return end


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=48)
    ap.add_argument("--max-examples", type=int, default=300)
    ap.add_argument("--noop", type=int, default=1000)
    ap.add_argument("--ceiling", type=int, default=16)
    args = ap.parse_args()
    names = [c.name for c in components.registered()]
    matrix = tasks.cells(names, ["hypothesis", "explore"])
    dist = attrs.evolve(tasks.Distribution(), max_examples=args.max_examples)
    plan = tasks.plan(matrix, 1, args.tasks, dist)

    def summary(log: campaign.RunLog) -> dict[str, Any]:
        return merge.merge(log, matrix, seed=1, requested={}, dist=dist, out_dir=None)

    # the peer: the tasks one after another in this process
    t0 = time.perf_counter()
    peer = campaign.RunLog(workers=0, scheduler="in-process")
    for t in plan:
        peer.tasks[t.id] = t
        peer.results[t.id] = tasks.run_task(t.to_json())
    peer.seconds = time.perf_counter() - t0
    ref = summary(peer)
    runs: dict[str, Any] = {"in_process": {"seconds": round(peer.seconds, 2)}}
    durations = [float(peer.results[t.id]["timing"]["seconds"]) for t in plan]
    overhead: dict[str, float] = {}
    for n in (1, 2):
        t0 = time.perf_counter()
        cluster, client = campaign.local_cluster(n)
        startup = time.perf_counter() - t0
        try:
            log = campaign.run(iter(plan), client)
            s = summary(log)
            nlog = campaign.run(iter(tasks.plan(matrix, 2, args.noop, dist)), client, fn=noop)
        finally:
            client.close()
            cluster.close()
        assert comparable(s) == comparable(ref), f"{n} worker(s): the report differs from the in-process run"
        overhead[str(n)] = nlog.seconds / args.noop
        runs[f"workers_{n}"] = {
            "seconds": round(log.seconds, 2),
            "task_seconds": round(sum(float(r["timing"]["seconds"]) for r in log.results.values()), 2),
            "cluster_startup_seconds": round(startup, 2),
            "per_worker": s["run"]["per_worker"],
            "noop_ms_per_task": round(1000 * overhead[str(n)], 3),
        }
    w1, w2 = runs["workers_1"]["seconds"], runs["workers_2"]["seconds"]
    o = overhead["1"]
    sim = {
        "overhead_seconds_per_task": round(o, 5),
        "check_w2_predicted_seconds": round(simulate(durations, 2, o), 2),
        "check_w2_measured_seconds": w2,
        "campaign": {},
        "campaign_x20": {},
    }
    longer = durations * 20
    for w in (1, 2, 4, 8, 16, 32, 64):
        for key, ds in (("campaign", durations), ("campaign_x20", longer)):
            base = simulate(ds, 1, o)
            m = simulate(ds, w, o)
            sim[key][str(w)] = {
                "makespan": round(m, 2),
                "speedup": round(base / m, 2),
                "efficiency": round(base / m / w, 3),
            }
    ceil = ceiling(args.ceiling, args.max_examples)
    out = {
        "ceiling": ceil,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "campaign": {
            "tasks": len(plan),
            "seed": 1,
            "engines": ["hypothesis", "explore"],
            "max_examples": args.max_examples,
            "sum_task_seconds": round(sum(durations), 2),
            "longest_task_seconds": round(max(durations), 2),
            "mean_task_seconds": round(sum(durations) / len(durations), 3),
        },
        "runs": runs,
        "speedup_2_over_1_workers": round(w1 / w2, 3),
        "speedup_2_workers_over_in_process": round(peer.seconds / w2, 3),
        "dask_overhead_1_worker_over_in_process": round(w1 / peer.seconds, 3),
        "reports_identical": True,
        "simulation": sim,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    jsonio.write_text(OUT, json.dumps(out, indent=2, sort_keys=True) + "\n")
    print(json.dumps(ceil))
    print(
        json.dumps(
            {
                k: out[k]
                for k in (
                    "speedup_2_over_1_workers",
                    "speedup_2_workers_over_in_process",
                    "dask_overhead_1_worker_over_in_process",
                )
            },
            indent=1,
        )
    )
    print(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
