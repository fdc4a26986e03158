"""``kvmodel check`` on this tree against a baseline commit, in the same script and conditions.

The peer is the same command on another revision of kvmodel (default: ``4eb37d9``, the last
commit before the component records of issue 21), checked out into a temporary worktree and
imported through the same interpreter: the editable install's path mapping is pointed at the
worktree in the child process, so both runs use identical dependencies. Runs alternate
(baseline, current, baseline, current, ...) so that background load falls on both alike.

Each run is ``kvmodel check --component C --engine E`` for the (component, engine) pairs below
(the engines' share of the default ``kvmodel check``); the figure is the wall time, the
verdict and the number of checks must agree.

Writes ``benchmarks/results/check_vs_baseline.json``. Usage:
    python benchmarks/check_vs_baseline.py [--baseline REV] [--repeats R]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "check_vs_baseline.json"
PAIRS = [
    ("kv_manager", "hypothesis"),
    ("kvbm_block_registry", "hypothesis"),
    ("kv_manager", "explore"),
    ("kvbm_block_registry", "explore"),
    ("g1_kvbm", "explore"),
    ("kv_manager", "z3"),
    ("lru_evictor_wallclock", "z3"),
    ("kvbm_block_registry", "z3"),
]

CHILD = """
import sys
import __editable___kvmodel_0_1_0_finder as finder
tree = sys.argv[1]
if tree != "-":
    for key, path in list(finder.MAPPING.items()):
        finder.MAPPING[key] = tree + "/" + path.rstrip("/").split("/")[-1]
from kvmodel import cli
raise SystemExit(cli.main(sys.argv[2:]))
"""


def run(tree: str, component: str, engine: str, out: Path) -> dict[str, Any]:
    argv = ["check", "--component", component, "--engine", engine, "--json", "--out", str(out)]
    t = time.perf_counter()
    # cwd outside the tree: the current directory comes first on sys.path and would shadow the mapping
    p = subprocess.run(
        [sys.executable, "-c", CHILD, tree, *argv], capture_output=True, text=True, check=False, cwd=out.parent
    )
    dt = time.perf_counter() - t
    rep = json.loads(p.stdout)
    return {"seconds": round(dt, 2), "exit": p.returncode, "verdict": rep["verdict"], "checks": len(rep["results"])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--baseline", default="4eb37d9")
    ap.add_argument("--repeats", type=int, default=1)
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        wt = Path(tmp) / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(wt), a.baseline], check=True)
        try:
            for comp, eng in PAIRS:
                base, cur = [], []
                for _ in range(a.repeats):
                    base.append(run(str(wt), comp, eng, Path(tmp) / "b"))
                    cur.append(run("-", comp, eng, Path(tmp) / "c"))
                b = statistics.median(r["seconds"] for r in base)
                c = statistics.median(r["seconds"] for r in cur)
                same = {(r["verdict"], r["checks"], r["exit"]) for r in base + cur}
                row = {
                    "component": comp,
                    "engine": eng,
                    "baseline_seconds": b,
                    "current_seconds": c,
                    "ratio_current_over_baseline": round(c / b, 3),
                    "same_verdicts": len(same) == 1,
                    "verdict": base[0]["verdict"],
                    "checks": base[0]["checks"],
                }
                rows.append(row)
                print(f"{comp:<24} {eng:<10} baseline {b:7.2f}s  current {c:7.2f}s  x{c / b:.2f}  {same}", flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(wt)], check=False)
    tb = sum(r["baseline_seconds"] for r in rows)
    tc = sum(r["current_seconds"] for r in rows)
    data = {
        "baseline": a.baseline,
        "repeats": a.repeats,
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
        "rows": rows,
        "total_baseline_seconds": round(tb, 2),
        "total_current_seconds": round(tc, 2),
        "ratio_current_over_baseline": round(tc / tb, 3),
        "all_same_verdicts": all(r["same_verdicts"] for r in rows),
    }
    OUT.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    print(f"total: baseline {tb:.1f}s, current {tc:.1f}s, ratio {tc / tb:.3f}")
    return 0 if data["all_same_verdicts"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
