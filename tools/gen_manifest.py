"""Write specs/manifest.json: every engine's pinned verdicts, per component.

Usage: python tools/gen_manifest.py [--only COMPONENT] [--engine explore|prove|bmc]

Entries, like tlaplus/Examples' per-spec manifests, name the engine:

* ``explore`` — each component's worlds (``manifest_worlds`` in its record: the check world, the
  ideal model in wider worlds, the faithful model, each revision and each quirk): the verdict,
  the distinct-state counts with and without symmetry, transitions, depth, each violated invariant
  with its minimal depth, the witnesses missing;
* ``prove`` — k-induction of the ideal model on the spec's default universe: each invariant's
  status and k;
* ``bmc`` — the Z3 cases of ``kvmodel check`` (the faithful model and each quirk, from
  :mod:`kvmodel.suite`) at the component's BMC depth on its check universe: each invariant
  violated, with its minimal depth.

``seconds`` is the time measured here; stateful_tests/test_manifest.py re-runs the entries and
checks the verdicts and counts.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from kvmodel import components, explorer, invariants, jsonio, suite
from kvmodel.engines.z3 import Z3Engine
from kvmodel.model import quirks as quirk_model
from kvmodel.specs.runner import prove, run_bmc

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "specs" / "manifest.json"


def _mode(c: components.Component, name: str, quirks: list[str]) -> str:
    """ideal / faithful / revision / quirk, from the quirk set (a revision's world is named so)."""
    if not quirks:
        return "ideal"
    if "-revision-" in f"-{name}":
        return "revision"
    return "faithful" if set(quirks) == set(quirk_model.resolve(c.name, None)) else "quirk"


def explore_entry(c: components.Component, name: str, world: components.World, quirks: list[str]) -> dict[str, Any]:
    t = time.perf_counter()
    r = explorer.explore(dict(world.config), quirks, c.explore_space(world))
    dt = time.perf_counter() - t
    print(f"explore {name:<48} {r.states:>7} / {r.concrete_states:>8} states  {dt:6.2f}s", flush=True)
    return {
        "engine": "explore",
        "name": name,
        "component": c.name,
        "config": dict(world.config),
        "space": dict(world.space),
        "quirks": quirks,
        "mode": _mode(c, name, quirks),
        "expect": {
            "verdict": "holds" if not r.violations else "violated",
            "states_symmetry": r.states,
            "states_full": r.concrete_states,
            "transitions_symmetry": r.transitions,
            "depth": r.depth,
            "violations": {k: v["depth"] for k, v in sorted(r.violations.items())},
            "witnesses_missing": r.missing_witnesses,
        },
        "seconds": round(dt, 2),
    }


def prove_entry(c: components.Component) -> dict[str, Any]:
    rep = prove(c.name)
    rep.pop("_results")
    print(f"prove   {c.name:<48} {rep['verdict']:<10} {rep['seconds']:6.2f}s", flush=True)
    return {
        "engine": "prove",
        "name": f"{c.name}-prove-ideal",
        "component": c.name,
        "universe": {},
        "quirks": [],
        "max_k": rep["max_k"],
        "expect": {
            "verdict": rep["verdict"],
            "status": {r["invariant"]: [r["status"], r["k"]] for r in rep["invariants"]},
        },
        "seconds": rep["seconds"],
    }


def bmc_entry(c: components.Component, case: Any) -> dict[str, Any]:
    universe, depth = c.check_universe(), c.profile.bmc_depth
    if case.kind == "faithful":
        # the faithful model against the claims about the real code: the strengthening lemmas are
        # proof aids stated for the ideal model (a quirk that breaks one names it, and its own
        # BMC case checks it)
        from kvmodel.engines.z3 import _properties

        quirks, label = sorted(c.modelled_quirks(case.quirks)), "faithful"
        lemmas = {i.name for i in invariants.for_component(c.name) if i.lemma}
        props = sorted(p for p in _properties(c) if p not in lemmas)
    else:
        from kvmodel.engines.z3 import _properties

        quirks, label = sorted(case.quirks), f"quirk-{case.quirk}"
        props = [b for b in case.breaks if b in _properties(c)]
    rep = run_bmc(c.name, depth, universe, quirks, properties=props, induction=case.kind == "faithful")
    print(f"bmc     {c.name + ' ' + label:<48} {rep['verdict']:<10} {rep['seconds']:6.2f}s", flush=True)
    viol = {r["invariant"]: r["k"] for r in rep["invariants"] if r["status"] == "violated"}
    return {
        "engine": "bmc",
        "name": f"{c.name}-bmc-{label}",
        "component": c.name,
        "universe": universe,
        "depth": depth,
        "quirks": quirks,
        "properties": props,
        "induction": case.kind == "faithful",
        "expect": {"verdict": rep["verdict"], "violations": dict(sorted(viol.items()))},
        "seconds": rep["seconds"],
    }


def entries(only: str | None, engine: str | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for c in components.registered():
        if only and c.name != only:
            continue
        if engine in (None, "explore") and c.space is not None:
            out += [explore_entry(c, n, w, q) for n, w, q in c.manifest_worlds]
        if c.spec is None:
            continue
        if engine in (None, "prove"):
            out.append(prove_entry(c))
        if engine in (None, "bmc"):
            cases = Z3Engine().cases(c, suite.matrix(c.name, "faithful") + suite.matrix(c.name, "both"))
            out += [bmc_entry(c, k) for k in cases if k.kind != "ideal"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--only", help="refresh one component's entries")
    ap.add_argument("--engine", choices=["explore", "prove", "bmc"], help="refresh one engine's entries")
    a = ap.parse_args()
    new = entries(a.only, a.engine)
    if a.only or a.engine:
        old = json.loads(OUT.read_text())["entries"]

        def replaced(e: dict[str, Any]) -> bool:
            return (a.only is None or e["component"] == a.only) and (
                a.engine is None or e.get("engine", "explore") == a.engine
            )

        new = [e for e in old if not replaced(e)] + new
        order = {n: i for i, n in enumerate(components.names())}
        new.sort(key=lambda e: (order.get(e["component"], 99), ["explore", "prove", "bmc"].index(e["engine"])))
    data = {
        "format": "kvmodel-manifest/2",
        "note": "Generated by tools/gen_manifest.py; checked by stateful_tests/test_manifest.py.",
        "entries": new,
    }
    jsonio.write_text(OUT, json.dumps(data, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
