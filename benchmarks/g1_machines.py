"""The G1 machines' rules: one rule over every move (current) against one rule per kind of move
and one rule per move (issue 22's candidates), same worlds, settings and seeds, in one run.

The G1 machines (``g1_native``, ``g1_kvbm``) have one Hypothesis rule that picks any move of
their world the explorer's guard allows (``pick % len(allowed)``). The candidate, defined here,
has one rule per kind of move (``Space.move_kind``), enabled (a ``precondition``) when a move of
its kind is allowed, drawing which one; the allowed moves are computed once per step for every
kind. Measured per quirk, seeds 0–4, up to 3,000 examples of ≤ 30 steps: time to a shrunk
counterexample, its length against the explorer's BFS minimum (the check world), and the
throughput of the ideal machine (1,000 examples). The candidate was slower to find most KVBM
quirks (Hypothesis chooses uniformly among enabled *kinds*, so rare kinds such as ``bad_use``
are drawn as often as ``push``); the per-move candidate (a rule per move, its precondition the
guard) runs about half the steps/s and was slower on most quirks too, so the machines keep their
one rule (docs/performance.md).

Writes ``benchmarks/results/g1_machines.json`` (``rule_per_kind``, ``rule_per_move``: the candidates;
``peer_one_rule``: the current machines). Usage: ``python benchmarks/g1_machines.py``.
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from kvmodel import __version__, components, explorer, machines
from kvmodel.machines import Machine
from kvmodel.model.quirks import quirks_of

ROOT = Path(__file__).resolve().parents[1]
SEEDS = range(5)


def world_of(base: type[Machine]) -> Any:
    """The machine's world (its explorer space, set by its ``__init__``)."""
    return base().space  # type: ignore[attr-defined]


def allowed_by_kind(space: Any) -> Any:
    """``allowed(machine, kind)``: the moves of that kind the world's guard allows in the
    machine's current state, computed once per step for every kind."""
    world = tuple((space.move_kind(m), m) for m in space.moves())

    def allowed(self: Any, kind: str) -> list[Any]:
        at = len(self.log)
        cache = getattr(self, "_allowed_cache", None)
        if cache is None or cache[0] != at:
            by_kind: dict[str, list[Any]] = {}
            for k, m in world:
                if space.allows(self.system, m):
                    by_kind.setdefault(k, []).append(m)
            cache = (at, by_kind)
            self._allowed_cache = cache
        return cache[1].get(kind, [])

    return allowed


def per_kind(base: type[Machine]) -> type[Machine]:
    """The candidate: ``base``'s world and configuration, one rule per kind of move."""
    space = world_of(base)
    world = tuple((space.move_kind(m), m) for m in space.moves())
    allowed = allowed_by_kind(space)

    def kind_rule(kind: str, n: int) -> Any:
        def enabled(self: Any) -> bool:
            return bool(allowed(self, kind))

        def run(self: Any, pick: int) -> None:
            ok = allowed(self, kind)
            op, _, args = space.concrete(self.system, ok[pick % len(ok)])
            self._run_json(op, args)

        run.__name__ = f"do_{kind}"
        return rule(pick=st.integers(0, max(n - 1, 0)))(precondition(enabled)(run))

    counts: dict[str, int] = {}
    for k, _ in world:
        counts[k] = counts.get(k, 0) + 1
    body: dict[str, Any] = {
        "component": base.component,
        "config": dict(base.config),
        "quirks": frozenset(),
        **{f"do_{k}": kind_rule(k, n) for k, n in counts.items()},
    }
    return type(f"PerKind{base.__name__}", (Machine,), body)


def per_move(base: type[Machine]) -> type[Machine]:
    """The second candidate: ``base``'s world and configuration, one rule per move of the world
    (no argument to draw), enabled (a ``precondition``) when the explorer's guard allows it."""
    space = world_of(base)
    body: dict[str, Any] = {"component": base.component, "config": dict(base.config), "quirks": frozenset()}
    for i, m in enumerate(space.moves()):

        def enabled(self: Any, _m: Any = m) -> bool:
            return bool(space.allows(self.system, _m))

        def run(self: Any, _m: Any = m) -> None:
            op, _, args = space.concrete(self.system, _m)
            self._run_json(op, args)

        name = "_".join(str(x).lower() for x in (m if isinstance(m, tuple) else (m,)))
        run.__name__ = f"m{i}_{name}"
        body[run.__name__] = rule()(precondition(enabled)(run))
    return type(f"PerMove{base.__name__}", (Machine,), body)


def measure(component: str, cls: type[Machine]) -> dict[str, Any]:
    orig = machines.machine_class
    machines.machine_class = lambda _c: cls  # type: ignore[assignment]
    try:
        comp = components.get(component)
        world = comp.profile.explore
        rows = []
        for q in quirks_of(component):
            bfs = explorer.explore(dict(world.config), (q.name,), comp.explore_space(world), until=q.breaks)
            per_seed = []
            for seed in SEEDS:
                r = machines.run(component, quirks=(q.name,), target=q.breaks, max_examples=3000, seed=seed)
                inv = r.violation["invariant"] if r.violation else None
                per_seed.append(
                    {
                        "seed": seed,
                        "found": r.trace is not None,
                        "seconds": round(r.seconds, 3),
                        "steps": len(r.trace["steps"]) if r.trace else None,
                        "bfs_minimum": bfs.violations[inv]["depth"] if inv in bfs.violations else None,
                    }
                )
            found = [x for x in per_seed if x["found"] and x["bfs_minimum"]]
            rows.append(
                {
                    "quirk": q.name,
                    "found": len(found),
                    "median_seconds": round(statistics.median(x["seconds"] for x in per_seed), 3),
                    "median_length_over_minimum": round(
                        statistics.median(x["steps"] / x["bfs_minimum"] for x in found), 2
                    )
                    if found
                    else None,
                    "max_length_over_minimum": round(max(x["steps"] / x["bfs_minimum"] for x in found), 2)
                    if found
                    else None,
                    "seeds": per_seed,
                }
            )
        t = time.perf_counter()
        r = machines.run(component, max_examples=1000, seed=0)
        dt = time.perf_counter() - t
        return {
            "time_to_find": rows,
            "ideal": {"steps": r.steps, "seconds": round(dt, 3), "steps_per_s": round(r.steps / dt)},
        }
    finally:
        machines.machine_class = orig  # type: ignore[assignment]


def main() -> None:
    out: dict[str, Any] = {"kvmodel": __version__, "python": platform.python_version(), "machine": platform.machine()}
    for component in ("g1_native", "g1_kvbm"):
        base = machines.machine_class(component)
        res = {
            "rule_per_move": measure(component, per_move(base)),
            "rule_per_kind": measure(component, per_kind(base)),
            "peer_one_rule": measure(component, base),
        }
        out[component] = res
        for label in ("rule_per_move", "rule_per_kind", "peer_one_rule"):
            r = res[label]
            print(f"{component} {label}: ideal {r['ideal']['steps_per_s']} steps/s")
            for q in r["time_to_find"]:
                print(
                    f"  {q['quirk']:<38} found {q['found']}/5  median {q['median_seconds']:6.2f}s"
                    f"  length/min median {q['median_length_over_minimum']} max {q['max_length_over_minimum']}",
                    flush=True,
                )
    path = ROOT / "benchmarks" / "results" / "g1_machines.json"
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
