"""Symbolic transition system of the old mocker KV manager (semantics §1.2–1.4, OLDKV).

Real code: ``lib/llm/src/mocker/kv_manager.rs`` (``KvManager::process``) and its LRU
evictor ``lib/llm/src/mocker/evictor.rs``. This is a second, independent description of
what :mod:`kvmodel.model.kv_manager` executes, written as Z3 formulas over a bounded
universe: ``n_full`` full blocks (hash = index), ``partials`` partial blocks (``p0``,
``p1``, … at indices ``n_full``…), capacity ``max_capacity``, and batches of 1 to
``max_batch`` blocks for Use, Deref and Destroy. Reference counts, held references and
the clock are unbounded integers, so a proof covers every count.

State, per block ``i``: ``A_i`` active, ``R_i`` refcount, ``I_i`` in the inactive
evictor with recency stamp ``T_i`` (evicted first: the smallest), ``S_i`` in
``all_blocks``; the clock ``clk``; the monitor's ghost state ``V_h`` (the router's
view: Stored and not Removed) and ``H_i`` (references callers hold). Each step also
writes its observations: ``err`` (which rejection, 0 for none), ``ret`` (Use's return
value), ``nev`` (events emitted) and one ``f_*`` flag per stream or step invariant
(the fault the executable monitor reports for that step).

The same quirk switches as the executable model select faithful or ideal behaviour.
Every rule is cited at the place it is encoded; the agreement tests check this relation
against the executable model on random runs, and replay every counterexample.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import attrs
import z3

from kvmodel.components.kv_manager import NAME as COMPONENT
from kvmodel.model.errors import (
    DerefNotHeld,
    DestroyNotActive,
    DestroyNotResident,
    InvalidInput,
    NegativeRefcount,
    ParentBlockPartial,
    PartialNotLast,
    PromoteMissing,
    PromoteNotResident,
    PromoteParentUnknown,
    require_naturals,
)
from kvmodel.model.quirks import validate
from kvmodel.specs.engine import Effect, Operation, Property, State, Step, TransitionSystem

# Rejections, by the executable model's error ids (0 = none).
ERRORS = (
    PartialNotLast,
    ParentBlockPartial,
    DestroyNotActive,
    DestroyNotResident,
    DerefNotHeld,
    NegativeRefcount,
    PromoteMissing,
    PromoteNotResident,
    PromoteParentUnknown,
)
ERROR_CODE = {cls.id: k + 1 for k, cls in enumerate(ERRORS)}

# Invariants observed per step, as flags (kind stream or step in the catalogue).
FLAGS = (
    "kv.store_parent_stored",
    "kv.store_only_new",
    "kv.remove_only_stored",
    "kv.store_lineage",
    "kv.failed_op_no_trace",
    "kv.deref_never_below_zero",
    "kv.held_release_accepted",
)


def flag(name: str) -> str:
    return "f_" + name.split(".", 1)[1]


@attrs.frozen
class KvUniverse:
    """The bounded universe and configuration of the spec."""

    max_capacity: int = 4
    n_full: int = 6
    partials: int = 1
    max_batch: int = 2
    channel: bool = True

    def __attrs_post_init__(self) -> None:
        require_naturals(self, ("max_capacity", "n_full", "partials", "max_batch"))
        if self.max_batch < 1 or self.n_full + self.partials < 1:
            raise InvalidInput("max_batch and the number of blocks must be at least 1")

    @property
    def n(self) -> int:
        return self.n_full + self.partials

    def config(self) -> dict[str, Any]:
        """The executable model's configuration for this universe."""
        return {"max_capacity": self.max_capacity, "channel": self.channel}

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)

    def block_json(self, i: int) -> dict[str, Any]:
        return {"F": i} if i < self.n_full else {"P": f"p{i - self.n_full}"}

    def index(self, b: Any) -> int:
        """Universe index of an executable block (FullBlock / PartialBlock)."""
        from kvmodel.model.blocks import FullBlock

        if isinstance(b, FullBlock):
            if not 0 <= b.hash < self.n_full:
                raise InvalidInput(f"block F{b.hash} is outside the universe")
            return int(b.hash)
        name = str(b.uuid)
        if not name.startswith("p") or not name[1:].isdigit() or int(name[1:]) >= self.partials:
            raise InvalidInput(f"block P:{name} is outside the universe")
        return self.n_full + int(name[1:])


# ----------------------------------------------------------------------------- helpers


def _sel(arr: list[Any], idx: Any) -> Any:
    e = arr[-1]
    for i in range(len(arr) - 2, -1, -1):
        e = z3.If(idx == i, arr[i], e)
    return e


def _upd(arr: list[Any], idx: Any, val: Any, cond: Any) -> list[Any]:
    return [z3.If(z3.And(cond, idx == i), val, arr[i]) for i in range(len(arr))]


def _atleast(bs: list[Any], k: int) -> Any:
    """At least ``k`` of ``bs`` hold (a pseudo-Boolean constraint, cheaper than a sum)."""
    return z3.PbGe([(b, 1) for b in bs], k)


def _atmost(bs: list[Any], k: int) -> Any:
    return z3.PbLe([(b, 1) for b in bs], k)


def _b(x: bool) -> Any:
    return z3.BoolVal(x)


@attrs.define
class _M:
    """A symbolic copy of the model's state that an operation's encoding updates."""

    A: list[Any]
    R: list[Any]
    I: list[Any]  # noqa: E741 - the inactive pool, as in the docstring
    T: list[Any]
    S: list[Any]
    clk: Any

    @classmethod
    def of(cls, s: State, n: int) -> _M:
        r = range(n)
        return cls(
            [s[f"A{i}"] for i in r], [s[f"R{i}"] for i in r], [s[f"I{i}"] for i in r],
            [s[f"T{i}"] for i in r], [s[f"S{i}"] for i in r], s["clk"],
        )  # fmt: skip

    def copy(self) -> _M:
        return _M(list(self.A), list(self.R), list(self.I), list(self.T), list(self.S), self.clk)

    def choose(self, cond: Any, other: _M) -> _M:
        """``self`` where ``cond`` holds, else ``other``."""

        def mix(a: list[Any], b: list[Any]) -> list[Any]:
            return [z3.If(cond, x, y) for x, y in zip(a, b, strict=True)]

        return _M(
            mix(self.A, other.A), mix(self.R, other.R), mix(self.I, other.I),
            mix(self.T, other.T), mix(self.S, other.S), z3.If(cond, self.clk, other.clk),
        )  # fmt: skip

    def post(self) -> dict[str, Any]:
        out: dict[str, Any] = {"clk": self.clk}
        for i in range(len(self.A)):
            out[f"A{i}"], out[f"R{i}"], out[f"I{i}"] = self.A[i], self.R[i], self.I[i]
            out[f"T{i}"], out[f"S{i}"] = self.T[i], self.S[i]
        return out

    def lru_victim(self, num: Any) -> Any:
        """``evict()``: the inactive block with the smallest stamp (ties by index, which never
        arise from the initial state: every insert takes a fresh clock reading)."""
        n = len(self.I)
        is_min = []
        for i in range(n):
            beats = [
                z3.Implies(self.I[k], self.T[i] < self.T[k] if k > i else self.T[i] <= self.T[k]) for k in range(n)
            ]
            is_min.append(z3.And(self.I[i], *[b for k, b in enumerate(beats) if k != i]))
        e: Any = num(n - 1)
        for i in range(n - 2, -1, -1):
            e = z3.If(is_min[i], i, e)
        return e


# ----------------------------------------------------------------------------- the spec


class KvManagerSpec:
    """Builds the :class:`TransitionSystem` for one universe and one set of quirks."""

    def __init__(
        self, universe: KvUniverse | None = None, quirks: Iterable[str] = (), width: int | None = None
    ) -> None:
        self.u = universe or KvUniverse()
        self.quirks = validate(COMPONENT, quirks)
        self.width = width
        self.ts = self._build()

    def num(self, v: int) -> Any:
        """A numeric literal of the spec's arithmetic (integers, or bit-vectors for BMC)."""
        return z3.IntVal(v) if self.width is None else z3.BitVecVal(v, self.width)

    def exec_config(self) -> dict[str, Any]:
        return self.u.config()

    def universe_json(self) -> dict[str, Any]:
        return self.u.to_json()

    def bounded(self, depth: int) -> KvManagerSpec:
        """The same spec over signed bit-vectors wide enough that no value reachable within
        ``depth`` steps overflows (counts and the clock grow by at most ``max_batch`` per
        step), so BMC on it is exact; k-induction keeps unbounded integers."""
        top = max(depth * self.u.max_batch, self.u.n, len(ERRORS)) + 2
        return KvManagerSpec(self.u, self.quirks, width=max(6, top.bit_length() + 2))

    def q(self, name: str) -> bool:
        return name in self.quirks

    def full(self, x: Any) -> Any:
        return x < self.u.n_full

    # --------------------------------------------------------------------- variables

    def variables(self) -> tuple[tuple[str, Any], ...]:
        v: list[tuple[str, Any]] = []
        for i in range(self.u.n):
            v += [(f"A{i}", "bool"), (f"R{i}", "nat"), (f"I{i}", "bool"), (f"T{i}", "int"), (f"S{i}", "bool")]
            v += [(f"H{i}", "nat")]
        v += [(f"V{h}", "bool") for h in range(self.u.n_full)]
        v += [("clk", "int"), ("err", "nat"), ("ret", "bool"), ("nev", "nat")]
        v += [(flag(f), "bool") for f in FLAGS]
        return tuple(v)

    def init(self, s: State) -> Any:
        """``KvManager::new``: empty pools; the monitor has seen nothing."""
        cs = [s["clk"] == 0, s["err"] == 0, s["ret"], s["nev"] == 0]
        for i in range(self.u.n):
            cs += [z3.Not(s[f"A{i}"]), s[f"R{i}"] == 0, z3.Not(s[f"I{i}"]), s[f"T{i}"] == 0]
            cs += [z3.Not(s[f"S{i}"]), s[f"H{i}"] == 0]
        cs += [z3.Not(s[f"V{h}"]) for h in range(self.u.n_full)]
        cs += [z3.Not(s[flag(f)]) for f in FLAGS]
        return z3.And(cs)

    # --------------------------------------------------------------------- observations

    def _observe(
        self,
        s: State,
        pre: _M,
        post: _M,
        *,
        err: Any,
        ret: Any,
        nev: Any,
        view: list[Any],
        held: list[Any],
        faults: dict[str, Any],
        failed: Any,
    ) -> dict[str, Any]:
        """The post-state: model state, ghost state and the step's observations.

        ``kv.failed_op_no_trace`` compares the canonical state the executable model's
        ``key()`` returns (active with counts, inactive order, all_blocks) and the events.
        """
        n = self.u.n
        changed = []
        for i in range(n):
            changed += [
                pre.A[i] != post.A[i],
                z3.If(pre.A[i], pre.R[i], 0) != z3.If(post.A[i], post.R[i], 0),
                pre.I[i] != post.I[i],
                pre.S[i] != post.S[i],
            ]
            for k in range(n):
                if k != i:
                    both = z3.And(pre.I[i], pre.I[k], post.I[i], post.I[k])
                    changed.append(z3.And(both, (pre.T[i] < pre.T[k]) != (post.T[i] < post.T[k])))
        out = post.post()
        out.update({"err": err, "ret": ret, "nev": nev})
        out.update({f"V{h}": view[h] for h in range(self.u.n_full)})
        out.update({f"H{i}": held[i] for i in range(n)})
        for f in FLAGS:
            out[flag(f)] = faults.get(f, _b(False))
        out[flag("kv.failed_op_no_trace")] = z3.And(failed, z3.Or(z3.Or(changed), nev > 0))
        return out

    def _batch(self, p: State) -> tuple[Any, list[Any], Any]:
        """A batch parameter: its length, its block indices, and their domain."""
        u, B = self.u, self.u.max_batch
        n, blk = p["n"], [p[f"b{j}"] for j in range(B)]
        return n, blk, z3.And(n >= 1, n <= B, *[z3.And(b >= 0, b < u.n) for b in blk])

    def _held_given_back(self, s: State, failed: Any, n: Any, blk: list[Any]) -> list[Any]:
        """The monitor after a Deref or Destroy: one reference per listed block is given
        back (never below zero), unless the operation failed."""
        held = self._held(s)
        for j in range(self.u.max_batch):
            held = [
                z3.If(z3.And(z3.Not(failed), j < n, blk[j] == i, held[i] > 0), held[i] - 1, held[i])
                for i in range(self.u.n)
            ]
        return held

    def _held_refused(self, s: State, failed: Any, n: Any, blk: list[Any]) -> Any:
        """``kv.held_release_accepted``: a Deref or Destroy that failed though every block it
        lists is held by the callers at least as often as listed."""
        held, B = self._held(s), self.u.max_batch
        ok = []
        for j in range(B):
            cnt = z3.Sum([z3.If(z3.And(k < n, blk[k] == blk[j]), self.num(1), self.num(0)) for k in range(B)])
            ok.append(z3.Implies(j < n, cnt <= _sel(held, blk[j])))
        return z3.And(failed, *ok)

    def _view(self, s: State) -> list[Any]:
        return [s[f"V{h}"] for h in range(self.u.n_full)]

    def _held(self, s: State) -> list[Any]:
        return [s[f"H{i}"] for i in range(self.u.n)]

    # --------------------------------------------------------------------- Use

    def _use(self, s: State, p: State) -> Effect:
        """``MoveBlock::Use`` (see :meth:`kvmodel.model.kv_manager.KvManager._use`)."""
        u, B = self.u, self.u.max_batch
        n, blk, guard = self._batch(p)
        lineage = not self.q("store_parent_last_hit")
        pre = _M.of(s, u.n)
        m = pre.copy()
        view = self._view(s)
        faults: dict[str, Any] = {f: _b(False) for f in FLAGS}
        nev: Any = self.num(0)
        # ideal: a partial block may only be the last of the batch (checked before anything).
        pnl = z3.Or([z3.And(j < n - 1, z3.Not(self.full(blk[j]))) for j in range(B)]) if lineage else _b(False)
        capfail = _b(False)
        last_hit: Any = self.num(-1)
        nf: list[Any] = []
        for j in range(B):
            on = z3.And(z3.Not(capfail), j < n)
            b = blk[j]
            act, ina = _sel(m.A, b), _sel(m.I, b)
            hit_a = z3.And(on, act)
            hit_i = z3.And(on, z3.Not(act), ina)
            miss = z3.And(on, z3.Not(act), z3.Not(ina))
            # A miss at capacity evicts the least recent inactive block, or fails.
            at_cap = _atleast(m.A + m.I, u.max_capacity)
            need = z3.And(miss, at_cap)
            fail_here = z3.And(need, z3.Not(z3.Or(m.I)))
            ev = z3.And(need, z3.Or(m.I))
            e = m.lru_victim(self.num)
            m.I = _upd(m.I, e, _b(False), ev)
            m.S = _upd(m.S, e, _b(False), ev)
            if u.channel:  # Remove([e]) is sent at once for a full block
                rem = z3.And(ev, self.full(e))
                faults["kv.remove_only_stored"] = z3.Or(
                    faults["kv.remove_only_stored"], z3.And(rem, z3.Not(_sel(view, e)))
                )
                view = _upd(view, e, _b(False), rem)
                nev = nev + z3.If(rem, self.num(1), self.num(0))
            capfail = z3.Or(capfail, fail_here)
            ins = z3.And(miss, z3.Not(fail_here))
            m.R = [
                z3.If(b == i, z3.If(hit_a, m.R[i] + 1, z3.If(z3.Or(hit_i, ins), 1, m.R[i])), m.R[i]) for i in range(u.n)
            ]
            m.A = _upd(m.A, b, _b(True), z3.Or(hit_i, ins))
            m.I = _upd(m.I, b, _b(False), hit_i)
            m.S = _upd(m.S, b, _b(True), ins)
            last_hit = z3.If(z3.Or(hit_a, hit_i), b, last_hit)
            nf.append(z3.And(ins, self.full(b)))
        panic = _b(False)
        if not lineage:  # "parent block cannot be partial", after the loop
            panic = z3.And(z3.Not(capfail), last_hit >= 0, z3.Not(self.full(last_hit)))
        success = z3.And(z3.Not(pnl), z3.Not(capfail), z3.Not(panic))
        # Stores, sent after the loop (success only), processed by the monitor in order.
        if u.channel:
            sv = view
            if lineage:  # one Store per run of new full blocks, parent = the block before the run
                for j in range(B):
                    start = z3.And(nf[j], z3.Not(nf[j - 1])) if j > 0 else nf[j]
                    if j > 0:
                        pred = blk[j - 1]
                        bad = z3.And(start, self.full(pred), z3.Not(_sel(sv, pred)))
                        faults["kv.store_parent_stored"] = z3.Or(faults["kv.store_parent_stored"], bad)
                    faults["kv.store_only_new"] = z3.Or(faults["kv.store_only_new"], z3.And(nf[j], _sel(sv, blk[j])))
                    sv = _upd(sv, blk[j], _b(True), nf[j])
                    nev = nev + z3.If(z3.And(success, start), self.num(1), self.num(0))
            else:  # one Store of every new full block, parent = the last hit
                some = z3.Or(nf)
                bad = z3.And(some, last_hit >= 0, z3.Not(_sel(sv, last_hit)))
                faults["kv.store_parent_stored"] = z3.Or(faults["kv.store_parent_stored"], bad)
                for j in range(B):
                    faults["kv.store_only_new"] = z3.Or(faults["kv.store_only_new"], z3.And(nf[j], _sel(sv, blk[j])))
                    sv = _upd(sv, blk[j], _b(True), nf[j])
                nev = nev + z3.If(z3.And(success, some), self.num(1), self.num(0))
                faults["kv.store_lineage"] = self._lineage_fault(n, blk, nf, last_hit)
            for f in ("kv.store_parent_stored", "kv.store_only_new", "kv.store_lineage"):
                faults[f] = z3.And(success, faults[f])
            view = [z3.If(success, a, b) for a, b in zip(sv, view, strict=True)]
        # Held references: one per listed block, on success.
        held = self._held(s)
        for j in range(B):
            held = [z3.If(z3.And(success, j < n, blk[j] == i), held[i] + 1, held[i]) for i in range(u.n)]
        # What a failure leaves: a false return rolls back unless use_non_atomic; the panic
        # rolls back unless partial_parent_panic_after_mutation; PartialNotLast is up front.
        keep_fail = self.q("use_non_atomic")
        keep_panic = self.q("partial_parent_panic_after_mutation")
        rollback = z3.Or(pnl, z3.And(capfail, _b(not keep_fail)), z3.And(panic, _b(not keep_panic)))
        final = pre.choose(rollback, m)
        nev = z3.If(rollback, self.num(0), nev)
        view = [z3.If(rollback, a, b) for a, b in zip(self._view(s), view, strict=True)]
        rem_fault = z3.And(z3.Not(rollback), faults["kv.remove_only_stored"])
        faults["kv.remove_only_stored"] = rem_fault
        err = z3.If(pnl, ERROR_CODE[PartialNotLast.id], z3.If(panic, ERROR_CODE[ParentBlockPartial.id], self.num(0)))
        failed = z3.Or(pnl, capfail, panic)
        post = self._observe(
            s, pre, final, err=err, ret=z3.Not(capfail), nev=nev, view=view, held=held, faults=faults, failed=failed
        )
        return guard, post

    def _lineage_fault(self, n: Any, blk: list[Any], nf: list[Any], parent: Any) -> Any:
        """``kv.store_lineage`` for the single Store of the faithful Use: the Store's blocks
        must equal some window of the batch (by value) and its parent the block before it."""
        B = self.u.max_batch
        cases = []
        for nv in range(1, B + 1):
            for size in range(1, nv + 1):
                for P in itertools.combinations(range(nv), size):
                    cond = z3.And(n == nv, *[nf[j] == (j in P) for j in range(nv)])
                    oks = []
                    for i in range(nv - size + 1):
                        match = [z3.And(self.full(blk[i + k]), blk[i + k] == blk[P[k]]) for k in range(size)]
                        pm = parent == -1 if i == 0 else z3.And(self.full(blk[i - 1]), parent == blk[i - 1])
                        oks.append(z3.And(*match, pm))
                    cases.append(z3.And(cond, z3.Not(z3.Or(oks))))
        return z3.Or(cases)

    # --------------------------------------------------------------------- Destroy

    def _destroy(self, s: State, p: State) -> Effect:
        """``MoveBlock::Destroy``: reverse walk; unwrap panic on a non-active block; one Remove."""
        u, B = self.u, self.u.max_batch
        n, blk, guard = self._batch(p)
        pre = _M.of(s, u.n)
        m = pre.copy()
        err: Any = self.num(0)
        stopped = _b(False)
        destroyed = [_b(False)] * B
        for j in range(B - 1, -1, -1):
            on = z3.And(z3.Not(stopped), j < n)
            b = blk[j]
            act = _sel(m.A, b)
            notact = z3.And(on, z3.Not(act))
            err = z3.If(notact, ERROR_CODE[DestroyNotActive.id], err)
            go = z3.And(on, act)
            rc = _sel(m.R, b)
            dec = z3.And(go, rc > 1) if not self.q("destroy_ignores_refcount") else _b(False)
            rem = z3.And(go, z3.Not(dec))
            m.R = [z3.If(b == i, z3.If(dec, m.R[i] - 1, z3.If(rem, 0, m.R[i])), m.R[i]) for i in range(u.n)]
            m.A = _upd(m.A, b, _b(False), rem)
            res = _sel(m.S, b)
            notres = z3.And(rem, z3.Not(res))
            err = z3.If(notres, ERROR_CODE[DestroyNotResident.id], err)
            m.S = _upd(m.S, b, _b(False), z3.And(rem, res))
            destroyed[j] = z3.And(rem, res, self.full(b))
            stopped = z3.Or(stopped, notact, notres)
        failed = stopped
        view = self._view(s)
        fault = _b(False)
        nev: Any = self.num(0)
        if u.channel:
            for j in range(B):  # the Remove lists the destroyed full blocks in input order
                fault = z3.Or(fault, z3.And(destroyed[j], z3.Not(_sel(view, blk[j]))))
                view = _upd(view, blk[j], _b(False), destroyed[j])
            fault = z3.And(z3.Not(failed), fault)
            nev = z3.If(z3.And(z3.Not(failed), z3.Or(destroyed)), self.num(1), self.num(0))
            view = [z3.If(failed, a, b) for a, b in zip(self._view(s), view, strict=True)]
        held = self._held_given_back(s, failed, n, blk)
        final = m if self.q("destroy_mutates_before_panic") else pre.choose(failed, m)
        post = self._observe(
            s, pre, final, err=err, ret=_b(True), nev=nev, view=view, held=held,
            faults={"kv.remove_only_stored": fault, "kv.held_release_accepted": self._held_refused(s, failed, n, blk)},
            failed=failed,
        )  # fmt: skip
        return guard, post

    # --------------------------------------------------------------------- Deref

    def _deref(self, s: State, p: State) -> Effect:
        """``MoveBlock::Deref``: reverse walk; at zero to the inactive LRU (stamp = clock)."""
        u, B = self.u, self.u.max_batch
        n, blk, guard = self._batch(p)
        pre = _M.of(s, u.n)
        m = pre.copy()
        err: Any = self.num(0)
        stopped = _b(False)
        for j in range(B - 1, -1, -1):
            on = z3.And(z3.Not(stopped), j < n)
            b = blk[j]
            act = _sel(m.A, b)
            if self.q("deref_ignores_unknown"):
                unknown = _b(False)
            else:
                unknown = z3.And(on, z3.Not(act))
                err = z3.If(unknown, ERROR_CODE[DerefNotHeld.id], err)
            go = z3.And(on, act)
            rc = _sel(m.R, b)
            neg = z3.And(go, rc == 0)
            err = z3.If(neg, ERROR_CODE[NegativeRefcount.id], err)
            dec = z3.And(go, rc > 1)
            zero = z3.And(go, rc == 1)
            m.R = [z3.If(b == i, z3.If(dec, m.R[i] - 1, z3.If(zero, 0, m.R[i])), m.R[i]) for i in range(u.n)]
            m.A = _upd(m.A, b, _b(False), zero)
            if self.q("deref_caches_partial"):
                cache = zero
            else:
                cache = z3.And(zero, self.full(b))
                m.S = _upd(m.S, b, _b(False), z3.And(zero, z3.Not(self.full(b))))
            m.I = _upd(m.I, b, _b(True), cache)
            m.T = _upd(m.T, b, m.clk, cache)
            m.clk = z3.If(cache, m.clk + 1, m.clk)
            stopped = z3.Or(stopped, unknown, neg)
        failed = stopped
        # kv.deref_never_below_zero: an accepted Deref listing a block more often than its count.
        pre_rc = [z3.If(pre.A[i], pre.R[i], 0) for i in range(u.n)]
        below = []
        for j in range(B):
            cnt = z3.Sum([z3.If(z3.And(k < n, blk[k] == blk[j]), self.num(1), self.num(0)) for k in range(B)])
            below.append(z3.And(j < n, cnt > _sel(pre_rc, blk[j])))
        held = self._held_given_back(s, failed, n, blk)
        atomic = not self.q("deref_ignores_unknown")
        final = pre.choose(failed, m) if atomic else m
        post = self._observe(
            s, pre, final, err=err, ret=_b(True), nev=self.num(0), view=self._view(s), held=held,
            faults={
                "kv.deref_never_below_zero": z3.And(z3.Not(failed), z3.Or(below)),
                "kv.held_release_accepted": self._held_refused(s, failed, n, blk),
            },
            failed=failed,
        )  # fmt: skip
        return guard, post

    # --------------------------------------------------------------------- Promote

    def _promote(self, s: State, p: State) -> Effect:
        """``MoveBlock::Promote(uuid, hash, parent)``: the partial's count moves to the full block."""
        u = self.u
        pu, h, par = p["u"], p["h"], p["parent"]
        guard = z3.And(pu >= 0, pu < u.partials, h >= 0, h < u.n_full, par >= -1, par < u.n_full)
        ui = pu + u.n_full
        pre = _M.of(s, u.n)
        m = pre.copy()
        missing = z3.Not(_sel(m.A, ui))
        if self.q("promote_parent_unchecked"):
            bad_parent = _b(False)
        else:
            bad_parent = z3.And(z3.Not(missing), par >= 0, z3.Or(par == h, z3.Not(_sel(m.S, par))))
        go = z3.And(z3.Not(missing), z3.Not(bad_parent))
        was_resident = _sel(m.S, h)
        rc = _sel(m.R, ui)
        h_active = _sel(m.A, h)
        merge = z3.And(h_active, _b(not self.q("promote_overwrites_refcount")))
        new_rc = z3.If(merge, _sel(m.R, h) + rc, rc)
        m.R = [z3.If(z3.And(go, ui == i), 0, z3.If(z3.And(go, h == i), new_rc, m.R[i])) for i in range(u.n)]
        m.A = _upd(_upd(m.A, ui, _b(False), go), h, _b(True), go)
        if not self.q("promote_leaves_inactive_copy"):
            m.I = _upd(m.I, h, _b(False), go)
        notres = z3.And(go, z3.Not(_sel(pre.S, ui)))
        fine = z3.And(go, z3.Not(notres))
        m.S = _upd(_upd(m.S, ui, _b(False), fine), h, _b(True), fine)
        err = z3.If(
            missing,
            ERROR_CODE[PromoteMissing.id],
            z3.If(
                bad_parent,
                ERROR_CODE[PromoteParentUnknown.id],
                z3.If(notres, ERROR_CODE[PromoteNotResident.id], self.num(0)),
            ),
        )
        failed = z3.Not(fine)
        stores = z3.And(fine, _b(True) if self.q("promote_always_stores") else z3.Not(was_resident))
        view = self._view(s)
        faults: dict[str, Any] = {}
        nev: Any = self.num(0)
        if u.channel:
            faults["kv.store_parent_stored"] = z3.And(stores, par >= 0, z3.Not(_sel(view, par)))
            faults["kv.store_only_new"] = z3.And(stores, _sel(view, h))
            view = _upd(view, h, _b(True), stores)
            nev = z3.If(stores, self.num(1), self.num(0))
        held = self._held(s)
        moved = _sel(held, ui)
        held = [
            z3.If(z3.And(fine, h == i), held[i] + moved, z3.If(z3.And(fine, ui == i), 0, held[i])) for i in range(u.n)
        ]
        # Only the up-front checks leave no trace; PromoteNotResident comes after the mutation.
        final = pre.choose(z3.Or(missing, bad_parent), m)
        post = self._observe(
            s, pre, final, err=err, ret=_b(True), nev=nev, view=view, held=held, faults=faults, failed=failed
        )
        return guard, post

    # --------------------------------------------------------------------- properties

    def properties(self) -> tuple[Property, ...]:
        u = self.u
        r = range(u.n)

        def each(f: Any) -> Any:
            return lambda s: z3.And([f(s, i) for i in r])

        props = [
            Property("kv.refcount_positive", each(lambda s, i: z3.Implies(s[f"A{i}"], s[f"R{i}"] >= 1))),
            Property("kv.active_inactive_disjoint", each(lambda s, i: z3.Not(z3.And(s[f"A{i}"], s[f"I{i}"])))),
            Property("kv.all_blocks_union", each(lambda s, i: s[f"S{i}"] == z3.Or(s[f"A{i}"], s[f"I{i}"]))),
            Property(
                "kv.capacity_bound",
                lambda s: _atmost([s[f"A{i}"] for i in r] + [s[f"I{i}"] for i in r], u.max_capacity),
            ),
            Property(
                "kv.inactive_full_only",
                lambda s: z3.And([z3.Not(s[f"I{i}"]) for i in range(u.n_full, u.n)] or [_b(True)]),
            ),
            Property("kv.store_parent_stored", lambda s: z3.Not(s[flag("kv.store_parent_stored")])),
            Property("kv.store_only_new", lambda s: z3.Not(s[flag("kv.store_only_new")])),
            Property("kv.remove_only_stored", lambda s: z3.Not(s[flag("kv.remove_only_stored")])),
            Property(
                "kv.router_view_matches_resident",
                lambda s: (
                    z3.And([s[f"V{h}"] == s[f"S{h}"] for h in range(u.n_full)] or [_b(True)]) if u.channel else _b(True)
                ),
            ),
            Property(
                "kv.refcount_conservation",
                each(lambda s, i: z3.If(s[f"A{i}"], s[f"R{i}"], 0) == s[f"H{i}"]),
            ),
            Property("kv.store_lineage", lambda s: z3.Not(s[flag("kv.store_lineage")])),
            Property("kv.failed_op_no_trace", lambda s: z3.Not(s[flag("kv.failed_op_no_trace")])),
            Property("kv.deref_never_below_zero", lambda s: z3.Not(s[flag("kv.deref_never_below_zero")])),
            Property("kv.held_release_accepted", lambda s: z3.Not(s[flag("kv.held_release_accepted")])),
        ]
        return tuple(props) + LEMMAS(self)

    # --------------------------------------------------------------------- system

    def _build(self) -> TransitionSystem:
        B = self.u.max_batch
        batch: tuple[tuple[str, Any], ...] = (("n", "int"), *((f"b{j}", "int") for j in range(B)))
        ops: tuple[Operation, ...] = (
            Operation("Use", batch, self._use),
            Operation("Destroy", batch, self._destroy),
            Operation("Deref", batch, self._deref),
        )
        if self.u.partials and self.u.n_full:
            ops += (Operation("Promote", (("u", "int"), ("h", "int"), ("parent", "int")), self._promote),)
        return TransitionSystem(COMPONENT, self.variables(), self.init, ops, self.properties(), self.width)

    # --------------------------------------------------------------------- to and from the executable model

    def step_json(self, step: Step) -> tuple[str, Any]:
        """A decoded step as the executable model's ``(op, args)``."""
        p = step.params
        if step.op == "Promote":
            parent = None if p["parent"] < 0 else p["parent"]
            return "process", {"Promote": {"uuid": f"p{p['u']}", "hash": p["h"], "parent_hash": parent}}
        blocks = [self.u.block_json(p[f"b{j}"]) for j in range(p["n"])]
        return "process", {step.op: blocks}

    def step_params(self, pre: Any, op: str, out: Any) -> tuple[str, dict[str, int]]:
        """The executable step ``op``/``out`` (a ``process`` of one MoveBlock) as
        ``(operation, parameter values)`` of this spec."""
        from kvmodel.model.blocks import PartialBlock, Promote, move_block_from_json

        if op != "process":
            raise InvalidInput(f"only process steps change the state, got {op!r}")
        signal = move_block_from_json(out.args_json)
        if isinstance(signal, Promote):
            pu = self.u.index(PartialBlock(signal.uuid)) - self.u.n_full
            parent = -1 if signal.parent_hash is None else int(signal.parent_hash)
            return "Promote", {"u": pu, "h": int(signal.hash), "parent": parent}
        blocks = list(signal.blocks)
        if not 1 <= len(blocks) <= self.u.max_batch:
            raise InvalidInput(f"batch of {len(blocks)} outside 1..{self.u.max_batch}")
        params = {"n": len(blocks)}
        for j in range(self.u.max_batch):
            params[f"b{j}"] = self.u.index(blocks[j]) if j < len(blocks) else 0
        return type(signal).__name__, params

    def within_bounds(self, system: Any, op: str) -> bool:
        """Every step of the universe's blocks is within the spec (counts are unbounded)."""
        return True

    def post_constraint(self, system: Any, out: Any) -> Any:
        """The state after an executable step, with its observations: error, return value,
        number of events and the stream/step invariants it violated."""
        state = self.state_constraint(system, exact_stamps=False)
        broken = {v.invariant for v in out.violations}
        err = 0 if out.error is None else ERROR_CODE[out.error.id]

        def constrain(s: State) -> Any:
            cs = [state(s), s["err"] == err, s["nev"] == len(out.events)]
            if out.error is None:
                cs.append(s["ret"] == bool(out.result))
            cs += [s[flag(f)] == (f in broken) for f in FLAGS]
            return z3.And(cs)

        return constrain

    def describe(self, values: dict[str, Any] | None) -> str:
        """A readable summary of a spec state (for disagreement messages)."""
        if values is None:
            return "no successor (the guard rejects the step)"
        u = self.u
        name = [f"F{i}" if i < u.n_full else f"P:p{i - u.n_full}" for i in range(u.n)]
        active = {name[i]: values[f"R{i}"] for i in range(u.n) if values[f"A{i}"]}
        inactive = [name[i] for i in sorted((i for i in range(u.n) if values[f"I{i}"]), key=lambda i: values[f"T{i}"])]
        flags = [f for f in FLAGS if values[flag(f)]]
        return (
            f"active {active}, inactive {inactive}, resident {[name[i] for i in range(u.n) if values[f'S{i}']]}, "
            f"view {[h for h in range(u.n_full) if values[f'V{h}']]}, err {values['err']}, ret {values['ret']}, "
            f"events {values['nev']}, faults {flags}"
        )

    def state_constraint(self, system: Any, *, exact_stamps: bool) -> Any:
        """Constraints pinning a state to an executable system's state (model and monitor).

        With ``exact_stamps`` the recency stamps are the ranks in eviction order and the
        clock follows them (a pre-state); without, only the relative order is pinned.
        """
        m, mon = system.model, system.monitor
        idx = {b: self.u.index(b) for b in set(m.active) | set(m.all_blocks) | set(m.inactive.keys()) | set(mon.held)}
        order = [idx[b] for b in m.inactive.order()]
        active = {idx[b]: rc for b, rc in m.active.items()}
        resident = {idx[b] for b in m.all_blocks}
        held = {idx[b]: k for b, k in mon.held.items() if k}

        def constrain(s: State) -> Any:
            cs = []
            for i in range(self.u.n):
                cs += [s[f"A{i}"] == (i in active), s[f"R{i}"] == active.get(i, 0)]
                cs += [s[f"I{i}"] == (i in order), s[f"S{i}"] == (i in resident), s[f"H{i}"] == held.get(i, 0)]
            if exact_stamps:
                cs += [s[f"T{i}"] == r for r, i in enumerate(order)]
                cs.append(s["clk"] == len(order))
            else:
                cs += [s[f"T{a}"] < s[f"T{b}"] for a, b in itertools.pairwise(order)]
            cs += [s[f"V{h}"] == (h in mon.view) for h in range(self.u.n_full)]
            return z3.And(cs)

        return constrain


def LEMMAS(spec: KvManagerSpec) -> tuple[Property, ...]:
    """Strengthening lemmas for k-induction (none needed so far: the catalogue is
    1-inductive on its own; a CTI would show which to add here)."""
    return ()


def make_spec(config: dict[str, Any] | None = None, quirks: Iterable[str] = ()) -> KvManagerSpec:
    cfg = dict(config or {})
    return KvManagerSpec(KvUniverse(**cfg), quirks)
