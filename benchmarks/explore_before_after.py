"""The G1 explorer against an earlier commit of itself, alternated in one run (issue 25, goal 3).

The peer is the same search on the tree of ``--before`` (a git revision; default f7df9c3, the
commit before the 2026-12-03 speed-ups): the script checks it out in a temporary worktree and
runs each side in its own process, the earlier tree imported ahead of the installed one, the
two sides alternated ``--repeats`` times. Worlds: the CLI's default world of each G1 component
with two requests at capacity 4, ideal model — the native search to its end, the KVBM one to its
first 20,000 canonical states. ``--kv``: the KV manager's worlds of ``explore_vs_spin.py``
(capacity C, C+2 full ids, one partial, batches of 2, refcounts of 2; C = 4, 5, 6) instead,
each search the best of five in its process (they take a tenth of a second). Both sides must
report the same states and transitions.

Writes ``benchmarks/results/explore_before_after.json``.
Usage: ``python benchmarks/explore_before_after.py [--before REV] [--repeats N] [--kv] [--out F]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WORLDS = (("g1_native", 4, 100_000), ("g1_kvbm", 4, 20_000))
KV_WORLDS = (("kv_manager", 4, 100_000), ("kv_manager", 5, 100_000), ("kv_manager", 6, 100_000))

_DRIVER = """
import json, sys, time
tree = sys.argv[1]
if tree != "-":
    # the installed (editable) kvmodel maps its packages by name: drop that finder, so that the
    # earlier tree's own files are the ones imported
    sys.meta_path = [f for f in sys.meta_path if "ditable" not in repr(f)]
    sys.path.insert(0, tree)
from kvmodel import components, explorer
out = {}
for name, cap, n in json.loads(sys.argv[2]):
    if name == "kv_manager":
        from kvmodel.components.kv_manager.space import KvSpace
        space, tries = KvSpace(n_full=cap + 2, partials=1, max_batch=2, max_refcount=2), 5
    else:
        comp = components.get(name)
        space = comp.explore_space(components.World({}, {"prompts": 2, "pushes": 1, "decode": 1, "owners": 2}))
        tries = 1
    best = None
    for _ in range(tries):
        t = time.perf_counter()
        r = explorer.explore({"max_capacity": cap}, (), space, max_states=n)
        best = min(best or 1e9, time.perf_counter() - t)
    out[f"{name}@{cap}"] = {"states": r.states, "transitions": r.transitions, "complete": r.complete,
                 "violations": sorted(r.violations), "seconds": best}
print(json.dumps(out))
"""


def side(tree: str, worlds: Any) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _DRIVER, tree, json.dumps(worlds)], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out)  # type: ignore[no-any-return]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", default="f7df9c3")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--kv", action="store_true", help="the KV manager's worlds (C = 4, 5, 6)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "explore_before_after.json"))
    a = ap.parse_args()
    worlds = KV_WORLDS if a.kv else WORLDS
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        wt = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(wt), a.before], check=True)
        try:
            for pkg, src in (("model", "../model"), ("invariants", "../invariants"), ("specs", "../specs")):
                link = wt / "kvmodel" / pkg
                if not link.exists():
                    link.symlink_to(src)
            for _ in range(a.repeats):
                runs["before"].append(side(str(wt), worlds))
                runs["after"].append(side("-", worlds))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(wt)], check=False)
    rows = []
    same = True
    for name, cap, n in worlds:
        b = [r[f"{name}@{cap}"] for r in runs["before"]]
        f = [r[f"{name}@{cap}"] for r in runs["after"]]
        facts = {(x["states"], x["transitions"], tuple(x["violations"])) for x in b + f}
        same = same and len(facts) == 1
        mb, mf = statistics.median(x["seconds"] for x in b), statistics.median(x["seconds"] for x in f)
        rows.append(
            {
                "component": name,
                "capacity": cap,
                "max_states": n,
                "states": f[0]["states"],
                "transitions": f[0]["transitions"],
                "complete": f[0]["complete"],
                "before_s": [round(x["seconds"], 2) for x in b],
                "after_s": [round(x["seconds"], 2) for x in f],
                "speedup_median": round(mb / mf, 3),
                "same_search": len(facts) == 1,
            }
        )
        print(f"{name} C={cap}: {f[0]['states']} states, before {mb:.3f} s, after {mf:.3f} s, {mb / mf:.2f}x")
    result = {
        "benchmark": "explore_before_after",
        "before": a.before,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "rows": rows,
    }
    Path(a.out).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
