"""Check your own block manager against the model: one adapter, one function call.

Write an *adapter* for your implementation with two methods::

    class MyAdapter:
        name = "my block manager"
        def reset(self, config: dict) -> None: ...          # a fresh instance for this config
        def step(self, op: str, args) -> dict: ...          # one operation, what it did

``step`` takes an operation in the trace format (``docs/trace-format.md``; for the KV
manager ``("process", {"Use": [{"F": 0}, {"P": "p0"}]})``, ``("num_active_blocks", {})``,
...) and returns ``{"returns": value, "events": [...]}``, or ``{"error": name, "events": [...]}``
when your code rejected the operation (``name``: the model's error type, e.g.
``"DestroyNotActive"``, or its panic message; :func:`error_names` lists them). Events are
the trace format's JSON (``{"Store": {"blocks": [3], "parent_hash": null}}``), in the order
your code emitted them.

Then :func:`check_implementation` generates operation sequences (seeded, Hypothesis),
runs each on your adapter and on the model, compares return value, rejection and events
after every step, shrinks the first divergence (Hypothesis, then 1-minimal deletion) and
returns a :class:`DiffReport` whose ``trace`` is a kvmodel trace of the model's run with
the divergence marked — ``kvmodel show`` draws it, ``kvmodel replay`` re-runs it. The
pytest plugin (``kvmodel_check`` fixture, :mod:`kvmodel.pytest_plugin`) does the same inside
a test. ``docs/api.md`` has a worked example.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import attrs

from kvmodel import determinism, traces
from kvmodel.model.errors import InvalidInput
from kvmodel.systems import make_system

__all__ = [
    "Adapter",
    "DiffReport",
    "Divergence",
    "ModelAdapter",
    "check_implementation",
    "error_names",
    "operations",
    "workload_space",
]


class Adapter(Protocol):
    """Your implementation, seen through a component's trace-format operations."""

    name: str

    def reset(self, config: dict[str, Any]) -> None: ...
    def step(self, op: str, args: Any) -> dict[str, Any]: ...


class ModelAdapter:
    """The model itself behind the adapter interface (a reference implementation: checking it
    finds no divergence; the harness examples serve it over the wire protocol). ``error`` is the
    rejection's type name."""

    def __init__(self, component: str, quirks: Sequence[str] = ()) -> None:
        self.component, self.quirks = _component(component).name, list(quirks)
        self.name = f"kvmodel's {self.component} model"
        self.system: Any = None

    def reset(self, config: dict[str, Any]) -> None:
        self.system = make_system(self.component, config, self.quirks)

    def step(self, op: str, args: Any) -> dict[str, Any]:
        obs: dict[str, Any] = self.system.step(op, args).observation(None)
        if "error" in obs:
            obs["error"] = obs["error"]["type"]
        return obs


def _default_name() -> str:
    from kvmodel import components

    return components.default().name


def _component(component: str) -> Any:
    from kvmodel import components

    try:
        return components.get(component, lambda c: c.api_space, "component with a workload generator")
    except components.UnknownComponent as e:
        raise ValueError(str(e)) from None


def _space(component: str, space: Any | None) -> Any:
    """The workload world: the caller's, or the component's (``kvmodel.components``)."""
    base = _component(component).api_space()
    if space is not None and type(space) is not type(base):
        raise ValueError(
            f"space for {component} must be a {type(base).__name__} (kvmodel.api.workload_space), got {space!r:.80}"
        )
    return space if space is not None else base


def workload_space(component: str, **fields: Any) -> Any:
    """The world workloads are drawn from (``check_implementation(space=...)``): the component's
    default API world with ``fields`` changed. Its type and fields (their defaults for the API) are
    listed per component in ``docs/contracts.md``; an unknown field is a ``ValueError`` naming the
    known ones."""
    base = _component(component).api_space()
    known = [f.name for f in attrs.fields(type(base))]
    for k in fields:
        if k not in known:
            raise ValueError(f"{component}: unknown workload-space field {k!r} (known: {', '.join(known)})")
    try:
        return attrs.evolve(base, **fields)
    except InvalidInput as e:
        raise ValueError(f"{component}: {e.detail or e}") from None


def error_names(component: str | None = None) -> dict[str, str]:
    """The model's rejections for ``component`` (every component when ``None``): name -> id, where
    the name is the error's type (``DestroyNotActive``) or, for a panic whose id is its message, the
    message itself. Any name, any id, or the real message (the id then the runtime data Rust
    appends) may be returned as ``error``. Read from the model's code (:mod:`kvmodel.contracts`)."""
    from kvmodel import contracts

    return contracts.error_catalogue(None if component is None else _component(component).name)


def json_safe(x: Any, depth: int = 0) -> Any:
    """``x`` with anything JSON cannot hold replaced by its ``repr`` (an adapter may return
    sets, objects, NaN, huge structures): reports, traces and ``explain()`` stay printable."""
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
    """The first step where the implementation and the model disagree. ``what``: ``returns``,
    ``error``, ``events``, ``exception`` (the adapter raised), ``malformed`` (its answer is not an
    observation), ``timeout`` (a step took longer than ``step_timeout``), ``reset`` (``reset``
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
        return (
            f"step {self.step + 1}, {self.op} {json.dumps(self.args, sort_keys=True)}: {self.what} differ — "
            f"model {json.dumps(self.model, sort_keys=True)}, implementation {json.dumps(self.implementation)}"
        )


@attrs.define
class DiffReport:
    """What :func:`check_implementation` found."""

    implementation: str
    component: str
    config: dict[str, Any]
    quirks: list[str]
    workloads: int = 0
    steps: int = 0
    seconds: float = 0.0
    seed: int = 0
    divergence: Divergence | None = None
    ops: list[tuple[str, Any]] | None = None  # the shrunk operation list
    trace: dict[str, Any] | None = None  # the model's run of ``ops``, divergence marked
    flaky: bool = False  # a divergence was seen but did not reproduce: ops and trace are unshrunk
    shrink_runs: int = 0
    op_counts: dict[str, int] = attrs.field(factory=dict)  # steps run per operation (op_label)

    @property
    def ok(self) -> bool:
        """No divergence was ever observed (a flaky one makes the report not ok)."""
        return self.divergence is None and not self.flaky

    @property
    def verdict(self) -> str:
        """``violation`` on any divergence; ``inconclusive`` when no step ran (nothing was
        compared: never a pass); else ``pass``."""
        if not self.ok:
            return "violation"
        return "pass" if self.steps > 0 else "inconclusive"

    def to_json(self) -> dict[str, Any]:
        return {
            "implementation": self.implementation,
            "component": self.component,
            "config": self.config,
            "quirks": self.quirks,
            "workloads": self.workloads,
            "steps": self.steps,
            "seconds": round(self.seconds, 3),
            "seed": self.seed,
            "divergence": None if self.divergence is None else self.divergence.to_json(),
            "flaky": self.flaky,
            "verdict": self.verdict,
            "shrink_runs": self.shrink_runs,
            "op_counts": dict(sorted(self.op_counts.items())),
            "ops": self.ops,
        }

    def write_trace(self, path: str | Path) -> Path | None:
        """Write the counterexample trace (``kvmodel show`` / ``kvmodel replay`` read it)."""
        return None if self.trace is None else traces.write(self.trace, path)

    def explain(self) -> str:
        if self.divergence is None:
            return f"{self.implementation}: {self.workloads} workloads, {self.steps} steps, no divergence"
        from kvmodel import show

        how = "FLAKY: it did not reproduce when re-run, unshrunk" if self.flaky else "after shrinking"
        text = (
            f"{self.implementation} diverges from the {self.component} model ({len(self.ops or [])} step(s) "
            f"{how}): {self.divergence}\n"
        )
        return text + (show.terminal(self.trace) if self.trace is not None else "")


SEPARATORS = (":", " ", "(", ",", ".", "\n")

# what Rust's assert! / assert_eq! put before a custom message (std's panic text)
ASSERT_PREFIXES = ("assertion `left == right` failed: ", "assertion `left != right` failed: ", "assertion failed: ")


@lru_cache(maxsize=1024)
def _template(rid: str) -> re.Pattern[str]:
    """``rid`` as a pattern: each ``{}`` (a Rust ``{x}``/``{}`` interpolation) stands for any
    text, and the message may go on after a separator (the runtime data Rust appends)."""
    body = ".*?".join(re.escape(part) for part in rid.split("{}"))
    seps = "".join(re.escape(c) for c in SEPARATORS)
    return re.compile(f"(?:{body})(?:[{seps}].*)?", re.DOTALL)


def _strip_assert(text: str) -> str:
    for p in ASSERT_PREFIXES:
        if text.startswith(p):
            return text[len(p) :]
    return text


def same_error(model_err: dict[str, Any], got: Any) -> bool:
    """Whether ``got`` names the model's rejection: its type name (``DestroyNotActive``), its id
    (the Rust panic's format string, ``{}`` where Rust puts runtime data), or the real message —
    the format string filled in, optionally followed by the data Rust appends after a separator
    (``Missing active block for promotion: PartialBlock(p0). ...``), with or without the
    ``assertion failed: `` / ``assertion `left == right` failed: `` prefix std's asserts add."""
    if not isinstance(got, str):
        return False
    if got in (model_err.get("type"), model_err.get("id")):
        return True
    rid = str(model_err.get("id", ""))
    if not rid:
        return False
    if len(got) > 1_000_000:  # a message this long is not a panic text; no pattern over it
        got = got[:1_000_000]
    for want in {rid, _strip_assert(rid)}:
        for text in {got, _strip_assert(got)}:
            if _template(want).fullmatch(text):
                return True
    return False


class Renaming:
    """A one-to-one renaming of handle-like ids (``Component.renamed_fields``) kept over a run:
    the model's and the implementation's ids may differ, consistently."""

    def __init__(self, fields: Sequence[str]) -> None:
        self.fields = tuple(fields)
        self.fwd: dict[Any, Any] = {}
        self.back: dict[Any, Any] = {}

    def same_events(self, model: list[Any], got: list[Any]) -> bool:
        if not self.fields:
            return model == got
        if len(model) != len(got):
            return False
        fwd, back = dict(self.fwd), dict(self.back)
        for a, b in zip(model, got, strict=True):
            if not isinstance(a, dict) or not isinstance(b, dict) or set(a) != set(b):
                return False
            for k, v in a.items():
                if k not in self.fields:
                    if b[k] != v:
                        return False
                    continue
                w = b[k]
                try:
                    if fwd.setdefault((k, v), w) != w or back.setdefault((k, w), v) != v:
                        return False
                except TypeError:  # an unhashable id
                    return False
        self.fwd, self.back = fwd, back
        return True


def _compare(
    i: int, op: str, args: Any, model: dict[str, Any], got: Any, renaming: Renaming | None = None
) -> Divergence | None:
    if not isinstance(got, dict) or not ({"returns", "error"} & set(got)):
        return Divergence(
            i, op, args, "malformed", model, f"step() must return a dict with 'returns' or 'error': {got!r}"
        )
    ev = got.get("events", [])
    if not isinstance(ev, list | tuple):
        return Divergence(i, op, args, "malformed", model, f"'events' must be a list, got {ev!r}")
    if "error" in model:
        if not same_error(model["error"], got.get("error")):
            return Divergence(
                i, op, args, "error", model["error"]["type"], got.get("error", {"returns": got.get("returns")})
            )
    elif "error" in got and got["error"] is not None:
        return Divergence(i, op, args, "error", {"returns": model.get("returns")}, got["error"])
    elif got.get("returns") != model.get("returns"):
        return Divergence(i, op, args, "returns", model.get("returns"), got.get("returns"))
    if not (renaming or Renaming(())).same_events(model["events"], list(ev)):
        return Divergence(i, op, args, "events", model["events"], list(ev))
    return None


def _concrete(
    component: str, config: dict[str, Any], quirks: Sequence[str], picks: Sequence[int], sp: Any
) -> list[tuple[str, Any]]:
    """The operation list a sequence of picks stands for (:mod:`kvmodel.workloads`)."""
    from kvmodel import workloads

    c = _component(component)
    return workloads.concrete(sp, c.api_ops(), sp.system(config, quirks), picks, c.api_weights)


def op_label(op: str, args: Any) -> str:
    """The name an operation is counted under: ``op``, or ``op:Variant`` when its arguments are one
    tagged variant (the KV manager's ``process`` ``{"Use": [...]}`` is ``process:Use``)."""
    if isinstance(args, dict) and len(args) == 1:
        (k,) = args
        if isinstance(k, str) and k[:1].isupper():
            return f"{op}:{k}"
    return op


def operations(component: str) -> list[str]:
    """Every operation of the component's system (each appears in a default workload run)."""
    return list(make_system(_component(component).name, {}, ()).OPS)  # type: ignore[attr-defined]


DEFAULT_STEP_TIMEOUT = 10.0  # seconds per adapter call (reset or step)


class _Stuck(Exception):
    """An adapter call did not return within the step timeout; the adapter cannot be used again."""


class _Caller:
    """Runs adapter calls on one worker thread with a timeout (a hung call cannot be killed, so
    once one times out every later call is refused)."""

    def __init__(self, timeout: float | None) -> None:
        import concurrent.futures

        self.timeout = timeout
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="kvmodel-adapter")
        self.stuck = False

    def __call__(self, fn: Callable[..., Any], *args: Any) -> Any:
        import concurrent.futures

        if self.stuck:
            raise _Stuck("an earlier call timed out")
        if self.timeout is None:
            return fn(*args)
        fut = self.pool.submit(fn, *args)
        try:
            return fut.result(timeout=self.timeout)
        except concurrent.futures.TimeoutError:
            self.stuck = True
            raise _Stuck(f"no answer within {self.timeout:g} s") from None

    def close(self) -> None:
        self.pool.shutdown(wait=not self.stuck, cancel_futures=True)


def _failure_text(e: BaseException) -> str:
    """An adapter's failure for a report: its repr, or a harness failure's message with the
    child's standard-error tail (at most 2,300 characters)."""
    if getattr(e, "divergence_kind", None):
        return str(e)[:2300]
    return repr(e)[:300]


def differential(
    adapter: Adapter,
    component: str,
    config: dict[str, Any],
    quirks: Sequence[str],
    ops: Sequence[tuple[str, Any]],
    call: Callable[..., Any] | None = None,
    counts: dict[str, int] | None = None,
) -> tuple[Divergence | None, int]:
    """Run ``ops`` on a fresh model and a reset adapter; the first divergence and the steps run.
    Nothing the adapter does escapes: an exception, a malformed answer or a timeout (``call``
    runs each adapter call with one) is a divergence of its own kind. An operation the model
    rejects as malformed (``InvalidInput``) makes the list itself invalid: ``InvalidInput`` is
    raised (the shrinker skips such candidates). ``counts``: per-operation counts of the steps
    run (:func:`op_label`)."""
    call = call or (lambda fn, *a: fn(*a))
    sys_ = make_system(component, config, quirks)
    renaming = Renaming(_component(component).renamed_fields)
    try:
        call(adapter.reset, dict(sys_.config))
    except _Stuck as e:
        return Divergence(0, "reset", dict(sys_.config), "timeout", None, str(e)), 0
    except Exception as e:
        kind = getattr(e, "divergence_kind", None) or "reset"  # a harness child's crash or timeout
        return Divergence(0, "reset", dict(sys_.config), kind, None, _failure_text(e)), 0
    for i, (op, args) in enumerate(ops):
        out = sys_.step(op, args)
        if isinstance(out.error, InvalidInput):  # not an input the real code's types admit
            raise InvalidInput(f"step {i + 1} ({op}): {out.error.detail}")
        model = out.observation(None)
        if counts is not None:
            label = op_label(op, args)
            counts[label] = counts.get(label, 0) + 1
        try:
            got = call(adapter.step, op, json.loads(json.dumps(args)))
        except _Stuck as e:
            return Divergence(i, op, args, "timeout", model.get("error", model.get("returns")), str(e)), i + 1
        except Exception as e:  # the implementation crashed: a divergence, not our failure
            kind = getattr(e, "divergence_kind", None) or "exception"
            return Divergence(i, op, args, kind, model.get("error", model.get("returns")), _failure_text(e)), i + 1
        d = _compare(i, op, args, model, got, renaming)
        if d is not None:
            return d, i + 1
    return None, len(ops)


def check_implementation(
    adapter: Adapter | Callable[[], Adapter],
    component: str | None = None,
    *,
    config: dict[str, Any] | None = None,
    quirks: Sequence[str] = (),
    workloads: int = 200,
    max_steps: int | None = None,
    seed: int = 0,
    space: Any | None = None,
    revision: str | None = None,
    step_timeout: float | None = DEFAULT_STEP_TIMEOUT,
) -> DiffReport:
    """Differential check of ``adapter`` against the model of ``component`` (default: the first
    registered component, the mocker's KV manager).

    ``quirks``: the model to compare with — ``()`` the ideal model, ``"faithful"`` the seed's
    revision of the real code, or a list of quirk names; ``revision``: a named revision of the
    real code instead (``kvmodel quirks`` lists them; e.g. ``"403dd259"`` for the registry).
    ``space``: the explorer space whose moves generate the workloads (default: a wider one than
    ``kvmodel check`` uses). ``step_timeout``: seconds an adapter call may take (default 10;
    ``None``: no limit); a call that takes longer is a divergence of kind ``timeout`` and ends the
    run. Deterministic for a given seed. Never raises for a divergence: look at ``report.ok``.
    Any divergence observed makes the report not ok; one that does not reproduce when re-run
    is reported ``flaky`` with the operations and trace as first seen.
    """
    from hypothesis import strategies as st

    from kvmodel.conformance.search import failing_examples
    from kvmodel.model.quirks import faithful
    from kvmodel.model.quirks import revision as named_revision

    if max_steps is None:
        max_steps = _component(component or _default_name()).api_steps
    for name, v, lo in (("workloads", workloads, 1), ("max_steps", max_steps, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ValueError(f"{name} must be an integer of at least {lo}, got {v!r}")
    if step_timeout is not None and not (isinstance(step_timeout, int | float) and 0 < step_timeout < float("inf")):
        raise ValueError(f"step_timeout must be a positive number of seconds or None, got {step_timeout!r}")
    if component is None:
        from kvmodel import components

        component = components.default().name
    else:
        component = _component(component).name
    impl: Adapter = adapter if hasattr(adapter, "step") else adapter()  # type: ignore[assignment]
    if revision is not None:
        q = sorted(named_revision(component, revision).quirks)
    else:
        q = sorted(faithful(component)) if quirks == "faithful" else sorted(quirks)
    sp = _space(component, space)
    cfg = dict(make_system(component, config or {}, q).config)
    rep = DiffReport(getattr(impl, "name", type(impl).__name__), component, cfg, q, seed=seed)
    determinism.pin()
    t0 = time.perf_counter()
    found: list[tuple[list[tuple[str, Any]], Divergence]] = []
    call = _Caller(step_timeout)

    def diverges(picks: list[int], shrinking: bool) -> bool:
        if call.stuck:  # a hung adapter: nothing more can be asked of it
            return bool(found)
        ops = _concrete(component, cfg, q, picks, sp)
        d, n = differential(impl, component, cfg, q, ops, call, None if shrinking else rep.op_counts)
        if shrinking:
            rep.shrink_runs += 1
        else:
            rep.workloads += 1
            rep.steps += n
        if d is not None:
            found.append((ops[: d.step + 1], d))
        return d is not None

    try:
        # long enough that set-ups of several steps (a request allocated, then decoded) occur; the
        # deletion pass shrinks below the minimum afterwards
        strategy = st.lists(st.integers(0, 10_000), min_size=max(1, max_steps // 2), max_size=max_steps)
        failing_examples(strategy, workloads=workloads, seed=seed, diverges=diverges)
        if found:
            first_ops, first_d = found[0]
            ops = min((o for o, _ in found), key=len)
            d: Divergence | None = None
            if not call.stuck:
                ops = _minimize(impl, component, cfg, q, ops, call)
                d, _ = differential(impl, component, cfg, q, ops, call)
            if d is None:  # seen, but not when re-run: flaky (or the adapter hung)
                rep.flaky = first_d.what != "timeout"
                ops, d = first_ops, first_d
            rep.divergence, rep.ops = d, ops
            rep.trace = traces.record(
                component,
                cfg,
                q,
                ops,
                origin={"engine": "differential", "implementation": rep.implementation, "seed": seed},
                stop_at_violation=False,
            )
            rep.trace["origin"]["divergence"] = d.to_json()
            if rep.flaky:
                rep.trace["origin"]["flaky"] = True
    finally:
        call.close()
    rep.seconds = time.perf_counter() - t0
    return rep


def _minimize(
    impl: Adapter,
    component: str,
    config: dict[str, Any],
    quirks: Sequence[str],
    ops: list[tuple[str, Any]],
    call: Callable[..., Any] | None = None,
) -> list[tuple[str, Any]]:
    """Drop every step whose removal keeps a divergence (1-minimal); a dropped step may make
    a later one invalid for the model (a name not bound): such candidates are skipped."""
    from kvmodel.shrink import one_minimal

    def still(cand: list[tuple[str, Any]]) -> list[tuple[str, Any]] | None:
        try:
            d, _ = differential(impl, component, config, quirks, cand, call)
        except InvalidInput:
            return None
        return cand[: d.step + 1] if d is not None and d.what != "timeout" else None

    return one_minimal(ops, still)
