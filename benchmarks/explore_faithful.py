"""Faithful exploration that ends (issue 25, goal 1): ``kvmodel explore`` with quirks stops once
every invariant they break has its shortest counterexample; the peer is the same search run on
(``--exhaustive``), in the same script, each in its own process (so peak RSS is per run).

For each world: seconds, states, transitions, peak RSS, whether the two found the same invariants
at the same depths (the peer's set where it is complete; where it is bounded, what it found before
its bound). Writes ``benchmarks/results/explore_faithful.json``.
Usage: ``python benchmarks/explore_faithful.py``; ``--whole LABEL`` runs that world's peer to its
end, with no state bound (the KV world of capacity 3 with 4 ids takes about five minutes), and
records it in ``benchmarks/results/explore_faithful_whole.json`` (one row per world, the others
kept): whether the faithful world is finite, and what its whole search costs. ``--workers N``
runs the peer on ``N`` worker processes (``kvmodel explore --workers``, the same search).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kvmodel import jsonio

OUT = Path(__file__).parent / "results" / "explore_faithful.json"

# (label, arguments, the peer's state bound: None = the whole world)
WORLDS: list[tuple[str, list[str], int | None]] = [
    ("README: explore --faithful (kv_manager, capacity 2, 3 ids)", [], None),
    ("kv_manager capacity 3, 4 ids", ["--capacity", "3", "--blocks", "4"], 20_000),
    ("g1_native default world", ["--component", "g1_native"], None),
    ("g1_kvbm default world", ["--component", "g1_kvbm"], 20_000),
    ("g1_kvbm with the caching-disabled prompt (3 prompts)", ["--component", "g1_kvbm", "--prompts", "3"], 20_000),
    ("g1_kvbm, one prompt", ["--component", "g1_kvbm", "--prompts", "1"], 20_000),
    ("kvbm_block_registry default world", ["--component", "registry"], None),
    ("lru_evictor_wallclock default world", ["--component", "lru_evictor_wallclock"], None),
]


def run(args: list[str]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "kvmodel.cli", "explore", "--faithful", "--json", *args]
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    if p.returncode not in (0, 1, 3):
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    d = json.loads(p.stdout)
    return {
        "wall_seconds": round(wall, 2),
        "seconds": d["seconds"],
        "states": d["states"],
        "transitions": d["transitions"],
        "complete": d["complete"],
        "stopped_early": d["stopped_early"],
        "peak_rss_mb": round(d["peak_rss_bytes"] / 2**20, 1),
        "workers": d.get("workers", 1),
        "workers_peak_rss_mb": [round(b / 2**20, 1) for b in d.get("workers_peak_rss_bytes") or []],
        "concrete_states": d.get("concrete_states"),
        "depth": d["depth"],
        "violations": {k: v["depth"] for k, v in sorted(d["violations"].items())},
        "verdict": d["verdict"],
    }


def main() -> int:
    whole = sys.argv[sys.argv.index("--whole") + 1] if "--whole" in sys.argv else None
    workers = sys.argv[sys.argv.index("--workers") + 1] if "--workers" in sys.argv else "1"
    if whole is not None and whole not in [w[0] for w in WORLDS]:
        raise SystemExit(f"--whole: no world labelled {whole!r}; the worlds: {[w[0] for w in WORLDS]}")
    rows = []
    for label, args, bound in WORLDS:
        if whole is not None:
            if label != whole:
                continue
            bound = None
        early = run(args)
        peer = run(
            [
                *args,
                "--exhaustive",
                *(["--max-states", str(bound)] if bound else ["--max-states", "50000000"]),
                "--workers",
                workers,
            ]
        )
        same = early["violations"] == peer["violations"] if peer["complete"] else None
        row = {
            "world": label,
            "args": args,
            "kvmodel": early,
            "peer_exhaustive": peer,
            "same_violations_and_depths": same,
            "peer_found_nothing_more": set(peer["violations"]) <= set(early["violations"]),
            "ratio_peer_over_kvmodel_seconds": round(peer["seconds"] / max(early["seconds"], 1e-3), 1),
        }
        rows.append(row)
        print(
            json.dumps({k: row[k] for k in ("world", "same_violations_and_depths", "ratio_peer_over_kvmodel_seconds")}),
            early["seconds"],
            peer["seconds"],
            peer["complete"],
            flush=True,
        )
    doc = {
        "benchmark": "kvmodel explore with quirks: stop once each breakable invariant is found, against --exhaustive",
        "worlds": rows,
    }
    if whole is not None:
        out = OUT.with_name("explore_faithful_whole.json")
        if out.exists():  # the other worlds' rows stay
            kept = [r for r in json.loads(out.read_text()).get("worlds", []) if r.get("world") != whole]
            doc["worlds"] = kept + rows
        jsonio.write_text(out, json.dumps(doc, indent=2) + "\n")
    else:
        jsonio.write_text(OUT, json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
