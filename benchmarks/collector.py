"""What pausing Python's cycle collector during a search gains (``membound.collector_paused``;
issue 25, goal 3).

Three G1 searches, each run with the collector paused (what ``explore`` does now) and with the
collector left on (``collector_paused`` replaced by a context that changes nothing: the
explorer as it was), the two alternating, ``REPEATS`` times; CPU seconds of the search
(``time.process_time``: this machine's wall clock varies by half between identical runs), and
the median per world:

* ``g1_native ideal`` and ``g1_kvbm ideal``: ``benchmarks/g1_worlds.py``'s world (two requests,
  capacity 4), to ``STATES`` states;
* ``g1_kvbm faithful``: the CLI's default KVBM world (``kvmodel explore --component g1_kvbm
  --faithful``: two prompts, one decode token, a decode reservation) with every quirk on, to
  ``STATES`` states. Its model used to leave each panic of ``commit_use`` in a reference cycle
  (fixed in the same commit): the collector then had work to do.

Peer, in the same run: the anchors' plain-Python BFS of a toy block pool (``explore.peer``).
Writes ``benchmarks/results/collector.json``. Usage: ``python benchmarks/collector.py
[--states N] [--repeats R]`` (about five minutes).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from explore import peer  # the anchors' toy-pool BFS, as benchmarks/explore.py runs it
from g1_worlds import WORLD

from kvmodel import __version__, components, explorer, jsonio, membound
from kvmodel.model.quirks import faithful

ROOT = Path(__file__).resolve().parents[1]
STATES = 15_000
REPEATS = 3


class _Unpaused(membound.PausedCollector):
    def tick(self, stored: int) -> None:
        return None


@contextlib.contextmanager
def _left_on() -> Iterator[membound.PausedCollector]:
    yield _Unpaused()


def _worlds() -> list[tuple[str, dict[str, Any], list[str], Any]]:
    out = []
    for name in ("g1_native", "g1_kvbm"):
        comp = components.get(name)
        out.append(
            (f"{name} ideal", {"max_capacity": 4}, [], comp.explore_space(components.World({}, {**WORLD, "owners": 2})))
        )
    kvbm = components.get("g1_kvbm")
    default = {"owners": 2, "prompts": 2, "pushes": 1, "decode": 1}
    out.append(
        (
            "g1_kvbm faithful",
            {"max_capacity": 3},
            sorted(faithful("g1_kvbm")),
            kvbm.explore_space(components.World({}, default)),
        )
    )
    return out


def _run(config: dict[str, Any], quirks: list[str], space: Any, states: int, paused: bool) -> dict[str, Any]:
    saved = membound.collector_paused
    if not paused:
        membound.collector_paused = _left_on  # type: ignore[assignment]
    try:
        t = time.process_time()
        r = explorer.explore(config, quirks, space, max_states=states)
        cpu = time.process_time() - t
    finally:
        membound.collector_paused = saved  # type: ignore[assignment]
    return {"cpu_s": round(cpu, 2), "states": r.states, "peak_rss_bytes": r.peak_rss_bytes}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--states", type=int, default=STATES)
    ap.add_argument("--repeats", type=int, default=REPEATS)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "collector.json"))
    a = ap.parse_args()
    rows = []
    for label, config, quirks, space in _worlds():
        runs: dict[str, list[dict[str, Any]]] = {"on": [], "paused": []}
        for _ in range(a.repeats):
            for mode in ("on", "paused"):
                runs[mode].append(_run(config, quirks, space, a.states, mode == "paused"))
        assert len({r["states"] for m in runs.values() for r in m}) == 1, "the two searches differ"
        on = statistics.median(r["cpu_s"] for r in runs["on"])
        paused = statistics.median(r["cpu_s"] for r in runs["paused"])
        states = runs["on"][0]["states"]
        rows.append(
            {
                "world": label,
                "states": states,
                "runs": runs,
                "median_cpu_s_collector_on": on,
                "median_cpu_s_paused": paused,
                "states_per_cpu_s_on": round(states / on),
                "states_per_cpu_s_paused": round(states / paused),
                "cpu_saved_share": round(1 - paused / on, 3),
            }
        )
        print(
            f"{label:<17} {states} states: collector on {on} s, paused {paused} s "
            f"({rows[-1]['cpu_saved_share']:.1%} saved)"
        )
    p = peer()
    out = {
        "benchmark": "collector",
        "kvmodel_version": __version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "repeats": a.repeats,
        "max_states": a.states,
        "rows": rows,
        "peer": p,
        "ratio_peer_over_kvmodel_paused": None
        if p is None
        else {r["world"]: round(p["states_per_s"] / r["states_per_cpu_s_paused"], 1) for r in rows},
    }
    jsonio.write_text(Path(a.out), json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"peer: {p['states_per_s']:,.0f} states/s; " if p else "peer: not found (../shared); ", f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
