"""One conformance contract: the model and an implementation driven step by step, compared after
every step, the first divergence shrunk — for users' adapters (:mod:`kvmodel.api`, the harness)
and for the real binaries (the router's ``RadixTree``, the mocker, vLLM's ``BlockPool``).

An *adapter* is Porcupine's Init/Step: ``reset(config)`` starts a fresh instance for a
configuration and ``step(op, args) -> Observation`` takes one operation — a trace-format step,
the operation's name and its JSON arguments — and says what it did (a JSON object). Both sides of
a run are adapters: the *model* (the reference) and the *implementation*. A target supplies
``compare(op, args, model, implementation, memo)``, which returns ``(what, model value,
implementation value)`` for the first thing that differs (``memo`` lives for one run: a renaming
of handles, say). A model whose step depends on choices the implementation made (the tokens the
real mocker sampled) has ``given(observation)``: it is called with the implementation's
observation before the model's step, and the implementation steps first.

Nothing the implementation does escapes a run: an exception, a ``BaseException`` such as
``SystemExit``, an answer that is not JSON, or a call that outlasts the step timeout
(:class:`Caller`) is a divergence of its own kind (``exception`` / ``abort`` / ``malformed`` /
``timeout``; a harness child's crash carries its own ``divergence_kind``). Answers are compared by
the rule of :mod:`kvmodel.exact`: a JSON round trip, then JSON type and value (``true`` is not
``1``). A step the *model* rejects as malformed
(``InvalidInput``) makes the list itself invalid: :func:`differential` raises, and the
minimizer skips such candidates.

:func:`run` draws seeded workloads (:mod:`kvmodel.conformance.search`), runs each, shrinks the
first divergence (Hypothesis, then :func:`kvmodel.shrink.one_minimal`) and re-runs the shrunk
list; a divergence that does not reproduce is reported ``flaky`` with the list first seen. The
:class:`Report` has one verdict in every format: ``violation`` on any divergence, ``inconclusive``
when no step ran, else ``pass``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs

from kvmodel import determinism, exact
from kvmodel.model.errors import InvalidInput

# the shrinker also drops two steps at most this far apart together (a set-up and its undoing)
NEAR = 3

Action = tuple[str, Any]  # (operation, JSON arguments): one step of the trace format
Observation = dict[str, Any]
Difference = tuple[str, Any, Any]  # (what, the model's value, the implementation's value)
Compare = Callable[[str, Any, Observation, Any, dict[str, Any]], Difference | None]


class Adapter(Protocol):
    """An implementation (or the model) behind the conformance contract."""

    name: str

    def reset(self, config: dict[str, Any]) -> None: ...
    def step(self, op: str, args: Any) -> Observation: ...


def json_safe(x: Any, depth: int = 0) -> Any:
    """``x`` with anything JSON cannot hold replaced by its ``repr`` (an adapter may return
    sets, objects, NaN, huge structures): reports, traces and ``explain()`` stay printable and
    bounded (at most 1,000 items per list or object, 32 levels deep)."""
    if depth > 32:
        return "<nested too deeply>"
    if x is None or isinstance(x, bool | str):
        return x
    if isinstance(x, int):
        return x if -(2**64) < x < 2**64 else repr(x)[:80]
    if isinstance(x, float):
        return x if x == x and x not in (float("inf"), float("-inf")) else repr(x)
    if isinstance(x, list | tuple):
        return [json_safe(v, depth + 1) for v in list(x)[:1000]]
    if isinstance(x, dict):
        return {str(k): json_safe(v, depth + 1) for k, v in list(x.items())[:1000]}
    return repr(x)[:200]


@attrs.define
class Divergence:
    """The first step where the implementation and the model disagree. ``what``: the part of the
    observation that differs (a target's own names — ``returns``, ``error``, ``events``,
    ``content``, ``cached``, ...), ``invariant`` (invariant mode: ``model`` names the invariant
    and its statement, ``implementation`` is the violation's message), or ``exception`` (the
    adapter raised), ``malformed`` (its answer
    is not an observation, or not JSON), ``abort`` (it raised ``SystemExit``, ``KeyboardInterrupt``
    or ``GeneratorExit``), ``timeout`` (a step outlasted the step timeout), ``reset`` (``reset``
    raised) or ``crash`` (a harness child exited; :mod:`kvmodel.harness`)."""

    step: int
    op: str
    args: Any
    what: str
    model: Any
    implementation: Any

    def __attrs_post_init__(self) -> None:
        self.model, self.implementation = json_safe(self.model), json_safe(self.implementation)

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)

    def __str__(self) -> str:
        if self.what == "invariant" and isinstance(self.model, dict):  # invariant mode
            return (
                f"step {self.step + 1}, {self.op} {json.dumps(self.args, sort_keys=True)}: breaks "
                f"{self.model.get('invariant')} — {self.implementation}"
            )
        return (
            f"step {self.step + 1}, {self.op} {json.dumps(self.args, sort_keys=True)}: {self.what} differ — "
            f"model {json.dumps(self.model, sort_keys=True)}, implementation {json.dumps(self.implementation)}"
        )


class Stuck(Exception):
    """An adapter call did not return within the step timeout; the adapter cannot be used again."""


class Aborted(Exception):
    """The adapter raised a ``BaseException`` that is not an ``Exception`` (``SystemExit``,
    ``KeyboardInterrupt``, ``GeneratorExit``): a divergence of kind ``abort``, never the end of
    the user's program. ``raised`` is what it raised."""

    def __init__(self, raised: BaseException) -> None:
        self.raised = raised
        super().__init__(f"the implementation raised {raised!r:.200}")


class Caller:
    """Runs adapter calls on one *daemon* worker thread and waits for each at most ``timeout``
    seconds (``None``: no limit). A hung call cannot be killed, so once one times out every later
    call is refused (:class:`Stuck`), and the thread, being a daemon, never keeps the process
    alive after the run. What a call raises comes back to the caller: an ``Exception`` as itself,
    any other ``BaseException`` (an adapter's ``SystemExit(0)``, its own ``KeyboardInterrupt``) as
    :class:`Aborted`. A ``KeyboardInterrupt`` in the waiting thread is the user's Ctrl-C and goes
    on as it is."""

    def __init__(self, timeout: float | None) -> None:
        import queue
        import threading

        self.timeout = timeout
        self.stuck = False
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="kvmodel-adapter", daemon=True)
        self._started = False

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, args, box, done = job
            try:
                box.append((True, fn(*args)))
            except BaseException as e:  # handed to the waiting thread, which decides
                box.append((False, e))
            done.set()

    def start(self) -> None:
        """Start the adapter's thread now (else at the first call)."""
        if not self._started:
            self._thread.start()
            self._started = True

    def __call__(self, fn: Callable[..., Any], *args: Any) -> Any:
        import threading

        if self.stuck:
            raise Stuck("an earlier call timed out")
        self.start()
        box: list[tuple[bool, Any]] = []
        done = threading.Event()
        self._jobs.put((fn, args, box, done))
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while not done.is_set():
            left = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
            if left <= 0:
                self.stuck = True
                raise Stuck(f"no answer within {self.timeout:g} s")
            done.wait(left)
        ok, value = box[0]
        if ok:
            return value
        if isinstance(value, Exception):
            raise value
        raise Aborted(value) from None

    def close(self) -> None:
        if self._started and not self.stuck:
            self._jobs.put(None)
            self._thread.join(timeout=1)


def _direct(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


def failure_text(e: BaseException) -> str:
    """An adapter's failure for a report: its repr, or a harness failure's message with the
    child's standard-error tail (at most 2,300 characters)."""
    if getattr(e, "divergence_kind", None):
        return str(e)[:2300]
    return repr(e)[:300]


def _expected(want: Observation | None) -> Any:
    """What the model did at a step the implementation failed: its rejection, else its value."""
    if not isinstance(want, dict):
        return want
    if want.get("error") is not None:
        return want["error"]
    return want.get("returns", want)


def in_order(keys: Sequence[str]) -> Compare:
    """A comparison of the observations' ``keys``, in order: the first that differs."""

    def compare(op: str, args: Any, want: Observation, got: Any, memo: dict[str, Any]) -> Difference | None:
        if not isinstance(got, dict) or any(k not in got for k in keys):
            return ("malformed", want, f"step() must return a dict with {', '.join(keys)}: {got!r:.200}")
        for k in keys:
            if not exact.same(want[k], got[k]):
                return (k, want[k], got[k])
        return None

    return compare


OnStep = Callable[[str, Any, Observation, Any], None]


def differential(
    model: Adapter,
    impl: Adapter,
    config: dict[str, Any],
    actions: Sequence[Action],
    compare: Compare,
    *,
    call: Callable[..., Any] | None = None,
    on_step: OnStep | None = None,
) -> tuple[Divergence | None, int]:
    """Run ``actions`` on a reset model and a reset implementation; the first divergence and the
    number of steps run. ``call`` runs each implementation call (a :class:`Caller` with a
    timeout); ``on_step(op, args, model, implementation)`` sees every step both sides took."""
    call = call or _direct
    memo: dict[str, Any] = {}
    model.reset(dict(config))
    try:
        call(impl.reset, dict(config))
    except Stuck as e:
        return Divergence(0, "reset", dict(config), "timeout", None, str(e)), 0
    except Aborted as e:
        return Divergence(0, "reset", dict(config), "abort", None, str(e)), 0
    except Exception as e:
        kind = getattr(e, "divergence_kind", None) or "reset"  # a harness child's crash or timeout
        return Divergence(0, "reset", dict(config), kind, None, failure_text(e)), 0
    given = getattr(model, "given", None)
    for i, (op, args) in enumerate(actions):
        want: Observation | None = None if given is not None else model.step(op, args)
        try:
            got = call(impl.step, op, json.loads(json.dumps(args)))
        except Stuck as e:
            return Divergence(i, op, args, "timeout", _expected(want), str(e)), i + 1
        except Aborted as e:  # SystemExit, KeyboardInterrupt, GeneratorExit from the adapter
            return Divergence(i, op, args, "abort", _expected(want), str(e)), i + 1
        except Exception as e:  # the implementation crashed: a divergence, not our failure
            kind = getattr(e, "divergence_kind", None) or "exception"
            return Divergence(i, op, args, kind, _expected(want), failure_text(e)), i + 1
        try:
            exact_got = exact.as_json(got)
        except exact.NotJSON as e:
            return Divergence(i, op, args, "malformed", _expected(want), f"{e}: {got!r:.200}"), i + 1
        if given is not None:
            given(got)
            want = model.step(op, args)
        assert want is not None
        if on_step is not None:
            on_step(op, args, want, got)
        d = compare(op, args, exact.as_json(want), exact_got, memo)
        if d is not None:
            return Divergence(i, op, args, *d), i + 1
    return None, len(actions)


Normalize = Callable[[dict[str, Any], list[Action]], list[Action]]


def minimize(
    model: Adapter,
    impl: Adapter,
    config: dict[str, Any],
    actions: list[Action],
    compare: Compare,
    *,
    call: Callable[..., Any] | None = None,
    normalize: Normalize | None = None,
    merge: Callable[[Action, Action], Action | None] | None = None,
) -> list[Action]:
    """Drop every step whose removal keeps a divergence (1-minimal, :func:`kvmodel.shrink.one_minimal`,
    and no two steps at most ``NEAR`` apart can go together;
    with ``merge``, the component's way of combining two adjacent steps, pairs merged into one
    are tried as well, each kept only if the divergence stays);
    a candidate goes on as the steps it ran up to its divergence. ``normalize(config, candidate)``
    turns a candidate into the steps it stands for (a dropped step may leave a later one naming nothing); a candidate
    the model rejects as malformed is skipped, and so is one that only times out."""
    from kvmodel.shrink import one_minimal

    def still(cand: list[Action]) -> list[Action] | None:
        if normalize is not None:
            cand = normalize(config, cand)
        try:
            d, _ = differential(model, impl, config, cand, compare, call=call)
        except InvalidInput:
            return None
        return cand[: d.step + 1] if d is not None and d.what != "timeout" else None

    return one_minimal(actions, still, near=NEAR, merge=merge)


def _merge_of(component: str) -> Callable[[Action, Action], Action | None] | None:
    """The component's ``merge_steps`` (``Component``), if it is a registered component."""
    from kvmodel import components

    try:
        return components.get(component).merge_steps
    except components.UnknownComponent:  # a report named after no registered component
        return None


@attrs.define
class Report:
    """What a conformance run found: the implementation, the model it was compared with
    (``component``, ``config``, ``quirks``), what ran (``workloads``, ``steps``, ``op_counts``),
    the shrunk divergence and its operations (``ops``), a kvmodel trace of the model's run of them
    when the target records one, and a target's own tallies (``extra``: events, requests,
    coverage, ...)."""

    implementation: str
    component: str
    config: dict[str, Any] = attrs.field(factory=dict)
    quirks: list[str] = attrs.field(factory=list)
    workloads: int = 0
    steps: int = 0
    seconds: float = 0.0
    seed: int = 0
    divergence: Divergence | None = None
    ops: list[Action] | None = None  # the shrunk operation list
    trace: dict[str, Any] | None = None  # the model's run of ``ops``, divergence marked
    flaky: bool = False  # a divergence was seen but did not reproduce: ops and trace are unshrunk
    shrink_runs: int = 0
    op_counts: dict[str, int] = attrs.field(factory=dict)  # steps run per operation
    target: str = "api"
    extra: dict[str, Any] = attrs.field(factory=dict)
    revision: str | None = None  # the named revision whose quirk set ``quirks`` is, if one is

    @property
    def ok(self) -> bool:
        """No divergence was ever observed (a flaky one makes the report not ok)."""
        return self.divergence is None and not self.flaky

    @property
    def divergences(self) -> int:
        return 0 if self.ok else 1

    @property
    def counterexample(self) -> list[Action] | None:
        return self.ops

    @property
    def verdict(self) -> str:
        """``violation`` on any divergence; ``inconclusive`` when no step ran (nothing was
        compared: never a pass); else ``pass``."""
        if not self.ok:
            return "violation"
        return "pass" if self.steps > 0 else "inconclusive"

    def to_json(self) -> dict[str, Any]:
        out = {
            "target": self.target,
            "implementation": self.implementation,
            "component": self.component,
            "config": self.config,
            "quirks": self.quirks,
            "revision": self.revision,
            "workloads": self.workloads,
            "steps": self.steps,
            "seconds": round(self.seconds, 3),
            "seed": self.seed,
            "divergences": self.divergences,
            "first_divergence": None if self.divergence is None else self.divergence.to_json(),
            "counterexample": None if self.ops is None else [[op, args] for op, args in self.ops],
            "flaky": self.flaky,
            "verdict": self.verdict,
            "shrink_runs": self.shrink_runs,
            "op_counts": dict(sorted(self.op_counts.items())),
        }
        extra: dict[str, Any] = json_safe(self.extra)
        return out | extra

    def write_trace(self, path: str | Path) -> Path | None:
        """Write the counterexample trace (``kvmodel show`` / ``kvmodel replay`` read it)."""
        from kvmodel import traces

        return None if self.trace is None else traces.write(self.trace, path)

    def explain(self) -> str:
        if self.divergence is None:
            text = f"{self.implementation}: {self.workloads} workloads, {self.steps} steps, no divergence"
            if "coverage" in self.extra:
                from kvmodel.reach import line

                text += f"; {line(self.extra['coverage'])}"
            return text
        from kvmodel import show

        how = "FLAKY: it did not reproduce when re-run, unshrunk" if self.flaky else "after shrinking"
        text = (
            f"{self.implementation} diverges from the {self.component} model ({len(self.ops or [])} step(s) "
            f"{how}): {self.divergence}\n"
        )
        return text + (show.terminal(self.trace) if self.trace is not None else "")


Case = tuple[dict[str, Any], list[Action]]
Tally = Callable[[Report, str, Any, Observation, Any], None]


def run(
    model: Adapter,
    impl: Adapter,
    report: Report,
    *,
    strategy: Any,
    case: Callable[[Any], Case],
    compare: Compare,
    workloads: int,
    call: Callable[..., Any] | None = None,
    normalize: Normalize | None = None,
    tally: Tally | None = None,
    label: Callable[[str, Any], str] | None = None,
    size: Callable[[Case], Any] | None = None,
    progress: Callable[[int], None] | None = None,
) -> Report:
    """Draw ``workloads`` examples from ``strategy`` (seeded by ``report.seed``); ``case(example)``
    is its configuration and operation list; run each (:func:`differential`); shrink the first
    divergence (Hypothesis, then :func:`minimize`) and re-run it. Fills and returns ``report``:
    ``workloads`` and ``steps`` count the generated runs only; ``tally(report, op, args, model,
    implementation)`` sees each of their steps; ``label(op, args)`` names the step in
    ``op_counts`` (default the operation); ``size(case)`` orders the divergent cases seen, the
    smallest shrunk further (default: the number of steps up to the divergence). A model that
    rejects a generated list as malformed is the caller's bug: ``InvalidInput`` propagates."""
    from kvmodel.conformance.search import failing_examples

    determinism.pin()
    t0 = time.perf_counter()
    caller = call if call is not None else _direct
    found: list[tuple[dict[str, Any], list[Action], Divergence]] = []
    name = label or (lambda op, args: op)

    def stuck() -> bool:
        """A hung adapter (or a harness child that hung once): nothing more is asked of it."""
        return bool(getattr(caller, "stuck", False) or getattr(impl, "stuck", False))

    def diverges(example: Any, shrinking: bool) -> bool:
        if stuck():
            return bool(found)
        config, actions = case(example)

        def on_step(op: str, args: Any, want: Observation, got: Any) -> None:
            assert tally is not None
            tally(report, op, args, want, got)

        hook = None if shrinking or tally is None else on_step
        d, n = differential(model, impl, config, actions, compare, call=caller, on_step=hook)
        if shrinking:
            report.shrink_runs += 1
        else:
            report.workloads += 1
            report.steps += n
            for op, args in actions[:n]:
                k = name(op, args)
                report.op_counts[k] = report.op_counts.get(k, 0) + 1
            if progress is not None:
                progress(report.workloads)
        if d is not None:
            found.append((config, list(actions[: d.step + 1]), d))
        return d is not None

    failing_examples(strategy, workloads=workloads, seed=report.seed, diverges=diverges)
    if found:
        first = found[0]
        measure = size or (lambda c: len(c[1]))
        config, ops, _ = min(found, key=lambda f: measure((f[0], f[1])))
        d: Divergence | None = None
        if not stuck():
            merge = _merge_of(report.component)
            ops = minimize(model, impl, config, ops, compare, call=caller, normalize=normalize, merge=merge)
            d, _ = differential(model, impl, config, ops, compare, call=caller)
        if d is None:  # seen, but not when re-run: flaky (or the adapter hung)
            report.flaky = first[2].what != "timeout"
            config, ops, d = first
        report.config, report.divergence, report.ops = dict(config), d, ops
    report.seconds = time.perf_counter() - t0
    return report
