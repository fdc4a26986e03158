"""Hypothesis throughput of the KV manager machine, against a peer run in the same script.

Peer: the toy block-pool machine of ``shared/reference/examples/anchors-bench/hyp_pool.py``
(the machine behind the anchors' figure of 4.5k steps/s), loaded from the shared folder
and run with identical settings (generate phase only, no database, same example budget).
Also measured: the time for Hypothesis to find and shrink each quirk's counterexample and that
counterexample's length (median over ten seeds), and the cost of one Hypothesis choice (bare
machines drawing one integer, three, or a list), the figure behind ``kvmodel/packed.py``.

Writes ``benchmarks/results/hypothesis.json``. Usage:
    python benchmarks/hypothesis_throughput.py [--examples N] [--repeats R]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from kvmodel import __version__, jsonio, machines
from kvmodel.model.quirks import quirks_of

ROOT = Path(__file__).resolve().parents[1]
PEER = ROOT.parent / "shared" / "reference" / "examples" / "anchors-bench" / "hyp_pool.py"


def _settings(n: int) -> settings:
    return settings(
        max_examples=n,
        stateful_step_count=20,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )


def ours(n: int) -> dict[str, Any]:
    m = machines.machine_for("kv_manager", {"max_capacity": 4}, quirks=())
    t = time.perf_counter()
    run_state_machine_as_test(m, settings=_settings(n))
    dt = time.perf_counter() - t
    steps = m.steps_run[0]
    return {"examples": n, "steps": steps, "seconds": dt, "steps_per_s": steps / dt, "examples_per_s": n / dt}


def peer(n: int) -> dict[str, Any] | None:
    if not PEER.exists():
        return None
    spec = importlib.util.spec_from_file_location("hyp_pool", PEER)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.STEPS[0] = 0
    t = time.perf_counter()
    run_state_machine_as_test(mod.Pool, settings=_settings(n))
    dt = time.perf_counter() - t
    steps = mod.STEPS[0]
    return {"examples": n, "steps": steps, "seconds": dt, "steps_per_s": steps / dt, "examples_per_s": n / dt}


def model_only(n_steps: int = 50_000, seed: int = 1) -> dict[str, Any]:
    """The systems layer alone (model + monitor + 13 invariants), random operations, no Hypothesis."""
    import random

    from kvmodel.components.kv_manager.system import KvManagerSystem
    from kvmodel.model.blocks import Deref, Destroy, FullBlock, PartialBlock, Promote, Use

    rng = random.Random(seed)
    sys_ = KvManagerSystem({"max_capacity": 4}, ())
    parts = [f"p{i}" for i in range(4)]
    t = time.perf_counter()
    for _ in range(n_steps):
        k = rng.random()
        fulls = [FullBlock(rng.randrange(6)) for _ in range(rng.randrange(4))]
        if k < 0.4:
            sig: Any = Use((*fulls, PartialBlock(rng.choice(parts))) if rng.random() < 0.3 else tuple(fulls))
        elif k < 0.7:
            sig = Deref(tuple(fulls) or (FullBlock(0),))
        elif k < 0.85:
            sig = Destroy(tuple(fulls[:1]) or (PartialBlock(rng.choice(parts)),))
        else:
            sig = Promote(rng.choice(parts), rng.randrange(6), None)
        sys_.apply("process", sig)
    dt = time.perf_counter() - t
    return {"steps": n_steps, "seconds": dt, "steps_per_s": n_steps / dt}


def choice_cost(n: int) -> dict[str, Any]:
    """Bare machines (eight rules, no model) whose rules draw one integer, a tuple of three, or a
    list of at most four: what one Hypothesis choice costs, apart from any model."""
    from hypothesis import strategies as st
    from hypothesis.stateful import RuleBasedStateMachine, rule

    count = [0]

    def bare(arg: Any) -> type[RuleBasedStateMachine]:
        ns: dict[str, Any] = {}
        for i in range(8):

            def step(self: Any, x: Any) -> None:
                count[0] += 1

            step.__name__ = f"r{i}"
            ns[f"r{i}"] = rule(x=arg)(step)
        return type("Bare", (RuleBasedStateMachine,), ns)

    out: dict[str, Any] = {}
    for label, arg in (
        ("one_integer", st.integers(0, 11)),
        ("three_integers", st.tuples(st.integers(0, 11), st.integers(0, 11), st.integers(0, 11))),
        ("list_of_at_most_4", st.lists(st.integers(0, 11), max_size=4)),
    ):
        count[0] = 0
        t = time.perf_counter()
        run_state_machine_as_test(bare(arg), settings=_settings(n))
        dt = time.perf_counter() - t
        out[label] = {"steps": count[0], "seconds": dt, "steps_per_s": round(count[0] / dt)}
    one, three = (1e6 / out[k]["steps_per_s"] for k in ("one_integer", "three_integers"))
    out["us_per_extra_integer"] = round((three - one) / 2, 1)
    return out


SEEDS = tuple(range(10))


def _find(q: Any) -> dict[str, Any]:
    comp = q.component
    cfg = {"cleanup_threshold": 50} if comp.startswith("lru") else {"max_capacity": 4}
    per_seed = []
    for seed in SEEDS:
        r = machines.run(comp, config=cfg, quirks=(q.name, *q.requires), target=q.breaks, max_examples=3000, seed=seed)
        per_seed.append(
            {
                "seed": seed,
                "found": r.violation is not None,
                "invariant": r.violation["invariant"] if r.violation else None,
                "seconds": round(r.seconds, 3),
                "examples": r.examples,
                "trace_steps": len(r.trace["steps"]) if r.trace else None,
            }
        )
    found = [x for x in per_seed if x["found"]]
    return {
        "median_seconds": round(statistics.median(x["seconds"] for x in per_seed), 3),
        "median_steps": statistics.median(x["trace_steps"] for x in found) if found else None,
        "max_steps": max(x["trace_steps"] for x in found) if found else None,
        "found": len(found),
    }


def time_to_find() -> list[dict[str, Any]]:
    """Per quirk, over ten seeds, the time to a shrunk counterexample (Hypothesis's shrink phase,
    then step deletion, ``kvmodel.traces.minimize``) and its length."""
    rows = []
    for q in quirks_of("kv_manager") + quirks_of("lru_evictor_wallclock"):
        h = _find(q)
        print(f"  {q.name:<38} {h['median_seconds']:>6.2f}s {h['median_steps']} steps", flush=True)
        rows.append({"quirk": q.name, **h})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "hypothesis.json"))
    a = ap.parse_args()
    runs_ours, runs_peer = [], []
    for i in range(a.repeats):
        runs_ours.append(ours(a.examples))
        p = peer(a.examples)
        if p:
            runs_peer.append(p)
        print(
            f"run {i}: kvmodel {runs_ours[-1]['steps_per_s']:,.0f} steps/s"
            + (f", peer {p['steps_per_s']:,.0f} steps/s" if p else ", peer missing"),
            flush=True,
        )
    cost = choice_cost(a.examples)
    print(f"one Hypothesis choice: {cost}", flush=True)

    def med(rows: list[dict[str, Any]], k: str) -> float:
        return statistics.median(r[k] for r in rows)

    mo = model_only()
    print(f"model + invariants alone: {mo['steps_per_s']:,.0f} steps/s", flush=True)
    print("time to find each quirk:")
    ttf = time_to_find()
    result: dict[str, Any] = {
        "benchmark": "hypothesis_throughput",
        "kvmodel_version": __version__,
        "python": platform.python_version(),
        "hypothesis": __import__("hypothesis").__version__,
        "machine": platform.machine(),
        "settings": {"examples": a.examples, "stateful_step_count": 20, "phases": ["generate"], "repeats": a.repeats},
        "kvmodel_kv_manager": {
            "config": {"max_capacity": 4, "block_ids": 6},
            "invariants_checked_per_step": 13,
            "median_steps_per_s": round(med(runs_ours, "steps_per_s")),
            "median_examples_per_s": round(med(runs_ours, "examples_per_s"), 1),
            "runs": runs_ours,
        },
        "choice_cost": cost,
        "peer_anchor_toy_pool": None
        if not runs_peer
        else {
            "source": "shared/reference/examples/anchors-bench/hyp_pool.py (N=5, H=6)",
            "median_steps_per_s": round(med(runs_peer, "steps_per_s")),
            "median_examples_per_s": round(med(runs_peer, "examples_per_s"), 1),
            "runs": runs_peer,
        },
        "model_and_invariants_only": mo,
        "time_to_find": ttf,
        "median_time_to_find_s": statistics.median(r["median_seconds"] for r in ttf),
    }
    if len(runs_peer) == len(runs_ours):
        # each repeat runs ours and the peer back to back: the ratio within
        # a repeat is robust to the machine's speed drifting between repeats
        result["median_paired_ratio_kvmodel_over_peer"] = round(
            statistics.median(o["steps_per_s"] / p["steps_per_s"] for o, p in zip(runs_ours, runs_peer, strict=True)),
            3,
        )
    if runs_peer:
        result["ratio_steps_per_s_kvmodel_over_peer"] = round(
            result["kvmodel_kv_manager"]["median_steps_per_s"] / result["peer_anchor_toy_pool"]["median_steps_per_s"],
            3,
        )
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    jsonio.write_text(Path(a.out), json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("time_to_find",)}, indent=1, default=str)[:1500])
    return 0


if __name__ == "__main__":
    sys.exit(main())
