"""The ``kvmodel`` command line.

Exit codes everywhere: 0 = no violation / success; 1 = a violation or a divergence was
found; 2 = bad usage or a bad input file (one line naming the file and the problem).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from kvmodel import __version__
from kvmodel.cliargs import (
    SEED,
    OneLineParser,
    UsageError,
    check_outputs,
    fill,
    integer,
    nonempty,
    reject_foreign,
    seconds,
)
from kvmodel.progress import Progress
from kvmodel.verdicts import EXIT, worst

ENGINES = ("hypothesis", "explore", "z3", "conform")
# The bounded configuration `kvmodel check` explores exhaustively (seconds on 2 cores).
CHECK_EXPLORE = {
    "config": {"max_capacity": 2},
    "space": {"n_full": 3, "partials": 1, "max_batch": 2, "max_refcount": 2},
}
CHECK_COMPONENTS = (
    "kv_manager",
    "lru_evictor_wallclock",
    "lru_evictor_counter",
    "kvbm_block_registry",
    "kv_router_radix_tree",
    "g1_native",
    "g1_kvbm",
)
# Short names accepted wherever a component is named.
ALIASES = {
    "registry": "kvbm_block_registry",
    "router": "kv_router_radix_tree",
    "kv": "kv_manager",
    "g1": "g1_native",
    "native": "g1_native",
    "kvbm": "g1_kvbm",
}
# Which engines check which component: the state machines run on the three model-checking
# engines; the radix tree is checked against the real one (differential conformance).
ENGINE_COMPONENTS = {
    "hypothesis": (*CHECK_COMPONENTS[:4], "g1_native", "g1_kvbm"),
    "explore": (*CHECK_COMPONENTS[:4], "g1_native", "g1_kvbm"),
    "z3": (*CHECK_COMPONENTS[:4], "g1_native", "g1_kvbm"),
    "conform": ("kv_router_radix_tree", "g1_native"),
}
# The G1 world `kvmodel check` explores exhaustively (2,657 states, 3 s).
CHECK_G1_SPACE: dict[str, Any] = {"owners": 2, "prompts": 2, "pushes": 1, "decode": 1}
# The KVBM world `kvmodel check` explores exhaustively (capacity 2, PLH fragments modulo 2:
# 648 states ideal, under a second each).
CHECK_KVBM_SPACE: dict[str, Any] = {"owners": 1, "prompts": 5, "pushes": 0, "decode": 0}
CHECK_KVBM_CONFIG: dict[str, Any] = {"max_capacity": 2}
# The registry world `kvmodel check` explores exhaustively (seconds on 2 cores).
CHECK_REGISTRY_SPACE: dict[str, Any] = {
    "hashes": 1,
    "states": 2,
    "publish_handles": 1,
    "arcs": 0,
    "publishers": 2,
    "max_pending": 1,
}


def canonical_component(name: str) -> str:
    return ALIASES.get(name, name)


CHECK_CONFORM_WORKLOADS = 200
PROFILES = {"ci": {"max_examples": 200, "steps": 30}, "deep": {"max_examples": 3000, "steps": 60}}


def _emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def _log(args: argparse.Namespace, msg: str, bar: Progress | None = None) -> None:
    if bar is not None:
        bar.close()
    print(msg, file=sys.stderr if getattr(args, "json", False) else sys.stdout, flush=True)


# ----------------------------------------------------------------------------- check


def _trace_name(component: str, mode: str, invariant: str, seed: int) -> str:
    return f"{component}-{mode}-{invariant.replace('.', '_')}-seed{seed}.json"


def cmd_check(args: argparse.Namespace) -> int:
    from kvmodel import machines, traces
    from kvmodel.model.quirks import faithful, quirks_of

    check_outputs(args, ("html", "junit"))
    comps = [canonical_component(c) for c in args.component] if args.component else list(CHECK_COMPONENTS)
    for c in comps:
        if c not in CHECK_COMPONENTS:
            raise UsageError(f"unknown component {c!r} (known: {', '.join(CHECK_COMPONENTS)})")
    engines = list(ENGINES) if args.engine in (None, "all") else [args.engine]
    prof = dict(PROFILES[args.profile])
    if args.max_examples is not None:
        prof["max_examples"] = args.max_examples
    if args.steps is not None:
        prof["steps"] = args.steps
    mode = "ideal" if args.ideal else "faithful" if (args.faithful or args.revision) else "both"
    rev_quirks: frozenset[str] | None = None
    if args.revision:
        if len(comps) != 1:
            raise UsageError("--revision needs exactly one --component")
        rev_quirks = _revision_quirks(comps[0], args.revision)
    out_dir = Path(args.out)
    results: list[dict[str, Any]] = []
    failed = False

    def save(res: machines.HypothesisResult, label: str) -> str | None:
        if res.trace is None or res.violation is None:
            return None
        p = out_dir / _trace_name(res.component, label, res.violation["invariant"], res.seed)
        traces.write(res.trace, p)
        return str(p)

    bar = Progress("check")
    for engine in engines:
        mine = [c for c in comps if c in ENGINE_COMPONENTS[engine]]
        if not mine:
            continue
        bar.update(f"{engine} on {', '.join(mine)}", force=True)
        if engine == "conform":
            for comp in mine:
                row = _check_conform(args.seed, out_dir) if comp == "kv_router_radix_tree" else _check_mocker(args.seed)
                failed |= row["verdict"] not in ("pass", "reproduced")
                results.append(row)
                _log(args, _line(row), bar)
            continue
        if engine == "z3":
            for row in _check_z3(mine, mode, out_dir, rev_quirks):
                failed |= row["verdict"] not in ("pass", "reproduced")
                results.append(row)
                _log(args, _line(row), bar)
            continue
        if engine == "explore":
            for row in _check_explore(mine, mode, out_dir, rev_quirks):
                failed |= row["verdict"] not in ("pass", "reproduced")
                results.append(row)
                _log(args, _line(row), bar)
            continue
        for comp in mine:
            whole: list[tuple[str, frozenset[str], str]] = []
            if mode in ("ideal", "both"):
                whole.append(("ideal", frozenset(), "FAIL"))
            if mode == "faithful":
                whole.append(("faithful", faithful(comp) if rev_quirks is None else rev_quirks, "VIOLATION"))
            for label, quirks, bad in whole:
                bar.update(f"hypothesis on {comp} ({label})", force=True)
                r = machines.run(comp, quirks=quirks, mode=label, seed=args.seed, **_budget(prof))
                row = r.to_json() | {"check": label, "trace": save(r, label)}
                ok = r.violation is None and r.error is None and r.examples > 0
                row["verdict"] = "pass" if ok else bad
                row["outcome"] = _hypothesis_outcome(r, expect_violation=False)
                failed |= not ok
                results.append(row)
                _log(args, _line(row), bar)
            if mode == "both":
                for q in quirks_of(comp):
                    bar.update(f"hypothesis on {comp}, quirk {q.name}", force=True)
                    r = machines.run(
                        comp,
                        quirks=(q.name, *q.requires),
                        mode=f"quirk:{q.name}",
                        seed=args.seed,
                        target=q.breaks,
                        max_examples=max(prof["max_examples"], 1000),
                        steps=prof["steps"],
                    )
                    row = r.to_json() | {
                        "check": f"quirk {q.name}",
                        "expects": list(q.breaks),
                        "trace": save(r, f"quirk-{q.name}"),
                    }
                    ok = r.violation is not None and r.error is None
                    row["verdict"] = "reproduced" if ok else "NOT REPRODUCED"
                    row["outcome"] = _hypothesis_outcome(r, expect_violation=True)
                    failed |= not ok
                    results.append(row)
                    _log(args, _line(row), bar)
    bar.close()
    verdict = worst(
        row.get("outcome") or ("pass" if row["verdict"] in ("pass", "reproduced") else "violation") for row in results
    )
    summary = {
        "verdict": verdict,
        "mode": mode,
        "engines": engines,
        "components": comps,
        "profile": args.profile,
        "seed": args.seed,
        "results": results,
        "ok": verdict == "pass",
    }
    if args.itf:
        from kvmodel.itf import from_trace

        for row in results:
            if row.get("trace") and row["engine"] != "conform":
                itf = Path(row["trace"]).with_suffix(".itf.json")
                itf.write_text(json.dumps(from_trace(traces.load(row["trace"])), indent=1, sort_keys=True) + "\n")
                row["itf"] = str(itf)
    if args.html:
        from kvmodel import report

        pages = report.write(summary, Path(args.html))
        _log(args, f"wrote {args.html} and {len(pages)} counterexample page(s)")
    if args.junit:
        from kvmodel.junit import junit_xml

        Path(args.junit).parent.mkdir(parents=True, exist_ok=True)
        Path(args.junit).write_text(junit_xml(results))
    if args.json:
        _emit_json(summary)
    else:
        n_ok = sum(1 for r in results if r["verdict"] in ("pass", "reproduced"))
        print(
            f"{n_ok} of {len(results)} checks as expected; verdict: {verdict}" + ("" if not failed else " (see above)")
        )
    return EXIT[verdict]


def _hypothesis_outcome(r: Any, *, expect_violation: bool) -> str:
    """A Hypothesis row's verdict: a violation found where none is expected (or none found
    where one is), an engine error (a flaky test), or nothing run at all (inconclusive)."""
    if r.error is not None:
        return "error" if r.error.startswith("Flaky") else "violation"
    if r.examples == 0:
        return "inconclusive"
    found = r.violation is not None
    return "pass" if found == expect_violation else "violation"


def _explore_setup(comp: str) -> tuple[Any, dict[str, Any]]:
    """The bounded configuration `kvmodel check` explores exhaustively for a component (seconds)."""
    from kvmodel import explorer

    if comp == "kv_manager":
        return explorer.KvSpace(**CHECK_EXPLORE["space"]), dict(CHECK_EXPLORE["config"])
    if comp == "kvbm_block_registry":
        return explorer.RegSpace(**CHECK_REGISTRY_SPACE), {}
    if comp == "g1_native":
        return explorer.G1Space(**CHECK_G1_SPACE), {}
    if comp == "g1_kvbm":
        return explorer.KvbmSpace(**CHECK_KVBM_SPACE), dict(CHECK_KVBM_CONFIG)
    # threshold 2: the lazy queue keeps stale entries between cleanups (with 1 it never does,
    # and a bug in skipping stale entries would be invisible)
    return explorer.LruSpace(comp, objects=2, max_queue=4), {"cleanup_threshold": 2}


def _check_explore(
    comps: list[str], mode: str, out_dir: Path, rev_quirks: frozenset[str] | None = None
) -> list[dict[str, Any]]:
    """Exhaustive BFS on a small bounded configuration of each component: the ideal model must
    hold and reach every witness; each quirk must break every invariant it is declared to break."""
    from kvmodel import explorer, traces
    from kvmodel.model.quirks import faithful, quirks_of

    rows: list[dict[str, Any]] = []
    for comp in comps:
        space, cfg = _explore_setup(comp)

        def row(
            check: str,
            label: str,
            r: explorer.ExploreResult,
            verdict: str,
            among: Iterable[str] | None,
            comp: str = comp,
            outcome: str = "pass",
        ) -> None:
            names = [n for n in r.violations if among is None or n in among]
            viol = None
            if names:
                inv = min(names, key=lambda n: (r.violations[n]["depth"], n))
                t = explorer.violation_trace(r, inv)
                path = out_dir / f"{comp}-explore-{label}-{inv.replace('.', '_')}.json"
                traces.write(t, path)
                v = t["violation"] or {}
                viol = {
                    "invariant": inv,
                    "step": v.get("step", r.violations[inv]["depth"] - 1),
                    "message": v.get("message", r.violations[inv]["message"]),
                    "trace_path": str(path),
                }
            rows.append(
                {
                    "engine": "explore",
                    "component": comp,
                    "check": check,
                    "verdict": verdict,
                    "steps": r.transitions,
                    "seconds": round(r.seconds, 3),
                    "states": r.states,
                    "violation": viol,
                    "trace": viol["trace_path"] if viol else None,
                    "error": None,
                    "outcome": outcome,
                }
            )

        if mode in ("ideal", "both"):
            r = explorer.explore(cfg, (), space)
            ok = not r.violations and not r.missing_witnesses and r.complete
            out = "pass" if ok else "violation" if r.violations or r.missing_witnesses else "inconclusive"
            row("ideal (exhaustive)", "ideal", r, "pass" if ok else "FAIL", None, outcome=out)
        if mode == "faithful":
            r = explorer.explore(cfg, faithful(comp) if rev_quirks is None else rev_quirks, space)
            out = "violation" if r.violations else "pass" if r.complete else "inconclusive"
            row("faithful (exhaustive)", "faithful", r, "VIOLATION" if r.violations else "pass", None, outcome=out)
        if mode == "both":
            for q in quirks_of(comp):
                r = explorer.explore(cfg, (q.name, *q.requires), space)
                ok = all(b in r.violations for b in q.breaks)
                out = "pass" if ok else "inconclusive" if not r.complete else "violation"
                row(
                    f"quirk {q.name} (exhaustive)",
                    f"quirk-{q.name}",
                    r,
                    "reproduced" if ok else "NOT REPRODUCED",
                    q.breaks,
                    outcome=out,
                )
    return rows


# The universes `kvmodel check` gives Z3: proofs on the spec defaults (kv_manager: capacity 4,
# 6 full blocks and 1 partial), per-quirk BMC on the small universe the explorer uses.
CHECK_BMC_DEPTH = 6
# The registry's quirks need more steps (its deepest BFS minimum is 8: a third registration).
BMC_DEPTHS = {"kvbm_block_registry": 8, "g1_native": 6, "g1_kvbm": 6}


def _z3_small(comp: str) -> dict[str, Any]:
    from kvmodel.specs import universe_of

    if comp == "kv_manager":
        return universe_of(comp, CHECK_EXPLORE["config"], CHECK_EXPLORE["space"])
    if comp == "kvbm_block_registry":
        return universe_of(comp, {}, CHECK_REGISTRY_SPACE)
    if comp == "g1_native":
        return universe_of(comp, {}, CHECK_G1_SPACE)
    if comp == "g1_kvbm":
        return {"owners": 1, "capacity": 3}  # a chain, a partial and an eviction (§6 #7 in 6 steps)
    return {"objects": 2, "max_queue": 4, "cleanup_threshold": 1} if comp == "lru_evictor_wallclock" else {}


def _check_conform(seed: int, out_dir: Path) -> dict[str, Any]:
    """The radix-tree model against the real RadixTree (needs the `real` extra)."""
    from kvmodel.conformance import radix

    row: dict[str, Any] = {
        "engine": "conform",
        "component": "kv_router_radix_tree",
        "check": "vs real RadixTree (ai-dynamo-runtime)",
        "steps": 0,
        "seconds": 0.0,
        "violation": None,
        "trace": None,
        "error": None,
    }
    why = radix.real_available()
    if why is not None:
        row.update(verdict="FAIL", error=why, outcome="error")
        return row
    rep = radix.run(radix.ModelRadixTree(), radix.RealRadixTree(), workloads=CHECK_CONFORM_WORKLOADS, seed=seed)
    j = rep.to_json()
    row.update(steps=j["events"], seconds=j["seconds"], conformance=j)
    if j["divergences"]:
        path = out_dir / f"conform-dynamo-radix-tree-seed{seed}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"operations": j["counterexample"]}, indent=2) + "\n")
        d = j["first_divergence"]
        row.update(
            verdict="DIVERGENCE",
            trace=str(path),
            violation={"invariant": f"conformance ({d['what']})", "step": d["step"], "message": "model != real"},
        )
    else:
        row["verdict"] = "pass"
    return row


def _check_mocker(seed: int) -> dict[str, Any]:
    """The G1 native backend against the real mocker's KV events (needs the `real` extra)."""
    from kvmodel.conformance import mocker

    row: dict[str, Any] = {
        "engine": "conform",
        "component": "g1_native",
        "check": "vs real mocker (ai-dynamo-runtime)",
        "steps": 0,
        "seconds": 0.0,
        "violation": None,
        "trace": None,
        "error": None,
    }
    why = mocker.available()
    if why is not None:
        row.update(verdict="FAIL", error=why, outcome="error")
        return row
    j = mocker.run(workloads=CHECK_CONFORM_WORKLOADS, seed=seed).to_json()
    row.update(steps=j["events"], seconds=j["seconds"], conformance=j)
    if j["divergences"]:
        d = j["first_divergence"] or {}
        row.update(
            verdict="DIVERGENCE",
            violation={
                "invariant": f"conformance ({d.get('what')})",
                "step": d.get("index", 0),
                "message": "model != real",
            },
        )
    else:
        row["verdict"] = "pass"
    return row


def _check_z3(
    comps: list[str], mode: str, out_dir: Path, rev_quirks: frozenset[str] | None = None
) -> list[dict[str, Any]]:
    """Z3: every ideal invariant proved by k-induction; each quirk's declared breakage found by
    BMC (traces replayed on the executable model)."""
    from kvmodel.model.quirks import faithful, quirks_of
    from kvmodel.specs.runner import prove, run_bmc

    rows: list[dict[str, Any]] = []

    def row(
        comp: str, check: str, verdict: str, rep: dict[str, Any], among: Iterable[str] | None, expect: str = "pass"
    ) -> None:
        got = rep.get("verdict", "inconclusive")
        if verdict in ("pass", "reproduced"):
            outcome = "pass"
        elif (
            expect == "violation"
            and got != "violation"
            and any(r["status"] == "inconclusive" for r in rep["invariants"])
        ):
            outcome = "inconclusive"
        elif expect == "pass" and got == "inconclusive":
            outcome = "inconclusive"
        else:
            outcome = "violation"
        viol = [
            r for r in rep["invariants"] if r["status"] == "violated" and (among is None or r["invariant"] in among)
        ]
        v = min(viol, key=lambda r: (r["k"], r["invariant"])) if viol else None
        rows.append(
            {
                "engine": "z3",
                "component": comp,
                "check": check,
                "verdict": verdict,
                "steps": rep.get("depth", rep.get("max_k", 0)),
                "seconds": rep["seconds"],
                "invariants": rep["invariants"],
                "violation": (
                    {
                        "invariant": v["invariant"],
                        "step": v["k"] - 1,
                        "message": "found by BMC",
                        "trace": v.get("trace"),
                    }
                    if v
                    else None
                ),
                "trace": v.get("trace") if v else None,
                "error": None,
                "outcome": outcome,
            }
        )

    for comp in comps:
        if mode in ("ideal", "both"):
            rep = prove(comp)
            rep.pop("_results")
            row(comp, "ideal (k-induction)", "pass" if rep["all_proved"] else "FAIL", rep, None)
        if mode == "faithful":
            fq = faithful(comp) if rev_quirks is None else rev_quirks
            if comp == "g1_kvbm":
                from kvmodel.specs.kvbm import MODELLED

                fq = fq & MODELLED
            rep = run_bmc(comp, BMC_DEPTHS.get(comp, CHECK_BMC_DEPTH), _z3_small(comp), fq, out=out_dir)
            bad = any(r["status"] == "violated" for r in rep["invariants"])
            row(comp, "faithful (BMC)", "VIOLATION" if bad else "pass", rep, None)
        if mode == "both":
            from kvmodel.specs import make_spec

            spec_props = {p.name for p in make_spec(comp, _z3_small(comp)).ts.properties}
            modelled = getattr(make_spec(comp, _z3_small(comp)), "modelled_quirks", None)
            for q in quirks_of(comp):
                if modelled is not None and q.name not in modelled:
                    continue  # a quirk this spec's world cannot reach (the explorer's world does)
                rep = run_bmc(
                    comp,
                    BMC_DEPTHS.get(comp, CHECK_BMC_DEPTH),
                    _z3_small(comp),
                    (q.name, *q.requires),
                    out=out_dir,
                    properties=[b for b in q.breaks if b in spec_props],
                    label=f"quirk-{q.name}",
                    induction=False,  # the quirk's invariants are expected to break: go straight to BMC
                )
                got = {r["invariant"] for r in rep["invariants"] if r["status"] == "violated"}
                ok = set(q.breaks) & spec_props <= got
                row(comp, f"quirk {q.name} (BMC)", "reproduced" if ok else "NOT REPRODUCED", rep, q.breaks, "violation")
    return rows


def _budget(prof: dict[str, int]) -> dict[str, Any]:
    return {"max_examples": prof["max_examples"], "steps": prof["steps"]}


def _line(row: dict[str, Any]) -> str:
    head = f"[{row['engine']}] {row['component']:<22} {row['check']:<42} {row['verdict']:<15}"
    stats = f"{row['steps']} steps, {row['seconds']:.2f}s"
    v = row.get("violation")
    tail = ""
    if v:
        tail = f"  {v['invariant']} at step {v['step']}: {v['message']}"
        if row.get("trace"):
            tail += f"  -> {row['trace']}"
    if row.get("error"):
        tail += f"  error: {row['error']}"
    return f"{head} {stats}{tail}"


# ----------------------------------------------------------------------------- replay


def cmd_replay(args: argparse.Namespace) -> int:
    from kvmodel import traces

    check_outputs(args, ("itf",), ())
    trace = traces.load(args.trace)
    if args.revision:
        trace = dict(trace, quirks=sorted(_revision_quirks(trace["component"], args.revision)), revision=args.revision)
    if args.itf:
        from kvmodel.itf import from_trace

        Path(args.itf).write_text(json.dumps(from_trace(trace), indent=1, sort_keys=True) + "\n")
    res = traces.replay(trace, source=str(args.trace))
    if args.json:
        _emit_json({"trace": str(args.trace), **res.to_json()})
    else:
        if not args.brief:
            from kvmodel import show

            print(show.terminal(trace), end="")
        print(
            f"{args.trace}: {trace['component']} with quirks {trace['quirks'] or 'none (ideal)'}: "
            f"replayed {res.steps_run} of {len(trace['steps'])} steps"
        )
        if res.divergence:
            print(f"DIVERGENCE at {res.divergence}")
        else:
            print("every recorded observation reproduced")
        rv = res.recorded_violation
        if res.violation:
            v = res.violation
            print(f"VIOLATION of {v['invariant']} at step {v['step']}: {v['message']}")
        if rv and res.reproduces_recorded:
            print(f"the recorded violation of {rv['invariant']} at step {rv['step']} is reproduced")
        elif rv and not res.divergence:
            print(f"the recorded violation of {rv['invariant']} at step {rv['step']} did NOT reproduce")
        print(f"verdict: {res.verdict}")
    return EXIT[res.verdict]


def cmd_show(args: argparse.Namespace) -> int:
    from kvmodel import show, traces

    check_outputs(args, ("html",), ())
    trace = traces.load(args.trace)
    sys.stdout.write(show.terminal(trace))
    if args.html:
        Path(args.html).parent.mkdir(parents=True, exist_ok=True)
        Path(args.html).write_text(show.page(trace, title=Path(args.trace).name))
        print(f"wrote {args.html}")
    return 0


# ----------------------------------------------------------------------------- explore


def cmd_explore(args: argparse.Namespace) -> int:
    from kvmodel import explorer, traces
    from kvmodel.model.quirks import faithful

    space: explorer.Space
    args.component = canonical_component(args.component)
    if args.component not in EXPLORE_OPTIONS:
        raise UsageError(f"cannot explore {args.component!r} (known: {', '.join(EXPLORE_OPTIONS)})")
    reject_foreign(args, args.component, EXPLORE_OPTIONS)
    check_outputs(args, ("dot", "svg"))
    args.capacity_given = args.capacity is not None
    if args.capacity is None:
        args.capacity = 2
    fill(args, EXPLORE_DEFAULTS)
    if args.component == "g1_native" and args.prompts > 3:
        raise UsageError(f"--prompts: the G1 world has 3 prompts, got {args.prompts}")
    if args.component == "kvbm_block_registry":
        space = explorer.RegSpace(
            args.hashes, args.states, args.publish_handles, args.arcs, args.publishers, args.max_pending, args.shared
        )
        cfg: dict[str, Any] = {}
    elif args.component == "kv_manager":
        space = explorer.KvSpace(args.blocks, args.partials, args.max_batch, args.max_refcount)
        cfg = {"max_capacity": args.capacity, "evictor": args.evictor, "channel": not args.no_channel}
    elif args.component in ("lru_evictor_wallclock", "lru_evictor_counter"):
        space = explorer.LruSpace(args.component, args.objects, args.max_queue)
        cfg = {"cleanup_threshold": args.cleanup_threshold}
    elif args.component == "g1_native":
        space = explorer.G1Space(args.owners, args.prompts, args.pushes, args.decode)
        cfg = {"max_capacity": args.capacity if args.capacity_given else 3}
    elif args.component == "g1_kvbm":
        space = explorer.KvbmSpace(args.owners, args.prompts, args.pushes, args.decode)
        cfg = {"max_capacity": args.capacity if args.capacity_given else 3}
    else:
        raise UsageError(f"cannot explore {args.component!r} (known: {', '.join(CHECK_COMPONENTS)})")
    if args.revision:
        quirks = _revision_quirks(args.component, args.revision)
    else:
        quirks = faithful(args.component) if args.faithful else frozenset(args.quirk or ())

    with Progress(f"explore {args.component}") as bar:
        r = explorer.explore(
            cfg,
            quirks,
            space,
            symmetry=not args.no_symmetry,
            max_states=args.max_states,
            graph=bool(args.dot or args.svg),
            progress=lambda n, t, d: bar.update(f"{n:,} states, {t:,} transitions, depth {d}"),
        )
    out = r.to_json()
    if r.violations or (not quirks and r.complete and r.missing_witnesses):
        out["verdict"] = "violation"
    elif not r.complete:
        out["verdict"] = "inconclusive"  # stopped at --max-states: nothing decided about the rest
    else:
        out["verdict"] = "pass"
    out["mode"] = (
        f"revision {args.revision}"
        if args.revision
        else "faithful"
        if args.faithful
        else ("ideal" if not quirks else "custom")
    )
    paths = {}
    if r.violations and args.out:
        for inv in sorted(r.violations):
            p = Path(args.out) / f"{args.component}-explore-{inv.replace('.', '_')}.json"
            traces.write(explorer.violation_trace(r, inv), p)
            paths[inv] = str(p)
    out["traces"] = paths
    if args.dot or args.svg:
        from kvmodel import graphs

        g = r.graph
        title = f"{args.component} {out['mode']}: {r.states} states"
        try:
            if args.dot:
                Path(args.dot).parent.mkdir(parents=True, exist_ok=True)
                Path(args.dot).write_text(graphs.to_dot(g, mark=args.mark, title=title))
                out["dot"] = args.dot
            if args.svg:
                svg = graphs.to_svg(g, mark=args.mark, title=title)
                Path(args.svg).parent.mkdir(parents=True, exist_ok=True)
                Path(args.svg).write_text(svg)
                out["svg"] = args.svg
        except graphs.GraphvizError as e:
            raise UsageError(str(e)) from e
        out["graph_nodes"], out["graph_edges"] = g.number_of_nodes(), g.number_of_edges()
        out["marked"] = graphs.marked_path(g, args.mark)[0]
    if args.json:
        _emit_json(out)
    else:
        print(
            f"{args.component} {out['mode']}, config {cfg}, space {space.to_json()}, "
            f"symmetry {'on' if not args.no_symmetry else 'off'}"
        )
        print(
            f"{r.states} states ({r.concrete_states} without symmetry), {r.transitions} transitions, depth {r.depth}, "
            f"{r.seconds:.2f}s ({r.states_per_second:,.0f} states/s, {r.bytes_per_state:.0f} bytes/state)"
            + ("" if r.complete else f"; INCOMPLETE: stopped at {args.max_states} states")
        )
        for op, c in r.coverage.items():
            print(f"  {op:<8} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
        print(
            f"witnesses reached: {len(r.witnesses)}"
            + (f"; MISSING: {', '.join(r.missing_witnesses)}" if r.missing_witnesses else "")
        )
        print(f"deadlocks: {r.deadlocks}")
        for inv, v in sorted(r.violations.items(), key=lambda x: (x[1]["depth"], x[0])):
            print(
                f"VIOLATION {inv} at depth {v['depth']}: {v['message']}" + (f" -> {paths[inv]}" if inv in paths else "")
            )
        if not r.violations:
            print("no invariant violated")
    return EXIT[out["verdict"]]


# ----------------------------------------------------------------------------- prove / bmc


def _spec_config(args: argparse.Namespace) -> dict[str, Any]:
    """The spec universe from the command line (only options the user gave; spec defaults
    otherwise: kv_manager capacity 4 with 6 full blocks and 1 partial, batches of 2)."""
    args.component = canonical_component(args.component)
    if args.component in SPEC_OPTIONS:
        reject_foreign(args, args.component, SPEC_OPTIONS)
    if args.component == "kvbm_block_registry":
        keys = {
            "hashes": "hashes",
            "states": "states",
            "publish_handles": "publish_handles",
            "arcs": "arcs",
            "publishers": "publishers",
            "max_pending": "max_pending",
        }
    elif args.component == "kv_manager":
        keys = {"capacity": "max_capacity", "blocks": "n_full", "partials": "partials", "max_batch": "max_batch"}
    elif args.component == "lru_evictor_wallclock":
        keys = {"objects": "objects", "max_queue": "max_queue", "cleanup_threshold": "cleanup_threshold"}
    elif args.component == "lru_evictor_counter":
        keys = {"objects": "objects"}
    elif args.component == "g1_native":
        keys = {
            "owners": "owners",
            "prompts": "prompts",
            "pushes": "pushes",
            "decode": "decode",
            "capacity": "capacity",
        }
    elif args.component == "g1_kvbm":
        keys = {"owners": "owners", "prompts": "prompts", "capacity": "capacity"}
    else:
        from kvmodel.specs import SPECS

        raise UsageError(f"no Z3 spec for component {args.component!r} (known: {', '.join(SPECS)})")
    cfg = {v: getattr(args, k) for k, v in keys.items() if getattr(args, k, None) is not None}
    if args.component == "kv_manager" and args.no_channel:
        cfg["channel"] = False
    return cfg


def _revision_quirks(component: str, name: str) -> frozenset[str]:
    """The quirks of a named revision; a usage error names the known ones."""
    from kvmodel.model.quirks import revision, revisions_of

    try:
        return revision(component, name).quirks
    except ValueError:
        known = ", ".join(r.name for r in revisions_of(component)) or "none recorded"
        raise UsageError(f"--revision: unknown revision {name!r} of {component} (known: {known})") from None


def _spec_quirks(args: argparse.Namespace, default_faithful: bool) -> frozenset[str]:
    from kvmodel.model.quirks import QUIRKS, faithful

    if getattr(args, "revision", None):
        q = _revision_quirks(args.component, args.revision)
        if args.component == "g1_kvbm":
            from kvmodel.specs.kvbm import MODELLED

            return q & MODELLED
        return q
    if args.quirk:
        names = set(args.quirk)
        for n in list(names):
            if n not in QUIRKS or QUIRKS[n].component != args.component:
                raise UsageError(f"unknown quirk {n!r} for {args.component}")
            names |= set(QUIRKS[n].requires)
        return frozenset(names)
    if args.faithful or (default_faithful and not args.ideal):
        if args.component == "g1_kvbm":  # the spec's world reaches all quirks but §6 #24
            from kvmodel.specs.kvbm import MODELLED

            return faithful(args.component) & MODELLED
        return faithful(args.component)
    return frozenset()


def _print_rows(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        extra = f" k={r['k']}" if r.get("k") is not None else ""
        how = f" [{r['method']}]" if r.get("method") else ""
        lemma = " (lemma)" if r.get("lemma") else ""
        line = f"  {r['status'].upper():<12} {r['invariant']}{lemma}{extra}{how} {r['seconds']:.2f}s"
        if r.get("trace"):
            line += f" -> {r['trace']}"
        elif r.get("detail") and r["status"] != "proved":
            line += f" ({r['detail']})"
        print(line)


def cmd_prove(args: argparse.Namespace) -> int:
    from kvmodel.specs.runner import prove

    rep = prove(
        args.component,
        _spec_config(args),
        _spec_quirks(args, default_faithful=False),
        max_k=args.max_k,
        timeout_ms=int(args.timeout * 1000),
    )
    rep.pop("_results")
    if args.json:
        _emit_json(rep)
    else:
        print(
            f"{rep['component']} {rep['mode']}: k-induction (k <= {rep['max_k']}) over {rep['universe']}, "
            f"{rep['seconds']:.2f}s"
        )
        _print_rows(rep["invariants"])
        n = sum(1 for r in rep["invariants"] if r["status"] == "proved")
        print(f"{n} of {len(rep['invariants'])} proved; verdict: {rep['verdict']}")
    return EXIT[rep["verdict"]]


def cmd_bmc(args: argparse.Namespace) -> int:
    from kvmodel.specs.runner import run_bmc

    check_outputs(args, ())
    with Progress(f"bmc {args.component}") as bar:
        rep = run_bmc(
            args.component,
            args.depth,
            _spec_config(args),
            _spec_quirks(args, default_faithful=True),
            out=args.out,
            induction=not args.no_induction,
            timeout_ms=int(args.timeout * 1000),
            progress=lambda d, t: bar.update(f"depth {d} of {args.depth} ({t:.1f}s)", force=True),
        )
    if args.json:
        _emit_json(rep)
    else:
        print(
            f"{rep['component']} {rep['mode']}: BMC to depth {rep['depth']} over {rep['universe']} "
            f"({str(rep['width']) + '-bit' if rep['width'] else 'integers'}), {rep['seconds']:.2f}s"
        )
        _print_rows(rep["invariants"])
        print(f"{len(rep['traces'])} counterexample trace(s), each replayed on the executable model")
        print(f"verdict: {rep['verdict']}")
    return EXIT[rep["verdict"]]


# ----------------------------------------------------------------------------- conform

CONFORM_TARGETS = ("dynamo-radix-tree", "dynamo-mocker", "vllm-block-pool")


def _save_counterexample(args: argparse.Namespace, out: dict[str, Any], key: str) -> None:
    """Write a divergent workload (under ``key``) to ``--out`` and note its path in ``out``."""
    if out["counterexample"] and args.out:
        path = Path(args.out) / f"conform-{args.target}-seed{args.seed}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"target": args.target, key: out["counterexample"]}, indent=2) + "\n")
        out["counterexample_path"] = str(path)


def cmd_conform(args: argparse.Namespace) -> int:
    """Differential conformance: the model against a real implementation."""
    from kvmodel.conformance import radix

    if args.target not in CONFORM_TARGETS:
        raise UsageError(f"unknown target {args.target!r} (known: {', '.join(CONFORM_TARGETS)})")
    if args.workloads < 1:
        raise UsageError("--workloads must be at least 1")
    if args.target == "vllm-block-pool":
        return _conform_vllm(args)
    if args.target == "dynamo-mocker":
        return _conform_mocker(args)
    why = radix.real_available()
    if why is not None:
        print(f"kvmodel conform: the real implementation is not available: {why}", file=sys.stderr)
        return 2
    with Progress(f"conform {args.target}") as bar:
        rep = radix.run(
            radix.ModelRadixTree(args.revision),
            radix.RealRadixTree(),
            workloads=args.workloads,
            seed=args.seed,
            max_ops=args.max_ops,
            progress=lambda n: bar.update(f"{n} of {args.workloads} workloads"),
        )
    out = rep.to_json()
    out["model_revision"] = args.revision
    _save_counterexample(args, out, "operations")
    if args.json:
        _emit_json(out)
    else:
        print(
            f"{args.target}: {out['workloads']} workloads, {out['events']} events ({out['operations']} operations), "
            f"{out['divergences']} divergences, {out['seconds']:.2f}s ({out['events_per_second']} events/s, both sides)"
        )
        d = out["first_divergence"]
        if d:
            print(f"DIVERGENCE at step {d['step']} ({d['what']}): model {d['model']}, real {d['real']}")
            print("minimal operations:")
            for op in out["counterexample"]:
                print(f"  {json.dumps(op, sort_keys=True)}")
    return 1 if out["divergences"] else 0


def _conform_mocker(args: argparse.Namespace) -> int:
    """The native backend (leases over the native pool) against the real mocker's KV events."""
    from kvmodel.conformance import mocker

    why = mocker.available()
    if why is not None:
        print(f"kvmodel conform: the real implementation is not available: {why}", file=sys.stderr)
        return 2
    with Progress(f"conform {args.target}") as bar:
        rep = mocker.run(
            workloads=args.workloads, seed=args.seed, progress=lambda n: bar.update(f"{n} of {args.workloads}")
        )
    out = rep.to_json()
    _save_counterexample(args, out, "workload")
    if args.json:
        _emit_json(out)
    else:
        print(
            f"{args.target} (ai-dynamo-runtime 1.6.1 mocker, sequential and concurrent requests): "
            f"{out['workloads']} workloads, {out['requests']} requests, {out['events']} events, "
            f"{out['divergences']} divergences, {out['seconds']:.2f}s ({out['events_per_second']} events/s, both sides)"
        )
        cov = out["coverage"]
        print(
            f"  exercised: {cov.get('concurrent_requests', 0)} concurrent requests, "
            f"{cov.get('chunked_prefills', 0)} chunked prefills, {cov.get('preemptions', 0)} preemptions, "
            f"{cov.get('rejected', 0)} rejections, {cov.get('stalled_workloads', 0)} stalled workloads"
        )
        d = out["first_divergence"]
        if d:
            print(f"DIVERGENCE ({d['what']} #{d['index']}): model {d['model']}, real {d['real']}")
            print(f"  workload: {json.dumps(out['counterexample'], sort_keys=True)}")
    return 1 if out["divergences"] else 0


def _conform_vllm(args: argparse.Namespace) -> int:
    """The native block pool against vLLM's real BlockPool (CPU build, tools/install-vllm.sh)."""
    from kvmodel.conformance import vllm_pool

    why = vllm_pool.real_available()
    if why is not None:
        print(f"kvmodel conform: the real implementation is not available: {why}", file=sys.stderr)
        return 2
    real = vllm_pool.VllmPool()
    with Progress(f"conform {args.target}") as bar:
        rep = vllm_pool.run(
            vllm_pool.ModelPool(),
            real,
            workloads=args.workloads,
            seed=args.seed,
            max_ops=args.max_ops,
            progress=lambda n: bar.update(f"{n} of {args.workloads} workloads"),
        )
    out = rep.to_json()
    out["duplicate_copy_witness"] = vllm_pool.duplicate_witness(real)
    _save_counterexample(args, out, "operations")
    if args.json:
        _emit_json(out)
    else:
        print(
            f"{args.target} ({out['real']}): {out['workloads']} workloads, {out['operations']} operations, "
            f"{out['divergences']} divergences, {out['seconds']:.2f}s ({out['operations_per_second']} operations/s, "
            f"both sides); {out['duplicate_events']} per-copy events beyond the per-hash transitions (documented)"
        )
        d = out["first_divergence"]
        if d:
            print(f"DIVERGENCE at step {d['step']} ({d['what']}): model {d['model']}, real {d['real']}")
            for op in out["counterexample"]:
                print(f"  {json.dumps(op, sort_keys=True)}")
    return 1 if out["divergences"] else 0


# ----------------------------------------------------------------------------- vectors


def cmd_vectors(args: argparse.Namespace) -> int:
    from kvmodel import vectors

    for c in args.component or []:
        if c not in vectors.HARNESSES:
            raise UsageError(f"unknown vectors component {c!r} (known: {', '.join(sorted(vectors.HARNESSES))})")
    if args.revision is not None:
        comps = set(args.component or [])
        if len(comps) != 1:
            raise UsageError("--revision needs exactly one --component (a vectors component, e.g. kvbm_block_registry)")
        (vc,) = comps
        h = vectors.HARNESSES.get(vc)
        if h is None:
            raise UsageError(f"unknown vectors component {vc!r} (known: {', '.join(sorted(vectors.HARNESSES))})")
        _revision_quirks(h.model_component, args.revision)
    results = vectors.run_file(args.file, args.component, revision_name=args.revision)
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for r in results:
        counts[r.status] += 1
    if args.json:
        _emit_json(
            {
                "file": str(args.file),
                "results": [
                    {
                        "id": r.id,
                        "component": r.component,
                        "status": r.status,
                        "message": r.message,
                        "revision": r.revision,
                    }
                    for r in results
                ],
                "passed": counts["PASS"],
                "failed": counts["FAIL"],
                "skipped": counts["SKIP"],
                "verdict": "violation" if counts["FAIL"] else "pass" if counts["PASS"] else "inconclusive",
            }
        )
    else:
        for r in results:
            print(r.line())
        print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    if counts["FAIL"]:
        return EXIT["violation"]
    return EXIT["pass"] if counts["PASS"] else EXIT["inconclusive"]  # nothing ran: no verdict


# ----------------------------------------------------------------------------- catalogues


def cmd_invariants(args: argparse.Namespace) -> int:
    from kvmodel import invariants
    from kvmodel.docs import invariants_markdown

    comps = invariants.components()
    for c in args.component or []:
        if c not in comps:
            raise UsageError(f"unknown component {c!r} (known: {', '.join(comps)})")
    sel = [i for i in invariants.ALL if not args.component or i.component in args.component]
    if args.json:
        _emit_json({"count": len(sel), "invariants": [i.to_json() for i in sel]})
    elif args.markdown:
        sys.stdout.write(invariants_markdown(args.component))
    else:
        for i in sel:
            print(f"{i.component:<22} {i.name:<36} {i.kind:<6} {i.statement}")
        print(f"{len(sel)} invariants")
    return 0


def cmd_quirks(args: argparse.Namespace) -> int:
    from kvmodel.model.quirks import QUIRKS, REVISIONS, quirk_revisions

    known = sorted({q.component for q in QUIRKS.values()} | {c for c, _ in REVISIONS})
    for c in args.component or []:
        if c not in known:
            raise UsageError(f"unknown component {c!r} (known: {', '.join(known)})")
    sel = [q for q in QUIRKS.values() if not args.component or q.component in args.component]
    revs = [r for r in REVISIONS.values() if not args.component or r.component in args.component]
    if args.json:
        _emit_json(
            {
                "count": len(sel),
                "quirks": [
                    {
                        "name": q.name,
                        "component": q.component,
                        "ref": q.ref,
                        "summary": q.summary,
                        "breaks": list(q.breaks),
                        "requires": list(q.requires),
                        "revisions": list(quirk_revisions(q.name)),
                    }
                    for q in sel
                ],
                "revisions": [
                    {
                        "name": r.name,
                        "component": r.component,
                        "default": r.default,
                        "source": r.source,
                        "summary": r.summary,
                        "quirks": sorted(r.quirks),
                    }
                    for r in revs
                ],
            }
        )
    else:
        for q in sel:
            print(
                f"{q.component:<22} {q.name:<38} {q.ref:<12} in {', '.join(quirk_revisions(q.name)) or '-'}; "
                f"breaks {', '.join(q.breaks)}"
            )
        print(f"{len(sel)} quirks")
        for r in revs:
            tag = " (the seed's: faithful)" if r.default else ""
            print(f"revision {r.component} {r.name}{tag}: {r.summary}; {len(r.quirks)} quirks")
    return 0


# ----------------------------------------------------------------------------- main


def cmd_mutants(args: argparse.Namespace) -> int:
    from kvmodel.mutants import runner
    from kvmodel.mutants.catalogue import MUTANTS

    if args.engine == "bmc":  # the name: BMC of an unchanged spec cannot see a Python edit,
        args.engine = "z3"  # so the mutant's own steps are validated against the ideal relation
    if args.engine in (None, "default"):
        engines = list(runner.DEFAULT_ENGINES)
    elif args.engine == "all":
        engines = list(runner.ENGINES)
    else:
        engines = [args.engine]
    known = {m.name for m in MUTANTS}
    for n in args.only or []:
        if n not in known:
            raise UsageError(f"unknown mutant {n!r} (kvmodel mutants --list shows them)")
    if args.list:
        for m in MUTANTS:
            print(f"{m.name:<40} {m.component:<22} {m.idea}")
        return 0

    total = len(args.only or MUTANTS)
    done = 0
    with Progress("mutants") as bar:

        def progress(line: str) -> None:
            nonlocal done
            done += 1
            if not args.json:
                bar.close()
                print(line, flush=True)
            bar.update(f"{done} of {total} mutants checked", force=True)

        rep = runner.run(engines, only=args.only, seed=args.seed, max_examples=args.max_examples, progress=progress)
    rep["verdict"] = runner.verdict(rep)
    if args.json:
        _emit_json(rep)
    else:
        sm = rep["summary"]
        print(
            f"{sm['killed']} of {sm['mutants']} mutants killed ({sm['killed_by_default_check']} by the default "
            f"kvmodel check engines) in {rep['seconds']:.0f}s"
        )
        for e, x in sm["per_engine"].items():
            extra = ""
            if "median_length_over_minimum" in x:
                extra = f", length/minimum median {x['median_length_over_minimum']}, max {x['max_length_over_minimum']}"
            med = x["median_seconds_to_kill"]
            print(
                f"  {e:<10} killed {x['killed']}/{x['applicable']}"
                + (f", median time to kill {med:.3f}s" if med is not None else "")
                + extra
            )
        print(f"verdict: {rep['verdict']}")
    return EXIT[rep["verdict"]]


# Which explore / prove / bmc options belong to which component (the others are refused).
EXPLORE_OPTIONS: dict[str, tuple[str, ...]] = {
    "kv_manager": ("capacity", "blocks", "partials", "max_batch", "max_refcount", "evictor", "no_channel"),
    "lru_evictor_wallclock": ("objects", "max_queue", "cleanup_threshold"),
    "lru_evictor_counter": ("objects",),
    "kvbm_block_registry": ("hashes", "states", "publish_handles", "arcs", "publishers", "max_pending", "shared"),
    "g1_native": ("capacity", "owners", "prompts", "pushes", "decode"),
    "g1_kvbm": ("capacity", "owners", "prompts", "pushes", "decode"),
}
EXPLORE_DEFAULTS: dict[str, Any] = {
    "blocks": 3,
    "partials": 1,
    "max_batch": 2,
    "max_refcount": 2,
    "evictor": "wallclock",
    "objects": 3,
    "max_queue": 6,
    "cleanup_threshold": 1,
    "hashes": 1,
    "states": 2,
    "publish_handles": 1,
    "arcs": 1,
    "publishers": 2,
    "max_pending": 1,
    "owners": 2,
    "prompts": 2,
    "pushes": 1,
    "decode": 1,
}
SPEC_OPTIONS: dict[str, tuple[str, ...]] = {
    "kv_manager": ("capacity", "blocks", "partials", "max_batch", "no_channel"),
    "lru_evictor_wallclock": ("objects", "max_queue", "cleanup_threshold"),
    "lru_evictor_counter": ("objects",),
    "kvbm_block_registry": ("hashes", "states", "publish_handles", "arcs", "publishers", "max_pending"),
    "g1_native": ("owners", "prompts", "pushes", "decode", "capacity"),
    "g1_kvbm": ("owners", "prompts", "capacity"),
}
N = integer


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="kvmodel", description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--version", action="version", version=f"kvmodel {__version__}")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=OneLineParser)

    c = sub.add_parser("check", help="run the invariant suites (every component and engine by default)")
    c.add_argument("--component", action="append", help="a component (repeatable; default: all)")
    c.add_argument("--engine", choices=[*ENGINES, "all"], help="engine (default: all)")
    g = c.add_mutually_exclusive_group()
    g.add_argument("--ideal", action="store_true", help="only the ideal model (quirks off)")
    g.add_argument("--faithful", action="store_true", help="only the faithful model (the seed's revision)")
    g.add_argument("--revision", help="only the faithful model at this named revision (one component)")
    c.add_argument("--seed", type=SEED, default=0)
    c.add_argument("--profile", choices=sorted(PROFILES), default="ci")
    c.add_argument("--max-examples", type=N(1, 1_000_000), help="Hypothesis examples (1 .. 1,000,000)")
    c.add_argument("--steps", type=N(1, 10_000), help="steps per example (1 .. 10,000)")
    c.add_argument("--out", type=nonempty, default="kvmodel-traces", help="where counterexample traces go")
    c.add_argument("--json", action="store_true")
    c.add_argument("--itf", action="store_true", help="also write each counterexample in the ITF format (.itf.json)")
    c.add_argument(
        "--html", type=nonempty, metavar="FILE", help="also write an HTML report with a page per counterexample"
    )
    c.add_argument(
        "--junit", type=nonempty, metavar="FILE", help="also write JUnit XML: one test case per check and invariant"
    )
    c.set_defaults(func=cmd_check)

    r = sub.add_parser("replay", help="re-run a trace on the model and report the first divergence")
    r.add_argument("trace")
    r.add_argument("--json", action="store_true")
    r.add_argument("--brief", action="store_true", help="only the verdict, not the step-by-step timeline")
    r.add_argument(
        "--itf", type=nonempty, metavar="FILE", help="also write the trace in the ITF format (Apalache/Quint)"
    )
    r.add_argument("--revision", help="replay on this revision's quirks instead of the trace's own")
    r.set_defaults(func=cmd_replay)

    sh = sub.add_parser("show", help="a trace for people: a terminal timeline, and an HTML page with --html")
    sh.add_argument("trace")
    sh.add_argument("--html", type=nonempty, metavar="FILE", help="write a self-contained HTML page (SVG timeline)")
    sh.set_defaults(func=cmd_show)

    e = sub.add_parser("explore", help="exhaustive breadth-first exploration of a bounded configuration")
    e.add_argument("--component", default="kv_manager")
    e.add_argument("--capacity", type=N(1, 64), help="max_capacity, 1 .. 64 (default 2; g1 and kvbm: 3)")
    e.add_argument("--blocks", type=N(1, 12), help="kv_manager: full-block ids, 1 .. 12 (default 3)")
    e.add_argument("--partials", type=N(0, 6), help="kv_manager: partial-block names, 0 .. 6 (default 1)")
    e.add_argument("--max-batch", type=N(1, 6), help="kv_manager: longest Use/Deref/Destroy list, 1 .. 6 (default 2)")
    e.add_argument("--max-refcount", type=N(1, 8), help="kv_manager: refcount bound, 1 .. 8 (default 2)")
    e.add_argument(
        "--evictor", choices=["wallclock", "counter"], help="kv_manager: the LRU evictor (default wallclock)"
    )
    e.add_argument("--no-channel", action="store_true", help="kv_manager: no Store/Remove response channel")
    e.add_argument("--objects", type=N(1, 8), help="LRU: interchangeable objects, 1 .. 8 (default 3)")
    e.add_argument("--max-queue", type=N(1, 64), help="LRU wall-clock: lazy-queue bound, 1 .. 64 (default 6)")
    e.add_argument("--cleanup-threshold", type=N(1, 1000), help="LRU wall-clock: cleanup threshold (default 1)")
    e.add_argument("--hashes", type=N(1, 4), help="registry: sequence hashes, 1 .. 4 (default 1)")
    e.add_argument("--states", type=N(1, 6), help="registry: block-state slots, 1 .. 6 (default 2)")
    e.add_argument("--publish-handles", type=N(0, 4), help="registry: publish-handle slots, 0 .. 4 (default 1)")
    e.add_argument("--arcs", type=N(0, 4), help="registry: caller Arc slots, 0 .. 4 (default 1)")
    e.add_argument("--publishers", type=N(0, 4), help="registry: publisher slots, 0 .. 4 (default 2)")
    e.add_argument("--max-pending", type=N(0, 8), help="registry: undrained drops per registry, 0 .. 8 (default 1)")
    e.add_argument("--shared", action="store_true", help="registry: a second Device registry")
    e.add_argument("--owners", type=N(1, 6), help="g1/kvbm: requests, 1 .. 6 (default 2)")
    e.add_argument("--prompts", type=N(1, 5), help="g1: prompts, 1 .. 3; kvbm: 1 .. 5 (default 2)")
    e.add_argument("--pushes", type=N(0, 8), help="g1/kvbm: decode tokens per request, 0 .. 8 (default 1)")
    e.add_argument("--decode", type=N(0, 8), help="g1/kvbm: decode-reservation slots, 0 .. 8 (default 1)")
    eg = e.add_mutually_exclusive_group()
    eg.add_argument("--faithful", action="store_true", help="the seed's revision: every quirk it has")
    eg.add_argument("--ideal", action="store_true", help="no quirks (the default)")
    eg.add_argument("--quirk", action="append", help="switch one quirk on (repeatable)")
    eg.add_argument("--revision", help="the quirks of a named revision of the real code (kvmodel quirks lists them)")
    e.add_argument("--no-symmetry", action="store_true")
    e.add_argument("--max-states", type=N(1, 50_000_000), default=2_000_000, help="stop after this many states")
    e.add_argument("--dot", type=nonempty, metavar="FILE", help="write the state graph in Graphviz DOT")
    e.add_argument("--svg", type=nonempty, metavar="FILE", help="draw the state graph as SVG (needs Graphviz dot)")
    e.add_argument("--mark", metavar="INVARIANT", help="the counterexample marked in the graph (default: shallowest)")
    e.add_argument("--out", type=nonempty, default="kvmodel-traces", help="where counterexample traces go")
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=cmd_explore)

    for name, helptext in (
        ("prove", "prove the invariants by k-induction with Z3 (ideal model by default)"),
        ("bmc", "bounded model checking with Z3 (faithful model by default); one trace per violation"),
    ):
        z = sub.add_parser(name, help=helptext)
        z.add_argument("--component", default="kv_manager")
        z.add_argument("--capacity", type=N(1, 16), help="kv_manager / g1 / kvbm: capacity, 1 .. 16 (default 4 / 3)")
        z.add_argument("--blocks", type=N(1, 16), help="kv_manager: full-block ids, 1 .. 16 (default 6)")
        z.add_argument("--partials", type=N(0, 8), help="kv_manager: partial blocks, 0 .. 8 (default 1)")
        z.add_argument(
            "--max-batch", type=N(1, 8), help="kv_manager: longest Use/Deref/Destroy list, 1 .. 8 (default 2)"
        )
        z.add_argument("--no-channel", action="store_true", help="kv_manager: no response channel")
        z.add_argument("--objects", type=N(1, 8), help="LRU: objects, 1 .. 8 (default 3)")
        z.add_argument("--max-queue", type=N(1, 32), help="LRU wall-clock: lazy-queue slots, 1 .. 32 (default 6)")
        z.add_argument("--cleanup-threshold", type=N(1, 1000), help="LRU wall-clock: cleanup threshold (default 1)")
        z.add_argument("--hashes", type=N(1, 4), help="registry: sequence hashes, 1 .. 4 (default 1)")
        z.add_argument("--states", type=N(1, 6), help="registry: block-state slots, 1 .. 6 (default 2)")
        z.add_argument("--publish-handles", type=N(0, 4), help="registry: publish-handle slots, 0 .. 4 (default 1)")
        z.add_argument("--arcs", type=N(0, 4), help="registry: caller Arc slots, 0 .. 4 (default 0)")
        z.add_argument("--publishers", type=N(0, 4), help="registry: publisher slots, 0 .. 4 (default 2)")
        z.add_argument("--max-pending", type=N(0, 4), help="registry: undrained drops per registry, 0 .. 4 (default 1)")
        z.add_argument("--owners", type=N(1, 4), help="g1/kvbm: requests, 1 .. 4 (default 2)")
        z.add_argument("--prompts", type=N(1, 4), help="g1/kvbm: prompts, 1 .. 4 (default 2 / 4)")
        z.add_argument("--pushes", type=N(0, 4), help="g1: decode tokens per request, 0 .. 4 (default 1)")
        z.add_argument("--decode", type=N(0, 4), help="g1: decode reservation slots, 0 .. 4 (default 1)")
        zg = z.add_mutually_exclusive_group()
        zg.add_argument("--faithful", action="store_true", help="the seed's revision: every quirk it has")
        zg.add_argument("--ideal", action="store_true", help="no quirks")
        zg.add_argument("--quirk", action="append", help="switch one quirk on (repeatable)")
        zg.add_argument("--revision", help="the quirks of a named revision of the real code (kvmodel quirks)")
        z.add_argument(
            "--timeout", type=seconds(), default=600.0, help="per solver query, 0.001 .. 86400 seconds (default 600)"
        )
        z.add_argument("--json", action="store_true")
        if name == "prove":
            z.add_argument("--max-k", type=N(1, 20), default=3, help="largest k tried, 1 .. 20 (default 3)")
            z.set_defaults(func=cmd_prove)
        else:
            z.add_argument("--depth", type=N(0, 200), default=8, help="steps to unroll, 0 .. 200 (default 8)")
            z.add_argument("--out", type=nonempty, default="kvmodel-traces", help="where counterexample traces go")
            z.add_argument(
                "--no-induction", action="store_true", help="pure BMC: do not discharge invariants by 1-induction first"
            )
            z.set_defaults(func=cmd_bmc)

    cf = sub.add_parser("conform", help="differential conformance of the model against a real implementation")
    cf.add_argument("--target", default="dynamo-radix-tree", help=f"one of {', '.join(CONFORM_TARGETS)}")
    cf.add_argument("--workloads", type=N(1, 1_000_000), default=200, help="generated workloads (default 200)")
    cf.add_argument("--seed", type=SEED, default=0)
    cf.add_argument(
        "--max-ops", type=N(1, 1000), default=24, help="operations per workload at most, 1 .. 1000 (default 24)"
    )
    cf.add_argument("--revision", choices=["1.6.1", "4276866"], default="1.6.1", help="model revision (default 1.6.1)")
    cf.add_argument("--out", type=nonempty, default="kvmodel-traces", help="where a divergent workload is written")
    cf.add_argument("--json", action="store_true")
    cf.set_defaults(func=cmd_conform)

    mu = sub.add_parser("mutants", help="the mutation benchmark: seeded bugs against the engines")
    mu.add_argument(
        "--engine",
        choices=["hypothesis", "explore", "z3", "bmc", "conform", "all", "default"],
        help="default: hypothesis, explore and conform (what kvmodel check runs); z3 (alias bmc): the "
        "mutant's steps checked against the ideal Z3 relation",
    )
    mu.add_argument("--only", action="append", help="only this mutant (repeatable)")
    mu.add_argument("--list", action="store_true", help="list the mutants and exit")
    mu.add_argument("--seed", type=SEED, default=0)
    mu.add_argument("--max-examples", type=N(1, 1_000_000), default=1000, help="Hypothesis examples (default 1000)")
    mu.add_argument("--json", action="store_true")
    mu.set_defaults(func=cmd_mutants)

    v = sub.add_parser("vectors", help="run test vectors (dynamo-kv-test-vectors/1 format)")
    v.add_argument("file")
    v.add_argument("--component", action="append", help="only vectors of this component (repeatable)")
    v.add_argument(
        "--revision", help="run on this revision of the model (default: the one each vector's source_version names)"
    )
    v.add_argument("--json", action="store_true")
    v.set_defaults(func=cmd_vectors)

    i = sub.add_parser("invariants", help="print the invariant catalogue")
    i.add_argument("--component", action="append")
    fmt = i.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true")
    fmt.add_argument("--markdown", action="store_true", help="the catalogue as docs/invariants.md")
    i.set_defaults(func=cmd_invariants)

    q = sub.add_parser("quirks", help="print the named quirks (known defects of the real code) and the revisions")
    q.add_argument("--component", action="append")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_quirks)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; exit codes as in :mod:`kvmodel.verdicts` (0 pass, 1 violation, 2 error
    or bad input, 3 inconclusive). Never a traceback for bad input: one line naming the file or
    option and the problem."""
    from kvmodel.model.errors import InvalidInput
    from kvmodel.traces import TraceError
    from kvmodel.vectors import VectorFileError

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, or a one-line argparse error
        return int(e.code) if isinstance(e.code, int) else 2
    if not getattr(args, "func", None):
        print("kvmodel: error: a command is required (kvmodel --help lists them)", file=sys.stderr)
        return 2
    comp = getattr(args, "component", None)
    if isinstance(comp, str):
        args.component = canonical_component(comp)
    elif isinstance(comp, list):
        args.component = [canonical_component(c) for c in comp]
    try:
        rc: int = args.func(args)
        sys.stdout.flush()
        return rc
    except BrokenPipeError:
        # the reader went away (`| head`): silence the rest, as Python's documentation advises
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except (TraceError, VectorFileError) as e:
        print(f"kvmodel: {e}", file=sys.stderr)
        return 2
    except UsageError as e:
        print(f"kvmodel {args.cmd}: {e}", file=sys.stderr)
        return 2
    except InvalidInput as e:
        print(f"kvmodel {args.cmd}: {e}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as e:  # e.g. an unknown quirk name in a trace; an unwritable output
        print(f"kvmodel {args.cmd}: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
