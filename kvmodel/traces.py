"""Trace format v1: record runs, load and validate trace files, replay them on the model.

A trace names the component, its configuration and quirks, and its steps: operation,
arguments, and what was observed after the step (return value or error, events in
order, state snapshot). ``docs/trace-format.md`` specifies it; the JSON Schema ships as
``kvmodel/schemas/trace-v1.json``. Every counterexample any engine finds is written as a
trace, and :func:`replay` re-runs one and reports the first divergence.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

from kvmodel import components
from kvmodel.jsonio import write_text
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.systems import make_system

FORMAT = "kvmodel-trace/1"
# counterexamples this short are made 2-minimal (every pair of steps tried for deletion)
PAIRS_UP_TO = 12


class TraceError(Exception):
    """A trace file that cannot be used; the message names the file and the problem."""


def schema() -> dict[str, Any]:
    text = resources.files("kvmodel").joinpath("schemas/trace-v1.json").read_text()
    out: dict[str, Any] = json.loads(text)
    return out


def record(
    component: components.Component | str,
    config: dict[str, Any],
    quirks: Iterable[str],
    ops: Sequence[tuple[str, Any]],
    origin: dict[str, Any] | None = None,
    *,
    stop_at_violation: bool = True,
    target: Iterable[str] | None = None,
) -> dict[str, Any]:
    """Run ``ops`` on a fresh system, recording every observation; stop at the first violation
    (of an invariant in ``target``, when given)."""
    wanted = None if target is None else set(target)
    quirks = sorted(quirks)
    c = components.of(component)
    sys_ = c.make_system(config, quirks)
    steps: list[dict[str, Any]] = []
    violation: dict[str, Any] | None = None
    for i, (op, args) in enumerate(ops):
        out = sys_.step(op, args)
        steps.append({"op": op, "args": args, "observe": out.observation(sys_.snapshot())})
        found = [v for v in out.violations if wanted is None or v.invariant in wanted]
        if found and violation is None:
            v = found[0]
            violation = {"invariant": v.invariant, "step": i, "message": v.message}
            if stop_at_violation:
                break
    from kvmodel.model.quirks import revision_of

    return {
        "format": FORMAT,
        "component": c.name,
        "config": sys_.config,
        "quirks": quirks,
        "revision": revision_of(c.name, quirks),
        "origin": origin or {},
        "violation": violation,
        "steps": steps,
    }


def walk(component: components.Component | str, steps: int = 8) -> dict[str, Any]:
    """A trace of ``steps`` steps of ``component``'s explorer world (its CLI default world, ideal
    model), taking the ``7i``-th enabled move at step ``i`` (modulo their number): a valid trace
    whose recorded states have that component's shape, the same on every run."""
    c = components.of(component)
    sp = c.explore_space(components.World({}, {}))
    s = sp.system({}, [])
    ops: list[tuple[str, Any]] = []
    moves = sp.moves()
    for i in range(steps):
        enabled = [m for m in moves if sp.allows(s, m)]
        if not enabled:
            break
        op, decoded, args = sp.concrete(s, enabled[(7 * i) % len(enabled)])
        s.apply(op, decoded, args)
        ops.append((op, args))
    return record(c, dict(s.config), [], ops)


def minimize(
    component: components.Component | str,
    config: dict[str, Any],
    quirks: Iterable[str],
    ops: Sequence[tuple[str, Any]],
    invariant: str,
) -> list[tuple[str, Any]]:
    """Greedy deletion: drop any step whose removal still breaks ``invariant``, then (for at most
    ``PAIRS_UP_TO`` steps) any pair of steps, then merge adjacent steps where the component says
    how (its record's ``merge_steps``).

    The result is 1-minimal (2-minimal when short): removing any single remaining step (any
    two) loses the violation.
    Systems are deterministic, so each candidate is one cheap re-run.
    """
    quirks = list(quirks)
    cur = list(ops)
    c = components.of(component)

    def breaks(candidate: list[tuple[str, Any]]) -> int | None:
        sys_ = c.make_system(config, quirks)
        for i, (op, args) in enumerate(candidate):
            out = sys_.step(op, args)
            if any(v.invariant == invariant for v in out.violations):
                return i
        return None

    from kvmodel.shrink import one_minimal

    end = breaks(cur)
    if end is None:
        return cur

    def still(cand: list[tuple[str, Any]]) -> list[tuple[str, Any]] | None:
        hit = breaks(cand)
        return None if hit is None else cand[: hit + 1]

    return one_minimal(cur[: end + 1], still, last_first=True, pairs_up_to=PAIRS_UP_TO, merge=c.merge_steps)


def engine_trace(
    component: str,
    config: dict[str, Any],
    origin: dict[str, Any],
    steps: list[dict[str, Any]],
    found: Iterable[tuple[int, str, dict[str, Any]]],
    divergence: tuple[int, Any, Any] | None,
) -> dict[str, Any]:
    """A real engine's failing schedule as a trace of the system that models it (the
    real-engine conformance targets): ``steps`` as the harness did them, with the engine's
    observations recorded, so that a replay shows where the model and the engine part. ``found``
    are the failures the model does not see (the engine's stream, the router), each ``(trace
    step, what, detail)``: the first is the trace's ``violation``; ``divergence`` is the first
    step whose observation differs from the model's, ``(step, model, engine)``, recorded as
    ``origin.divergence``."""
    first = min(found, key=lambda f: f[0], default=None)
    violation = None
    if first is not None:
        step, what, detail = first
        violation = {"invariant": what, "step": max(0, step), "message": json.dumps(detail, sort_keys=True)[:400]}
    if divergence is not None:
        step, model, engine = divergence
        origin = {
            **origin,
            "divergence": {"step": step, "what": "observations", "model": model, "implementation": engine},
        }
    return {
        "format": FORMAT,
        "component": component,
        "config": config,
        "quirks": [],
        "revision": None,
        "origin": origin,
        "violation": violation,
        "steps": steps,
    }


def dumps(trace: dict[str, Any]) -> str:
    """Canonical bytes: sorted keys, two-space indent, trailing newline (same input, same bytes)."""
    return json.dumps(trace, indent=2, sort_keys=True) + "\n"


def write(trace: dict[str, Any], path: str | Path) -> Path:
    from kvmodel.jsonio import write_text

    return write_text(path, dumps(trace))


def load(path: str | Path) -> dict[str, Any]:
    """Read and validate a trace; any problem is a one-line :class:`TraceError`."""
    from kvmodel.jsonio import read_json

    p = Path(path)
    data = read_json(p, TraceError)
    problem = validate(data)
    if problem:
        raise TraceError(f"{p}: not a kvmodel trace: {problem}")
    work_bound(data, str(p))
    return data  # type: ignore[no-any-return]


def validate(data: Any) -> str | None:
    """First schema problem of ``data`` as a short string, or ``None``."""
    import jsonschema

    v = jsonschema.Draft202012Validator(schema())
    errs = sorted(v.iter_errors(data), key=lambda e: list(e.absolute_path))
    if not errs:
        return None
    e = errs[0]
    where = "/".join(str(x) for x in e.absolute_path) or "(top level)"
    # a long message quotes the offending value; keep its head and its tail, which says what is wrong
    msg = e.message if len(e.message) < 160 else e.message[:90] + " ... " + e.message[-65:]
    return f"at {where}: {msg}"


@attrs.define
class ReplayResult:
    steps_run: int = 0
    divergence: str | None = None
    divergence_step: int | None = None
    violation: dict[str, Any] | None = None
    recorded_violation: dict[str, Any] | None = None
    violated_at_step: list[str] = attrs.field(factory=list)
    all_violations: list[tuple[int, str]] = attrs.field(factory=list)
    # every divergence (one per step and observed key) when replayed with keep_going; else the first
    divergences: list[dict[str, Any]] = attrs.field(factory=list)

    @property
    def reproduces_recorded(self) -> bool:
        rv, v = self.recorded_violation, self.violation
        return (
            self.divergence is None
            and rv is not None
            and v is not None
            and (rv.get("step"), rv.get("invariant")) in self.all_violations
        )

    @property
    def verdict(self) -> str:
        """``violation`` when the replay diverges from the recorded observations, an invariant
        breaks, or a recorded violation does not reproduce; ``pass`` otherwise."""
        rv = self.recorded_violation
        if self.divergence or self.violation or (rv and not self.reproduces_recorded):
            return "violation"
        return "pass"

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "steps_run": self.steps_run,
            "divergence": self.divergence,
            "divergence_step": self.divergence_step,
            "violation": self.violation,
            "recorded_violation": self.recorded_violation,
            "violated_at_step": self.violated_at_step,
            "all_violations": [list(x) for x in self.all_violations],
            "divergences": self.divergences,
            "reproduces_recorded_violation": self.reproduces_recorded,
        }


MAX_CONFIG_NUMBER = 100_000  # a capacity, a block size: the model builds what it names
MAX_WORK = 1_000_000  # JSON values in all the steps' arguments together (blocks per call x steps)


def config_bound(trace: dict[str, Any], source: str = "trace") -> None:
    """Refuse, in one :class:`TraceError` line, a configuration number over
    :data:`MAX_CONFIG_NUMBER` before a replay builds the model (a capacity of 10^9 blocks is
    built, not just read; a drawing of it is bounded and needs no such limit)."""
    for k, v in (trace.get("config") or {}).items():
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_CONFIG_NUMBER:
            raise TraceError(f"{source}: config {k} = {v} is over the work bound ({MAX_CONFIG_NUMBER:,})")


def work_bound(trace: dict[str, Any], source: str = "trace") -> None:
    """Refuse, in one :class:`TraceError` line, a schema-valid trace whose steps' arguments hold
    more than :data:`MAX_WORK` JSON values in all (1,000 steps of 4,096 blocks each): more work
    than a replay or a drawing should do."""
    total = 0
    stack: list[Any] = [step.get("args") for step in trace.get("steps", ())]
    while stack:
        x = stack.pop()
        total += 1
        if total > MAX_WORK:
            raise TraceError(f"{source}: the steps' arguments hold more than {MAX_WORK:,} values (the work bound)")
        if isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)


def _diff(what: str, recorded: Any, got: Any) -> str | None:
    from kvmodel import exact

    try:
        if exact.same(exact.as_json(recorded), exact.as_json(got)):
            return None
    except exact.NotJSON:
        pass
    return f"{what}: recorded {json.dumps(recorded, sort_keys=True)}, model {json.dumps(got, sort_keys=True)}"


def replay(
    trace: dict[str, Any],
    *,
    source: str = "trace",
    keep_going: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ReplayResult:
    """Re-run a trace on the model; compare each recorded observation; check invariants.

    The replay stops at the first divergence; with ``keep_going`` it runs every step (the model
    going on from its own state) and lists every divergence in ``divergences``, one per step and
    observed key (``error``, ``returns``, ``events``, ``state``); ``divergence`` stays the first.
    A trace over the work bounds (:func:`work_bound`, :func:`config_bound`) is refused before
    anything runs;
    ``progress(step, steps)`` is called after every step. Observations are compared exactly
    (:mod:`kvmodel.exact`)."""
    work_bound(trace, source)
    config_bound(trace, source)
    res = ReplayResult(recorded_violation=trace.get("violation"))
    try:
        sys_ = make_system(trace["component"], trace.get("config", {}), trace.get("quirks", []))
    except (InvalidInput, ValueError) as e:
        raise TraceError(f"{source}: {e}") from None
    except ModelError as e:  # the real constructor panics on this configuration (block_size 0)
        raise TraceError(f"{source}: config: the {trace['component']} constructor rejects it: {e}") from None
    rev = trace.get("revision")
    if rev is not None:
        from kvmodel.model.quirks import REVISIONS

        if (trace["component"], rev) not in REVISIONS:
            raise TraceError(f"{source}: unknown revision {rev!r} of {trace['component']}")
    ops = getattr(sys_, "OPS", None)
    if ops is not None:  # a step naming no operation of the component is a malformed trace
        for i, step in enumerate(trace["steps"]):
            if step["op"] not in ops:
                raise TraceError(
                    f"{source}: step {i}: {step['op']!r:.60} is not an operation of {trace['component']}"
                    f" (known: {', '.join(sorted(ops))})"
                )
    for i, step in enumerate(trace["steps"]):
        out = sys_.step(step["op"], step.get("args"))
        res.steps_run = i + 1
        if progress is not None:
            progress(i + 1, len(trace["steps"]))
        rec = step.get("observe")
        if rec is not None:
            got = out.observation(sys_.snapshot() if "state" in rec else None)
            for key in ("error", "returns", "events", "state"):
                if key == "error" and ("error" in rec or "error" in got):
                    d = _diff("error", (rec.get("error") or {}).get("id"), (got.get("error") or {}).get("id"))
                elif key != "error" and key in rec:
                    d = _diff(key, rec.get(key), got.get(key))
                else:
                    d = None
                if d:
                    text = f"step {i} {step['op']} {json.dumps(step.get('args'), sort_keys=True)}: {d}"
                    res.divergences.append({"step": i, "op": step["op"], "key": key, "detail": d})
                    if res.divergence is None:
                        res.divergence, res.divergence_step = text, i
                    if not keep_going:
                        return res
        res.all_violations += [(i, v.invariant) for v in out.violations]
        if out.violations and res.violation is None:
            v = out.violations[0]
            res.violation = {"invariant": v.invariant, "step": i, "message": v.message}
            res.violated_at_step = [x.invariant for x in out.violations]
    return res


def write_counterexample(
    target: components.ConformTarget, report: dict[str, Any], out_dir: str | Path, seed: int
) -> str | None:
    """Write a conformance report's divergent workload to ``out_dir``
    (``conform-TARGET-seedS.json``): the report's ``trace`` when it has one (a kvmodel trace, which
    ``kvmodel replay`` and ``kvmodel show`` read), else the workload under the target's
    ``counterexample_key``, with the configuration the steps ran in (a capacity, an engine)."""
    if not report.get("counterexample"):
        return None
    path = Path(out_dir) / f"conform-{target.name}-seed{seed}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    if report.get("trace"):
        write(report["trace"], path)
        return str(path)
    doc = {"target": target.name, target.counterexample_key: report["counterexample"]}
    if report.get("config"):
        doc["config"] = report["config"]
    write_text(path, json.dumps(doc, indent=2) + "\n")
    return str(path)
