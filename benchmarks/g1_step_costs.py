"""Where a G1 search's time goes, per transition, and the rate it could reach if everything but
the model's own step and its copy cost nothing (issue 25, goal 3: 10k states/s).

Each world is ``benchmarks/g1_worlds.py``'s (the CLI's default world of the component) with two
requests at capacity 4, ideal model, request symmetry on, searched to its first ``STATES``
states. First a plain search (no instrument): states/s and transitions run per state. Then one
search per part, with only that part timed (a wrapper adds well under a microsecond a call):

* ``clone`` — the system's copy of the state, once per move run (``System.clone``);
* ``perform`` — the model's own step: the action's call into the manager (``Action.perform``),
  what the real code does;
* ``apply`` — the whole step on the system: ``perform`` plus the harness (the step's records for
  the invariants, its events drained into the monitor, the step invariants; the state
  invariants are run by the explorer once per new state, inside ``apply``'s caller) ;
* ``key`` — the successor's canonical key (``Space.key``: the least key over the request
  renamings tried), skipped for a step its system marks unchanged.

``ceiling_states_per_s`` is ``1e6 / ((perform + clone) µs per transition x transitions run per
state)``: the rate of a search whose keys, invariants, bookkeeping and loop were free. Peer, in
the same run: the anchors' plain-Python BFS of a toy block pool (``explore.peer``).

Writes ``benchmarks/results/g1_step_costs.json``. Usage: ``python benchmarks/g1_step_costs.py
[--states N]`` (about a minute).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from explore import peer  # the anchors' toy-pool BFS, as benchmarks/explore.py runs it
from g1_worlds import WORLD

from kvmodel import __version__, components, explorer

ROOT = Path(__file__).resolve().parents[1]
STATES = 20_000
CAPACITY = 4


def _action_classes() -> list[type]:
    """Every G1 action class with a ``perform`` of its own (both backends and the shared ones)."""
    import kvmodel.components.g1_kvbm.actions as kvbm_actions
    import kvmodel.components.g1_native.actions as native_actions
    import kvmodel.components.g1_requests as shared

    out = []
    for mod in (shared, native_actions, kvbm_actions):
        for v in vars(mod).values():
            if isinstance(v, type) and "perform" in v.__dict__ and v.__module__ == mod.__name__:
                out.append(v)
    return out


@contextmanager
def timed(owners: list[Any], name: str) -> Iterator[list[float]]:
    """Time every call of ``name`` on each of ``owners`` (classes; the method may be inherited):
    [calls, seconds]."""
    tally = [0.0, 0.0]
    missing = object()
    saved = [(o, o.__dict__.get(name, missing), getattr(o, name)) for o in owners]

    def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
        def g(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                tally[0] += 1
                tally[1] += time.perf_counter() - t

        return g

    for o, _, f in saved:
        setattr(o, name, wrap(f))
    try:
        yield tally
    finally:
        for o, own, _ in saved:
            if own is missing:
                delattr(o, name)
            else:
                setattr(o, name, own)


def world(component: str) -> tuple[Any, Any]:
    comp = components.get(component)
    space = comp.explore_space(components.World({}, {**WORLD, "owners": 2}))
    return space, type(space.system({"max_capacity": CAPACITY}, ()))


def search(space: Any, states: int) -> explorer.ExploreResult:
    return explorer.explore({"max_capacity": CAPACITY}, (), space, max_states=states)


def one(component: str, states: int) -> dict[str, Any]:
    space, system = world(component)
    plain = search(space, states)
    run = plain.transitions_run
    row: dict[str, Any] = {
        "component": component,
        "owners": 2,
        "capacity": CAPACITY,
        "states": plain.states,
        "transitions_run": run,
        "transitions_run_per_state": round(run / plain.states, 2),
        "seconds": round(plain.seconds, 2),
        "states_per_s": round(plain.states / plain.seconds),
        "us_per_transition": round(plain.seconds / run * 1e6, 1),
    }
    parts = {
        "clone": ([system], "clone"),
        "apply": ([system], "apply"),
        "perform": (_action_classes(), "perform"),
        "key": ([type(space)], "key"),
    }
    for part, (owners, name) in parts.items():
        with timed(owners, name) as tally:
            search(space, states)
        row[f"{part}_calls"] = int(tally[0])
        row[f"{part}_us_per_transition"] = round(tally[1] / run * 1e6, 2)
    floor = row["perform_us_per_transition"] + row["clone_us_per_transition"]
    row["ceiling_states_per_s"] = round(1e6 / (floor * run / plain.states))
    row["harness_share"] = round(1 - row["perform_us_per_transition"] / row["us_per_transition"], 3)
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--states", type=int, default=STATES)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "g1_step_costs.json"))
    a = ap.parse_args()
    rows = []
    for component in ("g1_native", "g1_kvbm"):
        rows.append(one(component, a.states))
        r = rows[-1]
        print(
            f"{component:<9} {r['states_per_s']:,} states/s, {r['us_per_transition']} us/transition "
            f"({r['transitions_run_per_state']} per state): clone {r['clone_us_per_transition']}, "
            f"perform {r['perform_us_per_transition']}, apply {r['apply_us_per_transition']}, "
            f"key {r['key_us_per_transition']}; ceiling {r['ceiling_states_per_s']:,} states/s",
            flush=True,
        )
    p = peer()
    result = {
        "benchmark": "g1_step_costs",
        "kvmodel_version": __version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "goal_states_per_s": 10_000,
        "rows": rows,
        "peer": p,
        "ratio_peer_over_kvmodel": {
            r["component"]: round(p["states_per_s"] / r["states_per_s"], 1) for r in rows if p is not None
        },
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
