"""Symbolic transition system of the KVBM block registry (semantics §3, REG/EVENTS).

Real code: ``lib/llm/src/block_manager/block/registry.rs`` and ``events.rs``. A second
description of what :mod:`kvmodel.model.registry` executes, over the explorer's bounded
world (:class:`kvmodel.components.registry.space.RegSpace`): the same registries, block-state slots
``s<i>``, publish-handle slots ``ph<k>``, Arc slots ``a<j>``, publisher slots ``pub<u>`` and
unregister channels of at most ``max_pending`` hashes, with the same moves.

Identity is made finite: a registration handle lives in one of ``R`` handle slots (R = hashes
× tiers, the most that can be live at once, since at most one per (hash, tier) is live —
itself one of the proved invariants). A handle's Arc count is not a variable but the number of
holders that name its slot (registered states, publish handles, Arcs, publisher entries); it
dies when that count reaches zero, and every weak pointer to it becomes a *dead* entry (-1) at
that moment, so a slot can be reused without a stale pointer upgrading. Per-pool entries
``B[p][h]`` point to the state slot whose block handle they hold (``i + 1``), are ``-1`` when
that block handle is dead, ``0`` when absent; global entries ``G[h][t]`` likewise point to a
handle slot (``r + 1``). Register counts ``RN[r]`` are the stream monitor's ghost; ``f_rem`` and
``f_reg2`` flag a Remove before any Register and a second Register in the step just taken.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs
import z3

from kvmodel.components.registry import NAME as COMPONENT
from kvmodel.model.errors import InvalidInput, require_naturals
from kvmodel.model.quirks import validate
from kvmodel.specs.engine import Effect, Operation, Property, Sort, State, Step, TransitionSystem

ALREADY = 1  # err code: BlockAlreadyRegistered


@attrs.frozen
class RegUniverse:
    hashes: int = 1
    states: int = 2
    publish_handles: int = 1
    arcs: int = 0
    publishers: int = 2
    max_pending: int = 1
    registries: tuple[tuple[str, str], ...] = (("device0", "Device"), ("host", "HostPinned"))

    def __attrs_post_init__(self) -> None:
        require_naturals(self, ("hashes", "states", "publish_handles", "arcs", "publishers", "max_pending"))
        if self.hashes < 1 or not self.registries:
            raise InvalidInput("the registry spec needs at least one hash and one registry")

    @property
    def tiers(self) -> list[str]:
        out: list[str] = []
        for _, t in self.registries:
            if t not in out:
                out.append(t)
        return out

    def to_json(self) -> dict[str, Any]:
        d = attrs.asdict(self)
        d["registries"] = [list(r) for r in self.registries]
        return d


# Universes the proofs are run on (tests and benchmarks/registry.py): the kvmodel check world,
# the same with a caller Arc slot, and a wider one.
UNIVERSES: dict[str, dict[str, Any]] = {
    "check": {},
    "arcs": {"arcs": 1},
    "wide": {
        "hashes": 2,
        "states": 3,
        "publish_handles": 2,
        "arcs": 1,
        "max_pending": 2,
        "registries": [["device0", "Device"], ["device1", "Device"], ["host", "HostPinned"]],
    },
}


def _cnt(bs: list[Any]) -> Any:
    return z3.Sum([z3.If(b, 1, 0) for b in bs]) if bs else z3.IntVal(0)


class RegistrySpec:
    def __init__(
        self, universe: RegUniverse | None = None, quirks: Iterable[str] = (), width: int | None = None
    ) -> None:
        self.u = universe or RegUniverse()
        self.quirks = validate(COMPONENT, quirks)
        self.width = width  # unused: every variable is small, integers are exact
        u = self.u
        self.P, self.NH, self.NS = len(u.registries), u.hashes, u.states
        self.T = len(u.tiers)
        self.R = u.hashes * self.T
        self.K, self.A, self.U, self.Q = u.publish_handles, u.arcs, u.publishers, u.max_pending
        self.L = self.R
        self.tier_of = [u.tiers.index(t) for _, t in u.registries]
        self.untiered = "global_registry_untiered" in self.quirks
        self.ts = self._build()

    def q(self, name: str) -> bool:
        return name in self.quirks

    def exec_config(self) -> dict[str, Any]:
        return {"registries": [list(r) for r in self.u.registries]}

    def universe_json(self) -> dict[str, Any]:
        return self.u.to_json()

    def bounded(self, depth: int) -> RegistrySpec:
        """Integers stay small here (indices and counts), so the unbounded spec is the bounded one."""
        return self

    # ------------------------------------------------------------------ variables

    def variables(self) -> tuple[tuple[str, Any], ...]:
        v: list[tuple[str, Any]] = []
        for i in range(self.NS):
            v += [(f"S{i}", "int"), (f"SH{i}", "int"), (f"SP{i}", "int"), (f"SR{i}", "int")]
        for r in range(self.R):
            v += [(f"RT{r}", "int"), (f"RH{r}", "int"), (f"RN{r}", "nat")]
        for p in range(self.P):
            v += [(f"B{p}_{h}", "int") for h in range(self.NH)]
            v += [(f"Q{p}_{j}", "int") for j in range(self.Q)] + [(f"QL{p}", "nat")]
        for h in range(self.NH):
            v += [(f"G{h}_{t}", "int") for t in range(self.T)]
        v += [(f"K{k}", "int") for k in range(self.K)] + [(f"A{a}", "int") for a in range(self.A)]
        for w in range(self.U):
            v += [(f"U{w}", "bool"), (f"UL{w}", "nat")] + [(f"UE{w}_{j}", "int") for j in range(self.L)]
        v += [("err", "int"), ("f_rem", "bool"), ("f_reg2", "bool")]
        return tuple(v)

    def init(self, s: State) -> Any:
        cs = [s["err"] == 0, z3.Not(s["f_rem"]), z3.Not(s["f_reg2"])]
        cs += [s[f"S{i}"] == 0 for i in range(self.NS)]
        cs += [s[f"RN{r}"] == 0 for r in range(self.R)]
        for p in range(self.P):
            cs += [s[f"B{p}_{h}"] == 0 for h in range(self.NH)] + [s[f"QL{p}"] == 0]
        cs += [s[f"G{h}_{t}"] == 0 for h in range(self.NH) for t in range(self.T)]
        cs += [s[f"K{k}"] == -1 for k in range(self.K)] + [s[f"A{a}"] == -1 for a in range(self.A)]
        cs += [z3.Not(s[f"U{w}"]) for w in range(self.U)] + [s[f"UL{w}"] == 0 for w in range(self.U)]
        return z3.And(cs)

    # ------------------------------------------------------------------ derived

    def _get(self, s: State, post: dict[str, Any], name: str) -> Any:
        return post[name] if name in post else s[name]

    def holders(self, s: State, r: int, post: dict[str, Any] | None = None) -> Any:
        """Arcs of handle slot ``r``: registered states, publish handles, Arcs, publisher entries."""
        p = post or {}

        def g(n: str) -> Any:
            return self._get(s, p, n)

        terms = [z3.And(g(f"S{i}") == 2, g(f"SR{i}") == r) for i in range(self.NS)]
        terms += [g(f"K{k}") == r for k in range(self.K)] + [g(f"A{a}") == r for a in range(self.A)]
        terms += [
            z3.And(g(f"U{w}"), j < g(f"UL{w}"), g(f"UE{w}_{j}") == r) for w in range(self.U) for j in range(self.L)
        ]
        return _cnt(terms)

    def publications(self, s: State, r: int) -> Any:
        terms = [s[f"K{k}"] == r for k in range(self.K)]
        terms += [
            z3.And(s[f"U{w}"], j < s[f"UL{w}"], s[f"UE{w}_{j}"] == r) for w in range(self.U) for j in range(self.L)
        ]
        return _cnt(terms)

    def gcol(self, p: Any) -> Any:
        """The global registry's tier column for pool ``p`` (a Z3 int): 0 when untiered."""
        if self.untiered:
            return z3.IntVal(0)
        e: Any = z3.IntVal(self.tier_of[-1])
        for k in range(self.P - 1, -1, -1):
            e = z3.If(p == k, self.tier_of[k], e)
        return e

    def _sel(self, s: State, prefix: str, idx: Any, n: int, default: Any = -1) -> Any:
        e: Any = z3.IntVal(default) if isinstance(default, int) else default
        for k in range(n - 1, -1, -1):
            e = z3.If(idx == k, s[f"{prefix}{k}"], e)
        return e

    def _gsel(self, s: State, h: Any, t: Any) -> Any:
        return self._grid(s, "G", h, t, self.NH, self.T)

    def _bsel(self, s: State, p: Any, h: Any) -> Any:
        return self._grid(s, "B", p, h, self.P, self.NH)

    @staticmethod
    def _grid(s: State, prefix: str, a: Any, b: Any, na: int, nb: int) -> Any:
        """``prefix{a}_{b}`` for symbolic indices (0 outside the grid)."""
        e: Any = z3.IntVal(0)
        for x in range(na):
            for y in range(nb):
                e = z3.If(z3.And(a == x, b == y), s[f"{prefix}{x}_{y}"], e)
        return e

    def finish(self, s: State, post: dict[str, Any], published: list[Any] | None = None) -> dict[str, Any]:
        """Complete a step: Register events for ``published`` (handle slots, in order), deaths of
        handles whose last holder went, their weak pointers made dead, and the stream flags."""
        pub = published or []
        reg2 = []
        rem = []
        for r in range(self.R):
            n = _cnt([x == r for x in pub])
            rn = s[f"RN{r}"] + n
            if pub:
                post[f"RN{r}"] = rn
                reg2.append(z3.Or(z3.And(n >= 1, s[f"RN{r}"] >= 1), n >= 2))
            died = z3.And(self.holders(s, r) > 0, self.holders(s, r, post) == 0)
            rem.append(z3.And(died, self._get(s, post, f"RN{r}") == 0))
            dead_value = -1 if self.q("dead_global_entry_leaks") else 0
            for h in range(self.NH):
                for t in range(self.T):
                    name = f"G{h}_{t}"
                    cur = self._get(s, post, name)
                    post[name] = z3.If(z3.And(died, cur == r + 1), dead_value, cur)
        post["f_rem"] = z3.Or(rem) if rem else z3.BoolVal(False)
        post["f_reg2"] = z3.Or(reg2) if reg2 else z3.BoolVal(False)
        post.setdefault("err", z3.IntVal(0))
        return post

    def _quiet(self) -> dict[str, Any]:
        return {"err": z3.IntVal(0), "f_rem": z3.BoolVal(False), "f_reg2": z3.BoolVal(False)}

    # ------------------------------------------------------------------ operations

    def _complete(self, s: State, p: State) -> Effect:
        i, h = p["i"], p["h"]
        guard = z3.And(i >= 0, i < self.NS, h >= 0, h < self.NH, self._sel(s, "S", i, self.NS, 0) == 0)
        post = self._quiet()
        for k in range(self.NS):
            post[f"S{k}"] = z3.If(i == k, 1, s[f"S{k}"])
            post[f"SH{k}"] = z3.If(i == k, h, s[f"SH{k}"])
        return guard, post

    def _first_free(self, cands: list[Any]) -> Any:
        """Index of the first true candidate, or -1."""
        e: Any = z3.IntVal(-1)
        for k in range(len(cands) - 1, -1, -1):
            e = z3.If(cands[k], k, e)
        return e

    def _register(self, s: State, p: State) -> Effect:
        """``register_block(pool, s<i>)``: BlockAlreadyRegistered when the state is Registered or the
        pool lists the hash; else reuse a live global handle (``Ok(None)``) or create one with its
        PublishHandle in the first free ``ph`` slot (the move is disabled when none is free)."""
        pool, i = p["p"], p["i"]
        si = self._sel(s, "S", i, self.NS, 0)
        h = self._sel(s, "SH", i, self.NS, 0)
        guard = z3.And(pool >= 0, pool < self.P, i >= 0, i < self.NS, si != 0)
        listed = self._bsel(s, pool, h) >= 1
        rejected = z3.Or(si == 2, listed)
        col = self.gcol(pool)
        gl = self._gsel(s, h, col)
        reuse = gl >= 1
        free_r = self._first_free([self.holders(s, r) == 0 for r in range(self.R)])
        free_k = self._first_free([s[f"K{k}"] == -1 for k in range(self.K)])
        creating = z3.And(z3.Not(rejected), z3.Not(reuse))
        guard = z3.And(guard, z3.Implies(creating, z3.And(free_k >= 0, free_r >= 0)))
        rid = z3.If(reuse, gl - 1, free_r)
        ok = z3.Not(rejected)
        post: dict[str, Any] = {"err": z3.If(rejected, ALREADY, 0)}
        for k in range(self.NS):
            hit = z3.And(ok, i == k)
            post[f"S{k}"] = z3.If(hit, 2, s[f"S{k}"])
            post[f"SP{k}"] = z3.If(hit, pool, s[f"SP{k}"])
            post[f"SR{k}"] = z3.If(hit, rid, s[f"SR{k}"])
        for pp in range(self.P):
            for hh in range(self.NH):
                n = f"B{pp}_{hh}"
                post[n] = z3.If(z3.And(ok, pool == pp, h == hh), i + 1, s[n])
        for r in range(self.R):
            new = z3.And(creating, free_r == r)
            post[f"RT{r}"] = z3.If(new, self._tier_expr(pool), s[f"RT{r}"])
            post[f"RH{r}"] = z3.If(new, h, s[f"RH{r}"])
            post[f"RN{r}"] = z3.If(new, 0, s[f"RN{r}"])
        for hh in range(self.NH):
            for tt in range(self.T):
                n = f"G{hh}_{tt}"
                post[n] = z3.If(z3.And(creating, h == hh, col == tt), free_r + 1, s[n])
        for k in range(self.K):
            post[f"K{k}"] = z3.If(z3.And(creating, free_k == k), free_r, s[f"K{k}"])
        return guard, self.finish(s, post)

    def _tier_expr(self, pool: Any) -> Any:
        e: Any = z3.IntVal(self.tier_of[-1])
        for k in range(self.P - 1, -1, -1):
            e = z3.If(pool == k, self.tier_of[k], e)
        return e

    def _drop_state(self, s: State, p: State) -> Effect:
        """Drop of ``s<i>``: a Registered state releases its handle (Remove if last) and its block
        handle, whose pool entry goes dead and whose hash is sent on the pool's channel."""
        i = p["i"]
        si = self._sel(s, "S", i, self.NS, 0)
        pool = self._sel(s, "SP", i, self.NS, 0)
        h = self._sel(s, "SH", i, self.NS, 0)
        ql = self._sel(s, "QL", pool, self.P, 0)
        reg = si == 2
        guard = z3.And(i >= 0, i < self.NS, si != 0, z3.Implies(reg, ql < self.Q))
        post: dict[str, Any] = {}
        for k in range(self.NS):
            post[f"S{k}"] = z3.If(i == k, 0, s[f"S{k}"])
        for pp in range(self.P):
            mine = z3.And(reg, pool == pp)
            for hh in range(self.NH):
                n = f"B{pp}_{hh}"
                post[n] = z3.If(z3.And(mine, h == hh, s[n] == i + 1), -1, s[n])
            for j in range(self.Q):
                n = f"Q{pp}_{j}"
                post[n] = z3.If(z3.And(mine, s[f"QL{pp}"] == j), h, s[n])
            post[f"QL{pp}"] = z3.If(mine, s[f"QL{pp}"] + 1, s[f"QL{pp}"])
        return guard, self.finish(s, post)

    def _drop_ph(self, s: State, p: State) -> Effect:
        """Drop of an (always armed) publish handle: one Register message, then its Arc goes."""
        k = p["k"]
        r = self._sel(s, "K", k, self.K)
        guard = z3.And(k >= 0, k < self.K, r >= 0)
        post = {f"K{x}": z3.If(k == x, -1, s[f"K{x}"]) for x in range(self.K)}
        return guard, self.finish(s, post, [r])

    def _remove_handle(self, s: State, p: State) -> Effect:
        k = p["k"]
        r = self._sel(s, "K", k, self.K)
        free_a = self._first_free([s[f"A{a}"] == -1 for a in range(self.A)])
        guard = z3.And(k >= 0, k < self.K, r >= 0, free_a >= 0)
        post = {f"A{a}": z3.If(free_a == a, r, s[f"A{a}"]) for a in range(self.A)}
        return guard, self.finish(s, post)

    def _drop_arc(self, s: State, p: State) -> Effect:
        a = p["a"]
        r = self._sel(s, "A", a, self.A)
        guard = z3.And(a >= 0, a < self.A, r >= 0)
        post = {f"A{x}": z3.If(a == x, -1, s[f"A{x}"]) for x in range(self.A)}
        return guard, self.finish(s, post)

    def _take(self, s: State, p: State) -> Effect:
        """``take_handle(pub<u>, ph<k>)``: the handle moves to the publisher's pending list (the
        returned Arc is dropped at once, the disarmed publish handle publishes nothing)."""
        w, k = p["u"], p["k"]
        r = self._sel(s, "K", k, self.K)
        ul = self._sel(s, "UL", w, self.U, 0)
        exists = self._sel(s, "U", w, self.U, z3.BoolVal(False))
        guard = z3.And(w >= 0, w < self.U, k >= 0, k < self.K, r >= 0, exists, ul < self.L)
        post: dict[str, Any] = {f"K{x}": z3.If(k == x, -1, s[f"K{x}"]) for x in range(self.K)}
        for x in range(self.U):
            post[f"UL{x}"] = z3.If(w == x, s[f"UL{x}"] + 1, s[f"UL{x}"])
            for j in range(self.L):
                n = f"UE{x}_{j}"
                post[n] = z3.If(z3.And(w == x, s[f"UL{x}"] == j), r, s[n])
        return guard, self.finish(s, post)

    def _publish(self, s: State, p: State, drop: bool) -> Effect:
        """``publish()`` (and the publish a Publisher's drop does): one Register message for the
        pending handles in take order, then their Arcs drop."""
        w = p["u"]
        exists = self._sel(s, "U", w, self.U, z3.BoolVal(False))
        guard = z3.And(w >= 0, w < self.U, exists)
        post: dict[str, Any] = {}
        published: list[Any] = []
        for j in range(self.L):
            e: Any = z3.IntVal(-1)
            for x in range(self.U - 1, -1, -1):
                e = z3.If(z3.And(w == x, j < s[f"UL{x}"]), s[f"UE{x}_{j}"], e)
            published.append(e)
        for x in range(self.U):
            post[f"UL{x}"] = z3.If(w == x, 0, s[f"UL{x}"])
            if drop:
                post[f"U{x}"] = z3.And(s[f"U{x}"], w != x)
        return guard, self.finish(s, post, published)

    def _new_publisher(self, s: State, p: State) -> Effect:
        w = p["u"]
        guard = z3.And(w >= 0, w < self.U, z3.Not(self._sel(s, "U", w, self.U, z3.BoolVal(False))))
        post: dict[str, Any] = self._quiet()
        for x in range(self.U):
            post[f"U{x}"] = z3.Or(s[f"U{x}"], w == x)
            post[f"UL{x}"] = z3.If(w == x, 0, s[f"UL{x}"])
        return guard, post

    def _clone_publisher(self, s: State, p: State) -> Effect:
        """``Publisher::clone``: with ``publisher_clone_shares_pending`` the clone copies the pending
        Arcs; the ideal clone starts empty."""
        w, w2 = p["u"], p["u2"]
        e1 = self._sel(s, "U", w, self.U, z3.BoolVal(False))
        e2 = self._sel(s, "U", w2, self.U, z3.BoolVal(False))
        guard = z3.And(w >= 0, w < self.U, w2 >= 0, w2 < self.U, w != w2, e1, z3.Not(e2))
        post: dict[str, Any] = {}
        share = self.q("publisher_clone_shares_pending")
        for x in range(self.U):
            post[f"U{x}"] = z3.Or(s[f"U{x}"], w2 == x)
            src_len = self._sel(s, "UL", w, self.U, 0) if share else z3.IntVal(0)
            post[f"UL{x}"] = z3.If(w2 == x, src_len, s[f"UL{x}"])
            for j in range(self.L):
                n = f"UE{x}_{j}"
                copied: Any = z3.IntVal(-1)
                for y in range(self.U - 1, -1, -1):
                    copied = z3.If(w == y, s[f"UE{y}_{j}"], copied)
                post[n] = z3.If(z3.And(w2 == x, share), copied, s[n])
        return guard, self.finish(s, post)

    def _drain(self, s: State, p: State) -> Effect:
        """One step of the pool's unregister task: pop a hash; remove the pool's entry if dead (or
        always, with ``cleanup_erases_live_entry``); remove the global entry if dead."""
        pool = p["p"]
        ql = self._sel(s, "QL", pool, self.P, 0)
        guard = z3.And(pool >= 0, pool < self.P, ql > 0)
        h: Any = z3.IntVal(0)
        for pp in range(self.P - 1, -1, -1):
            h = z3.If(pool == pp, s[f"Q{pp}_0"], h)
        post: dict[str, Any] = self._quiet()
        erase_live = self.q("cleanup_erases_live_entry")
        for pp in range(self.P):
            mine = pool == pp
            for j in range(self.Q):
                nxt = s[f"Q{pp}_{j + 1}"] if j + 1 < self.Q else s[f"Q{pp}_{j}"]
                post[f"Q{pp}_{j}"] = z3.If(mine, nxt, s[f"Q{pp}_{j}"])
            post[f"QL{pp}"] = z3.If(mine, s[f"QL{pp}"] - 1, s[f"QL{pp}"])
            for hh in range(self.NH):
                n = f"B{pp}_{hh}"
                gone = z3.Or(s[n] == -1, s[n] >= 1) if erase_live else s[n] == -1
                post[n] = z3.If(z3.And(mine, h == hh, gone), 0, s[n])
        col = self.gcol(pool)
        for hh in range(self.NH):
            for tt in range(self.T):
                n = f"G{hh}_{tt}"
                post[n] = z3.If(z3.And(h == hh, col == tt, s[n] == -1), 0, s[n])
        return guard, post

    # ------------------------------------------------------------------ properties

    def properties(self) -> tuple[Property, ...]:
        NS, NH, P, R = self.NS, self.NH, self.P, self.R

        def live(s: State, r: int) -> Any:
            return self.holders(s, r) > 0

        def one_bh(s: State) -> Any:
            return z3.And(
                [
                    _cnt([z3.And(s[f"S{i}"] == 2, s[f"SP{i}"] == pp, s[f"SH{i}"] == hh) for i in range(NS)]) <= 1
                    for pp in range(P)
                    for hh in range(NH)
                ]
            )

        def one_reg(s: State) -> Any:
            return z3.And(
                [
                    z3.Not(z3.And(live(s, a), live(s, b), s[f"RH{a}"] == s[f"RH{b}"], s[f"RT{a}"] == s[f"RT{b}"]))
                    for a in range(R)
                    for b in range(a + 1, R)
                ]
                or [z3.BoolVal(True)]
            )

        def lists_iff_live(s: State) -> Any:
            return z3.And(
                [
                    (s[f"B{pp}_{hh}"] >= 1)
                    == z3.Or([z3.And(s[f"S{i}"] == 2, s[f"SP{i}"] == pp, s[f"SH{i}"] == hh) for i in range(NS)])
                    for pp in range(P)
                    for hh in range(NH)
                ]
            )

        def drained(s: State) -> Any:
            idle = z3.And([s[f"QL{pp}"] == 0 for pp in range(P)])
            clean = [s[f"B{pp}_{hh}"] != -1 for pp in range(P) for hh in range(NH)]
            clean += [s[f"G{hh}_{tt}"] != -1 for hh in range(NH) for tt in range(self.T)]
            return z3.Implies(idle, z3.And(clean))

        def tier_matches(s: State) -> Any:
            out = []
            for i in range(NS):
                for r in range(R):
                    out.append(
                        z3.Implies(
                            z3.And(s[f"S{i}"] == 2, s[f"SR{i}"] == r), s[f"RT{r}"] == self._tier_expr(s[f"SP{i}"])
                        )
                    )
            return z3.And(out)

        def publication_once(s: State) -> Any:
            return z3.And(
                [z3.Implies(live(s, r), self.publications(s, r) == z3.If(s[f"RN{r}"] == 0, 1, 0)) for r in range(R)]
            )

        def references(s: State) -> Any:
            """Every reference resolves: index ranges; a live per-pool entry points to a registered
            state of that pool and hash; a queued hash is a hash; a dead entry's hash is queued in its
            pool's channel; a global pointer names a live handle of that key, and a live handle is
            what its key points to; a registered state's handle has the state's hash."""
            cs: list[Any] = []
            for i in range(NS):
                cs += [s[f"S{i}"] >= 0, s[f"S{i}"] <= 2]
                cs.append(z3.Implies(s[f"S{i}"] != 0, z3.And(s[f"SH{i}"] >= 0, s[f"SH{i}"] < NH)))
                reg = s[f"S{i}"] == 2
                cs.append(z3.Implies(reg, z3.And(s[f"SP{i}"] >= 0, s[f"SP{i}"] < P, s[f"SR{i}"] >= 0, s[f"SR{i}"] < R)))
                for r in range(R):
                    cs.append(z3.Implies(z3.And(reg, s[f"SR{i}"] == r), s[f"RH{r}"] == s[f"SH{i}"]))
            for pp in range(P):
                cs += [s[f"QL{pp}"] <= self.Q]
                for j in range(self.Q):
                    cs.append(z3.Implies(j < s[f"QL{pp}"], z3.And(s[f"Q{pp}_{j}"] >= 0, s[f"Q{pp}_{j}"] < NH)))
                for hh in range(NH):
                    b = s[f"B{pp}_{hh}"]
                    cs.append(z3.And(b >= -1, b <= NS))
                    for i in range(NS):
                        cs.append(z3.Implies(b == i + 1, z3.And(s[f"S{i}"] == 2, s[f"SP{i}"] == pp, s[f"SH{i}"] == hh)))
                    queued = z3.Or([z3.And(j < s[f"QL{pp}"], s[f"Q{pp}_{j}"] == hh) for j in range(self.Q)] or [False])
                    cs.append(z3.Implies(b == -1, queued))
            for hh in range(NH):
                for tt in range(self.T):
                    g = s[f"G{hh}_{tt}"]
                    cs.append(z3.And(g >= -1, g <= R))
                    if not self.q("dead_global_entry_leaks"):
                        cs.append(g != -1)
                    for r in range(R):
                        key = s[f"RH{r}"] == hh if self.untiered else z3.And(s[f"RH{r}"] == hh, s[f"RT{r}"] == tt)
                        cs.append(z3.Implies(g == r + 1, z3.And(live(s, r), key)))
            for r in range(R):
                col = z3.IntVal(0) if self.untiered else s[f"RT{r}"]
                cs.append(
                    z3.Implies(
                        live(s, r), z3.And(s[f"RT{r}"] >= 0, s[f"RT{r}"] < self.T, s[f"RH{r}"] >= 0, s[f"RH{r}"] < NH)
                    )
                )
                cs.append(z3.Implies(live(s, r), self._gsel(s, s[f"RH{r}"], col) == r + 1))
            for k in range(self.K):
                cs.append(z3.And(s[f"K{k}"] >= -1, s[f"K{k}"] < R))
            for a in range(self.A):
                cs.append(z3.And(s[f"A{a}"] >= -1, s[f"A{a}"] < R))
            for w in range(self.U):
                cs.append(s[f"UL{w}"] <= self.L)
                cs.append(z3.Implies(z3.Not(s[f"U{w}"]), s[f"UL{w}"] == 0))
                for j in range(self.L):
                    e = s[f"UE{w}_{j}"]
                    cs.append(z3.Implies(j < s[f"UL{w}"], z3.And(e >= 0, e < R)))
            return z3.And(cs)

        return (
            Property("reg.one_block_handle_per_pool_hash", one_bh),
            Property("reg.one_registration_per_key", one_reg),
            Property("reg.pool_lists_iff_live", lists_iff_live),
            Property("reg.drained_no_dead_entries", drained),
            Property("reg.handle_tier_matches_pool", tier_matches),
            Property("reg.remove_after_register", lambda s: z3.Not(s["f_rem"])),
            Property("reg.register_at_most_once", lambda s: z3.Not(s["f_reg2"])),
            Property("reg.publication_pending_once", publication_once, lemma=True),
            Property("reg.references_resolve", references, lemma=True),
        )

    def _build(self) -> TransitionSystem:
        i: tuple[str, Sort] = ("i", "int")
        k: tuple[str, Sort] = ("k", "int")
        ops = [
            Operation("complete", (i, ("h", "int")), self._complete),
            Operation("register", (("p", "int"), i), self._register),
            Operation("drop_state", (i,), self._drop_state),
            Operation("drop_ph", (k,), self._drop_ph),
            Operation("take", (("u", "int"), k), self._take),
            Operation("publish", (("u", "int"),), lambda s, p: self._publish(s, p, False)),
            Operation("drop_pub", (("u", "int"),), lambda s, p: self._publish(s, p, True)),
            Operation("new_publisher", (("u", "int"),), self._new_publisher),
            Operation("clone_publisher", (("u", "int"), ("u2", "int")), self._clone_publisher),
            Operation("drain", (("p", "int"),), self._drain),
        ]
        if self.A:
            ops += [
                Operation("remove_handle", (k,), self._remove_handle),
                Operation("drop_arc", (("a", "int"),), self._drop_arc),
            ]
        return TransitionSystem(COMPONENT, self.variables(), self.init, tuple(ops), self.properties(), None)

    # ------------------------------------------------------------------ to the executable model

    def step_json(self, step: Step) -> tuple[str, Any]:
        """A decoded step as the executable ``(op, args)``, with the explorer's slot names."""
        p, pre = step.params, step.pre
        pools = [r[0] for r in self.u.registries]

        def free(prefix: str, var: str, n: int) -> str | None:
            return next((f"{prefix}{x}" for x in range(n) if pre.get(f"{var}{x}", -1) == -1), None)

        if step.op == "complete":
            return "state_from_reset_apply_token_block", {"as": f"s{p['i']}", "block": {"hash": p["h"], "parent": None}}
        if step.op == "register":
            return "register_block", {"registry": pools[p["p"]], "state": f"s{p['i']}", "as": free("ph", "K", self.K)}
        if step.op == "drop_state":
            return "drop", {"value": f"s{p['i']}"}
        if step.op == "drop_ph":
            return "drop", {"value": f"ph{p['k']}"}
        if step.op == "drop_arc":
            return "drop", {"value": f"a{p['a']}"}
        if step.op == "remove_handle":
            return "remove_handle", {"publish_handle": f"ph{p['k']}", "as": free("a", "A", self.A)}
        if step.op == "take":
            return "take_handle", {"publisher": f"pub{p['u']}", "publish_handle": f"ph{p['k']}"}
        if step.op in ("publish", "drop_pub"):
            return (
                ("publish", {"publisher": f"pub{p['u']}"})
                if step.op == "publish"
                else ("drop", {"value": f"pub{p['u']}"})
            )
        if step.op == "new_publisher":
            return "new_publisher", {"as": f"pub{p['u']}"}
        if step.op == "clone_publisher":
            return "clone_publisher", {"publisher": f"pub{p['u']}", "as": f"pub{p['u2']}"}
        return "drain", {"registry": pools[p["p"]]}

    # The agreement direction (executable -> spec) is not implemented for this spec: handle
    # identities would need a mapping from the model's fresh ids to slots.
    def describe(self, values: dict[str, Any] | None) -> str:
        if values is None:
            return "no successor (the guard rejects the step)"
        return ", ".join(f"{k}={v}" for k, v in sorted(values.items()))


def make_spec(config: dict[str, Any] | None = None, quirks: Iterable[str] = ()) -> RegistrySpec:
    cfg = dict(config or {})
    if "registries" in cfg:
        cfg["registries"] = tuple(tuple(r) for r in cfg["registries"])
    return RegistrySpec(RegUniverse(**cfg), quirks)
