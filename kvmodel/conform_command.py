"""``kvmodel conform``: the model against a real implementation — a component's declared targets
(the real ``RadixTree``, the real mocker, vLLM's ``BlockPool``) or, with ``--target exec``, any
program speaking the harness protocol (:mod:`kvmodel.harness`, ``docs/harness.md``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kvmodel import components, traces
from kvmodel.cliargs import SEED, UsageError, integer, seconds
from kvmodel.progress import Progress
from kvmodel.verdicts import EXIT

EXEC = "exec"


def add_parser(sub: Any, command: Any) -> None:
    tnames = [t.name for _, t in components.targets()]
    cf = command(sub, "conform", "the model against a real implementation", cmd_conform, out="where a divergence goes")
    cf.add_argument("--target", default=tnames[0], help=f"one of {', '.join([*tnames, EXEC])} (default {tnames[0]})")
    cf.add_argument("--workloads", type=integer(1, 1_000_000), default=200, help="generated workloads (default 200)")
    cf.add_argument("--seed", type=SEED, default=0)
    cf.add_argument(
        "--max-ops",
        type=integer(1, 1000),
        help="operations per workload, 1 .. 1000 (default 24; with --target exec the component's, 30 or 80)",
    )
    cf.add_argument(
        "--max-requests", type=integer(1, 64), help="--target vllm-engine: requests per schedule, 1 .. 64 (default 6)"
    )
    cf.add_argument("--revision", help="the model's revision, where the target has several (first: default)")
    sg = cf.add_argument_group("--target sglang-radix-cache")
    sg.add_argument(
        "--cache",
        choices=("unified-rust", "unified-python", "radix", "all"),
        help="SGLang's cache: unified-rust (default, the scheduler's), unified-python, radix, or all "
        "(the three, their answers compared)",
    )
    sg.add_argument("--page-size", type=integer(1, 64), help="SGLang's page size, 1 .. 64 (default 4)")
    sg.add_argument("--event-format", choices=("default", "dynamo"), help="SGLang's KV event format (default: default)")
    cf.add_argument(
        "--path",
        help="how the real events reach a router: raw (default: into RadixTree), publisher (the worker's "
        "KvEventPublisher to the router over the event plane) or indexer (python -m dynamo.indexer); "
        "publisher and indexer with --target vllm-engine and sglang-radix-cache",
    )
    x = cf.add_argument_group("--target exec: a program speaking the harness protocol, given after --")
    x.add_argument("--component", help="the component the program implements (required with --target exec)")
    x.add_argument("--quirks", help="the model compared with: faithful, ideal (default) or Q1,Q2,... (quirk names)")
    x.add_argument("--step-timeout", type=seconds(), default=10.0, help="seconds per answer (default 10)")
    x.add_argument("--config", help="the configuration as a JSON object (docs/contracts.md; default the component's)")
    x.add_argument(
        "--space", help="the workload world's fields as a JSON object (kvmodel.api.workload_space; docs/contracts.md)"
    )
    x.add_argument(
        "--check",
        choices=("equal", "invariants", "both"),
        default="equal",
        help="equal: every observation equals the model's (default); invariants: the component's declared "
        "invariants on the program's observations, no reference revision; both (docs/api.md)",
    )
    x.add_argument(
        "--accept",
        help="invariant modes: known defects a violation may be explained by — a revision name (faithful: "
        "the seed's) or Q1,Q2,... (quirk names)",
    )
    cf.add_argument("command", nargs="*", help=argparse.SUPPRESS)


def cmd_conform(args: argparse.Namespace) -> int:
    """Differential conformance: the model against a real implementation."""
    if args.target == EXEC:
        if args.path is not None:
            raise UsageError("--path goes with the real-engine targets, not --target exec")
        return _exec(args)
    if args.command or args.component or args.quirks or args.config or args.space or args.accept:
        raise UsageError("a command, --component, --quirks, --config, --space and --accept go with --target exec")
    if args.check != "equal":
        raise UsageError("--check goes with --target exec (the real targets have their own checks)")
    try:
        _, t = components.target(args.target)
    except components.UnknownComponent as e:
        raise UsageError(f"{e.detail[:-1]}, {EXEC})" if e.detail.endswith(")") else e.detail) from None
    if args.revision is not None and args.revision not in t.revisions:
        raise UsageError(
            f"--revision: {t.name} has revisions {', '.join(t.revisions) or 'none'}, got {args.revision!r}"
        )
    if args.max_requests is not None and t.name != "vllm-engine":
        raise UsageError("--max-requests goes with --target vllm-engine")
    sglang = {"cache": args.cache, "page_size": args.page_size, "event_format": args.event_format}
    if t.name != "sglang-radix-cache" and any(v is not None for v in sglang.values()):
        raise UsageError("--cache, --page-size and --event-format go with --target sglang-radix-cache")
    via_sglang = {k: v for k, v in sglang.items() if v is not None}
    if args.path is not None and args.path not in t.paths:
        raise UsageError(f"--path: {t.name} takes {', '.join(t.paths)}, got {args.path!r}")
    via = {} if args.path is None or args.path == t.paths[0] else {"path": args.path}
    why = t.available()
    if why is not None:
        print(f"kvmodel conform: the real implementation is not available: {why}", file=sys.stderr)
        return 2
    from kvmodel.harness import HarnessError

    try:
        with Progress(f"conform {t.name}") as bar:
            out = t.run(
                workloads=args.workloads,
                seed=args.seed,
                max_ops=(args.max_requests or 6) if t.name == "vllm-engine" else (args.max_ops or 24),
                revision=args.revision,
                progress=lambda n: bar.update(f"{n} of {args.workloads} workloads"),
                **via,
                **via_sglang,
            )
    except HarnessError as e:  # the harness failed: no verdict (neither a pass nor a kill)
        print(f"kvmodel conform: {t.name}: {e}", file=sys.stderr)
        return EXIT["error"]
    if args.out and (path := traces.write_counterexample(t, out, args.out, args.seed)):
        out["counterexample_path"] = path
    out.setdefault("verdict", "violation" if out["divergences"] else "pass")
    if out.get("revision") is None:  # every report names the revision it compared with
        out["revision"] = args.revision if args.revision is not None else (t.revisions[0] if t.revisions else None)
    if args.json:
        sys.stdout.write(json.dumps(out, indent=2, sort_keys=True) + "\n")
    else:
        lines = t.describe(out)
        print("\n".join([f"{t.name}: {lines[0]}", *lines[1:]]))
        if out.get("counterexample_path"):
            how = " (a trace: kvmodel replay and kvmodel show read it)" if out.get("trace") else ""
            print(f"counterexample: {out['counterexample_path']}{how}")
    return EXIT[out["verdict"]]


def _quirks(args: argparse.Namespace, component: str) -> tuple[Any, str | None]:
    if args.quirks is not None and args.revision is not None:
        raise UsageError("--quirks and --revision are exclusive")
    if args.revision is not None:
        from kvmodel.model.quirks import revision

        revision(component, args.revision)  # an unknown revision: one line
        return (), args.revision
    q = (args.quirks or "ideal").strip()
    if q == "ideal":
        return (), None
    if q == "faithful":
        return "faithful", None
    from kvmodel.model.quirks import quirks_of

    names = [n.strip() for n in q.split(",") if n.strip()]
    known = {qq.name for qq in quirks_of(component)}
    bad = [n for n in names if n not in known]
    if bad:
        raise UsageError(f"--quirks: {bad[0]!r} is not a quirk of {component} (known: {', '.join(sorted(known))})")
    return names, None


def _is_quirk(component: str, name: str) -> bool:
    from kvmodel.model.quirks import quirks_of

    return name in {q.name for q in quirks_of(component)}


def _json_object(text: str | None, option: str) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError as e:
        raise UsageError(f"{option}: not JSON ({str(e)[:80]})") from None
    if not isinstance(value, dict):
        raise UsageError(f"{option}: a JSON object is wanted, got {type(value).__name__}")
    return value


def _exec(args: argparse.Namespace) -> int:
    from kvmodel import api
    from kvmodel.harness import ExecAdapter, HarnessError

    if not args.component:
        raise UsageError("--target exec needs --component NAME")
    if not args.command:
        raise UsageError("--target exec needs the program to run after -- (e.g. -- ./my_impl --flag)")
    try:
        comp = components.get(args.component, api.has_workloads, "component with a workload generator")
    except components.UnknownComponent as e:
        raise UsageError(e.detail) from None
    quirks, rev = _quirks(args, comp.name)
    config = _json_object(args.config, "--config")
    space = None
    if args.space is not None:
        try:
            space = api.workload_space(comp.name, **_json_object(args.space, "--space"))
        except ValueError as e:
            raise UsageError(f"--space: {e}") from None
    try:  # a configuration the model refuses is refused here, before the program starts
        from kvmodel.systems import make_system

        make_system(comp.name, config, ())
    except Exception as e:
        raise UsageError(f"--config: {str(e)[:200]}") from None
    accept: str | list[str] = []
    if args.accept:  # one quirk name, Q1,Q2,..., or a revision
        multi = "," in args.accept or _is_quirk(comp.name, args.accept)
        accept = args.accept.split(",") if multi else args.accept
    if args.check == "equal" and args.accept:
        raise UsageError("--accept goes with --check invariants or both")
    if args.check != "equal" and comp.observer is None:
        raise UsageError(f"--check {args.check}: {comp.name} has no invariant mode (docs/api.md)")
    try:
        from kvmodel.model.quirks import accepted

        accepted(comp.name, accept)
    except ValueError as e:
        raise UsageError(f"--accept: {str(e)[:200]}") from None
    adapter = ExecAdapter(args.command, step_timeout=args.step_timeout)
    try:
        adapter.start()
        with Progress(f"conform exec {comp.name}"):
            rep = api.check_implementation(
                adapter,
                comp.name,
                quirks=quirks,
                revision=rev,
                workloads=args.workloads,
                max_steps=args.max_ops,
                seed=args.seed,
                config=config,
                space=space,
                step_timeout=None,  # the harness times each answer itself and recovers
                check=args.check,
                accept=accept,
            )
    except HarnessError as e:
        print(f"kvmodel conform: {e}", file=sys.stderr)
        return 2
    except BaseException:  # an interrupt or a signal: the child's group is killed now, not asked
        adapter.abort()
        raise
    finally:
        adapter.close()
    out = rep.to_json()
    out.update(target=EXEC, command=list(args.command), restarts=max(0, adapter.starts - 1))
    if rep.trace is not None and args.out:
        path = Path(args.out) / f"conform-exec-{comp.name}-seed{args.seed}.json"
        rep.write_trace(path)
        out["trace"] = str(path)
    if args.json:
        sys.stdout.write(json.dumps(out, indent=2, sort_keys=True) + "\n")
    else:
        print(rep.explain())
        if out.get("trace"):
            print(f"trace: {out['trace']} (kvmodel show / kvmodel replay read it)")
    return EXIT[rep.verdict]
