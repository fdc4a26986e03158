"""The Z3 engine: BMC depth reached versus time, and induction time per invariant.

Peers, run in this script:

* the anchors' hand-written Z3 BMC of the toy block pool
  (``../shared/reference/examples/anchors-bench/z3_bmc.py``, N=5 blocks, H=6 hashes,
  refcounts <= 2), run as a subprocess: its time per depth;
* the same toy pool written as a spec of *our* engine (below, written for this benchmark
  from the pool's description in anchors.md §4.2: acquire reuses the block holding the
  hash, else the lowest free block, else evicts the least recently released cached block;
  release caches a block at refcount 0), so the two are compared on one model.

Then the KV manager: pure BMC of the ideal spec (capacity 4, 6 full ids + 1 partial,
batches of 2; no invariant is violated, so every depth is an unsat query, as for the
toy pool), on bit-vectors (our default) and on integers; the done-when command
(faithful BMC to depth 8 with induction first); and k-induction time per invariant.

Writes ``benchmarks/results/z3.json``. Usage: python benchmarks/z3_engine.py [--budget SECONDS]
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import z3

from kvmodel import __version__, jsonio
from kvmodel.model.quirks import faithful
from kvmodel.specs import make_spec
from kvmodel.specs.engine import Operation, Property, State, TransitionSystem, bmc, k_induction
from kvmodel.specs.runner import run_bmc

ROOT = Path(__file__).resolve().parents[1]
PEER = ROOT.parent / "shared" / "reference" / "examples" / "anchors-bench" / "z3_bmc.py"
N, H, MAXREF = 5, 6, 2


def toy_pool(width: int | None = None) -> TransitionSystem:
    """The anchors' toy block pool as a spec of our engine (LRU as release stamps)."""

    def num(v: int) -> Any:
        return z3.IntVal(v) if width is None else z3.BitVecVal(v, width)

    def cached(s: State, i: int) -> Any:
        return z3.And(s[f"R{i}"] == 0, s[f"H{i}"] != -1)

    def free(s: State, i: int) -> Any:
        return z3.And(s[f"R{i}"] == 0, s[f"H{i}"] == -1)

    def acquire(s: State, p: State) -> Any:
        x, b = p["x"], p["b"]
        holder = z3.Or([s[f"H{i}"] == x for i in range(N)])
        anyfree = z3.Or([free(s, i) for i in range(N)])
        choices = []
        for i in range(N):
            hit = z3.And(s[f"H{i}"] == x, s[f"R{i}"] < MAXREF)
            lowest_free = z3.And(z3.Not(holder), free(s, i), *[z3.Not(free(s, j)) for j in range(i)])
            lru = z3.And(
                z3.Not(holder),
                z3.Not(anyfree),
                cached(s, i),
                *[z3.Implies(cached(s, j), s[f"T{i}"] <= s[f"T{j}"]) for j in range(N) if j != i],
            )
            choices.append(z3.And(b == i, z3.Or(hit, lowest_free, lru)))
        guard = z3.And(x >= 0, x < H, z3.Or(choices))
        post: dict[str, Any] = {}
        for i in range(N):
            post[f"R{i}"] = z3.If(b == i, z3.If(s[f"H{i}"] == x, s[f"R{i}"] + 1, num(1)), s[f"R{i}"])
            post[f"H{i}"] = z3.If(b == i, x, s[f"H{i}"])
        return guard, post

    def release(s: State, p: State) -> Any:
        b = p["b"]
        guard = z3.Or([z3.And(b == i, s[f"R{i}"] > 0) for i in range(N)])
        post: dict[str, Any] = {"clk": s["clk"] + 1}
        for i in range(N):
            post[f"R{i}"] = z3.If(b == i, s[f"R{i}"] - 1, s[f"R{i}"])
            post[f"T{i}"] = z3.If(z3.And(b == i, s[f"R{i}"] == 1), s["clk"], s[f"T{i}"])
        return guard, post

    variables: list[tuple[str, Any]] = []
    for i in range(N):
        variables += [(f"R{i}", "nat"), (f"H{i}", "int"), (f"T{i}", "int")]
    variables.append(("clk", "int"))

    def init(s: State) -> Any:
        return z3.And(s["clk"] == 0, *[z3.And(s[f"R{i}"] == 0, s[f"H{i}"] == -1, s[f"T{i}"] == 0) for i in range(N)])

    def injective(s: State) -> Any:
        return z3.And(
            [z3.Implies(s[f"H{i}"] != -1, s[f"H{i}"] != s[f"H{j}"]) for i in range(N) for j in range(i + 1, N)]
            + [z3.And(s[f"R{i}"] >= 0, s[f"R{i}"] <= MAXREF) for i in range(N)]
        )

    return TransitionSystem(
        "toy_pool",
        tuple(variables),
        init,
        (Operation("acquire", (("x", "int"), ("b", "int")), acquire), Operation("release", (("b", "int"),), release)),
        (Property("pool.injective", injective),),
        width,
    )


def depth_curve(ts: TransitionSystem, budget: float, max_depth: int = 30) -> list[dict[str, Any]]:
    """Cumulative seconds at each depth of one pure BMC run (every property checked at
    every depth), stopping after the first depth that ends past ``budget``."""
    curve: list[dict[str, Any]] = []
    res = bmc(
        ts,
        max_depth,
        timeout_ms=int(budget * 1000),
        max_seconds=budget,
        progress=lambda d, sec: curve.append({"depth": d, "seconds": round(sec, 3)}) if d > 0 else None,
    )
    assert all(r.status in ("holds_to_depth", "inconclusive") for r in res), res
    if any(r.status == "inconclusive" for r in res):
        curve.append({"timed_out": True})
    return curve


def peer_curve(max_depth: int) -> list[dict[str, float]] | None:
    if not PEER.exists():
        return None
    out = subprocess.run(
        [sys.executable, str(PEER), str(max_depth)], capture_output=True, text=True, check=True, cwd=PEER.parent
    ).stdout
    curve, total = [], 0.0
    for m in re.finditer(r"depth\s+(\d+): unsat \(([\d.]+)s\)", out):
        total += float(m.group(2))
        if int(m.group(1)) > 0:
            curve.append({"depth": int(m.group(1)), "seconds": round(total, 3)})
    return curve


def induction_table(component: str, config: dict[str, Any]) -> dict[str, Any]:
    spec = make_spec(component, config)
    t0 = time.perf_counter()
    res = k_induction(spec.ts, max_k=1)
    return {
        "component": component,
        "universe": spec.universe_json(),
        "total_seconds": round(time.perf_counter() - t0, 3),
        "invariants": [r.to_json() for r in res],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=60.0, help="stop a BMC curve after a depth takes this long")
    ap.add_argument("--peer-depth", type=int, default=8)
    args = ap.parse_args()
    out: dict[str, Any] = {
        "kvmodel": __version__,
        "z3": z3.get_version_string(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "budget_seconds": args.budget,
    }
    print("peer: anchors' toy-pool BMC ...", flush=True)
    out["toy_pool_peer"] = peer_curve(args.peer_depth)
    print(" ", out["toy_pool_peer"], flush=True)
    print("ours: the toy pool as a spec (integers) ...", flush=True)
    out["toy_pool_ours_int"] = depth_curve(toy_pool(None), args.budget, args.peer_depth + 2)
    print(" ", out["toy_pool_ours_int"], flush=True)
    print("ours: the toy pool as a spec (8-bit vectors, SAT) ...", flush=True)
    out["toy_pool_ours_bv"] = depth_curve(toy_pool(8), args.budget, args.peer_depth + 4)
    print(" ", out["toy_pool_ours_bv"], flush=True)
    peer = {p["depth"]: p["seconds"] for p in out["toy_pool_peer"] or []}
    ours = {p["depth"]: p["seconds"] for p in out["toy_pool_ours_bv"]}
    common = sorted(set(peer) & set(ours))
    if common:
        d = common[-1]
        out["toy_pool_ratio_at_depth"] = {"depth": d, "ours_over_peer": round(ours[d] / max(peer[d], 1e-9), 3)}

    ideal = make_spec("kv_manager", {})
    print("ours: KV manager ideal, pure BMC, bit-vectors ...", flush=True)
    out["kv_manager_bmc_bv"] = depth_curve(ideal.bounded(12).ts, args.budget)
    print(" ", out["kv_manager_bmc_bv"], flush=True)
    print("ours: KV manager ideal, pure BMC, integers ...", flush=True)
    out["kv_manager_bmc_int"] = depth_curve(ideal.ts, args.budget / 2)
    print(" ", out["kv_manager_bmc_int"], flush=True)

    print("done-when: kv_manager faithful BMC depth 8 (induction first) ...", flush=True)
    t0 = time.perf_counter()
    rep = run_bmc("kv_manager", 8, {}, faithful("kv_manager"))
    out["kv_manager_faithful_depth8"] = {
        "seconds": round(time.perf_counter() - t0, 3),
        "violated": {r["invariant"]: r["k"] for r in rep["invariants"] if r["status"] == "violated"},
        "proved_by_induction": [r["invariant"] for r in rep["invariants"] if r["status"] == "proved"],
    }
    print(" ", out["kv_manager_faithful_depth8"], flush=True)

    out["induction"] = [
        induction_table("kv_manager", {}),
        induction_table("kv_manager", {"max_batch": 3}),
        induction_table("kv_manager", {"max_capacity": 6, "n_full": 8, "partials": 1}),
        induction_table("lru_evictor_wallclock", {}),
        induction_table("lru_evictor_counter", {}),
    ]
    for t in out["induction"]:
        print(f"  induction {t['component']} {t['universe']}: {t['total_seconds']}s", flush=True)
    path = ROOT / "benchmarks" / "results" / "z3.json"
    jsonio.write_text(path, json.dumps(out, indent=2, sort_keys=True) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
