"""The G1 machines: one rule over every allowed move (current) against one rule per action class
weighted toward the classes with many instances, with and without Hypothesis's swarm testing.

The third pair of candidates for issue 22's "one rule per action class" (the first two, one rule
per kind and one rule per move, are ``g1_machines.py``; why per kind loses, ``g1_machines_swarm.py``).
That diagnosis pointed to rules per class weighted toward the classes with many instances. Hypothesis
chooses uniformly among the enabled rules, so a class is weighted by registering its rule under
several attribute names (every alias is the same function, so it prints and swarms as one rule):

* ``weighted``: a class with ``n`` instances in the machine's world has ``n`` aliases, each enabled
  when the class has an allowed instance; the rule draws which allowed instance (``pick``).
* ``exact``: alias ``i`` of a class is enabled only when the class has more than ``i`` allowed
  instances, so the choice of class is proportional to its allowed instances in the current state —
  the peer's uniform choice among allowed moves, made in two steps.

Each mode runs in its own process, with Hypothesis's swarm feature flags as they are (``...``) or
forced on (``...-noswarm``: ``FeatureFlags.is_enabled`` in
``hypothesis.strategies._internal.featureflags``, 6.170.27, patched for the measurement only).
Per quirk, seeds 0–4, up to 3,000 examples of ≤ 30 steps: the seconds to a shrunk counterexample
and its length; then the ideal machine's steps/s (300 examples).

Writes ``benchmarks/results/g1_machines_weighted.json``. Usage:
``python benchmarks/g1_machines_weighted.py [MODE ...]`` (default: peer weighted weighted-noswarm
exact-noswarm, both components); one mode alone: ``python benchmarks/g1_machines_weighted.py --one
MODE COMPONENT`` (prints one JSON line).
"""

from __future__ import annotations

import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
MODES = ("peer", "weighted", "weighted-noswarm", "exact-noswarm")
COMPONENTS = ("g1_native", "g1_kvbm")
SEEDS = range(5)


def per_class(base: Any, exact: bool) -> Any:
    """``base``'s world and configuration; one rule per action class, weighted by aliases."""
    from g1_machines import allowed_by_kind
    from hypothesis import strategies as st
    from hypothesis.stateful import precondition, rule

    from kvmodel.machines import Machine

    space = base().space
    world = [(space.move_kind(m), m) for m in space.moves()]
    allowed = allowed_by_kind(space)

    counts: dict[str, int] = {}
    for k, _ in world:
        counts[k] = counts.get(k, 0) + 1
    body: dict[str, Any] = {"component": base.component, "config": dict(base.config), "quirks": frozenset()}
    for kind, n in counts.items():

        def run(self: Any, pick: int, _kind: str = kind) -> None:
            ok = allowed(self, _kind)
            op, _, args = space.concrete(self.system, ok[pick % len(ok)])
            self._run_json(op, args)

        run.__name__ = kind
        for i in range(n):

            def enabled(self: Any, _kind: str = kind, _i: int = i) -> bool:
                return len(allowed(self, _kind)) > (_i if exact else 0)

            f = rule(pick=st.integers(0, max(n - 1, 0)))(precondition(enabled)(run)) if exact or i == 0 else None
            if f is not None:
                body[kind if i == 0 else f"{kind}__{i}"] = f
            else:
                body[f"{kind}__{i}"] = body[kind]
    return type(f"PerClass{base.__name__}", (Machine,), body)


def one(mode: str, component: str) -> dict[str, Any]:
    if mode.endswith("-noswarm"):
        from hypothesis.strategies._internal import featureflags as ff

        ff.FeatureFlags.is_enabled = lambda self, name: True  # type: ignore[method-assign]
    from kvmodel import machines
    from kvmodel.model.quirks import quirks_of

    base = machines.machine_class(component)
    cls = base if mode == "peer" else per_class(base, exact=mode.startswith("exact"))
    machines.machine_class = lambda _c: cls  # type: ignore[assignment]
    rows = {}
    for q in quirks_of(component):
        secs, lens = [], []
        for seed in SEEDS:
            r = machines.run(component, quirks=(q.name,), target=q.breaks, max_examples=3000, seed=seed)
            secs.append(round(r.seconds, 3))
            lens.append(len(r.trace["steps"]) if r.trace else None)
        rows[q.name] = {"median_seconds": round(statistics.median(secs), 3), "seconds": secs, "lengths": lens}
    t = time.perf_counter()
    r = machines.run(component, max_examples=300, seed=0)
    return {"quirks": rows, "ideal_steps_per_s": round(r.steps / (time.perf_counter() - t))}


def main(modes: list[str]) -> None:
    out: dict[str, Any] = {"python": platform.python_version(), "machine": platform.machine(), "seeds": list(SEEDS)}
    for component in COMPONENTS:
        out[component] = {}
        for mode in modes:
            p = subprocess.run(
                [sys.executable, __file__, "--one", mode, component], check=True, capture_output=True, text=True
            )
            out[component][mode] = json.loads(p.stdout.strip().splitlines()[-1])
            print(component, mode, json.dumps(out[component][mode]["quirks"])[:200], flush=True)
    path = ROOT / "benchmarks" / "results" / "g1_machines_weighted.json"
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(one(sys.argv[2], sys.argv[3]), sort_keys=True))
    else:
        main(sys.argv[1:] or list(MODES))
