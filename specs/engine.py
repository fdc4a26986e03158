"""A generic Z3 engine over symbolic transition systems: BMC and k-induction.

A :class:`TransitionSystem` has typed state variables, an initial condition, one
:class:`Operation` per operation of the component (its parameters, a guard and its
effect as a function of the state before), and :class:`Property` formulas over one
state. Observations of a step that the executable model reports (return value, error,
events, step and stream faults) are state variables written by every transition, so
every invariant, whatever its kind in the catalogue, is a formula over one state.

* :func:`bmc` unrolls the transition relation incrementally from the initial state and
  reports, per property, the first depth at which it fails, with the steps that get there.
* :func:`k_induction` proves properties: the base case is BMC to depth ``k - 1``; the step
  case asks whether ``k`` consecutive states satisfying every property (and every lemma)
  can be followed by one that breaks a property. Per-property step queries assume the
  whole catalogue on the earlier states, which is sound: if each property is
  ``k``-inductive relative to the conjunction, the conjunction is ``k``-inductive.
  The answer per property is ``proved`` (with its ``k``), ``violated`` (a counterexample
  from the initial state), ``cti`` (a counterexample to induction at the largest ``k``
  tried: the property may still hold, but needs a strengthening lemma) or
  ``inconclusive`` (the solver said unknown or ran out of time) — never ``proved``
  unless every query was ``unsat``.
* :func:`step_satisfiable` checks one concrete transition against the relation (used by
  the agreement tests between a spec and the executable model).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs
import z3

Sort = Literal["int", "nat", "bool"]
Status = Literal["proved", "violated", "inconclusive", "cti", "holds_to_depth"]


class State(Mapping[str, Any]):
    """The Z3 constants of one state (or one step's parameters), by variable name."""

    def __init__(self, tag: str, variables: Sequence[tuple[str, Sort]], width: int | None = None) -> None:
        self.tag = tag
        self.sorts = dict(variables)
        self._vars: dict[str, Any] = {}
        for name, sort in variables:
            full = f"{name}@{tag}"
            if sort == "bool":
                self._vars[name] = z3.Bool(full)
            else:
                self._vars[name] = z3.Int(full) if width is None else z3.BitVec(full, width)

    def __getitem__(self, name: str) -> Any:
        return self._vars[name]

    def __iter__(self) -> Any:
        return iter(self._vars)

    def __len__(self) -> int:
        return len(self._vars)

    def domain(self) -> Any:
        """Type constraints: ``nat`` variables (Rust ``usize``) are non-negative."""
        return z3.And([self._vars[n] >= 0 for n, s in self.sorts.items() if s == "nat"] or [z3.BoolVal(True)])


Effect = tuple[Any, dict[str, Any]]


@attrs.frozen
class Operation:
    """One operation: parameters, and ``effect(state, params) -> (guard, post)``.

    ``post`` maps variable names to their value after the step as expressions over the
    state before; variables it leaves out keep their value. ``guard`` must include the
    parameters' domain.
    """

    name: str
    params: tuple[tuple[str, Sort], ...]
    effect: Callable[[State, State], Effect] = attrs.field(eq=False, repr=False)
    # the executable action a parameterless operation stands for (``kvmodel.actions.Action``),
    # where the spec names one: a counterexample's step replays as that action
    action: Any = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class Property:
    """A formula over one state. ``lemma`` marks a strengthening lemma added for induction."""

    name: str
    formula: Callable[[State], Any] = attrs.field(eq=False, repr=False)
    lemma: bool = False


@attrs.define
class TransitionSystem:
    name: str
    variables: tuple[tuple[str, Sort], ...]
    init: Callable[[State], Any]
    operations: tuple[Operation, ...]
    properties: tuple[Property, ...]
    width: int | None = None  # None: unbounded integers; else signed bit-vectors of this width

    def state(self, tag: str) -> State:
        return State(tag, self.variables, self.width)

    def params(self, tag: str) -> dict[str, State]:
        return {op.name: State(f"{op.name}.{tag}", op.params, self.width) for op in self.operations}

    def selector(self, tag: str) -> Any:
        return z3.Int(f"op@{tag}") if self.width is None else z3.BitVec(f"op@{tag}", self.width)

    def transition(self, s: State, sel: Any, params: dict[str, State], t: State, keep: set[str] | None = None) -> Any:
        """The relation: the selected operation's guard holds and ``t`` is its effect on ``s``.

        With ``keep``, only those variables of ``t`` are defined and the others are left
        free (sound for properties whose variables' dependencies all lie in ``keep``)."""
        guards = []
        names = [v for v, _ in self.variables if keep is None or v in keep]
        values: dict[str, list[tuple[Any, Any]]] = {v: [] for v in names}
        for k, op in enumerate(self.operations):
            g, post = op.effect(s, params[op.name])
            unknown = set(post) - {v for v, _ in self.variables}
            if unknown:
                raise ValueError(f"{self.name}.{op.name} writes unknown variables {sorted(unknown)}")
            guards.append(z3.And(sel == k, g))
            for v in values:
                if v in post:
                    values[v].append((sel == k, post[v]))
        eqs = []
        for v in names:
            e = s[v]
            for cond, val in reversed(values[v]):
                e = z3.If(cond, val, e)
            eqs.append(t[v] == e)
        return z3.And(z3.Or(guards), *eqs)

    def prop(self, name: str) -> Property:
        for p in self.properties:
            if p.name == name:
                return p
        raise KeyError(name)


@attrs.define
class Step:
    """One decoded step of a counterexample: the operation and its parameter values."""

    op: str
    params: dict[str, Any]
    pre: dict[str, Any] = attrs.field(factory=dict)  # the state values before the step
    action: Any = None  # the operation's action, where it has one


@attrs.define
class PropertyResult:
    name: str
    status: Status
    k: int | None = None
    seconds: float = 0.0
    steps: list[Step] | None = None
    states: list[dict[str, Any]] | None = None
    lemma: bool = False
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"invariant": self.name, "status": self.status, "k": self.k}
        out["seconds"] = round(self.seconds, 3)
        if self.lemma:
            out["lemma"] = True
        if self.detail:
            out["detail"] = self.detail
        return out


def _value(m: z3.ModelRef, e: Any) -> Any:
    v = m.eval(e, model_completion=True)
    if z3.is_true(v):
        return True
    if z3.is_false(v):
        return False
    if z3.is_bv_value(v):
        return int(v.as_signed_long())
    return int(v.as_long())


@attrs.define
class Unrolling:
    """States 0..n and the steps between them, in one incremental solver."""

    ts: TransitionSystem
    solver: z3.Solver
    prefix: str
    timeout_ms: int | None = None
    formulas: list[Any] = attrs.field(factory=list)
    states: list[State] = attrs.field(factory=list)
    sels: list[Any] = attrs.field(factory=list)
    params: list[dict[str, State]] = attrs.field(factory=list)

    fresh: bool = False  # each query solved from scratch by the BMC tactic (integer specs)

    @classmethod
    def start(
        cls, ts: TransitionSystem, prefix: str, timeout_ms: int | None, initial: bool, bmc: bool = False
    ) -> Unrolling:
        s = make_solver(ts)
        if timeout_ms:
            s.set("timeout", timeout_ms)
        u = cls(ts, s, prefix, timeout_ms)
        u.fresh = bmc and ts.width is None
        s0 = ts.state(f"{prefix}0")
        u.states.append(s0)
        u.add(s0.domain())
        if initial:
            u.add(ts.init(s0))
        return u

    def add(self, *fs: Any) -> None:
        self.formulas.extend(fs)
        if self.ts.width is None and not self.fresh:
            self.solver.add(*fs)

    def query(self, *extra: Any) -> tuple[z3.CheckSatResult, z3.ModelRef | None, str]:
        """Check the unrolling with ``extra`` formulas: (result, model if sat, reason if unknown).
        Integer unrollings use one incremental solver; bit-vector ones a fresh SAT run."""
        incremental = self.ts.width is None and not self.fresh
        if incremental:
            solver = self.solver
            solver.push()
            solver.add(*extra)
        elif self.fresh:
            solver = INTEGER_BMC_TACTIC().solver()
            if self.timeout_ms:
                solver.set("timeout", self.timeout_ms)
            solver.add(*self.formulas, *extra)
        else:
            solver = make_solver(self.ts)
            if self.timeout_ms:
                solver.set("timeout", self.timeout_ms)
            solver.add(*self.formulas, *extra)
        try:
            r = solver.check()
            m = solver.model() if r == z3.sat else None
            why = solver.reason_unknown() if r == z3.unknown else ""
            return r, m, why
        finally:
            if incremental:
                solver.pop()

    def extend(self) -> State:
        i = len(self.states)
        s, t = self.states[-1], self.ts.state(f"{self.prefix}{i}")
        sel, params = self.ts.selector(f"{self.prefix}{i - 1}"), self.ts.params(f"{self.prefix}{i - 1}")
        self.add(t.domain(), self.ts.transition(s, sel, params, t))
        self.states.append(t)
        self.sels.append(sel)
        self.params.append(params)
        return t

    def decode(self, m: z3.ModelRef) -> tuple[list[Step], list[dict[str, Any]]]:
        states = [{n: _value(m, s[n]) for n in s} for s in self.states]
        steps = []
        for i, (sel, params) in enumerate(zip(self.sels, self.params, strict=True)):
            k = _value(m, sel)
            op = self.ts.operations[k]
            p = params[op.name]
            steps.append(Step(op.name, {n: _value(m, p[n]) for n in p}, states[i], op.action))
        return steps, states


def INTEGER_BMC_TACTIC() -> z3.Tactic:
    """BMC of an integer spec (KVBM; any spec whose ``bounded`` keeps integers): each depth's
    query solved from scratch after simplification and equation solving. On the G1 quirk
    ``prefix_hit_first_copy_only`` (depth 6) it took 20 s against 32 s for the incremental
    solver, before the G1 spec's BMC moved to bit-vectors (7.9 s; ``benchmarks/g1_bmc.py``);
    the KVBM rows are unchanged (docs/performance.md). k-induction stays incremental."""
    return z3.Then("simplify", "propagate-values", "solve-eqs", "smt")


def make_solver(ts: TransitionSystem) -> z3.Solver:
    """Integers: Z3's default incremental solver. Bit-vectors: bit-blast to SAT (several
    times faster for BMC on these models; each check re-solves, which BMC's growth hides)."""
    if ts.width is None:
        return z3.Solver()
    return z3.Then("simplify", "propagate-values", "solve-eqs", "card2bv", "bit-blast", "sat").solver()


def bmc(
    ts: TransitionSystem,
    depth: int,
    *,
    properties: Iterable[str] | None = None,
    timeout_ms: int | None = None,
    progress: Callable[[int, float], None] | None = None,
    max_seconds: float | None = None,
) -> list[PropertyResult]:
    """Bounded model checking from the initial state to ``depth`` steps.

    With ``max_seconds`` the unrolling stops after the first depth that ends past that
    budget; properties not violated by then hold up to the last completed depth.

    Each property is checked at every depth until it first fails; the counterexample is
    therefore of minimal length. A property never violated is ``holds_to_depth``
    (``k`` = depth); an ``unknown`` answer makes it ``inconclusive`` at that depth.
    """
    names = list(properties) if properties is not None else [p.name for p in ts.properties if not p.lemma]
    todo = {n: ts.prop(n) for n in names}
    results: dict[str, PropertyResult] = {}
    started = time.perf_counter()
    reached = 0
    u = Unrolling.start(ts, "b", timeout_ms, initial=True, bmc=True)
    for d in range(depth + 1):
        if d > 0:
            u.extend()
        s = u.states[-1]
        # One query per property: on these models that is several times faster than one
        # query for the disjunction of all of them (measured in benchmarks/z3_engine.py).
        for n, p in list(todo.items()):
            r, m, why = u.query(z3.Not(p.formula(s)))
            if r == z3.sat:
                assert m is not None
                steps, states = u.decode(m)
                results[n] = PropertyResult(n, "violated", d, time.perf_counter() - started, steps, states)
                del todo[n]
            elif r == z3.unknown:
                results[n] = PropertyResult(
                    n, "inconclusive", d, time.perf_counter() - started, detail=f"solver: {why}"
                )
                del todo[n]
        reached = d
        if progress is not None:
            progress(d, time.perf_counter() - started)
        if not todo:
            break
        if max_seconds is not None and time.perf_counter() - started > max_seconds:
            break
    for n in todo:
        results[n] = PropertyResult(n, "holds_to_depth", reached, time.perf_counter() - started)
    return [results[n] for n in names]


def k_induction(
    ts: TransitionSystem,
    *,
    max_k: int = 3,
    properties: Iterable[str] | None = None,
    timeout_ms: int | None = None,
    simple_path: bool = True,
) -> list[PropertyResult]:
    """Prove each property by k-induction for k = 1..max_k (see the module docstring).

    The step case of each property assumes every *candidate* property on the earlier
    states. A candidate that is violated, has a counterexample to induction or is
    inconclusive is dropped and the others are proved again without it (a Houdini-style
    fixpoint), so no proof rests on a property that was not itself proved.
    """
    names = list(properties) if properties is not None else [p.name for p in ts.properties]
    lemmas = {p.name for p in ts.properties if p.lemma}
    candidates = [p.name for p in ts.properties]
    final: dict[str, PropertyResult] = {}
    carried: dict[str, float] = {}
    while True:
        round_ = _k_induction_round(ts, candidates, max_k, timeout_ms, simple_path)
        for n, r in round_.items():
            r.seconds += carried.get(n, 0.0)
        dropped = [n for n in candidates if round_[n].status != "proved"]
        for n in dropped:
            final[n] = round_[n]
        if not dropped:
            final.update(round_)
            break
        for n in candidates:
            carried[n] = round_[n].seconds
        candidates = [n for n in candidates if n not in dropped]
        if not candidates:
            break
    out = [final[n] for n in names]
    for r in out:
        r.lemma = r.name in lemmas
    return out


def _k_induction_round(
    ts: TransitionSystem, candidates: list[str], max_k: int, timeout_ms: int | None, simple_path: bool
) -> dict[str, PropertyResult]:
    assumed = [ts.prop(n) for n in candidates]
    results: dict[str, PropertyResult] = {}
    pending = list(candidates)
    spent: dict[str, float] = dict.fromkeys(candidates, 0.0)
    base = Unrolling.start(ts, "i", timeout_ms, initial=True)
    for k in range(1, max_k + 1):
        # Base case: no property fails within k - 1 steps of the initial state.
        if k > 1:
            base.extend()
        s = base.states[-1]
        for n in list(pending):
            t0 = time.perf_counter()
            r, m, why = base.query(z3.Not(ts.prop(n).formula(s)))
            spent[n] += time.perf_counter() - t0
            if r == z3.sat:
                assert m is not None
                steps, states = base.decode(m)
                results[n] = PropertyResult(n, "violated", k - 1, spent[n], steps, states)
                pending.remove(n)
            elif r == z3.unknown:
                results[n] = PropertyResult(n, "inconclusive", k, spent[n], detail=f"solver: {why}")
                pending.remove(n)
        if not pending:
            break
        # Step case: k states satisfying every candidate, then one more step.
        step = Unrolling.start(ts, f"k{k}_", timeout_ms, initial=False)
        for _ in range(k):
            step.extend()
        for st in step.states[:-1]:
            step.add(*(p.formula(st) for p in assumed))
        if simple_path and k > 1:
            for a, b in itertools.combinations(step.states[:-1], 2):
                step.add(z3.Or([a[v] != b[v] for v in a]))
        last = step.states[-1]
        for n in list(pending):
            t0 = time.perf_counter()
            r, m, why = step.query(z3.Not(ts.prop(n).formula(last)))
            spent[n] += time.perf_counter() - t0
            if r == z3.unsat:
                results[n] = PropertyResult(n, "proved", k, spent[n])
                pending.remove(n)
            elif r == z3.unknown:
                results[n] = PropertyResult(n, "inconclusive", k, spent[n], detail=f"solver: {why}")
                pending.remove(n)
            elif k == max_k:
                assert m is not None
                steps, states = step.decode(m)
                results[n] = PropertyResult(
                    n, "cti", k, spent[n], steps, states, detail="counterexample to induction: needs a lemma"
                )
                pending.remove(n)
    return results


def step_satisfiable(
    ts: TransitionSystem,
    pre: Callable[[State], Any],
    op: str,
    params: Mapping[str, Any],
    post: Callable[[State], Any],
    *,
    cache: dict[str, Any] | None = None,
) -> bool:
    """Whether the relation admits this concrete step: ``pre`` and ``post`` constrain the
    two states (they may leave ghost-only details such as absolute clock values free)."""
    key = "relation"
    if cache is not None and key in cache:
        solver, s, sel, ps, t = cache[key]
    else:
        s, t = ts.state("pre"), ts.state("post")
        sel, ps = ts.selector("x"), ts.params("x")
        solver = z3.Solver()
        solver.add(s.domain(), t.domain(), ts.transition(s, sel, ps, t))
        if cache is not None:
            cache[key] = (solver, s, sel, ps, t)
    k = [o.name for o in ts.operations].index(op)
    solver.push()
    try:
        solver.add(sel == k, pre(s), post(t))
        solver.add(*(ps[op][n] == v for n, v in params.items()))
        return bool(solver.check() == z3.sat)
    finally:
        solver.pop()


def explain_step(
    ts: TransitionSystem, pre: Callable[[State], Any], op: str, params: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The post-state the relation gives for a concrete pre-state and step (for diagnostics)."""
    s, t = ts.state("pre"), ts.state("post")
    sel, ps = ts.selector("x"), ts.params("x")
    solver = z3.Solver()
    k = [o.name for o in ts.operations].index(op)
    solver.add(s.domain(), ts.transition(s, sel, ps, t), sel == k, pre(s))
    solver.add(*(ps[op][n] == v for n, v in params.items()))
    if solver.check() != z3.sat:
        return None
    m = solver.model()
    return {n: _value(m, t[n]) for n in t}
