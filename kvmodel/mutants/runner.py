"""Run the mutant catalogue against the engines: killed or not, time to kill, counterexample length.

Engines:

* ``hypothesis`` — the component's machine on its ideal configuration (seed 0, up to 1,000
  examples of 30 steps), any invariant or documented-error check counting;
* ``explore`` — exhaustive BFS of the bounded world ``kvmodel check`` explores (the same for
  every mutant); its first violation is at the minimal depth, which is the reference length;
* ``conform`` — the router's radix tree against the real ``RadixTree`` of ai-dynamo-runtime 1.6.1
  (200 generated adversarial workloads, ``kvmodel conform``); router mutants only;
* ``z3`` — the mutant's executable steps checked against the *ideal* Z3 transition relation
  (random runs, ``kvmodel.specs.runner.agreement_run``): trace validation of an implementation
  against the spec. KV manager and LRU evictors (the registry spec has no agreement runs).

A mutant is killed by the default ``kvmodel check`` when ``hypothesis``, ``explore`` or ``conform``
kills it (the engines ``kvmodel check`` runs on that component).
Each mutant runs in the same process with its edit applied for the duration of its checks only.

A kill is a counterexample that tells the mutant from the ideal model: the trace breaks its
invariant on the mutant, and replayed on the unmutated model it does not (Hypothesis and the
explorer); the divergent workload diverges from the real code on the mutant and not without it
(conformance); the run the spec rejects is admitted without the mutant (Z3). An engine that
fails (an exception, a flaky test, a setting it refuses) reports an ``error``, never a kill.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any

from kvmodel import explorer, machines, traces
from kvmodel.mutants import Mutant, applied
from kvmodel.mutants.catalogue import mutants

ENGINES = ("hypothesis", "explore", "z3", "conform")
DEFAULT_ENGINES = ("hypothesis", "explore", "conform")


def _component(m: Mutant) -> Any:
    from kvmodel import components

    return components.get(m.component)


def _world(m: Mutant) -> tuple[dict[str, Any], explorer.Space] | None:
    """The explorer's bounded world of ``kvmodel check`` (the component's check profile); Hypothesis
    runs the same configuration (its machine's universe is a superset of the explorer's)."""
    c = _component(m)
    if c.space is None or c.machine is None:
        return None
    w = c.profile.explore
    return dict(w.config), c.explore_space(w)


# A mutant may make the bounded world infinite (a leak grows a list without bound); the search
# stops at its first violation (at the minimal depth: BFS) and otherwise after this many states.
MAX_STATES = 30_000


def engines_named(name: str | None) -> list[str]:
    """The engines of ``kvmodel mutants --engine NAME`` (``bmc`` is ``z3``: BMC of an unchanged spec
    cannot see a Python edit, so the mutant's own steps are validated against the ideal relation)."""
    if name in (None, "default"):
        return list(DEFAULT_ENGINES)
    return list(ENGINES) if name == "all" else ["z3" if name == "bmc" else str(name)]


NA = {"killed": None, "how": "not applicable to this component", "seconds": 0.0}


def _conform(m: Mutant) -> dict[str, Any]:
    """The first conformance target of the mutant's component that ``kvmodel check`` runs."""
    ts = [t for t in _component(m).conform if t.in_check and t.diverges is not None]
    if not ts:
        return dict(NA)
    t = ts[0]
    why = t.available()
    if why is not None:
        return {"killed": None, "how": f"{t.name} unavailable: {why}", "seconds": 0.0}
    t0 = time.perf_counter()
    try:
        rep = t.run(workloads=t.check_workloads, seed=0)
    except Exception as e:
        return _error(e, t0)
    if rep["divergences"]:
        return {
            "killed": True,
            "how": f"diverges from {t.name} ({rep['first_divergence']['what']})",
            "seconds": time.perf_counter() - t0,
            "length": len(rep["counterexample"]),
            "_ops": rep["counterexample"],
            "_target": t,
        }
    return {"killed": False, "how": None, "seconds": time.perf_counter() - t0}


def _validate_conform_on_ideal(res: dict[str, Any]) -> None:
    """Outside the mutant: the divergent workload must agree with the real implementation."""
    ops, t = res.pop("_ops", None), res.pop("_target", None)
    if not res.get("killed") or ops is None or t is None:
        return
    if t.diverges(ops):
        res.update(killed=False, how=None, note="the workload diverges without the mutant too: not a kill")
    else:
        res["validated"] = True


def _explore(m: Mutant) -> dict[str, Any]:
    world = _world(m)
    if world is None:
        return dict(NA)
    cfg, space = world
    t0 = time.perf_counter()
    try:
        # every step's state invariants, not once per stored state: a seeded bug can change what
        # the state key leaves out (the counter evictor's key is its recency order; a mutant that
        # stamps push_front wrongly keeps the order of a state already stored), so a state with a
        # known key may still break a state invariant, and at a smaller depth
        r = explorer.explore(cfg, (), space, stop_on_violation=True, max_states=MAX_STATES, defer_state_checks=False)
    except Exception as e:
        return _error(e, t0)
    if not r.violations:
        if r.missing_witnesses and r.complete:
            return {
                "killed": False,
                "how": None,
                "seconds": r.seconds,
                "minimum": None,
                "note": f"vacuous: witnesses missing {r.missing_witnesses} (not a counterexample)",
            }
        return {"killed": False, "how": None, "seconds": r.seconds, "minimum": None}
    inv = min(r.violations, key=lambda n: (r.violations[n]["depth"], n))
    v = r.violations[inv]
    return {
        "killed": True,
        "how": inv,
        "seconds": v["found_after_s"],
        "length": v["depth"],
        "minimum": v["depth"],
        "minima": {k: x["depth"] for k, x in sorted(r.violations.items())},
        "_trace": explorer.violation_trace(r, inv),
    }


def _error(e: BaseException, t0: float) -> dict[str, Any]:
    return {"killed": None, "error": f"{type(e).__name__}: {str(e)[:200]}", "seconds": time.perf_counter() - t0}


def _hypothesis(m: Mutant, seed: int, max_examples: int) -> dict[str, Any]:
    world = _world(m)
    if world is None:
        return dict(NA)
    cfg, _ = world
    t0 = time.perf_counter()
    try:
        r = machines.run(m.component, config=cfg, quirks=(), seed=seed, max_examples=max_examples, steps=30)
    except Exception as e:
        return _error(e, t0)
    if r.violation is not None and r.trace is not None:
        first = r.seconds_to_first_failure if r.seconds_to_first_failure is not None else r.seconds
        return {
            "killed": True,
            "how": r.violation["invariant"],
            "seconds": first,
            "seconds_with_shrinking": r.seconds,
            "length": len(r.trace["steps"]),
            "_trace": r.trace,
        }
    if r.error is not None:  # a documented-error check or a flaky run: no replayable counterexample
        return {"killed": None, "error": r.error[:200], "seconds": r.seconds}
    if r.examples == 0:
        return {"killed": None, "error": "no example ran", "seconds": r.seconds}
    return {"killed": False, "how": None, "seconds": r.seconds}


def _validate_on_mutant(res: dict[str, Any]) -> None:
    """Inside the mutant: its counterexample trace must replay, breaking the same invariant."""
    t = res.get("_trace")
    if not res.get("killed") or t is None:
        return
    rep = traces.replay(t)
    if not rep.reproduces_recorded:
        res.update(killed=None, error=f"the counterexample of {res.get('how')} does not replay on the mutant")


def _validate_on_ideal(res: dict[str, Any]) -> None:
    """Outside the mutant: the same trace must not break that invariant on the ideal model."""
    t = res.pop("_trace", None)
    if not res.get("killed") or t is None:
        return
    rep = traces.replay(t)
    if rep.reproduces_recorded:
        res.update(killed=False, how=None, note="its counterexample breaks the unmutated model too: not a kill")
    else:
        res["validated"] = True


def _z3(m: Mutant) -> dict[str, Any]:
    from kvmodel.specs.runner import Disagreement, agreement_run

    c = _component(m)
    if c.agreement is None:
        return {"killed": None, "how": "no agreement runs for this component", "seconds": 0.0}
    cfg, moves = c.agreement()
    t0 = time.perf_counter()
    cache: dict[str, Any] = {}
    for seed in range(10):
        try:
            agreement_run(m.component, cfg, (), steps=60, seed=seed, moves=moves, cache=cache)
        except Disagreement as e:
            return {
                "killed": True,
                "how": "disagrees with the spec",
                "seconds": time.perf_counter() - t0,
                "detail": str(e)[:300],
                "_seed": seed,
                "_z3": (m.component, cfg, moves),
            }
        except Exception as e:
            return _error(e, t0)
    return {"killed": False, "how": None, "seconds": time.perf_counter() - t0}


def run(
    engines: Iterable[str] = DEFAULT_ENGINES,
    *,
    only: Iterable[str] | None = None,
    seed: int = 0,
    max_examples: int = 1000,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    engines = list(engines)
    wanted = set(only or [])
    rows = []
    t_all = time.perf_counter()
    for m in mutants():
        if wanted and m.name not in wanted:
            continue
        row: dict[str, Any] = {**m.to_json(), "engines": {}}
        with applied(m):
            if "explore" in engines or "hypothesis" in engines:
                row["engines"]["explore"] = ex = _explore(m)
                row["bfs_minimum"] = ex.get("minimum")
            if "hypothesis" in engines:
                h = _hypothesis(m, seed, max_examples)
                minima = ex.get("minima") or {}
                ref = minima.get(h.get("how") or "", ex.get("minimum"))
                if h.get("length") and ref:
                    h["length_over_minimum"] = round(h["length"] / ref, 3)
                row["engines"]["hypothesis"] = h
            if "z3" in engines:
                row["engines"]["z3"] = _z3(m)
            if "conform" in engines:
                row["engines"]["conform"] = _conform(m)
            for res in row["engines"].values():
                _validate_on_mutant(res)
        for name, res in row["engines"].items():
            if name == "conform":
                _validate_conform_on_ideal(res)
            elif name == "z3":
                _validate_z3_on_ideal(res)
            else:
                _validate_on_ideal(res)
        if "explore" not in engines:
            row["engines"].pop("explore", None)
        row["errors"] = {e: x["error"] for e, x in row["engines"].items() if x.get("error")}
        row["killed_by_check"] = any(
            row["engines"].get(e, {}).get("killed") for e in DEFAULT_ENGINES if e in row["engines"]
        )
        verdicts = [x.get("killed") for x in row["engines"].values() if x.get("killed") is not None]
        row["killed"] = any(verdicts) if verdicts else None  # None: no engine applies to it
        rows.append(row)
        if progress is not None:
            progress(_line(row))
    return {
        "engines": engines,
        "seed": seed,
        "mutants": rows,
        "summary": summarize(rows, engines),
        "seconds": round(time.perf_counter() - t_all, 2),
    }


def _validate_z3_on_ideal(res: dict[str, Any]) -> None:
    """Outside the mutant: the run the spec rejected must be admitted by the unmutated model."""
    from kvmodel.specs.runner import Disagreement, agreement_run

    seed, z = res.pop("_seed", None), res.pop("_z3", None)
    if not res.get("killed") or z is None:
        return
    comp, cfg, moves = z
    try:
        agreement_run(comp, cfg, (), steps=60, seed=seed, moves=moves)
    except Disagreement:
        res.update(killed=False, how=None, note="the spec rejects the unmutated model's run too: not a kill")
        return
    res["validated"] = True


def verdict(rep: dict[str, Any]) -> str:
    """``violation`` if a mutant survives every engine that applies to it, ``error`` if an
    engine failed (and no mutant survives), else ``pass``; nothing applicable: inconclusive."""
    rows = rep["mutants"]
    if any(r["killed"] is False for r in rows):
        return "violation"
    if any(r["errors"] for r in rows):
        return "error"
    if not any(r["killed"] for r in rows):
        return "inconclusive"
    return "pass"


def summarize(rows: list[dict[str, Any]], engines: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"mutants": len(rows), "killed": sum(1 for r in rows if r["killed"])}
    out["errors"] = sum(1 for r in rows if r["errors"])
    out["not_applicable"] = sum(1 for r in rows if r["killed"] is None)
    out["killed_by_default_check"] = sum(1 for r in rows if r["killed_by_check"])
    per: dict[str, Any] = {}
    for e in engines:
        applicable = [r["engines"][e] for r in rows if e in r["engines"] and r["engines"][e].get("killed") is not None]
        killed = [x for x in applicable if x["killed"]]
        times = [x["seconds"] for x in killed]
        ratios = [x["length_over_minimum"] for x in killed if "length_over_minimum" in x]
        per[e] = {
            "applicable": len(applicable),
            "killed": len(killed),
            "kill_rate": round(len(killed) / len(applicable), 3) if applicable else None,
            "median_seconds_to_kill": round(statistics.median(times), 3) if times else None,
            "max_seconds_to_kill": round(max(times), 3) if times else None,
        }
        if ratios:
            per[e]["median_length_over_minimum"] = round(statistics.median(ratios), 3)
            per[e]["max_length_over_minimum"] = round(max(ratios), 3)
            per[e]["within_1_2_of_minimum"] = sum(1 for x in ratios if x <= 1.2)
    out["per_engine"] = per
    return out


def _line(row: dict[str, Any]) -> str:
    parts = []
    for e, x in row["engines"].items():
        if x.get("error"):
            parts.append(f"{e}: ERROR ({x['error']})")
        elif x.get("killed") is None:
            parts.append(f"{e}: n/a")
        elif x["killed"]:
            ln = f", {x['length']} steps" if "length" in x else ""
            parts.append(f"{e}: killed {x['seconds']:.2f}s{ln} ({x['how']})")
        else:
            parts.append(f"{e}: SURVIVED")
    head = "N/A    " if row["killed"] is None else "KILLED " if row["killed"] else "ALIVE  "
    return f"{head} {row['name']:<38} " + "; ".join(parts)


def summary_lines(rep: dict[str, Any]) -> list[str]:
    """The summary ``kvmodel mutants`` prints after the per-mutant lines."""
    sm = rep["summary"]
    lines = [
        f"{sm['killed']} of {sm['mutants']} mutants killed ({sm['killed_by_default_check']} by the default "
        f"kvmodel check engines) in {rep['seconds']:.0f}s"
    ]
    for e, x in sm["per_engine"].items():
        extra = ""
        if "median_length_over_minimum" in x:
            extra = f", length/minimum median {x['median_length_over_minimum']}, max {x['max_length_over_minimum']}"
        med = x["median_seconds_to_kill"]
        lines.append(
            f"  {e:<10} killed {x['killed']}/{x['applicable']}"
            + (f", median time to kill {med:.3f}s" if med is not None else "")
            + extra
        )
    lines.append(f"verdict: {rep['verdict']}")
    return lines
