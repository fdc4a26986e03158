"""The explorer over worker processes against the same search in one process (issue 25, goal 3).

Each world is searched twice with the command a user runs, ``kvmodel explore ... --json``: once
in one process (the peer) and once with ``--workers N``, each in its own fresh process, one
after the other, so the two never share a core. The two JSON outputs must be equal apart from
the timings and the ``workers`` field (same states, transitions, depth, counterexamples and
their traces, coverage); a world where they differ is recorded as ``"same": false`` and the
script exits 1. ``speedup`` is the one-process search's ``seconds`` over the workers' (the
search alone, as the JSON reports it), ``wall_speedup`` the same for the whole command
(start-up and the forks included).

Writes ``benchmarks/results/explore_workers.json``. Usage:
``python benchmarks/explore_workers.py [--workers N] [--repeat R]`` (the best of ``R`` runs each).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kvmodel import __version__, jsonio
from kvmodel.explore_workers import default_workers

ROOT = Path(__file__).resolve().parents[1]

# (name, the arguments of ``kvmodel explore``)
WORLDS: list[tuple[str, list[str]]] = [
    ("kv_manager ideal, capacity 7, 8 ids", ["--component", "kv_manager", "--capacity", "7", "--blocks", "8"]),
    ("g1_native ideal, 2 requests, capacity 4", ["--component", "g1_native", "--owners", "2", "--capacity", "4"]),
    ("g1_native ideal, 3 requests, capacity 4", ["--component", "g1_native", "--owners", "3", "--capacity", "4"]),
    (
        "g1_native faithful, 3 requests, capacity 3, exhaustive",
        ["--component", "g1_native", "--owners", "3", "--capacity", "3", "--faithful", "--exhaustive"],
    ),
    ("g1_kvbm ideal, 2 requests, capacity 4", ["--component", "g1_kvbm", "--owners", "2", "--capacity", "4"]),
    (
        "g1_kvbm faithful, capacity 3, exhaustive, 20,000 states",
        ["--component", "g1_kvbm", "--capacity", "3", "--faithful", "--exhaustive", "--max-states", "20000"],
    ),
]

# what may differ between the two runs of a world (timings, memory, how it ran)
TIMING = (
    "seconds",
    "found_after_s",
    "workers",
    "states_per_second",
    "peak_rss_bytes",
    "workers_peak_rss_bytes",
)


def _strip(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in TIMING}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    return x


def run(args: list[str], workers: int) -> tuple[dict[str, Any], float]:
    """One ``kvmodel explore`` in a fresh process: its JSON and its wall-clock seconds."""
    cmd = [sys.executable, "-m", "kvmodel", "explore", *args, "--json", "--workers", str(workers)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, check=False, env={**os.environ, "PYTHONHASHSEED": "0"})
    wall = time.perf_counter() - t0
    if p.returncode not in (0, 1):  # 0 pass, 1 a violation found: both verdicts reached
        raise SystemExit(f"explore_workers: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout), wall


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "explore_workers.json"))
    a = ap.parse_args()
    rows: list[dict[str, Any]] = []
    all_same = True
    for name, args in WORLDS:
        best: dict[int, tuple[dict[str, Any], float]] = {}
        for _ in range(a.repeat):
            for w in (1, a.workers):
                out, wall = run(args, w)
                if w not in best or out["seconds"] < best[w][0]["seconds"]:
                    best[w] = (out, wall)
        (one, one_wall), (par, par_wall) = best[1], best[a.workers]
        same = _strip(one) == _strip(par)
        all_same &= same
        row = {
            "world": name,
            "command": "kvmodel explore " + " ".join(args),
            "same": same,
            "states": one["states"],
            "transitions": one["transitions"],
            "complete": one["complete"],
            "verdict": one["verdict"],
            "one_process_s": one["seconds"],
            "workers_s": par["seconds"],
            "speedup": round(one["seconds"] / par["seconds"], 2) if par["seconds"] else None,
            "one_process_wall_s": round(one_wall, 2),
            "workers_wall_s": round(par_wall, 2),
            "wall_speedup": round(one_wall / par_wall, 2),
            "states_per_s_one_process": round(one["states"] / one["seconds"]) if one["seconds"] else None,
            "states_per_s_workers": round(par["states"] / par["seconds"]) if par["seconds"] else None,
            "one_process_peak_rss_mb": round(one["peak_rss_bytes"] / 2**20, 1),
            "workers_peak_rss_mb": [round(par["peak_rss_bytes"] / 2**20, 1)]
            + [round(b / 2**20, 1) for b in par["workers_peak_rss_bytes"]],
        }
        rows.append(row)
        print(
            f"{name:<58} {row['states']:>7,} states  one process {row['one_process_s']:7.2f} s"
            f"  {a.workers} workers {row['workers_s']:7.2f} s  x{row['speedup']}  same: {same}",
            flush=True,
        )
    result = {
        "benchmark": "explore_workers",
        "kvmodel_version": __version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cores": default_workers(),
        "workers": a.workers,
        "repeat": a.repeat,
        "rows": rows,
        "all_same": all_same,
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    jsonio.write_text(Path(a.out), json.dumps(result, indent=2, sort_keys=True) + "\n")
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
