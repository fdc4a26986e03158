"""Why one rule per action class loses on the G1 machines: Hypothesis's swarm testing.

One mode per process: ``peer`` (the machines' one rule over every allowed move), ``kind`` (one
rule per action class, ``g1_machines.per_kind``) and ``noswarm`` (the same per-class machine with
Hypothesis's per-example rule feature flags — its swarm testing, ``FeatureFlags.is_enabled`` in
``hypothesis.strategies._internal.featureflags``, 6.170.27 — forced on, for this measurement
only). Per quirk, seeds 0-4, up to 3,000 examples: median seconds to a shrunk counterexample and
each seed's counterexample length; then the ideal machine's steps/s (300 examples).

Usage: ``python benchmarks/g1_machines_swarm.py MODE COMPONENT QUIRK[,QUIRK...]`` (prints one
line per quirk; the 2026-12-04 run's lines are in ``benchmarks/results/g1_machines_swarm.json``).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import g1_machines as gm
from hypothesis.strategies._internal import featureflags as ff

from kvmodel import machines
from kvmodel.model.quirks import quirks_of


def main(mode: str, comp: str, quirks: list[str]) -> None:
    if mode == "noswarm":
        ff.FeatureFlags.is_enabled = lambda self, name: True  # type: ignore[method-assign]
    base = machines.machine_class(comp)
    cls = base if mode == "peer" else gm.per_kind(base)
    machines.machine_class = lambda _c: cls  # type: ignore[assignment]
    qs = {q.name: q for q in quirks_of(comp)}
    for qn in quirks:
        q = qs[qn]
        secs, lens = [], []
        for seed in range(5):
            r = machines.run(comp, quirks=(qn,), target=q.breaks, max_examples=3000, seed=seed)
            secs.append(r.seconds)
            lens.append(len(r.trace["steps"]) if r.trace else None)
        print(mode, comp, qn, "median_s", round(statistics.median(secs), 3), "lens", lens, flush=True)
    t = time.perf_counter()
    r = machines.run(comp, max_examples=300, seed=0)
    print(mode, comp, "ideal steps/s", round(r.steps / (time.perf_counter() - t)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3].split(","))
