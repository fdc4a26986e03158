"""The G1 worlds' move classes (one move per orbit of the state's request symmetries) against the
full expansion, alternated in one process (issue 25, goal 3).

Peer: the same search with ``reduce_moves=False`` (every allowed move run). Worlds: native, two
requests at capacity 4 (to its first 20,000 canonical states) and three requests at capacity 3;
KVBM, three requests over its two cached prompts at capacity 3 (the worlds with request
symmetry). Both sides must report the same states and transitions; the figures are the
transitions each side ran and its seconds, two rounds each, alternated.

Usage: ``python benchmarks/g1_move_classes.py [OUT]`` (default
``benchmarks/results/g1_move_classes.json``).
"""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

from kvmodel import components, explorer

ROOT = Path(__file__).resolve().parents[1]
WORLDS = (
    ("g1_native", {"owners": 2}, 4),
    ("g1_native", {"owners": 3}, 3),
    ("g1_kvbm", {"owners": 3, "prompts": 2}, 3),
)


def main(out: Path) -> int:
    rows: list[dict[str, Any]] = []
    for comp, space, cap in WORLDS:
        sp = components.get(comp).explore_space(components.World({"max_capacity": cap}, space))
        times: dict[bool, list[float]] = {True: [], False: []}
        runs: dict[bool, tuple[int, int, int, bool]] = {}
        for _ in range(2):
            for reduce in (False, True):
                t = time.perf_counter()
                r = explorer.explore({"max_capacity": cap}, [], sp, reduce_moves=reduce, max_states=20_000)
                times[reduce].append(time.perf_counter() - t)
                runs[reduce] = (r.states, r.transitions, r.transitions_run, r.complete)
        if runs[True][:2] != runs[False][:2]:
            raise SystemExit(f"{comp}: the two searches differ: {runs}")
        row = {
            "component": comp,
            "space": sp.to_json(),
            "capacity": cap,
            "states": runs[True][0],
            "complete": runs[True][3],
            "transitions": runs[True][1],
            "run_reduced": runs[True][2],
            "run_every": runs[False][2],
            "seconds_reduced": [round(x, 2) for x in times[True]],
            "seconds_every": [round(x, 2) for x in times[False]],
            "speedup_best": round(min(times[False]) / min(times[True]), 2),
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
    doc = {"python": platform.python_version(), "command": "python benchmarks/g1_move_classes.py", "rows": rows}
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "benchmarks/results/g1_move_classes.json"))
