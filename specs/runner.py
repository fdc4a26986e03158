"""Run the Z3 engine on a component's spec and tie its answers to the executable model.

* :func:`prove` — k-induction of every invariant (and lemma) of a spec.
* :func:`run_bmc` — bounded model checking; every violation becomes a trace in the
  trace format, produced by running the decoded steps on the executable model, and the
  trace must show the same violation at the same step (and replay with ``kvmodel
  replay``): otherwise the two descriptions disagree and :class:`Disagreement` is raised.
* :func:`agreement_run` — the other direction: a run of the executable model whose every
  step must satisfy the symbolic transition relation.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import z3

from kvmodel import traces
from kvmodel.model.errors import InvalidInput
from kvmodel.model.quirks import faithful, quirks_of
from kvmodel.specs import ConstraintSpec, Spec, make_spec

if TYPE_CHECKING:
    from kvmodel.actions import Move
from kvmodel.specs.engine import PropertyResult, bmc, k_induction
from kvmodel.verdicts import VIOLATION, of_status, worst


class Disagreement(Exception):
    """The spec and the executable model disagree: a bug in one of them."""


def mode_of(component: str, quirks: Iterable[str]) -> str:
    from kvmodel.model.quirks import mode_label

    return mode_label(component, quirks)


def _status(r: PropertyResult) -> dict[str, Any]:
    out = r.to_json()
    if r.status == "cti":
        out["status"] = "inconclusive"
        out["cti"] = True
        out["detail"] = f"counterexample to induction at k={r.k}: the invariant may hold but needs a lemma"
    elif r.status == "holds_to_depth":
        out["status"] = "holds"
        out["bounded"] = r.k
        out["detail"] = f"no violation within {r.k} steps (a bounded verdict, not a proof)"
    out["verdict"] = of_status(out["status"])
    return out


def prove(
    component: str,
    config: dict[str, Any] | None = None,
    quirks: Iterable[str] = (),
    *,
    max_k: int = 3,
    timeout_ms: int | None = 600_000,
) -> dict[str, Any]:
    """k-induction of every property of the spec; the report lists each with its status."""
    spec = make_spec(component, config, quirks)
    t0 = time.perf_counter()
    results = k_induction(spec.ts, max_k=max_k, timeout_ms=timeout_ms)
    rows = [_status(r) for r in results]
    verdict = worst(r["verdict"] for r in rows) if rows else "inconclusive"
    return {
        "component": component,
        "engine": "z3-k-induction",
        "mode": mode_of(component, spec.quirks),
        "quirks": sorted(spec.quirks),
        "universe": spec.universe_json(),
        "max_k": max_k,
        "seconds": round(time.perf_counter() - t0, 3),
        "invariants": rows,
        "all_proved": bool(results) and all(r.status == "proved" for r in results),
        "verdict": verdict,
        "counterexamples": [r.name for r in results if r.status in ("violated", "cti")],
        "_results": results,
    }


def counterexample_trace(spec: Spec, component: str, r: PropertyResult, origin: dict[str, Any]) -> dict[str, Any]:
    """The trace of a BMC counterexample, recorded on the executable model and checked:
    the model must violate the same invariant at the same (last) step."""
    assert r.steps is not None
    ops = [spec.step_json(s) for s in r.steps]
    trace = traces.record(component, spec.exec_config(), spec.quirks, ops, origin, target=[r.name])
    v = trace["violation"]
    want = len(ops) - 1
    if v is None or v["step"] != want or v["invariant"] != r.name:
        raise Disagreement(
            f"{component}: Z3 says {r.name} breaks at step {want} of {ops}, the executable model says {v}"
        )
    rep = traces.replay(trace)
    if not rep.reproduces_recorded:
        raise Disagreement(f"{component}: the trace of {r.name} does not replay: {rep.to_json()}")
    return trace


def run_bmc(
    component: str,
    depth: int,
    config: dict[str, Any] | None = None,
    quirks: Iterable[str] | None = None,
    *,
    out: str | Path | None = None,
    induction: bool = True,
    timeout_ms: int | None = 600_000,
    properties: Iterable[str] | None = None,
    progress: Callable[[int, float], None] | None = None,
    label: str | None = None,
) -> dict[str, Any]:
    """BMC to ``depth`` (faithful by default), one verified trace per violated invariant.

    With ``induction`` (the default) every property is first tried by 1-induction on the
    unbounded spec; those proved need no unrolling and are reported ``proved``. BMC runs
    on the bit-vector version of the spec, exact up to ``depth`` (no value can overflow).
    """
    q = faithful(component) if quirks is None else frozenset(quirks)
    spec = make_spec(component, config, q)
    skipped: list[str] = []
    if properties is not None:
        names = list(properties)
    else:
        # A strengthening lemma is a proof aid stated for the ideal model: with quirks on, it is
        # checked only where one of them is declared to break it (the LRU's stale-entry quirk);
        # elsewhere the spec's lemma may speak of bookkeeping the quirk leaves behind (§ z3.md).
        broken = {b for x in quirks_of(component) if x.name in q for b in x.breaks}
        names = [p.name for p in spec.ts.properties if not (q and p.lemma and p.name not in broken)]
        skipped = [p.name for p in spec.ts.properties if p.name not in names]
    t0 = time.perf_counter()
    proved: dict[str, PropertyResult] = {}
    if induction:
        for r in k_induction(spec.ts, max_k=1, timeout_ms=timeout_ms):
            if r.status == "proved" and r.name in names:
                proved[r.name] = r
    t_ind = time.perf_counter() - t0
    todo = [n for n in names if n not in proved]
    bounded = spec.bounded(depth)
    found = {r.name: r for r in bmc(bounded.ts, depth, properties=todo, timeout_ms=timeout_ms, progress=progress)}
    rows = []
    paths: dict[str, str] = {}
    mode = mode_of(component, q)
    for n in names:
        if n in proved:
            row = _status(proved[n])
            row["method"] = "1-induction"
        else:
            r = found[n]
            row = _status(r)
            row["method"] = "bmc"
            if r.status == "violated":
                trace = counterexample_trace(
                    spec, component, r, {"engine": "z3-bmc", "depth": r.k, "universe": spec.universe_json()}
                )
                row["replayed"] = True
                if out is not None:
                    p = Path(out) / f"{component}-{label or mode}-{n.replace('.', '_')}-bmc.json"
                    traces.write(trace, p)
                    row["trace"] = str(p)
                    paths[n] = str(p)
                row["steps"] = [list(s) for s in (spec.step_json(x) for x in r.steps or [])]
        rows.append(row)
    verdicts = [r["verdict"] for r in rows]
    return {
        "verdict": VIOLATION if VIOLATION in verdicts else worst(verdicts),
        "component": component,
        "engine": "z3-bmc",
        "mode": mode,
        "quirks": sorted(q),
        "universe": spec.universe_json(),
        "depth": depth,
        "width": bounded.ts.width,
        "induction_seconds": round(t_ind, 3),
        "seconds": round(time.perf_counter() - t0, 3),
        "invariants": rows,
        "lemmas_not_checked": skipped,
        "traces": paths,
    }


# ----------------------------------------------------------------------------- agreement


def agreement_run(
    component: str,
    config: dict[str, Any],
    quirks: Iterable[str],
    *,
    steps: int,
    seed: int,
    moves: Sequence[Move],
    cache: dict[str, Any] | None = None,
    spec_quirks: Iterable[str] | None = None,
) -> int:
    """Drive the executable model with ``steps`` random moves (seeded) and check every
    step against the spec's transition relation; return the number of steps checked.

    ``moves`` are typed actions (:mod:`kvmodel.actions`), or templates that build one from the
    state they are made in (``Move.at``: the wall-clock insert a tick after the evictor's
    clock); each step is applied as the action it resolves to. A step the relation does not admit raises
    :class:`Disagreement` naming the step and what the spec would have done instead.
    ``spec_quirks`` gives the spec other quirks than the executable model (tests use it to
    show that the check tells them apart).
    """
    from kvmodel.specs.engine import explain_step, step_satisfiable
    from kvmodel.systems import make_system

    q = frozenset(quirks)
    spec = make_spec(component, config, q if spec_quirks is None else spec_quirks)
    if not isinstance(spec, ConstraintSpec):
        raise InvalidInput(f"{component}'s spec has no constraint agreement (its own agreement check, if any)")
    sys_ = make_system(component, spec.exec_config(), q)
    rng = random.Random(seed)
    cache = {} if cache is None else cache
    checked = 0
    for i in range(steps):
        for _ in range(1000):
            action = moves[rng.randrange(len(moves))].at(sys_)
            op = action.op
            if spec.within_bounds(sys_, op):
                break
        else:
            raise Disagreement(f"{component}: no move stays within the spec's bounds at step {i}")
        pre_sys = sys_.clone()
        out = sys_.apply(op, action)
        args = out.args_json
        sop, params = spec.step_params(pre_sys, op, out)
        pre = spec.state_constraint(pre_sys, exact_stamps=True)
        post_state = spec.post_constraint(sys_, out)
        broken = {v.invariant for v in out.violations}

        def post(s: Any, post_state: Any = post_state, broken: set[str] = broken) -> Any:
            # Every invariant of the spec holds in the post-state exactly when the executable
            # model's check of the same name found nothing.
            return z3.And(post_state(s), *(p.formula(s) == (p.name not in broken) for p in spec.ts.properties))

        if not step_satisfiable(spec.ts, pre, sop, params, post, cache=cache):
            would = explain_step(spec.ts, pre, sop, params)
            raise Disagreement(
                f"{component} {mode_of(component, q)} seed {seed} step {i}: {op} {args} gave "
                f"{out.observation(sys_.snapshot())} and violations {[v.invariant for v in out.violations]}; "
                f"the spec's relation does not admit it (the spec would give {spec.describe(would)})"
            )
        checked += 1
    return checked


def row_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The lines ``kvmodel prove`` and ``kvmodel bmc`` print, one per invariant."""
    out = []
    for r in rows:
        extra = f" k={r['k']}" if r.get("k") is not None else ""
        how = f" [{r['method']}]" if r.get("method") else ""
        lemma = " (lemma)" if r.get("lemma") else ""
        line = f"  {r['status'].upper():<12} {r['invariant']}{lemma}{extra}{how} {r['seconds']:.2f}s"
        if r.get("trace"):
            line += f" -> {r['trace']}"
        elif r.get("detail") and r["status"] != "proved":
            line += f" ({r['detail']})"
        out.append(line)
    return out


def describe(rep: dict[str, Any]) -> list[str]:
    """What ``kvmodel prove`` / ``kvmodel bmc`` print for a report."""
    if rep["engine"] == "z3-k-induction":
        head = f"{rep['component']} {rep['mode']}: k-induction (k <= {rep['max_k']}) over {rep['universe']}"
        n = sum(1 for r in rep["invariants"] if r["status"] == "proved")
        tail = f"{n} of {len(rep['invariants'])} proved"
    else:
        width = f"{rep['width']}-bit" if rep["width"] else "integers"
        head = f"{rep['component']} {rep['mode']}: BMC to depth {rep['depth']} over {rep['universe']} ({width})"
        tail = f"{len(rep['traces'])} counterexample trace(s), each replayed on the executable model"
        if rep.get("lemmas_not_checked"):
            tail += f"; lemmas of the ideal proof not checked with these quirks: {', '.join(rep['lemmas_not_checked'])}"
    return [f"{head}, {rep['seconds']:.2f}s", *row_lines(rep["invariants"]), tail, f"verdict: {rep['verdict']}"]
