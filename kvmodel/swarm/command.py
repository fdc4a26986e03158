"""``kvmodel swarm``: the command line of a campaign (``docs/swarm.md``)."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from kvmodel import signals
from kvmodel.cliargs import SEED, UsageError, check_outputs, integer, nonempty
from kvmodel.progress import Progress
from kvmodel.verdicts import EXIT

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*$")


def duration(text: str) -> float:
    """``90``, ``90s``, ``15m``, ``2h``: seconds, 1 s .. 7 days."""
    m = _DURATION.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration (e.g. 90s, 15m, 2h): {text!r}")
    s = float(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2) or "s"]
    if not 1 <= s <= 7 * 86400:
        raise argparse.ArgumentTypeError(f"a duration from 1 s to 7 days, got {text!r}")
    return s


def _names(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    out = []
    for v in values:
        out += [x for x in (p.strip() for p in v.split(",")) if x]
    return out


def add_parser(sub: Any, command: Any) -> None:
    """Add ``swarm`` to the ``kvmodel`` parser (``command``: the CLI's subcommand factory)."""
    from kvmodel.swarm.tasks import DEFAULT_ENGINES

    s = command(
        sub,
        "swarm",
        "a campaign of diversified tasks on Dask distributed (docs/swarm.md)",
        cmd_swarm,
        out="where the first counterexample of each invariant and target goes",
    )
    s.add_argument("--components", action="append", metavar="NAMES", help="comma-separated (default: all)")
    s.add_argument(
        "--engines",
        action="append",
        metavar="NAMES",
        help=f"comma-separated among hypothesis, explore, z3, conform (default: {','.join(DEFAULT_ENGINES)})",
    )
    s.add_argument(
        "--targets",
        action="append",
        metavar="NAMES",
        help="conformance targets, comma-separated (default: those kvmodel check runs; 'none': no target)",
    )
    m = s.add_mutually_exclusive_group()
    m.add_argument("--ideal", action="store_true", help="only the ideal model's cells")
    m.add_argument("--faithful", action="store_true", help="only the faithful model's cells")
    m.add_argument("--revision", help="only the faithful model at this named revision (one component)")
    b = s.add_mutually_exclusive_group()
    b.add_argument("--budget", type=duration, metavar="DURATION", help="submit tasks until this much time has passed")
    b.add_argument("--tasks", type=integer(1, 1_000_000), help="run this many tasks (default 100)")
    s.add_argument("--seed", type=SEED, default=0, help="the campaign seed: the task list is drawn from it")
    w = s.add_mutually_exclusive_group()
    w.add_argument("--workers", type=integer(1, 1024), help="local worker processes (default: one per core)")
    w.add_argument("--scheduler", type=nonempty, metavar="ADDRESS", help="an existing Dask scheduler, tcp://HOST:PORT")
    s.add_argument("--max-examples", type=integer(1, 1_000_000), help="cap every Hypothesis task's examples")
    s.add_argument("--list", action="store_true", help="print the task list and exit (nothing is run)")
    s.add_argument("--html", type=nonempty, metavar="FILE", help="also write an HTML report, a page per counterexample")
    s.add_argument("--junit", type=nonempty, metavar="FILE", help="also write JUnit XML: a case per cell and invariant")


def cmd_swarm(args: argparse.Namespace) -> int:
    import os

    import attrs

    from kvmodel import components
    from kvmodel.cliargs import revision_quirks
    from kvmodel.swarm import campaign, merge, tasks
    from kvmodel.swarm.tasks import CONFORM, DEFAULT_ENGINES, MODEL_ENGINES

    check_outputs(args, ("html", "junit"))
    checkable = components.with_(lambda c: c.system or c.conform)
    known = {n: c.name for c in checkable for n in c.names}
    comps = []
    for n in _names(args.components) or [c.name for c in checkable]:
        if n not in known:
            raise UsageError(f"--components: unknown component {n!r} (known: {', '.join(c.name for c in checkable)})")
        if known[n] not in comps:
            comps.append(known[n])
    engines = _names(args.engines) or list(DEFAULT_ENGINES)
    for e in engines:
        if e not in (*MODEL_ENGINES, CONFORM):
            raise UsageError(f"--engines: unknown engine {e!r} (known: {', '.join((*MODEL_ENGINES, CONFORM))})")
    targets = _names(args.targets)
    all_targets = {t.name for _, t in components.targets()}
    if targets == ["none"]:
        engines = [e for e in engines if e != CONFORM]
        targets = None
    for t in targets or []:
        if t not in all_targets:
            raise UsageError(f"--targets: unknown target {t!r} (known: {', '.join(sorted(all_targets))}, none)")
    if args.revision and len(comps) != 1:
        raise UsageError("--revision needs exactly one --components")
    if args.revision:
        revision_quirks(comps[0], args.revision)
    mode = "ideal" if args.ideal else "faithful" if (args.faithful or args.revision) else "both"
    dist = tasks.Distribution()
    if args.max_examples:
        dist = attrs.evolve(dist, max_examples=args.max_examples)
    matrix = tasks.cells(comps, engines, mode=mode, revision=args.revision, targets=targets)
    if not matrix:
        raise UsageError("the campaign is empty: no engine supports the chosen components")
    count = args.tasks if args.tasks is not None else (None if args.budget else 100)
    requested = {
        "components": comps,
        "engines": engines,
        "targets": targets,
        "mode": mode,
        "revision": args.revision,
        "tasks": count,
        "budget_seconds": args.budget,
    }
    if args.list:
        for task in tasks.plan(matrix, args.seed, count or 100, dist):
            print(json.dumps(task.to_json(), sort_keys=True) if args.json else task.describe())
        return 0
    planned = tasks.plan(matrix, args.seed, count, dist) if count is not None else None
    cluster = None
    try:
        if args.scheduler:
            client = campaign.connect(args.scheduler)
        else:
            cluster, client = campaign.local_cluster(args.workers or os.cpu_count() or 1)
        if planned is not None:
            campaign.check_real_parts(client, planned)
            stream = iter(planned)
        else:
            head = tasks.plan(matrix, args.seed, len(matrix), dist)
            campaign.check_real_parts(client, head)
            stream = tasks.stream(matrix, args.seed, dist)
        total = len(planned) if planned is not None else None
        t0 = time.perf_counter()
        with Progress("swarm") as bar:

            def show(task: tasks.Task, res: dict[str, Any], log: campaign.RunLog) -> None:
                done = len(log.results)
                failed = sum(1 for r in log.results.values() if r["outcome"] == "error")
                el = time.perf_counter() - t0
                rate = done / el if el else 0.0
                if total is not None:
                    left = f"~{(total - done) / rate:.0f}s left" if rate else ""
                    head_ = f"{done}/{total} tasks"
                else:
                    left = f"{max(0.0, (args.budget or 0) - el):.0f}s of budget left"
                    head_ = f"{done} tasks"
                bar.update(f"{head_}, {failed} failed, {rate:.2f}/s, {left}", force=done == total)

            log = campaign.run(stream, client, budget_seconds=args.budget, on_result=show)
        client.close()
    except campaign.SwarmError as e:
        print(f"kvmodel swarm: {e}", file=sys.stderr)
        if e.log is not None and e.log.results:  # what finished before the scheduler went away
            _partial(e, e.log, matrix, args, requested, dist)
        return 2
    except (KeyboardInterrupt, signals.Terminated):  # the cluster's processes go now, not in seconds
        signals.kill_descendants()
        cluster = None
        raise
    finally:
        if cluster is not None:
            cluster.close()
    summary = merge.merge(log, matrix, seed=args.seed, requested=requested, dist=dist, out_dir=Path(args.out))
    return _report(summary, args)


def _partial(
    e: Exception, log: Any, matrix: Any, args: argparse.Namespace, requested: dict[str, Any], dist: Any
) -> None:
    """The report of a campaign cut short: the tasks that finished, verdict ``error``."""
    from kvmodel.swarm import merge

    summary = merge.merge(log, matrix, seed=args.seed, requested=requested, dist=dist, out_dir=Path(args.out))
    summary.update(verdict="error", ok=False, error=str(e)[:400], incomplete=True)
    summary["results"].append(
        {
            "component": "swarm",
            "engine": "campaign",
            "check": "scheduler",
            "verdict": "error",
            "outcome": "error",
            "error": str(e)[:400],
            "steps": 0,
        }
    )
    _report(summary, args)


def _report(summary: dict[str, Any], args: argparse.Namespace) -> int:
    from kvmodel import report
    from kvmodel.swarm import merge

    for line in report.write_outputs(summary, html=args.html, junit=args.junit, itf=False):
        print(line, file=sys.stderr)
    if args.json:
        print(json.dumps(summary, indent=2, sort_keys=True))
    else:
        print("\n".join(merge.text_lines(summary)))
    return EXIT[summary["verdict"]]
