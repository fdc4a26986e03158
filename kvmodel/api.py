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

import contextlib
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import attrs

from kvmodel import components, exact, traces, workloads
from kvmodel.components import Component
from kvmodel.conformance import differential as differential_
from kvmodel.conformance.differential import Difference
from kvmodel.model import quirks as quirks_
from kvmodel.model.errors import InvalidInput
from kvmodel.workloads import concrete as concrete_ops

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


Adapter = differential_.Adapter  # your implementation, seen through a component's trace-format operations


class ModelAdapter:
    """The model itself behind the adapter interface (a reference implementation: checking it
    finds no divergence; the harness examples serve it over the wire protocol). ``error`` is the
    rejection's type name. ``snapshot``: every answer carries the model's state under ``state``
    (what invariant mode's state invariants read)."""

    def __init__(self, component: Component | str, quirks: Sequence[str] | str = (), *, snapshot: bool = False) -> None:
        self.record = _component(component)
        self.component = self.record.name
        self.quirks = quirks_.chosen(self.component, quirks)
        self.snapshot = snapshot
        self.name = f"kvmodel's {self.component} model"
        self.system: Any = None

    def reset(self, config: dict[str, Any]) -> None:
        self.system = self.record.make_system(config, self.quirks)

    def step(self, op: str, args: Any) -> dict[str, Any]:
        out = self.system.step(op, args)
        obs: dict[str, Any] = out.observation(self.system.snapshot() if self.snapshot else None)
        if "error" in obs:
            obs["error"] = obs["error"]["type"]
        return obs


def adapter_name(impl: Any) -> str:
    """The adapter's ``name`` made safe to print (:func:`kvmodel.exact.printable`); its type's name
    when it has none or reading it raises."""
    try:
        name = impl.name
    except BaseException:  # a property that raises, even SystemExit: the type's name instead
        name = None
    if not isinstance(name, str) or not name:
        name = type(impl).__name__
    return exact.printable(name)


def has_workloads(c: Component) -> bool:
    """Whether the component has a workload generator (an API world)."""
    return c.api_world is not None


def _component(component: Component | str) -> Component:
    """The record (given, or named by a name or alias) of a component with a workload generator;
    an unknown name is a ``ValueError`` naming the known ones."""
    try:
        c: Component | None = components.of(component)
    except components.UnknownComponent:
        c = None
    if c is None or c.api_world is None:  # the error names the components that have one
        try:
            components.get(component if isinstance(component, str) else component.name, has_workloads, _WHAT)
        except components.UnknownComponent as e:
            raise ValueError(str(e)) from None
    assert c is not None
    return c


_WHAT = "component with a workload generator"


def workload_space(component: str, **fields: Any) -> Any:
    """The world workloads are drawn from (``check_implementation(space=...)``): the component's
    default API world with ``fields`` changed. Its type and fields (their defaults for the API) are
    listed per component in ``docs/contracts.md``; an unknown field is a ``ValueError`` naming the
    known ones."""
    base: Any = _component(component).api_space()
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


Divergence = differential_.Divergence
DiffReport = differential_.Report  # the one conformance report (kvmodel.conformance.differential)
json_safe = differential_.json_safe


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
    """A one-to-one renaming kept over a run: of handle-like ids (``Component.renamed_fields``),
    and of the random hashes the model drew (``random``: a G1 sequence with prefix caching off
    draws fresh random sequence hashes, as Rust does; a port draws its own, so those values are
    compared up to a consistent renaming). Everything else is compared exactly
    (:func:`kvmodel.exact.same`)."""

    def __init__(self, fields: Sequence[str], random: set[int] | None = None) -> None:
        self.fields = tuple(fields)
        self.random = random
        self.fwd: dict[Any, Any] = {}
        self.back: dict[Any, Any] = {}

    def _pair(self, fwd: dict[Any, Any], back: dict[Any, Any], kind: str, v: Any, w: Any) -> bool:
        kv, kw = exact.key(v), exact.key(w)  # typed: the id true is not the id 1
        return bool(fwd.setdefault((kind, kv), kw) == kw and back.setdefault((kind, kw), kv) == kv)

    def _same(self, a: Any, b: Any, fwd: dict[Any, Any], back: dict[Any, Any]) -> bool:
        if not self.random:
            return exact.same(a, b)
        if type(a) is int and a in self.random:
            return type(b) is int and bool(self._pair(fwd, back, "random", a, b))
        if type(a) is not type(b):
            return False
        if type(a) is dict:
            return a.keys() == b.keys() and all(self._same(v, b[k], fwd, back) for k, v in a.items())
        if type(a) is list:
            return len(a) == len(b) and all(self._same(x, y, fwd, back) for x, y in zip(a, b, strict=True))
        return bool(a == b)

    def same_value(self, model: Any, got: Any) -> bool:
        """Whether a returned value is the same up to the renaming of random hashes (extended by
        the values met for the first time)."""
        fwd, back = dict(self.fwd), dict(self.back)
        if not self._same(model, got, fwd, back):
            return False
        self.fwd, self.back = fwd, back
        return True

    def same_events(self, model: list[Any], got: list[Any]) -> bool:
        """Whether the event lists are the same (:func:`kvmodel.exact.same`) up to the renaming,
        which is extended by the ids met for the first time."""
        if not self.fields:
            return self.same_value(model, got)
        if len(model) != len(got):
            return False
        fwd, back = dict(self.fwd), dict(self.back)
        for a, b in zip(model, got, strict=True):
            if not isinstance(a, dict) or not isinstance(b, dict) or set(a) != set(b):
                return False
            for k, v in a.items():
                if k not in self.fields:
                    if not self._same(v, b[k], fwd, back):
                        return False
                elif not self._pair(fwd, back, k, v, b[k]):
                    return False
        self.fwd, self.back = fwd, back
        return True


def compare(op: str, args: Any, model: dict[str, Any], got: Any, memo: dict[str, Any]) -> Difference | None:
    """The API's comparison of one step (:data:`kvmodel.conformance.differential.Compare`): the
    answer's shape, then the rejection (:func:`same_error`) or the return value, then the events
    up to the component's renaming of handles (``memo["renaming"]``, kept over a run)."""
    if not isinstance(got, dict) or not ({"returns", "error"} & set(got)):
        return ("malformed", model, f"step() must return a dict with 'returns' or 'error': {got!r}")
    ev = got.get("events", [])
    if not isinstance(ev, list | tuple):
        return ("malformed", model, f"'events' must be a list, got {ev!r}")
    if "error" in model:
        if not same_error(model["error"], got.get("error")):
            return ("error", model["error"]["type"], got.get("error", {"returns": got.get("returns")}))
    elif "error" in got and got["error"] is not None:
        return ("error", {"returns": model.get("returns")}, got["error"])
    renaming: Renaming = memo.get("renaming") or Renaming(())
    if (
        "error" not in model
        and got.get("error") is None
        and not renaming.same_value(model.get("returns"), got.get("returns"))
    ):
        return ("returns", model.get("returns"), got.get("returns"))
    if not renaming.same_events(model["events"], list(ev)):
        return ("events", model["events"], list(ev))
    return None


def _concrete(
    component: Component | str,
    config: dict[str, Any],
    quirks: Sequence[str],
    picks: Sequence[int],
    sp: Any,
    only: frozenset[str] | None = None,
) -> list[tuple[str, Any]]:
    """The operation list a sequence of picks stands for (:mod:`kvmodel.workloads`)."""
    c = _component(component)
    return workloads.concrete(sp, c.workload_ops(), sp.system(config, quirks), picks, c.api_weights, only)


def _declared(impl: Any, known: Sequence[str], of: str) -> frozenset[str] | None:
    """The operations the adapter says it implements (its ``operations`` attribute: names of the
    operations ``known``, which ``of`` describes), or ``None`` (all of them)."""
    try:
        ops = impl.operations
    except AttributeError:
        return None
    if ops is None:
        return None
    if isinstance(ops, str) or not all(isinstance(o, str) for o in ops):
        raise ValueError(f"the adapter's operations must be a collection of operation names, got {ops!r:.80}")
    unknown = sorted(set(ops) - set(known))
    if unknown:
        raise ValueError(f"the adapter declares {unknown[0]!r}, not {of} ({sorted(known)})")
    return frozenset(ops)


def op_label(op: str, args: Any) -> str:
    """The name an operation is counted under: ``op``, or ``op:Variant`` when its arguments are one
    tagged variant (the KV manager's ``process`` ``{"Use": [...]}`` is ``process:Use``)."""
    if isinstance(args, dict) and len(args) == 1:
        (k,) = args
        if isinstance(k, str) and k[:1].isupper():
            return f"{op}:{k}"
    return op


def operations(component: Component | str) -> list[str]:
    """Every operation of the component's system (each appears in a default workload run)."""
    return list(_component(component).make_system({}, ()).OPS)  # type: ignore[attr-defined]


DEFAULT_STEP_TIMEOUT = 10.0  # seconds per adapter call (reset or step)


class _Model:
    """The model's side of a run: the component's system (``make`` builds it for a configuration
    and quirk list), its observations with the rejection's type and id; a step it rejects as
    malformed (``InvalidInput``) makes the list invalid."""

    def __init__(self, make: Callable[[dict[str, Any], Sequence[str]], Any], name: str, quirks: Sequence[str]) -> None:
        self.make, self.quirks = make, list(quirks)
        self.name = name
        self.system: Any = None
        self.steps = 0
        self.renaming: Renaming | None = None
        self.random: set[int] = set()  # the random hashes drawn in this run (caching-off sequences)

    def reset(self, config: dict[str, Any]) -> None:
        self.system = self.make(config, self.quirks)
        self.steps = 0
        self.random = set()

    def step(self, op: str, args: Any) -> dict[str, Any]:
        self.steps += 1
        out = self.system.step(op, args)
        if isinstance(out.error, InvalidInput):  # not an input the real code's types admit
            raise InvalidInput(f"step {self.steps} ({op}): {out.error.detail}")
        for seq in getattr(self.system, "seqs", {}).values():
            if not getattr(seq, "caching", True):
                self.random.update(seq.seq_hashes)
        obs: dict[str, Any] = out.observation(None)
        return obs


def _comparer(fields: Sequence[str], model: _Model | None = None) -> differential_.Compare:
    """Exact comparison, with the values of the renamed ``fields`` compared up to a renaming."""

    def cmp(op: str, args: Any, want: dict[str, Any], got: Any, memo: dict[str, Any]) -> Difference | None:
        if "renaming" not in memo:
            memo["renaming"] = Renaming(fields, None if model is None else model.random)
        return compare(op, args, want, got, memo)

    return cmp


def differential(
    adapter: Adapter,
    component: str,
    config: dict[str, Any],
    quirks: Sequence[str],
    ops: Sequence[tuple[str, Any]],
    call: Callable[..., Any] | None = None,
) -> tuple[Divergence | None, int]:
    """Run ``ops`` on a fresh model and a reset adapter (:func:`kvmodel.conformance.differential.differential`);
    the first divergence and the steps run. An operation the model rejects as malformed raises
    ``InvalidInput``."""
    c = _component(component)
    cfg = dict(c.make_system(config, quirks).config)
    m = _Model(c.make_system, f"kvmodel's {c.name} model", quirks)
    return differential_.differential(m, adapter, cfg, ops, _comparer(c.renamed_fields, m), call=call)


def check_implementation(
    adapter: Adapter | Callable[[], Adapter],
    component: str | None = None,
    *,
    config: dict[str, Any] | None = None,
    quirks: Sequence[str] | str = (),
    workloads: int = 200,
    max_steps: int | None = None,
    seed: int = 0,
    space: Any | None = None,
    revision: str | None = None,
    step_timeout: float | None = DEFAULT_STEP_TIMEOUT,
    coverage: bool = True,
    check: str = "equal",
    accept: Sequence[str] | str = (),
) -> DiffReport:
    """Differential check of ``adapter`` against the model of ``component`` (default: the first
    registered component, the mocker's KV manager).

    ``quirks``: the model to compare with — ``()`` the ideal model, ``"faithful"`` the seed's
    revision of the real code, or a list of quirk names; ``revision``: a named revision of the
    real code instead (``kvmodel quirks`` lists them; e.g. ``"403dd259"`` for the registry).
    ``space``: the explorer space whose moves generate the workloads (default: a wider one than
    ``kvmodel check`` uses). ``step_timeout``: seconds an adapter call may take (default 10;
    ``None``: no limit); a call that takes longer is a divergence of kind ``timeout`` and ends the
    run. ``coverage``: measure the branch coverage of the component's model modules over the run
    (``report.coverage``, :mod:`kvmodel.reach`; about 1.5 to 2 times slower on the model side).
    Deterministic for a given seed. Never raises for a divergence: look at ``report.ok``.
    Any divergence observed makes the report not ok; one that does not reproduce when re-run
    is reported ``flaky`` with the operations and trace as first seen.

    ``check``: ``"equal"`` (the default) compares every observation with the model's —
    for a port of the modelled revision, and it implies every invariant verdict the model has;
    ``"invariants"`` checks the implementation's observations against the component's declared
    invariants with no reference revision (:mod:`kvmodel.invariant_mode`: for an implementation
    of another revision or project; the model only decides which generated inputs are valid);
    ``"both"``: equality, then the invariants. ``accept`` (invariant modes): the known defects a
    violation may be explained by — a named revision of the component (``"faithful"``: the
    seed's), or quirk names; in ``"both"`` the compared model's quirks are accepted too. The
    report says which invariants were checked, which not and why, and the known violations
    (``report.extra["invariants"]``).
    """
    from hypothesis import strategies as st

    c = _component(component if component is not None else components.default())
    if max_steps is None:
        max_steps = c.api_steps
    for name, v, lo in (("workloads", workloads, 1), ("max_steps", max_steps, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ValueError(f"{name} must be an integer of at least {lo}, got {v!r}")
    if step_timeout is not None and not (isinstance(step_timeout, int | float) and 0 < step_timeout < float("inf")):
        raise ValueError(f"step_timeout must be a positive number of seconds or None, got {step_timeout!r}")
    impl: Adapter = adapter if hasattr(adapter, "step") else adapter()  # type: ignore[assignment]
    q = sorted(quirks_.revision(c.name, revision).quirks) if revision is not None else quirks_.chosen(c.name, quirks)
    if check not in ("equal", "invariants", "both"):
        raise ValueError(f"check must be 'equal', 'invariants' or 'both', got {check!r:.60}")
    observer = c.observer
    if check != "equal" and observer is None:
        raise ValueError(f"{c.name} has no invariant mode (no observer): use check='equal'")
    accepted = quirks_.accepted(c.name, accept) | (set(q) if check == "both" else set())
    label = revision if revision is not None else quirks_.revision_of(c.name, q)
    sp = c.api_space()
    if space is not None:
        if type(space) is not type(sp):
            raise ValueError(
                f"space for {c.name} must be a {type(sp).__name__} (kvmodel.api.workload_space), got {space!r:.80}"
            )
        sp = space
    extra = c.workload_ops()
    cfg = dict(c.make_system(config or {}, q).config)
    every = list(c.make_system({}, ()).OPS)  # type: ignore[attr-defined]
    rep = DiffReport(adapter_name(impl), c.name, cfg, q, seed=seed)
    rep.revision = label
    rep.extra["check"] = check
    only = _declared(impl, every, f"an operation of {c.name}")
    call = differential_.Caller(step_timeout)
    try:
        # long enough that set-ups of several steps (a request allocated, then decoded) occur; the
        # deletion pass shrinks below the minimum afterwards
        strategy = st.lists(st.integers(0, 10_000), min_size=max(1, max_steps // 2), max_size=max_steps)
        model_side = _Model(c.make_system, f"kvmodel's {c.name} model", q)
        cmp = _comparer(c.renamed_fields, model_side)
        tally = None
        if check != "equal":
            from kvmodel import invariant_mode

            assert observer is not None
            tally = invariant_mode.Tally(c.name)
            make = observer
            cmp = invariant_mode.comparer(
                c.name, lambda: make(cfg), accepted, tally, equal=cmp if check == "both" else None
            )
        call.start()  # before the measurement: the adapter's thread is not measured
        from kvmodel.reach import Reach

        reach = Reach(c.name) if coverage else None
        with reach if reach is not None else contextlib.nullcontext():
            differential_.run(
                model_side,
                impl,
                rep,
                strategy=strategy,
                case=lambda picks: (cfg, concrete_ops(sp, extra, sp.system(cfg, q), picks, c.api_weights, only)),
                compare=cmp,
                workloads=workloads,
                call=call,
                label=op_label,
            )
        rep.extra["coverage"] = None if reach is None else reach.result
        if tally is not None:
            rep.extra["accepted_quirks"] = sorted(accepted)
            rep.extra["invariants"] = tally.to_json()
    finally:
        call.close()
    exercised = {op for op, _ in (rep.ops or [])} | {k.split(":", 1)[0] for k in rep.op_counts}
    rep.extra["operations_declared"] = None if only is None else sorted(only)
    rep.extra["operations_not_exercised"] = sorted(set(every) - exercised)
    d = rep.divergence
    if d is not None and rep.ops is not None:
        rep.trace = traces.record(
            c,
            cfg,
            q,
            rep.ops,
            origin={"engine": "differential", "implementation": rep.implementation, "seed": seed},
            stop_at_violation=False,
        )
        rep.trace["origin"]["divergence"] = d.to_json()
        if rep.flaky:
            rep.trace["origin"]["flaky"] = True
    return rep
