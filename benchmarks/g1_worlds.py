"""How the G1 worlds' exhaustive search grows: states and seconds for 2, 3 and 4 requests over
capacities 4-8, native and KVBM backends, ideal model (issue 25, goal 3's table).

Each world is the CLI's default world of its component (``kvmodel explore --component X``: two
prompts, one decode token per request, a decode reservation of one slot on the native backend)
with ``--owners N --capacity C``, with request symmetry (the CLI's default): ``states`` are
canonical states, ``concrete_states`` the states they stand for (a finished search only). A
search gets ``BUDGET_S`` seconds: past it, the run stops at its next progress report (every
5,000 states) and is recorded as not finished with the states it had; the larger capacities of
the same request count are then not run (recorded as skipped: the table's finished rows show
the state count growing with capacity). Peer, in the same run: the anchors' plain-Python BFS of
a toy block pool (``shared/reference/examples/anchors-bench/model.py``), the states/s a
hand-written tuple-state search reaches on this machine.

With ``--workers N`` each search runs over ``N`` worker processes (``kvmodel explore --workers``:
the same search, so the same states; ``states_per_s`` is then the rate of the ``N`` processes
together; the result records ``workers``).

Writes ``benchmarks/results/g1_worlds.json``. Usage: ``python benchmarks/g1_worlds.py [--budget S]
[--workers N]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from explore import peer  # the anchors' toy-pool BFS, as benchmarks/explore.py runs it

from kvmodel import __version__, components, explorer, jsonio

ROOT = Path(__file__).resolve().parents[1]
BUDGET_S = 60.0
OWNERS = (2, 3, 4)
CAPACITIES = (4, 5, 6, 7, 8)
# the CLI's default world of both G1 components (``kvmodel explore --component g1_native``)
WORLD = {"prompts": 2, "pushes": 1, "decode": 1}


class _OverBudget(Exception):
    def __init__(self, states: int, transitions: int, depth: int) -> None:
        super().__init__()
        self.states, self.transitions, self.depth = states, transitions, depth


def one(component: str, owners: int, capacity: int, budget: float, workers: int = 1) -> dict[str, Any]:
    comp = components.get(component)
    space = comp.explore_space(components.World({}, {**WORLD, "owners": owners}))
    t0 = time.perf_counter()

    def progress(states: int, transitions: int, depth: int) -> None:
        if time.perf_counter() - t0 > budget:
            raise _OverBudget(states, transitions, depth)

    row: dict[str, Any] = {"owners": owners, "capacity": capacity, "space": space.to_json()}
    try:
        res = explorer.explore(
            {"max_capacity": capacity}, (), space, max_states=10_000_000, progress=progress, workers=workers
        )
    except _OverBudget as e:
        dt = time.perf_counter() - t0
        row.update(finished=False, states=e.states, transitions=e.transitions, depth=e.depth, seconds=round(dt, 2))
    else:
        row.update(
            finished=res.complete,
            states=res.states,
            concrete_states=res.concrete_states,
            transitions=res.transitions,
            depth=res.depth,
            seconds=round(res.seconds, 2),
            violations=sorted(res.violations),
        )
    row["states_per_s"] = round(row["states"] / row["seconds"]) if row["seconds"] else None
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=BUDGET_S)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    name = "g1_worlds.json"
    out = a.out or str(ROOT / "benchmarks" / "results" / name)
    rows: list[dict[str, Any]] = []
    for component in ("g1_native", "g1_kvbm"):
        for owners in OWNERS:
            over = None
            for capacity in CAPACITIES:
                if over is not None:
                    skipped = f"capacity {over} ran past the budget"
                    rows.append({"component": component, "owners": owners, "capacity": capacity, "skipped": skipped})
                    continue
                r = {"component": component, **one(component, owners, capacity, a.budget, a.workers)}
                rows.append(r)
                done = "" if r["finished"] else "(not finished) "
                print(
                    f"{component:<10} owners {owners} capacity {capacity}: {r['states']:>9,} states"
                    f" {done}in {r['seconds']:.1f} s, {r['states_per_s']:,} states/s",
                    flush=True,
                )
                if not r["finished"]:
                    over = capacity
    fits = [r for r in rows if r.get("finished")]
    result = {
        "benchmark": "g1_worlds",
        "kvmodel_version": __version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "budget_s": a.budget,
        "workers": a.workers,
        "rows": rows,
        "largest_finished": {
            c: max((r for r in fits if r["component"] == c), key=lambda r: r["states"], default=None)
            for c in ("g1_native", "g1_kvbm")
        },
        "peer": peer(),
    }
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    jsonio.write_text(Path(out), json.dumps(result, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
