"""Symbolic transition system of the G1 facade with the native backend (semantics §2.3, §2.5).

Real code: ``lib/mocker/src/kv_manager/g1_manager.rs`` (6125e8260), ``vllm_backend.rs`` (2ee518f3d948) and
``lib/mocker/src/cache/vllm_block_pool.rs``. A second description of what
:class:`kvmodel.systems.G1System` executes, over the explorer's bounded world
(:class:`kvmodel.components.g1_native.space.G1Space`): ``owners`` requests started from the first ``prompts`` of
``G1_PROMPTS`` (block size 2), at most ``pushes`` pushed tokens (each the token 6), at most one
decode reservation of ``decode`` slots, a pool of ``capacity`` blocks. One operation per move of
the explorer, with the explorer's guard (the scheduler's discipline).

State. Physical copies live in ``capacity`` slots: ``cs<c>`` (0 free, 1 private, 2 cached),
``ch<c>`` (hash id), ``cr<c>``/``cp<c>`` (references, pins), ``cl<c>`` (position in the inactive
LRU: 0 when absent, else a stamp; the smallest is evicted first) and ``ck<c>`` (the order in which
copies of one hash were cached: the smallest is the primary copy ``prefix_hit`` and ``reserve``
look at). ``rsv`` is the pool's reserved count, ``tick`` the stamp clock. Per request ``o``: the
sequence (``sq<o>``: 0 none, 1 live, 2 waiting for a destination activation; prompt ``pr<o>``,
tokens ``ln<o>``, unique blocks ``un<o>`` with ``uf<o>_<j>`` saying which are full, allocated
and computed watermarks ``al<o>``/``cm<o>``), the block table (``tl<o>`` entries: slot
``ec<o>_<j>``, full ``ef<o>_<j>``, pending Stored ``ep<o>_<j>``) and a destination reservation
(``dn<o>`` prefix pins in slots ``ds<o>_<j>``, ``dfr<o>`` fresh slots). The decode reservation is
``dec``/``dcf``. The stream monitor's ghost is ``an<h>`` (Stored minus Removed per hash); the last
step's observations are ``res`` (0 done, 1 CapacityExhausted, 2 rejected, 3 a push whose new
partial could not be allocated), ``nev`` (events) and the fault flags of the step invariants.

A hash's full blocks are fixed by the world: block ``j`` of prompt ``p`` (with pushed 6s) has hash
id ``FH[p][j]``; ids index :attr:`G1Spec.hashes` (the real 64-bit sequence hashes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import attrs
import z3

from kvmodel.actions import Action
from kvmodel.components.g1_native import NAME as COMPONENT
from kvmodel.components.g1_native.actions import Allocate, DerefInOrder, Finalize, NewRequest, ReserveDestination
from kvmodel.components.g1_requests import (
    ActivateDestination,
    CancelDestination,
    Free,
    Push,
    ReleaseDecode,
    ReserveDecode,
)
from kvmodel.model.errors import InvalidInput, require_naturals
from kvmodel.model.g1.acquire import CapacityExhausted
from kvmodel.model.quirks import validate
from kvmodel.specs.engine import Effect, Operation, Property, Sort, State, Step, TransitionSystem

BS = 2
PUSH_TOKEN = 6
FREE, PRIVATE, CACHED = 0, 1, 2
DONE, EXHAUSTED, REJECTED, PUSH_EXHAUSTED = 0, 1, 2, 3


@attrs.frozen
class G1Universe:
    owners: int = 2
    prompts: int = 2
    pushes: int = 1
    decode: int = 1
    capacity: int = 3

    def __attrs_post_init__(self) -> None:
        from kvmodel.components.g1_native.space import G1_PROMPTS

        require_naturals(self, ("owners", "prompts", "pushes", "decode", "capacity"))
        if not 1 <= self.prompts <= len(G1_PROMPTS):
            raise InvalidInput(f"the G1 spec takes 1 to {len(G1_PROMPTS)} prompts")
        if self.pushes > 1:
            # With two pushes a table can lack a *completed* block (its partial's Use failed, a later
            # token completed it); the spec's shape lemma assumes one push.
            raise InvalidInput("the G1 spec covers at most one pushed token per request")
        if self.owners < 1 or self.capacity < 1:
            raise InvalidInput("the G1 spec needs at least one request and one block")

    def to_json(self) -> dict[str, int]:
        return {k: int(v) for k, v in attrs.asdict(self).items()}


# Universes the proofs run on: the world `kvmodel check` explores, and the manifest's other one.
UNIVERSES: dict[str, dict[str, Any]] = {
    "check": {},
    "three-prompts": {"prompts": 3, "decode": 0},
}


def _int(v: int) -> Any:
    return z3.IntVal(v)


def _cnt(bs: Iterable[Any], num: Callable[[int], Any] = _int) -> Any:
    """How many of the formulas ``bs`` hold, in the spec's arithmetic (``num`` makes literals)."""
    items = list(bs)
    return z3.Sum([z3.If(b, num(1), num(0)) for b in items]) if items else num(0)


class _Sym:
    """Imperative construction of a post-state: assignments under the current path condition."""

    def __init__(self, s: State, num: Callable[[int], Any] = _int) -> None:
        self.pre = s
        self.num = num
        self.v: dict[str, Any] = {n: s[n] for n in s}
        self.path: list[Any] = []

    def __getitem__(self, n: str) -> Any:
        return self.v[n]

    def cond(self) -> Any:
        return z3.And(*self.path) if self.path else z3.BoolVal(True)

    def set(self, n: str, val: Any) -> None:
        if isinstance(val, bool):
            val = z3.BoolVal(val)
        elif isinstance(val, int):
            val = self.num(val)
        self.v[n] = val if not self.path else z3.If(self.cond(), val, self.v[n])

    @contextmanager
    def when(self, c: Any) -> Iterator[None]:
        self.path.append(c)
        try:
            yield
        finally:
            self.path.pop()


class G1Spec:
    def __init__(
        self, universe: G1Universe | None = None, quirks: Iterable[str] = (), width: int | None = None
    ) -> None:
        self.u = universe or G1Universe()
        self.quirks = validate(COMPONENT, quirks)
        self.width = width  # None: unbounded integers (proofs); else signed bit-vectors (BMC)
        self._world()
        self.ts = self._build()

    def q(self, name: str) -> bool:
        return name in self.quirks

    def exec_config(self) -> dict[str, Any]:
        return {"max_capacity": self.u.capacity}

    def universe_json(self) -> dict[str, Any]:
        return self.u.to_json()

    def num(self, v: int) -> Any:
        """A numeric literal of the spec's arithmetic (integers, or bit-vectors for BMC)."""
        return z3.IntVal(v) if self.width is None else z3.BitVecVal(v, self.width)

    def cnt(self, bs: Iterable[Any]) -> Any:
        return _cnt(bs, self.num)

    def bounded(self, depth: int) -> G1Spec:
        """The same spec over signed bit-vectors wide enough that no value reachable within
        ``depth`` steps overflows, so BMC on it is exact (k-induction keeps unbounded integers).
        The stamp clock ``tick`` is the only value that grows with depth: one step stamps at
        most every slot and every table entry; the others are bounded by the world (slots,
        hash ids, table positions, prompt lengths, events per step)."""
        per_step = 2 * (self.C + self.J * self.O) + 2
        top = max(1 + depth * per_step, self.H, self.C, max(self.L) + self.u.pushes, 4) + 2
        return G1Spec(self.u, self.quirks, width=max(6, top.bit_length() + 2))

    # ------------------------------------------------------------------ the world

    def _world(self) -> None:
        """Hash ids of every full block a request of this world can have, from the real sequence."""
        from kvmodel.components.g1_native.space import G1_PROMPTS
        from kvmodel.model.g1.sequence import ActiveSequence

        u = self.u
        self.O, self.C, self.P = u.owners, u.capacity, u.prompts
        self.prompt_tokens = [list(G1_PROMPTS[p]) for p in range(self.P)]
        self.L = [len(t) for t in self.prompt_tokens]
        self.J = max(-(-(n + u.pushes) // BS) for n in self.L)  # table positions
        self.hashes: list[int] = []
        self.FH: list[list[int]] = []
        for p in range(self.P):
            s = ActiveSequence(self.prompt_tokens[p] + [PUSH_TOKEN] * u.pushes, 8, BS, True, name="spec")
            row = []
            for j in range(self.J):
                if j < len(s.seq_hashes):
                    h = s.seq_hashes[j]
                    if h not in self.hashes:
                        self.hashes.append(h)
                    row.append(self.hashes.index(h))
                else:
                    row.append(-1)
            self.FH.append(row)
        self.H = len(self.hashes)

    def fh(self, p: Any, j: int) -> Any:
        """Hash id of block ``j`` of prompt ``p`` (symbolic prompt), -1 when it is never full."""
        e: Any = self.num(-1)
        for k in range(self.P - 1, -1, -1):
            e = z3.If(p == k, self.FH[k][j], e)
        return e

    def plen(self, p: Any) -> Any:
        e: Any = self.num(self.L[0])
        for k in range(1, self.P):
            e = z3.If(p == k, self.L[k], e)
        return e

    # ------------------------------------------------------------------ variables

    def variables(self) -> tuple[tuple[str, Sort], ...]:
        v: list[tuple[str, Sort]] = []
        for c in range(self.C):
            v += [(f"cs{c}", "int"), (f"ch{c}", "int"), (f"cr{c}", "int"), (f"cp{c}", "int")]
            v += [(f"cl{c}", "int"), (f"ck{c}", "int")]
        v += [("rsv", "int"), ("tick", "int"), ("dec", "bool"), ("dcf", "int")]
        v += [(f"an{h}", "int") for h in range(self.H)]
        for o in range(self.O):
            v += [(f"sq{o}", "int"), (f"pr{o}", "int"), (f"ln{o}", "int"), (f"un{o}", "int")]
            v += [(f"al{o}", "int"), (f"cm{o}", "int"), (f"tl{o}", "int"), (f"dn{o}", "int"), (f"dfr{o}", "int")]
            for j in range(self.J):
                v += [(f"uf{o}_{j}", "bool"), (f"ec{o}_{j}", "int"), (f"ef{o}_{j}", "bool"), (f"ep{o}_{j}", "bool")]
                v += [(f"ds{o}_{j}", "int")]
        v += [("res", "int"), ("nev", "int")]
        v += [(f, "bool") for f in ("f_par", "f_fail", "f_tr", "f_unk", "f_tail")]
        return tuple(v)

    def init(self, s: State) -> Any:
        eqs = []
        for n, sort in self.variables():
            if n == "tick":
                eqs.append(s[n] == 1)
            elif sort == "bool":
                eqs.append(s[n] == False)  # noqa: E712 - a Z3 formula
            else:
                eqs.append(s[n] == 0)
        return z3.And(*eqs)

    # ------------------------------------------------------------------ pool helpers

    def live(self, m: Any, c: int) -> Any:
        return m[f"cs{c}"] != FREE

    def cached(self, m: Any, c: int, h: Any = None) -> Any:
        e = m[f"cs{c}"] == CACHED
        return e if h is None else z3.And(e, m[f"ch{c}"] == h)

    def idle(self, m: Any, c: int) -> Any:
        return z3.And(self.cached(m, c), m[f"cr{c}"] == 0, m[f"cp{c}"] == 0)

    def in_use(self, m: Any, c: int) -> Any:
        return z3.Or(m[f"cr{c}"] > 0, m[f"cp{c}"] > 0)

    def visible(self, m: Any, h: Any) -> Any:
        return z3.Or([self.cached(m, c, h) for c in range(self.C)])

    def is_primary(self, m: Any, c: int, h: Any) -> Any:
        """Slot ``c`` holds the first cached copy of ``h`` (ties broken by slot)."""
        older = [
            z3.And(self.cached(m, d, h), z3.Or(m[f"ck{d}"] < m[f"ck{c}"], z3.And(m[f"ck{d}"] == m[f"ck{c}"], d < c)))
            for d in range(self.C)
            if d != c
        ]
        return z3.And(self.cached(m, c, h), z3.Not(z3.Or(older)) if older else z3.BoolVal(True))

    def primary(self, m: Any, h: Any) -> Any:
        e: Any = self.num(-1)
        for c in range(self.C - 1, -1, -1):
            e = z3.If(self.is_primary(m, c, h), c, e)
        return e

    def lru_head(self, m: Any) -> Any:
        """The LRU's head: the smallest stamp (ties broken by slot), -1 when empty."""
        e: Any = self.num(-1)
        for c in range(self.C - 1, -1, -1):
            first = [
                z3.Or(m[f"cl{d}"] <= 0, m[f"cl{d}"] > m[f"cl{c}"], z3.And(m[f"cl{d}"] == m[f"cl{c}"], d > c))
                for d in range(self.C)
                if d != c
            ]
            e = z3.If(z3.And(m[f"cl{c}"] > 0, *first), c, e)
        return e

    def free_capacity(self, m: Any) -> Any:
        return self.C - self.cnt(self.live(m, c) for c in range(self.C)) - m["rsv"]

    def lru_len(self, m: Any) -> Any:
        return self.cnt(m[f"cl{c}"] > 0 for c in range(self.C))

    def slot_set(self, m: _Sym, c: Any, name: str, val: Any) -> None:
        """``name<c> := val`` for a symbolic slot ``c``."""
        for k in range(self.C):
            with m.when(c == k):
                m.set(f"{name}{k}", val)

    def slot_get(self, m: Any, c: Any, name: str) -> Any:
        e: Any = m[f"{name}0"]
        for k in range(1, self.C):
            e = z3.If(c == k, m[f"{name}{k}"], e)
        return e

    def lru_append(self, m: _Sym, c: Any) -> None:
        self.slot_set(m, c, "cl", m["tick"])
        m.set("tick", m["tick"] + 1)

    def pin(self, m: _Sym, c: Any) -> None:
        """``_pin``: an idle copy leaves the LRU; one pin more."""
        self.slot_set(
            m, c, "cl", z3.If(self.slot_get(m, c, "cr") + self.slot_get(m, c, "cp") == 0, 0, self.slot_get(m, c, "cl"))
        )
        self.slot_set(m, c, "cp", self.slot_get(m, c, "cp") + 1)

    def unpin(self, m: _Sym, c: Any) -> None:
        self.slot_set(m, c, "cp", self.slot_get(m, c, "cp") - 1)
        with m.when(z3.And(self.slot_get(m, c, "cp") == 0, self.slot_get(m, c, "cr") == 0)):
            self.lru_append(m, c)

    def reserve_ok(self, m: Any, pinned_idle: Any, fresh: Any) -> Any:
        needed = z3.If(fresh - self.free_capacity(m) > 0, fresh - self.free_capacity(m), 0)
        return needed <= self.lru_len(m) - pinned_idle

    def evict(self, m: _Sym, fresh: Any) -> None:
        """Evict LRU heads until ``fresh`` slots are free; one Removed for the hashes whose last copy
        went (the caller checked :meth:`reserve_ok` and pinned the prefix)."""
        needed = z3.If(fresh - self.free_capacity(m) > 0, fresh - self.free_capacity(m), 0)
        removed = []
        for i in range(self.C):
            with m.when(i < needed):
                e = self.lru_head(m)
                h = self.slot_get(m, e, "ch")
                self.slot_set(m, e, "cs", FREE)
                self.slot_set(m, e, "cl", 0)
                self.slot_set(m, e, "cr", 0)
                self.slot_set(m, e, "cp", 0)
                last = z3.Not(self.visible(m, h))
                removed.append(z3.And(m.cond(), last))
                for k in range(self.H):
                    with m.when(z3.And(last, h == k)):
                        m.set(f"an{k}", m[f"an{k}"] - 1)
        with m.when(z3.Or(removed) if removed else z3.BoolVal(False)):
            m.set("nev", m["nev"] + 1)

    def alloc_private(self, m: _Sym) -> Any:
        """The first free slot becomes a private copy (one reserved slot consumed); the slot."""
        c = self.num(-1)
        for k in range(self.C - 1, -1, -1):
            c = z3.If(m[f"cs{k}"] == FREE, k, c)
        self.slot_set(m, c, "cs", PRIVATE)
        self.slot_set(m, c, "ch", -1)
        self.slot_set(m, c, "cr", 0)
        self.slot_set(m, c, "cp", 0)
        self.slot_set(m, c, "cl", 0)
        m.set("rsv", m["rsv"] - 1)
        return c

    def cache_private(self, m: _Sym, c: Any, h: Any) -> Any:
        """A private copy enters the cache under ``h`` with one reference: whether it is the first
        copy (the hash became visible; the monitor's count grows when it is published)."""
        first = z3.Not(self.visible(m, h))
        self.slot_set(m, c, "cs", CACHED)
        self.slot_set(m, c, "ch", h)
        self.slot_set(m, c, "cr", 1)
        self.slot_set(m, c, "cp", 0)
        self.slot_set(m, c, "ck", m["tick"])
        m.set("tick", m["tick"] + 1)
        return first

    def announce(self, m: _Sym, h: Any, parent: Any, check_parent: Any) -> None:
        """The monitor sees a Stored (group start when ``check_parent``) naming ``parent``."""
        par_ok = z3.Or([z3.And(parent == k, m[f"an{k}"] > 0) for k in range(self.H)])
        with m.when(z3.And(check_parent, parent >= 0, z3.Not(par_ok))):
            m.set("f_par", True)
        with m.when(check_parent):
            m.set("nev", m["nev"] + 1)
        for k in range(self.H):
            with m.when(h == k):
                m.set(f"an{k}", m[f"an{k}"] + 1)

    # ------------------------------------------------------------------ request helpers

    def tail_of(self, m: Any, o: int, name: str, idx: Any) -> Any:
        """``name<o>_<idx>`` for a symbolic position."""
        e: Any = m[f"{name}{o}_0"]
        for j in range(1, self.J):
            e = z3.If(idx == j, m[f"{name}{o}_{j}"], e)
        return e

    def release_entry(self, m: _Sym, c: Any) -> None:
        """``pool.release``: a private copy is freed; a cached one loses a reference and joins the
        LRU tail when idle."""
        private = self.slot_get(m, c, "cs") == PRIVATE
        with m.when(private):
            self.slot_set(m, c, "cs", FREE)
            self.slot_set(m, c, "ch", 0)
        with m.when(z3.Not(private)):
            self.slot_set(m, c, "cr", self.slot_get(m, c, "cr") - 1)
            with m.when(z3.And(self.slot_get(m, c, "cr") == 0, self.slot_get(m, c, "cp") == 0)):
                self.lru_append(m, c)

    def clear_request(self, m: _Sym, o: int) -> None:
        for n in ("sq", "pr", "ln", "un", "al", "cm", "tl", "dn", "dfr"):
            m.set(f"{n}{o}", 0)
        for j in range(self.J):
            for n in ("ec", "ds"):
                m.set(f"{n}{o}_{j}", 0)
            for n in ("uf", "ef", "ep"):
                m.set(f"{n}{o}_{j}", False)

    def new_sequence(self, m: _Sym, o: int, p: int) -> None:
        n = self.L[p]
        m.set(f"pr{o}", p)
        m.set(f"ln{o}", n)
        m.set(f"un{o}", -(-n // BS))
        for j in range(self.J):
            m.set(f"uf{o}_{j}", j < n // BS)
        m.set(f"al{o}", 0)
        m.set(f"cm{o}", 0)
        m.set(f"tl{o}", 0)

    def model_vars(self) -> list[str]:
        """What ``G1Manager.key()`` covers: the pool and the block tables."""
        out = [f"{n}{c}" for c in range(self.C) for n in ("cs", "ch", "cr", "cp", "cl", "ck")]
        out.append("rsv")
        for o in range(self.O):
            out.append(f"tl{o}")
            out += [f"{n}{o}_{j}" for j in range(self.J) for n in ("ec", "ef", "ep")]
        return out

    def finish(self, m: _Sym, failed: Any) -> dict[str, Any]:
        changed = z3.Or([m[n] != m.pre[n] for n in self.model_vars()])
        m.set("f_fail", z3.And(failed, z3.Or(changed, m["nev"] > 0)))
        return m.v

    def start(self, s: State) -> _Sym:
        m = _Sym(s, self.num)
        for f in ("f_par", "f_fail", "f_tr", "f_unk", "f_tail"):
            m.set(f, False)
        m.set("res", DONE)
        m.set("nev", 0)
        return m

    # ------------------------------------------------------------------ operations

    def _new_request(self, o: int, p: int) -> Callable[[State, State], Effect]:
        def eff(s: State, _: State) -> Effect:
            m = self.start(s)
            m.set(f"sq{o}", 1)
            self.new_sequence(m, o, p)
            return s[f"sq{o}"] == 0, self.finish(m, z3.BoolVal(False))

        return eff

    def _allocate(self, o: int, reuse: bool) -> Callable[[State, State], Effect]:
        """The creation Use of the whole sequence, with its capped cached prefix when ``reuse``."""

        def eff(s: State, _: State) -> Effect:
            m = self.start(s)
            pr, ln, un = s[f"pr{o}"], s[f"ln{o}"], s[f"un{o}"]
            guard = z3.And(s[f"sq{o}"] == 1, s[f"al{o}"] == 0)
            cap = (ln - 1) / BS
            hits = []  # block j is part of the reused prefix
            run: Any = z3.BoolVal(reuse)
            for j in range(self.J):
                h = self.fh(pr, j)
                run = z3.And(run, j < cap, j < un, s[f"uf{o}_{j}"], h >= 0, self.visible(s, h), s[f"tl{o}"] == 0)
                hits.append(run)
            npre = self.cnt(hits)
            pinned_idle = self.cnt(
                z3.And(
                    hits[j],
                    z3.Or([z3.And(self.is_primary(s, c, self.fh(pr, j)), self.idle(s, c)) for c in range(self.C)]),
                )
                for j in range(self.J)
            )
            ok = self.reserve_ok(s, pinned_idle, un - npre)
            with m.when(ok):
                prim = [self.primary(s, self.fh(pr, j)) for j in range(self.J)]
                for j in range(self.J):  # pins (they become references at once)
                    with m.when(hits[j]):
                        self.pin(m, prim[j])
                self.evict(m, un - npre)
                m.set("rsv", m["rsv"] + (un - npre))
                for j in range(self.J):
                    with m.when(j < un):
                        with m.when(hits[j]):
                            self.slot_set(m, prim[j], "cp", self.slot_get(m, prim[j], "cp") - 1)
                            self.slot_set(m, prim[j], "cr", self.slot_get(m, prim[j], "cr") + 1)
                            m.set(f"ec{o}_{j}", prim[j])
                            m.set(f"ef{o}_{j}", True)
                            m.set(f"ep{o}_{j}", False)
                        with m.when(z3.Not(hits[j])):
                            c = self.alloc_private(m)
                            m.set(f"ec{o}_{j}", c)
                            m.set(f"ef{o}_{j}", s[f"uf{o}_{j}"])
                            m.set(f"ep{o}_{j}", s[f"uf{o}_{j}"])
                m.set(f"tl{o}", un)
                m.set(f"al{o}", ln)
                m.set(f"cm{o}", z3.If(npre * BS > s[f"cm{o}"], npre * BS, s[f"cm{o}"]))
            with m.when(z3.Not(ok)):
                m.set("res", EXHAUSTED)
            return guard, self.finish(m, z3.Not(ok))

        return eff

    def _promote(self, m: _Sym, o: int, i: Any) -> Any:
        """Native ``promote_for_request`` of the table tail (position ``i``); the rejection."""
        tl = m[f"tl{o}"]
        bad = z3.Or(tl == 0, tl != i + 1, self.tail_of(m, o, "ef", i))
        with m.when(z3.Not(bad)):
            c = self.tail_of(m, o, "ec", i)
            for j in range(self.J):
                with m.when(i == j):
                    h = self.FH_sym(m[f"pr{o}"], j)
                    vis = self.cache_private(m, c, h)
                    parent = self.FH_sym(m[f"pr{o}"], j - 1) if j else self.num(-1)
                    has_parent = m[f"uf{o}_{j - 1}"] if j else z3.BoolVal(False)
                    with m.when(vis):
                        self.announce(m, h, z3.If(has_parent, parent, -1), z3.BoolVal(True))
                    m.set(f"ef{o}_{j}", True)
                    m.set(f"ep{o}_{j}", False)
        return bad

    def FH_sym(self, p: Any, j: int) -> Any:
        return self.fh(p, j) if j >= 0 else self.num(-1)

    def _seq_promote_cond(self, m: Any, o: int, ln: Any) -> Any:
        """``ActiveSequence::promote`` applies: the trailing unique block is a partial whose block is complete."""
        un = m[f"un{o}"]
        return z3.And(un >= 1, z3.Not(self.tail_of(m, o, "uf", un - 1)), un - 1 < ln / BS)

    def _native_finalize(self, m: _Sym, o: int, first: Any, completed: Any) -> None:
        pr = m[f"pr{o}"]
        end = z3.If(completed < m[f"tl{o}"], completed, m[f"tl{o}"])
        going: Any = z3.BoolVal(True)
        prev_vis: Any = z3.BoolVal(False)
        for j in range(self.J):
            active = z3.And(going, j >= first, j < end)
            full = m[f"ef{o}_{j}"]
            going = z3.And(going, z3.Or(j < first, j >= end, full))
            step = z3.And(active, full, m[f"ep{o}_{j}"])
            vis_j: Any = z3.BoolVal(False)
            with m.when(step):
                h = self.fh(pr, j)
                c = m[f"ec{o}_{j}"]
                vis = self.cache_private(m, c, h)
                m.set(f"ep{o}_{j}", False)
                start = z3.And(vis, z3.Or(j == first, z3.Not(prev_vis)))
                with m.when(vis):
                    self.announce(m, h, self.FH_sym(pr, j - 1), start)
                vis_j = z3.And(step, vis)
            prev_vis = vis_j

    def _finalize(self, o: int) -> Callable[[State, State], Effect]:
        """Facade ``finalize_computed_prefix(computed, len)`` and the computed tail's promotion."""

        def eff(s: State, _: State) -> Effect:
            m = self.start(s)
            guard = s[f"sq{o}"] == 1
            ln, cm, tl = s[f"ln{o}"], s[f"cm{o}"], s[f"tl{o}"]
            first, completed = cm / BS, ln / BS
            no_table = tl == 0
            err = z3.And(no_table, first < completed) if self.q("finalize_skips_owner_check") else no_table
            promote = z3.And(ln % BS == 0, ln != 0, self._seq_promote_cond(s, o, ln))
            un = s[f"un{o}"]
            bad: Any = z3.BoolVal(False)
            with m.when(z3.Not(err)):
                if self.q("promote_tail_before_finalize"):
                    with m.when(promote):
                        bad = z3.And(promote, self._promote(m, o, un - 1))
                    with m.when(z3.Not(bad)):
                        with m.when(z3.Not(no_table)):
                            self._native_finalize(m, o, first, completed)
                else:
                    with m.when(z3.Not(no_table)):
                        self._native_finalize(m, o, first, completed)
                    with m.when(promote):
                        bad = z3.And(promote, self._promote(m, o, un - 1))
                with m.when(z3.Not(bad)):  # a rejection leaves the sequence as it was (G1System)
                    with m.when(promote):
                        for j in range(self.J):
                            with m.when(un - 1 == j):
                                m.set(f"uf{o}_{j}", True)
                    m.set(f"cm{o}", ln)
            rejected = z3.Or(err, bad)
            with m.when(rejected):
                m.set("res", REJECTED)
            m.set("f_unk", z3.And(z3.Not(rejected), no_table))
            return guard, self.finish(m, rejected)

        return eff

    def _push(self, o: int) -> Callable[[State, State], Effect]:
        """One token (6): at the first token of a block, the tail's Promote and a Use of a new partial."""

        def eff(s: State, _: State) -> Effect:
            m = self.start(s)
            ln, cm, pr = s[f"ln{o}"], s[f"cm{o}"], s[f"pr{o}"]
            n = ln + 1
            starts = n % BS == 1
            guard = z3.And(
                s[f"sq{o}"] == 1, s[f"tl{o}"] > 0, z3.Or(z3.Not(starts), cm == ln), ln < self.plen(pr) + self.u.pushes
            )
            un = s[f"un{o}"]
            promote = z3.And(starts, self._seq_promote_cond(s, o, n))
            bad: Any = z3.BoolVal(False)
            with m.when(promote):
                bad = z3.And(promote, self._promote(m, o, un - 1))
            ok = self.reserve_ok(s, 0, 1)
            with m.when(z3.Not(bad)):  # a rejection leaves the sequence as it was (G1System)
                m.set(f"ln{o}", n)
                with m.when(promote):
                    for j in range(self.J):
                        with m.when(un - 1 == j):
                            m.set(f"uf{o}_{j}", True)
            with m.when(z3.And(starts, z3.Not(bad))):  # the new partial, then its Use
                m.set(f"un{o}", un + 1)
                for j in range(self.J):
                    with m.when(un == j):
                        m.set(f"uf{o}_{j}", False)
                with m.when(ok):
                    self.evict(m, 1)
                    m.set("rsv", m["rsv"] + 1)
                    c = self.alloc_private(m)
                    tl = s[f"tl{o}"]
                    for j in range(self.J):
                        with m.when(tl == j):
                            m.set(f"ec{o}_{j}", c)
                            m.set(f"ef{o}_{j}", False)
                            m.set(f"ep{o}_{j}", False)
                    m.set(f"tl{o}", tl + 1)
                with m.when(z3.Not(ok)):
                    m.set("res", PUSH_EXHAUSTED)
            with m.when(bad):
                m.set("res", REJECTED)
            return guard, self.finish(m, bad)

        return eff

    def _deref(self, o: int, in_order: bool) -> Callable[[State, State], Effect]:
        """The terminal Deref: the sequence's blocks leaf first (``free``) or in table order."""

        def eff(s: State, _: State) -> Effect:
            m = self.start(s)
            ln, un, tl = s[f"ln{o}"], s[f"un{o}"], s[f"tl{o}"]
            guard = z3.And(s[f"sq{o}"] == 1, tl > 0)
            want = (ln + BS - 1) / BS
            n = z3.If(want < un, want, un)
            names_tail = z3.And(n == tl, *[z3.Or(j >= tl, s[f"uf{o}_{j}"] == s[f"ef{o}_{j}"]) for j in range(self.J)])
            err = z3.Not(names_tail)
            if in_order and self.q("deref_exact_reverse_tail"):
                err = z3.Or(err, tl != 1)
            with m.when(z3.Not(err)):
                for j in range(self.J - 1, -1, -1):
                    with m.when(j < tl):
                        self.release_entry(m, s[f"ec{o}_{j}"])
                self.clear_request(m, o)
            with m.when(err):
                m.set("res", REJECTED)
            if in_order:
                m.set("f_tail", z3.And(err, names_tail))
            return guard, self.finish(m, err)

        return eff

    def _reserve_decode(self, s: State, _: State) -> Effect:
        m = self.start(s)
        d = self.u.decode
        ok = self.reserve_ok(s, 0, d)
        with m.when(ok):
            self.evict(m, d)
            m.set("rsv", m["rsv"] + d)
            m.set("dec", True)
            m.set("dcf", d)
        with m.when(z3.Not(ok)):
            m.set("res", EXHAUSTED)
        return z3.Not(s["dec"]), self.finish(m, z3.Not(ok))

    def _release_decode(self, s: State, _: State) -> Effect:
        m = self.start(s)
        m.set("rsv", s["rsv"] - s["dcf"])
        m.set("dec", False)
        m.set("dcf", 0)
        return s["dec"], self.finish(m, z3.BoolVal(False))

    def _reserve_destination(self, o: int, p: int) -> Callable[[State, State], Effect]:
        """``reserve_native_destination``: the prompt's leading cached full blocks (no cap) pinned,
        the rest reserved."""

        def eff(s: State, _: State) -> Effect:
            m = self.start(s)
            n = self.L[p]
            blocks = -(-n // BS)
            hits = []
            run: Any = z3.BoolVal(True)
            for j in range(self.J):
                h = self.FH[p][j]
                full = j < n // BS and h >= 0
                run = z3.And(run, full and j < blocks, self.visible(s, h) if full else z3.BoolVal(False))
                hits.append(run)
            npre = self.cnt(hits)
            pinned_idle = self.cnt(
                z3.And(
                    hits[j],
                    z3.Or([z3.And(self.is_primary(s, c, self.FH[p][j]), self.idle(s, c)) for c in range(self.C)]),
                )
                for j in range(self.J)
                if self.FH[p][j] >= 0
            )
            fresh = blocks - npre
            ok = self.reserve_ok(s, pinned_idle, fresh)
            with m.when(ok):
                for j in range(self.J):
                    if self.FH[p][j] < 0:
                        continue
                    with m.when(hits[j]):
                        c = self.primary(s, self.FH[p][j])
                        self.pin(m, c)
                        m.set(f"ds{o}_{j}", c)
                self.evict(m, fresh)
                m.set("rsv", m["rsv"] + fresh)
                m.set(f"sq{o}", 2)
                self.new_sequence(m, o, p)
                m.set(f"dn{o}", npre)
                m.set(f"dfr{o}", fresh)
                cached = npre * BS
                uncached = z3.If(n - cached > 0, n - cached, 0)
                tr = fresh * BS
                if not self.q("transferable_counts_partial_tail"):
                    tr = z3.If(tr < uncached, tr, uncached)
                m.set("f_tr", tr > uncached)
            with m.when(z3.Not(ok)):
                m.set("res", EXHAUSTED)
            return s[f"sq{o}"] == 0, self.finish(m, z3.Not(ok))

        return eff

    def _activate(self, o: int) -> Callable[[State, State], Effect]:
        """``activate_native_destination``: pins become references, fresh full blocks enter the
        cache at once (published in runs), the partial tail is private."""

        def eff(s: State, _: State) -> Effect:
            m = self.start(s)
            pr, un, dn = s[f"pr{o}"], s[f"un{o}"], s[f"dn{o}"]
            prev_vis: Any = z3.BoolVal(False)
            for j in range(self.J):
                with m.when(j < un):
                    with m.when(j < dn):
                        c = s[f"ds{o}_{j}"]
                        self.slot_set(m, c, "cp", self.slot_get(m, c, "cp") - 1)
                        self.slot_set(m, c, "cr", self.slot_get(m, c, "cr") + 1)
                        m.set(f"ec{o}_{j}", c)
                        m.set(f"ef{o}_{j}", True)
                    fresh_full = z3.And(j >= dn, s[f"uf{o}_{j}"])
                    vis_j: Any = z3.BoolVal(False)
                    with m.when(fresh_full):
                        c = self.alloc_private(m)
                        h = self.fh(pr, j)
                        vis = self.cache_private(m, c, h)
                        m.set(f"ec{o}_{j}", c)
                        m.set(f"ef{o}_{j}", True)
                        start = z3.And(vis, z3.Or(j == dn, z3.Not(prev_vis)))
                        with m.when(vis):
                            self.announce(m, h, self.FH_sym(pr, j - 1), start)
                        vis_j = z3.And(fresh_full, j < un, vis)
                    with m.when(z3.And(j >= dn, z3.Not(s[f"uf{o}_{j}"]))):
                        c = self.alloc_private(m)
                        m.set(f"ec{o}_{j}", c)
                        m.set(f"ef{o}_{j}", False)
                    m.set(f"ep{o}_{j}", False)
                prev_vis = vis_j
            for j in range(self.J):
                m.set(f"ds{o}_{j}", 0)
            m.set(f"tl{o}", un)
            m.set(f"al{o}", s[f"ln{o}"])
            m.set(f"cm{o}", s[f"ln{o}"])
            m.set(f"dn{o}", 0)
            m.set(f"dfr{o}", 0)
            m.set(f"sq{o}", 1)
            return s[f"sq{o}"] == 2, self.finish(m, z3.BoolVal(False))

        return eff

    def _cancel(self, o: int) -> Callable[[State, State], Effect]:
        """``cancel_destination``: the prefix unpinned leaf first, the fresh slots returned."""

        def eff(s: State, _: State) -> Effect:
            m = self.start(s)
            dn = s[f"dn{o}"]
            for j in range(self.J - 1, -1, -1):
                with m.when(j < dn):
                    self.unpin(m, s[f"ds{o}_{j}"])
            m.set("rsv", m["rsv"] - s[f"dfr{o}"])
            self.clear_request(m, o)
            return s[f"sq{o}"] == 2, self.finish(m, z3.BoolVal(False))

        return eff

    # ------------------------------------------------------------------ properties

    def properties(self) -> tuple[Property, ...]:
        C, NO, J = self.C, self.O, self.J

        def capacity(s: State) -> Any:
            return z3.And(self.cnt(self.live(s, c) for c in range(C)) + s["rsv"] <= C, s["rsv"] >= 0)

        def lru(s: State) -> Any:
            out = []
            for c in range(C):
                out.append((s[f"cl{c}"] > 0) == self.idle(s, c))
                out.append(z3.Implies(self.cached(s, c), z3.And(s[f"cr{c}"] >= 0, s[f"cp{c}"] >= 0)))
            return z3.And(*out)

        def announced(s: State) -> Any:
            return z3.And(*[s[f"an{h}"] == z3.If(self.visible(s, h), self.num(1), self.num(0)) for h in range(self.H)])

        def reserved(s: State) -> Any:
            held = z3.If(s["dec"], s["dcf"], 0) + z3.Sum([z3.If(s[f"sq{o}"] == 2, s[f"dfr{o}"], 0) for o in range(NO)])
            return s["rsv"] == held

        def active(s: State) -> Any:
            return s["rsv"] == 0 if self.q("active_counts_reservations") else z3.BoolVal(True)

        def prefix_exact(s: State) -> Any:
            if not self.q("prefix_hit_first_copy_only"):
                return z3.BoolVal(True)
            out = []
            for h in range(self.H):
                any_use = z3.Or([z3.And(self.cached(s, c, h), self.in_use(s, c)) for c in range(C)])
                prim_use = z3.Or([z3.And(self.is_primary(s, c, h), self.in_use(s, c)) for c in range(C)])
                out.append(prim_use == any_use)
            return z3.And(*out)

        def named(s: State, c: int) -> Any:
            """Table entries naming slot ``c``."""
            return [
                z3.And(s[f"sq{o}"] == 1, j < s[f"tl{o}"], s[f"ec{o}_{j}"] == c) for o in range(NO) for j in range(J)
            ]

        def copies_match(s: State) -> Any:
            out = []
            for c in range(C):
                entries = named(s, c)
                pins = [
                    z3.And(s[f"sq{o}"] == 2, j < s[f"dn{o}"], s[f"ds{o}_{j}"] == c) for o in range(NO) for j in range(J)
                ]
                out.append(z3.Implies(s[f"cs{c}"] == PRIVATE, self.cnt(entries) == 1))
                out.append(
                    z3.Implies(
                        s[f"cs{c}"] == CACHED, z3.And(s[f"cr{c}"] == self.cnt(entries), s[f"cp{c}"] == self.cnt(pins))
                    )
                )
                out.append(z3.Implies(s[f"cs{c}"] == FREE, z3.And(self.cnt(entries) == 0, self.cnt(pins) == 0)))
                out.append(z3.Or(s[f"cs{c}"] == FREE, s[f"cs{c}"] == PRIVATE, s[f"cs{c}"] == CACHED))
            for o in range(NO):
                for j in range(J):
                    c = s[f"ec{o}_{j}"]
                    live = z3.And(s[f"sq{o}"] == 1, j < s[f"tl{o}"])
                    cached_entry = z3.And(s[f"ef{o}_{j}"], z3.Not(s[f"ep{o}_{j}"]))
                    out.append(z3.Implies(live, z3.And(c >= 0, c < C)))
                    out.append(
                        z3.Implies(
                            live,
                            z3.If(
                                cached_entry,
                                self.slot_get(s, c, "cs") == CACHED,
                                self.slot_get(s, c, "cs") == PRIVATE,
                            ),
                        )
                    )
                    out.append(
                        z3.Implies(z3.And(live, cached_entry), self.slot_get(s, c, "ch") == self.fh(s[f"pr{o}"], j))
                    )
                    out.append(z3.Implies(z3.And(live, s[f"ep{o}_{j}"]), s[f"ef{o}_{j}"]))
                    d = s[f"ds{o}_{j}"]
                    pin = z3.And(s[f"sq{o}"] == 2, j < s[f"dn{o}"])
                    out.append(z3.Implies(pin, z3.And(d >= 0, d < C)))
                    out.append(
                        z3.Implies(
                            pin,
                            z3.And(
                                self.slot_get(s, d, "cs") == CACHED,
                                self.slot_get(s, d, "ch") == self.fh(s[f"pr{o}"], j),
                            ),
                        )
                    )
            return z3.And(*out)

        def computed_cached(s: State) -> Any:
            out = []
            for o in range(NO):
                for j in range(J):
                    below = z3.And(s[f"sq{o}"] == 1, j < s[f"tl{o}"], j < s[f"cm{o}"] / BS)
                    out.append(z3.Implies(below, z3.And(s[f"ef{o}_{j}"], z3.Not(s[f"ep{o}_{j}"]))))
            return z3.And(*out)

        def shape(s: State) -> Any:
            out = []
            for o in range(NO):
                sq, pr, ln, un, tl, cm = (s[f"{n}{o}"] for n in ("sq", "pr", "ln", "un", "tl", "cm"))
                blocks = (ln + BS - 1) / BS
                live = sq != 0
                out.append(z3.Or(sq == 0, sq == 1, sq == 2))
                out.append(z3.Implies(live, z3.And(pr >= 0, pr < self.P)))
                out.append(z3.Implies(live, z3.And(ln >= self.plen(pr), ln <= self.plen(pr) + self.u.pushes)))
                out.append(z3.Implies(live, z3.And(un == blocks, un <= J)))
                out.append(z3.Implies(live, z3.And(tl >= 0, tl <= un, cm >= 0, cm <= ln)))
                # the table holds the sequence's blocks, or all but a trailing partial whose Use failed
                out.append(
                    z3.Implies(
                        z3.And(sq == 1, tl > 0, tl != un), z3.And(tl == un - 1, un - 1 >= ln / BS, ln > self.plen(pr))
                    )
                )
                out.append(z3.Implies(z3.And(sq == 1, tl == 0), z3.And(ln == self.plen(pr), cm / BS == 0)))
                out.append(z3.Implies(sq == 1, (s[f"al{o}"] > 0) == (tl > 0)))
                out.append(z3.Implies(sq != 1, s[f"al{o}"] == 0))
                out.append(
                    z3.Implies(sq == 2, z3.And(tl == 0, s[f"dn{o}"] >= 0, s[f"dn{o}"] <= ln / BS, s[f"dfr{o}"] >= 0))
                )
                out.append(z3.Implies(sq == 2, s[f"dn{o}"] + s[f"dfr{o}"] == un))
                out.append(z3.Implies(sq == 2, z3.And(ln == self.plen(pr), cm == 0)))
                out.append(z3.Implies(sq != 2, z3.And(s[f"dn{o}"] == 0, s[f"dfr{o}"] == 0)))
                out.append(z3.Implies(sq == 0, tl == 0))
                for j in range(J):
                    full = s[f"uf{o}_{j}"]
                    out.append(z3.Implies(z3.And(live, j < un), full == z3.And(j < ln / BS, self.fh(pr, j) >= 0, full)))
                    out.append(z3.Implies(z3.And(live, j < un, j < ln / BS, j + 1 < un), full))
                    out.append(z3.Implies(z3.And(live, j < tl), s[f"ef{o}_{j}"] == full))
                    out.append(z3.Implies(z3.And(sq == 2, j < s[f"dn{o}"]), full))
                    out.append(z3.Implies(z3.And(live, j < un, ln == self.plen(pr)), full == (j < ln / BS)))
            out.append(z3.Implies(s["dec"], s["dcf"] == self.u.decode))
            out.append(s["tick"] >= 1)  # the stamp clock (spec bookkeeping)
            out.append(z3.Implies(z3.Not(s["dec"]), s["dcf"] == 0))
            return z3.And(*out)

        def fault(name: str) -> Callable[[State], Any]:
            return lambda s: z3.Not(s[name])

        return (
            Property("g1.capacity", capacity),
            Property("g1.lru_exactly_idle", lru),
            Property("g1.stored_parent_announced", fault("f_par")),
            Property("g1.announced_matches_visible", announced),
            Property("g1.failed_no_trace", fault("f_fail")),
            Property("g1.reserved_matches_outstanding", reserved),
            Property("g1.active_count_resident", active),
            Property("g1.prefix_hit_active_exact", prefix_exact),
            Property("g1.transferable_within_prompt", fault("f_tr")),
            Property("g1.unknown_request_rejected", fault("f_unk")),
            Property("g1.deref_of_tail_accepted", fault("f_tail")),
            Property("g1.copies_match_tables", copies_match, lemma=True),
            Property("g1.computed_prefix_cached", computed_cached, lemma=True),
            Property("g1.request_shape", shape, lemma=True),
        )

    # ------------------------------------------------------------------ build

    def _build(self) -> TransitionSystem:
        ops: list[Operation] = []

        def op(action: Action, effect: Callable[[State, State], Effect], *label: int) -> None:
            """The operation of one executable action (named by its operation and ``label``)."""
            ops.append(Operation(".".join([action.op, *map(str, label)]), (), effect, action))

        for o in range(self.O):
            for p in range(self.P):
                op(NewRequest(o, list(self.prompt_tokens[p])), self._new_request(o, p), o, p)
            for r in (False, True):
                op(Allocate(o, r), self._allocate(o, r), o, int(r))
            op(Push(o, PUSH_TOKEN), self._push(o), o)
            op(Finalize(o), self._finalize(o), o)
            op(Free(o), self._deref(o, False), o)
            op(DerefInOrder(o), self._deref(o, True), o)
        if self.u.decode:
            op(ReserveDecode(self.u.decode), self._reserve_decode)
            op(ReleaseDecode(), self._release_decode)
        for o in range(self.O):
            for p in range(self.P):
                op(ReserveDestination(o, list(self.prompt_tokens[p])), self._reserve_destination(o, p), o, p)
            op(ActivateDestination(o), self._activate(o), o)
            op(CancelDestination(o), self._cancel(o), o)
        return TransitionSystem(COMPONENT, self.variables(), self.init, tuple(ops), self.properties(), self.width)

    # ------------------------------------------------------------------ to the executable model

    def step_json(self, step: Step) -> tuple[str, Any]:
        """A decoded step as the executable ``(op, args)``: its operation's action (a fresh JSON:
        a list argument shared by every trace would be one object)."""
        a = step.action
        return a.op, {k: list(v) if isinstance(v, list) else v for k, v in a.to_json().items()}

    # The executable -> spec direction is checked on whole runs by comparing observations
    # (``observe``), not state by state: copy identities would need a slot mapping.
    def describe(self, values: dict[str, Any] | None) -> str:
        return "nothing" if values is None else ", ".join(f"{k}={v}" for k, v in sorted(values.items()))


def make_spec(config: dict[str, Any], quirks: Iterable[str]) -> G1Spec:
    allowed = set(attrs.fields_dict(G1Universe))
    extra = set(config) - allowed
    if extra:
        raise InvalidInput(f"unknown g1_native spec parameters {sorted(extra)} (known: {sorted(allowed)})")
    return G1Spec(G1Universe(**config), quirks)


# ----------------------------------------------------------------------------- agreement


def _val(v: Any) -> Any:
    if z3.is_true(v) or z3.is_false(v):
        return bool(z3.is_true(v))
    if not z3.is_int_value(v):
        raise ValueError(f"not a constant: {v}")
    return int(v.as_long())


def _const(v: Any) -> Any:
    return z3.BoolVal(v) if isinstance(v, bool) else z3.IntVal(v)


def observe(spec: G1Spec, system: Any, out: Any) -> Callable[[State], Any]:
    """What the executable model shows after a step, as a constraint on the spec's state:
    the result, the number of events, every invariant's verdict, and the state up to copy
    identity (per-hash copy, reference, pin and LRU counts, private copies, the reserved count,
    the monitor's counts, every request's sequence, table and reservation)."""
    from kvmodel.model.blocks import FullBlock

    g = system.model.native
    p = g.pool
    if out.error is not None:
        res = REJECTED
    elif isinstance(out.result, CapacityExhausted):
        res = EXHAUSTED
    elif isinstance(out.result, list) and any(isinstance(r, CapacityExhausted) for r in out.result):
        res = PUSH_EXHAUSTED
    else:
        res = DONE
    broken = {v.invariant for v in out.violations}
    hid = {h: k for k, h in enumerate(spec.hashes)}

    def c(s: State) -> Any:
        eqs = [s["res"] == res, s["nev"] == len(out.events), s["rsv"] == p.reserved]
        eqs += [prop.formula(s) == (prop.name not in broken) for prop in spec.ts.properties]
        eqs.append(
            _cnt(s[f"cs{k}"] == PRIVATE for k in range(spec.C)) == sum(x.hash is None for x in p.copies.values())
        )
        eqs.append(spec.lru_len(s) == len(p.inactive))
        for h, k in hid.items():
            mine = [x for x in p.copies.values() if x.hash == h]
            in_h = [z3.And(spec.cached(s, d, k)) for d in range(spec.C)]
            eqs.append(_cnt(in_h) == len(mine))
            eqs.append(z3.Sum([z3.If(in_h[d], s[f"cr{d}"], 0) for d in range(spec.C)]) == sum(x.refs for x in mine))
            eqs.append(z3.Sum([z3.If(in_h[d], s[f"cp{d}"], 0) for d in range(spec.C)]) == sum(x.pins for x in mine))
            eqs.append(s[f"an{k}"] == system.monitor.announced.get(h, 0))
        for o in range(spec.O):
            seq = system.seqs.get(o)
            r = system.dest.get(o)
            sq = 0 if seq is None else 2 if r is not None else 1
            eqs.append(s[f"sq{o}"] == sq)
            if seq is None:
                continue
            table = g.tables.get(o, [])
            eqs += [s[f"ln{o}"] == len(seq.tokens), s[f"un{o}"] == len(seq.unique), s[f"tl{o}"] == len(table)]
            eqs += [s[f"al{o}"] == seq.num_allocated_tokens, s[f"cm{o}"] == system.computed.get(o, 0)]
            eqs.append(s[f"pr{o}"] == spec.prompt_tokens.index(seq.tokens[: seq.num_input_tokens]))
            for j, b in enumerate(seq.unique):
                eqs.append(s[f"uf{o}_{j}"] == isinstance(b, FullBlock))
            for j, e in enumerate(table):
                eqs += [s[f"ef{o}_{j}"] == (e.hash is not None), s[f"ep{o}_{j}"] == (e.pending is not None)]
                eqs.append(
                    spec.slot_get(s, s[f"ec{o}_{j}"], "cs") == (PRIVATE if p.copies[e.copy].hash is None else CACHED)
                )
            if r is not None:
                eqs += [s[f"dn{o}"] == len(r.pool.prefix), s[f"dfr{o}"] == r.pool.fresh]
        eqs += [s["dec"] == bool(system.decodes), s["dcf"] == sum(r.pool.fresh for r in system.decodes)]
        return z3.And(*eqs)

    return c


def trace_agreement(
    config: dict[str, Any],
    quirks: Iterable[str],
    *,
    runs: int,
    steps: int,
    seed: int,
    spec_quirks: Iterable[str] | None = None,
    moves: Sequence[tuple[str, dict[str, Any]]] | None = None,
) -> int:
    """Random runs of the executable model over the spec's world (the explorer's enabled moves),
    each step checked against the spec: the step must be the spec's operation and lead to a state
    with the same observations (:func:`observe`). Returns the number of steps checked; raises
    :class:`~kvmodel.specs.runner.Disagreement` at the first step the spec does not admit.
    ``spec_quirks`` gives the spec other quirks than the executable model (tests use it to show
    that the check tells them apart); ``moves`` replaces the random runs by one given run."""
    import random

    from kvmodel.components.g1_native.space import G1Space
    from kvmodel.specs.runner import Disagreement, mode_of

    q = validate(COMPONENT, quirks)
    spec = make_spec(config, q if spec_quirks is None else spec_quirks)
    u = spec.u
    space = G1Space(owners=u.owners, prompts=u.prompts, pushes=u.pushes, decode=u.decode)
    names = [op.name for op in spec.ts.operations]
    rng = random.Random(seed)
    checked = 0
    cur, nxt = spec.ts.state("pre"), spec.ts.state("post")
    effects: dict[str, Effect] = {}
    for run in range(runs if moves is None else 1):
        system = space.system(spec.exec_config(), q)
        # The spec is deterministic: from a concrete state, one step has one successor, so each
        # step is checked from the concrete state the previous check produced.
        values: dict[str, Any] = {
            n: (1 if n == "tick" else False if sort == "bool" else 0) for n, sort in spec.ts.variables
        }
        for i in range(steps if moves is None else len(moves)):
            if moves is None:
                enabled = [mv for mv in space.moves() if space.allows(system, mv)]
                op, _, args = space.concrete(system, rng.choice(enabled))
            else:
                op, args = moves[i]
            out = system.step(op, args)
            key = ".".join(
                [op]
                + ([str(args["owner"])] if "owner" in args else [])
                + ([str(spec.prompt_tokens.index(args["tokens"]))] if "tokens" in args else [])
                + ([str(int(args["reuse"]))] if "reuse" in args else [])
            )
            # One operation's effect, evaluated on the concrete state: the guard must hold and the
            # successor must show what the executable model shows.
            if key not in effects:
                effects[key] = spec.ts.operations[names.index(key)].effect(cur, spec.ts.params("x")[key])
            guard, post = effects[key]
            subst = [(cur[n], _const(v)) for n, v in values.items()]
            nvalues = {n: _val(z3.simplify(z3.substitute(post.get(n, cur[n]), *subst))) for n in values}
            ok = z3.is_true(z3.simplify(z3.substitute(guard, *subst)))
            seen = z3.simplify(
                z3.substitute(observe(spec, system, out)(nxt), *[(nxt[n], _const(v)) for n, v in nvalues.items()])
            )
            if not (ok and z3.is_true(seen)):
                raise Disagreement(
                    f"g1_native {mode_of(COMPONENT, q)} seed {seed} run {run} step {i}: {op} {args} gave "
                    f"{out.result!r} / {out.error!r}, {len(out.events)} event(s), violations "
                    f"{sorted(v.invariant for v in out.violations)}; the spec "
                    + ("does not enable it" if not ok else f"gives {spec.describe(nvalues)}")
                )
            values = nvalues
            checked += 1
    return checked
