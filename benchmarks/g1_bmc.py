"""The G1 native spec's BMC on bit-vectors against the same BMC on integers (issue 25, goal 5).

For every quirk of ``g1_native`` the BMC of ``kvmodel check`` (the check universe, depth 6, the
quirk's invariants only, no induction) runs three ways in this script:

* **bit-vectors** (``G1Spec.bounded(depth)``, signed bit-vectors just wide enough that nothing
  reachable in ``depth`` steps overflows, bit-blasted to SAT: what the engine runs now);
* **integers** (the unbounded spec, each depth's query solved from scratch by
  ``INTEGER_BMC_TACTIC``: what the engine ran before);
* the **explorer's BFS** in the same world, stopping once the quirk's invariants are broken (the
  peer that finds the same violation at the same depth by enumerating states).

With ``--check`` it also times the whole ``kvmodel check`` (defaults) in a subprocess.

Writes ``benchmarks/results/g1_bmc.json``. Usage: ``python benchmarks/g1_bmc.py [--check]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kvmodel import __version__, components, explorer, jsonio
from kvmodel.model.quirks import quirks_of
from kvmodel.specs import make_spec
from kvmodel.specs.engine import bmc

ROOT = Path(__file__).resolve().parents[1]
C = "g1_native"


def one(quirk: str, breaks: list[str]) -> dict[str, Any]:
    comp = components.get(C)
    depth = comp.profile.bmc_depth
    universe = comp.check_universe()
    spec = make_spec(C, universe, [quirk])
    row: dict[str, Any] = {"quirk": quirk, "depth": depth, "invariants": breaks}
    for label, ts in (("bitvector", spec.bounded(depth).ts), ("integer", spec.ts)):
        t = time.perf_counter()
        res = bmc(ts, depth, properties=breaks)
        row[label] = {
            "seconds": round(time.perf_counter() - t, 3),
            "width": ts.width,
            "found": {r.name: r.k for r in res if r.status == "violated"},
            "statuses": sorted({r.status for r in res}),
        }
    world = comp.profile.explore
    t = time.perf_counter()
    r = explorer.explore(dict(world.config), (quirk,), comp.explore_space(world), until=breaks)
    row["explorer"] = {
        "seconds": round(time.perf_counter() - t, 3),
        "found": {n: r.violations[n]["depth"] for n in breaks if n in r.violations},
    }
    bv, it = row["bitvector"]["seconds"], row["integer"]["seconds"]
    row["integer_over_bitvector"] = round(it / bv, 2) if bv else None
    row["bitvector_over_explorer"] = round(bv / row["explorer"]["seconds"], 1) if row["explorer"]["seconds"] else None
    row["same_depths"] = row["bitvector"]["found"] == row["integer"]["found"] == row["explorer"]["found"]
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="also time the whole `kvmodel check`")
    ap.add_argument("--quirk", action="append", help="only these quirks")
    a = ap.parse_args()
    rows = []
    for q in quirks_of(C):
        if a.quirk and q.name not in a.quirk:
            continue
        row = one(q.name, list(q.breaks))
        rows.append(row)
        print(
            f"  {q.name:<36} bit-vectors {row['bitvector']['seconds']:7.2f}s"
            f"  integers {row['integer']['seconds']:7.2f}s"
            f"  explorer {row['explorer']['seconds']:6.2f}s  depths {row['bitvector']['found']}"
            f"  same: {row['same_depths']}",
            flush=True,
        )
    out: dict[str, Any] = {
        "kvmodel": __version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "bmc": rows,
    }
    if a.check:
        t = time.perf_counter()
        p = subprocess.run(
            [str(Path(sys.executable).with_name("kvmodel")), "check", "--out", "/tmp/kvmodel-bench-check"],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        out["check"] = {
            "seconds": round(time.perf_counter() - t, 1),
            "exit": p.returncode,
            "summary": (p.stdout.strip().splitlines() or [""])[-1],
        }
        print(f"  kvmodel check: {out['check']['seconds']} s, exit {p.returncode}: {out['check']['summary']}")
    path = ROOT / "benchmarks" / "results" / "g1_bmc.json"
    jsonio.write_text(path, json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
