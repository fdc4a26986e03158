"""The ``kvmodel`` command line: parsing and printing only.

What each command computes lives elsewhere — the check matrix in :mod:`kvmodel.suite`, the
engines in :mod:`kvmodel.engines`, each component's worlds, options and targets in
:mod:`kvmodel.components`. Exit codes everywhere as in :mod:`kvmodel.verdicts`: 0 pass,
1 violation, 2 error or bad input (one line naming the option or file), 3 inconclusive.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kvmodel import __version__, components, signals
from kvmodel.cliargs import (
    SEED,
    OneLineParser,
    UsageError,
    add_component_options,
    check_outputs,
    explore_world,
    integer,
    integer_or_auto,
    memory_size,
    nonempty,
    quirks_of_args,
    revision_quirks,
    seconds,
    spec_quirks,
    spec_universe,
)
from kvmodel.components import EXPLORE, SPEC
from kvmodel.engines import ENGINE_NAMES, Budget
from kvmodel.explore_workers import MAX_WORKERS, default_workers
from kvmodel.jsonio import write_text
from kvmodel.profiles import PROFILES
from kvmodel.progress import Progress
from kvmodel.verdicts import EXIT


def _emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def _log(args: argparse.Namespace, msg: str, bar: Progress | None = None) -> None:
    if bar is not None:
        bar.close()
    print(msg, file=sys.stderr if getattr(args, "json", False) else sys.stdout, flush=True)


def _component(name: str, has: Any = None, what: str = "component") -> components.Component:
    try:
        return components.get(name, has, what)
    except components.UnknownComponent as e:
        raise UsageError(e.detail) from None


def cmd_check(args: argparse.Namespace) -> int:
    from kvmodel import report, suite

    check_outputs(args, ("html", "junit"))
    checkable = components.with_(lambda c: c.system or any(t.in_check for t in c.conform))
    comps = [_component(n, lambda c: c in checkable).name for n in args.component or [c.name for c in checkable]]
    if args.revision and len(comps) != 1:
        raise UsageError("--revision needs exactly one --component")
    if args.revision:
        revision_quirks(comps[0], args.revision)
    mode = "ideal" if args.ideal else "faithful" if (args.faithful or args.revision) else "both"
    prof = PROFILES[args.profile]
    budget = Budget(args.max_examples or prof.max_examples, args.steps or prof.steps, args.seed, Path(args.out))
    engines = None if args.engine in (None, "all") else [args.engine]
    with Progress("check") as bar:
        results = suite.run(
            comps,
            engines,
            mode=mode,
            revision_name=args.revision,
            budget=budget,
            progress=lambda m: bar.update(m, force=True),
            done=lambda r: _log(args, report.row_line(r.to_json()), bar),
        )
    summary = suite.summary(
        results,
        mode=mode,
        engines=engines or list(ENGINE_NAMES),
        components=comps,
        profile=args.profile,
        seed=args.seed,
    )
    for line in report.write_outputs(summary, html=args.html, junit=args.junit, itf=args.itf):
        _log(args, line)
    rows = summary["results"]
    if args.json:
        _emit_json(summary)
    else:
        n_ok = sum(1 for r in rows if r["outcome"] == "pass")
        print(f"{n_ok} of {len(rows)} checks as expected; verdict: {summary['verdict']}")
    return EXIT[summary["verdict"]]


def cmd_replay(args: argparse.Namespace) -> int:
    from kvmodel import show, traces

    check_outputs(args, ("itf",), ())
    trace = traces.load(args.trace)
    if args.revision:
        qs = revision_quirks(trace["component"], args.revision)
        trace = dict(trace, quirks=sorted(qs), revision=args.revision)
    if args.itf:
        from kvmodel.itf import from_trace

        write_text(args.itf, json.dumps(from_trace(trace), indent=1, sort_keys=True) + "\n")
    with Progress("replay") as bar:
        tick = lambda i, n: bar.update(f"step {i:,} of {n:,}")  # noqa: E731
        res = traces.replay(trace, source=str(args.trace), keep_going=args.keep_going, progress=tick)
    if args.json:
        _emit_json({"trace": str(args.trace), **res.to_json()})
        return EXIT[res.verdict]
    if not args.brief:
        print(show.terminal(trace), end="")
    print("\n".join(show.replay_lines(trace, res, str(args.trace))))
    return EXIT[res.verdict]


def cmd_show(args: argparse.Namespace) -> int:
    from kvmodel import show, traces

    check_outputs(args, ("html",), ())
    trace = traces.load(args.trace)
    sys.stdout.write(show.terminal(trace))
    if args.html:
        write_text(args.html, show.page(trace, title=Path(args.trace).name))
        print(f"wrote {args.html}")
    return 0


def cmd_explore(args: argparse.Namespace) -> int:
    from kvmodel import explorer, traces
    from kvmodel.model.quirks import breakable

    c = _component(args.component, lambda c: c.space, "explorable component")
    world = explore_world(args, c)
    check_outputs(args, ("dot", "svg"))
    if args.mark is not None:  # checked before the search, not after it
        from kvmodel import invariants

        names = sorted(i.name for i in invariants.for_component(c.name))
        if not (args.dot or args.svg):
            raise UsageError("--mark marks a counterexample in the state graph: give --dot or --svg")
        if args.mark not in names:
            raise UsageError(f"--mark: {args.mark!r:.60} is not an invariant of {c.name} (known: {', '.join(names)})")
    quirks = quirks_of_args(args, c, default_faithful=False)
    space = c.explore_space(world)
    with Progress(f"explore {c.name}") as bar:
        r = explorer.explore(
            dict(world.config),
            quirks,
            space,
            symmetry=not args.no_symmetry,
            max_states=args.max_states,
            graph=bool(args.dot or args.svg),
            progress=lambda n, t, d: bar.update(f"{n:,} states, {t:,} transitions, depth {d}"),
            until=None if args.exhaustive else breakable(c.name, quirks) - explorer.cannot_break(space),
            workers=args.workers,
            max_memory=args.max_memory,
        )
    out = r.to_json()
    out["verdict"] = r.verdict(expect_witnesses=not quirks)
    out["mode"] = f"revision {args.revision}" if args.revision else "faithful" if args.faithful else out["mode"]
    paths = {}
    if r.violations and args.out:
        for inv in sorted(r.violations):
            p = Path(args.out) / f"{c.name}-explore-{inv.replace('.', '_')}.json"
            traces.write(explorer.violation_trace(r, inv), p)
            paths[inv] = str(p)
    out["traces"] = paths
    if args.dot or args.svg:
        from kvmodel import graphs

        try:
            out.update(
                graphs.write(r.graph, f"{c.name} {out['mode']}: {r.states} states", args.mark, args.dot, args.svg)
            )
        except graphs.GraphvizError as e:
            raise UsageError(str(e)) from e
    if args.json:
        _emit_json(out)
    else:
        sym = "off" if args.no_symmetry else "on"
        print(f"{c.name} {out['mode']}, config {dict(world.config)}, space {space.to_json()}, symmetry {sym}")
        print("\n".join(r.describe(args.max_states, paths)))
    return EXIT[out["verdict"]]


def cmd_prove(args: argparse.Namespace) -> int:
    from kvmodel.specs.runner import describe, prove

    c = _component(args.component, lambda c: c.spec, "component with a Z3 spec")
    quirks = spec_quirks(args, c, default_faithful=False)
    rep = prove(c.name, spec_universe(args, c), quirks, max_k=args.max_k, timeout_ms=int(args.timeout * 1000))
    rep.pop("_results")
    if args.json:
        _emit_json(rep)
        return EXIT[rep["verdict"]]
    print("\n".join(describe(rep)))
    return EXIT[rep["verdict"]]


def cmd_bmc(args: argparse.Namespace) -> int:
    from kvmodel.specs.runner import describe, run_bmc

    c = _component(args.component, lambda c: c.spec, "component with a Z3 spec")
    check_outputs(args, ())
    quirks = spec_quirks(args, c, default_faithful=True)
    with Progress(f"bmc {c.name}") as bar:
        rep = run_bmc(
            c.name,
            args.depth,
            spec_universe(args, c),
            quirks,
            out=args.out,
            induction=not args.no_induction,
            timeout_ms=int(args.timeout * 1000),
            progress=lambda d, t: bar.update(f"depth {d} of {args.depth} ({t:.1f}s)", force=True),
        )
    if args.json:
        _emit_json(rep)
        return EXIT[rep["verdict"]]
    print("\n".join(describe(rep)))
    return EXIT[rep["verdict"]]


def cmd_vectors(args: argparse.Namespace) -> int:
    from kvmodel import vectors

    known = vectors.harnesses()
    for n in args.component or []:
        if n not in known:
            raise UsageError(f"unknown vectors component {n!r} (known: {', '.join(sorted(known))})")
    if args.revision is not None:
        if len(set(args.component or [])) != 1:
            raise UsageError("--revision needs exactly one --component (a vectors component, e.g. kvbm_block_registry)")
        revision_quirks(known[args.component[0]].model_component, args.revision)
    results = vectors.run_file(args.file, args.component, revision_name=args.revision)
    report, lines = vectors.report(str(args.file), results)
    _emit_json(report) if args.json else print("\n".join(lines))
    return EXIT[report["verdict"]]


def cmd_invariants(args: argparse.Namespace) -> int:
    from kvmodel import docs, invariants

    has = lambda c: invariants.for_component(c.name)  # noqa: E731
    wanted = [_component(n, has, "component with invariants").name for n in args.component or []]
    if args.markdown:
        sys.stdout.write(docs.invariants_markdown(wanted or None))
        return 0
    report, lines = docs.invariants_report(wanted)
    _emit_json(report) if args.json else print("\n".join(lines))
    return 0


def cmd_quirks(args: argparse.Namespace) -> int:
    from kvmodel import docs

    wanted = [_component(n).name for n in args.component or []]
    report, lines = docs.quirks_report(wanted or list(components.names()))
    _emit_json(report) if args.json else print("\n".join(lines))
    return 0


def cmd_mutants(args: argparse.Namespace) -> int:
    from kvmodel.mutants import runner
    from kvmodel.mutants.catalogue import mutants

    engines = runner.engines_named(args.engine)
    known = {m.name: m for m in mutants()}
    if bad := [n for n in args.only or [] if n not in known]:
        raise UsageError(f"unknown mutant {bad[0]!r} (kvmodel mutants --list shows them)")
    if args.list:
        print("\n".join(f"{m.name:<40} {m.component:<22} {m.idea}" for m in known.values()))
        return 0
    total, done = len(args.only or known), [0]
    with Progress("mutants") as bar:

        def progress(line: str) -> None:
            done[0] += 1
            if not args.json:
                bar.close()
                print(line, flush=True)
            bar.update(f"{done[0]} of {total} mutants checked", force=True)

        rep = runner.run(engines, only=args.only, seed=args.seed, max_examples=args.max_examples, progress=progress)
    rep["verdict"] = runner.verdict(rep)
    if args.json:
        _emit_json(rep)
    else:
        print("\n".join(runner.summary_lines(rep)))
    return EXIT[rep["verdict"]]


def _quirk_group(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--faithful", action="store_true", help="the seed's revision: every quirk it has")
    g.add_argument("--ideal", action="store_true", help="no quirks")
    g.add_argument("--quirk", action="append", help="switch one quirk on (repeatable)")
    g.add_argument("--revision", help="the quirks of a named revision of the real code (kvmodel quirks lists them)")


def _command(sub: Any, name: str, helptext: str, func: Any, *, json: bool = True, out: str | None = None) -> Any:
    p = sub.add_parser(name, help=helptext)
    p.set_defaults(func=func)
    if json:
        p.add_argument("--json", action="store_true")
    if out:
        p.add_argument("--out", type=nonempty, default="kvmodel-traces", help=out)
    return p


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="kvmodel", description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--version", action="version", version=f"kvmodel {__version__}")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=OneLineParser)
    traces_go = "where counterexample traces go"

    c = _command(
        sub, "check", "run the invariant suites (every component and engine by default)", cmd_check, out=traces_go
    )
    c.add_argument("--component", action="append", help="a component or alias (repeatable; default: all)")
    c.add_argument("--engine", choices=[*ENGINE_NAMES, "all"], help="engine (default: all)")
    g = c.add_mutually_exclusive_group()
    g.add_argument("--ideal", action="store_true", help="only the ideal model (quirks off)")
    g.add_argument("--faithful", action="store_true", help="only the faithful model (the seed's revision)")
    g.add_argument("--revision", help="only the faithful model at this named revision (one component)")
    c.add_argument("--seed", type=SEED, default=0)
    c.add_argument("--profile", choices=sorted(PROFILES), default="ci", help="Hypothesis budget (kvmodel/profiles.py)")
    c.add_argument("--max-examples", type=integer(1, 1_000_000), help="Hypothesis examples (1 .. 1,000,000)")
    c.add_argument("--steps", type=integer(1, 10_000), help="steps per example (1 .. 10,000)")
    c.add_argument("--itf", action="store_true", help="also write each counterexample in the ITF format (.itf.json)")
    c.add_argument("--html", type=nonempty, metavar="FILE", help="also write an HTML report, a page per counterexample")
    c.add_argument("--junit", type=nonempty, metavar="FILE", help="also write JUnit XML: a case per check, invariant")

    r = _command(sub, "replay", "re-run a trace on the model and report the first divergence", cmd_replay)
    r.add_argument("trace")
    r.add_argument("--brief", action="store_true", help="only the verdict, not the step-by-step timeline")
    r.add_argument("--keep-going", action="store_true", help="replay every step: every divergence, not only the first")
    r.add_argument("--itf", type=nonempty, metavar="FILE", help="also write the trace in the ITF format (Apalache)")
    r.add_argument("--revision", help="replay on this revision's quirks instead of the trace's own")

    sh = _command(
        sub, "show", "a trace for people: a terminal timeline, an HTML page with --html", cmd_show, json=False
    )
    sh.add_argument("trace")
    sh.add_argument("--html", type=nonempty, metavar="FILE", help="write a self-contained HTML page (SVG timeline)")

    first = components.names(lambda c: c.space)[0]
    e = _command(sub, "explore", "exhaustive breadth-first exploration of a bounded world", cmd_explore, out=traces_go)
    e.add_argument("--component", default=first, help=f"a component or alias (default {first})")
    add_component_options(e, EXPLORE)
    _quirk_group(e)
    e.add_argument("--no-symmetry", action="store_true")
    e.add_argument(
        "--exhaustive",
        action="store_true",
        help="with quirks: search the whole world, not only until each invariant they break has its shortest "
        "counterexample",
    )
    e.add_argument("--max-states", type=integer(1, 50_000_000), default=2_000_000, help="stop after this many states")
    e.add_argument(
        "--workers",
        type=integer_or_auto(1, MAX_WORKERS, default_workers),
        default=1,
        help=f"expand each level in this many processes, 1 .. {MAX_WORKERS}, or 'auto' for the cores this"
        " process may use (default 1); the result is the same",
    )
    e.add_argument(
        "--max-memory",
        type=memory_size,
        default="auto",
        metavar="SIZE",
        help="stop, incomplete, once the search's processes hold this much memory (K, M, G or T; default"
        " 'auto': three quarters of what is available when it starts)",
    )
    e.add_argument("--dot", type=nonempty, metavar="FILE", help="write the state graph in Graphviz DOT")
    e.add_argument("--svg", type=nonempty, metavar="FILE", help="draw the state graph as SVG (needs Graphviz dot)")
    e.add_argument("--mark", metavar="INVARIANT", help="the counterexample marked in the graph (default: shallowest)")

    for name, helptext, func in (
        ("prove", "prove the invariants by k-induction with Z3 (ideal model by default)", cmd_prove),
        ("bmc", "bounded model checking with Z3 (faithful model by default); a trace per violation", cmd_bmc),
    ):
        z = _command(sub, name, helptext, func, out=traces_go if name == "bmc" else None)
        z.add_argument("--component", default=first, help=f"a component or alias (default {first})")
        add_component_options(z, SPEC)
        _quirk_group(z)
        z.add_argument("--timeout", type=seconds(), default=600.0, help="per query, 0.001 .. 86400 s (default 600)")
        if name == "prove":
            z.add_argument("--max-k", type=integer(1, 20), default=3, help="largest k tried, 1 .. 20 (default 3)")
        else:
            z.add_argument("--depth", type=integer(0, 200), default=8, help="steps to unroll, 0 .. 200 (default 8)")
            z.add_argument("--no-induction", action="store_true", help="pure BMC: no 1-induction first")

    from kvmodel.conform_command import add_parser as add_conform

    add_conform(sub, _command)

    mu = _command(sub, "mutants", "the mutation benchmark: seeded bugs against the engines", cmd_mutants)
    mu.add_argument(
        "--engine",
        choices=["hypothesis", "explore", "z3", "bmc", "conform", "all", "default"],
        help="default: hypothesis, explore and conform (what kvmodel check runs); z3 (alias bmc): the mutant's "
        "steps checked against the ideal Z3 relation",
    )
    mu.add_argument("--only", action="append", help="only this mutant (repeatable)")
    mu.add_argument("--list", action="store_true", help="list the mutants and exit")
    mu.add_argument("--seed", type=SEED, default=0)
    mu.add_argument("--max-examples", type=integer(1, 1_000_000), default=1000, help="Hypothesis examples (1000)")

    v = _command(sub, "vectors", "run test vectors (dynamo-kv-test-vectors/1 format)", cmd_vectors)
    v.add_argument("file")
    v.add_argument("--component", action="append", help="only vectors of this component (repeatable)")
    v.add_argument("--revision", help="run on this revision (default: the one each vector's source_version names)")

    i = _command(sub, "invariants", "print the invariant catalogue", cmd_invariants, json=False)
    i.add_argument("--component", action="append")
    fmt = i.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true")
    fmt.add_argument("--markdown", action="store_true", help="the catalogue as docs/invariants.md")

    q = _command(sub, "quirks", "print the named quirks (known defects of the real code) and revisions", cmd_quirks)
    q.add_argument("--component", action="append")
    from kvmodel.swarm.command import add_parser as add_swarm

    add_swarm(sub, _command)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; exit codes as in :mod:`kvmodel.verdicts`. Never a traceback for bad
    input: one line naming the file or option and the problem. SIGINT, SIGTERM and SIGHUP end
    any command with one line and 128 + the signal (:mod:`kvmodel.signals`)."""
    return signals.run_command(_main, argv)


def entry() -> None:
    """The ``kvmodel`` command (:func:`kvmodel.signals.exit_now`)."""
    signals.exit_now(main())


def _main(argv: Sequence[str] | None) -> int:
    from kvmodel.explore_workers import WorkerError
    from kvmodel.model.errors import InvalidInput
    from kvmodel.specs.runner import Disagreement
    from kvmodel.traces import TraceError
    from kvmodel.vectors import VectorFileError

    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help, --version, or a one-line argparse error
        return int(e.code) if isinstance(e.code, int) else 2
    if not getattr(args, "func", None):
        print("kvmodel: error: a command is required (kvmodel --help lists them)", file=sys.stderr)
        return 2
    try:
        rc: int = args.func(args)
        sys.stdout.flush()
        return rc
    except BrokenPipeError:  # the reader went away (`| head`): silence the rest
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (TraceError, VectorFileError) as e:
        print(f"kvmodel: {e}", file=sys.stderr)
    except Disagreement as e:  # an engine error: the spec and the model disagree, no verdict
        print(f"kvmodel {args.cmd}: engine error: {str(e)[:400]}", file=sys.stderr)
    except WorkerError as e:  # an explorer worker failed or was killed: no verdict
        print(f"kvmodel {args.cmd}: engine error: {e.summary()[:400]}", file=sys.stderr)
    except (UsageError, InvalidInput) as e:
        print(f"kvmodel {args.cmd}: {e.detail if isinstance(e, InvalidInput) and e.detail else e}", file=sys.stderr)
    except (ValueError, OSError) as e:  # e.g. an unknown quirk name in a trace; an unwritable output
        print(f"kvmodel {args.cmd}: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    entry()
