"""Symbolic transition systems of the mocker's two LRU evictors (semantics §1.4).

Real code: ``lib/llm/src/mocker/evictor.rs``. A second description of what
:mod:`kvmodel.model.lru` executes, over ``objects`` objects (0, 1, …):

* wall-clock evictor (``lru_evictor_wallclock``): the ``free_table`` (``L_o`` present,
  ``TS_o`` its timestamp) and the lazy FIFO ``priority_queue`` as ``max_queue`` slots
  (``QO_k``, ``QT_k``; ``qlen`` used). ``insert(o, tick)`` moves the clock ``tick ≥ 0``
  forward, stamps ``o`` and appends ``(o, stamp)``; when the queue is longer than
  ``cleanup_threshold · len(table)`` it is rebuilt keeping the entries whose stamp equals
  the table's. ``evict`` pops entries until one matches the table. With the quirk
  ``equal_timestamp_stale_entry`` the stamp is the clock reading; without it, it is the
  insert sequence number (the model's ``(clock, n)`` pair, of which only ``n`` decides
  equality). Inserts are disabled when the queue is full (the explorer's bound too).
* counter evictor (``lru_evictor_counter``): ``L_o`` and counters ``C_o``, with
  ``insert`` taking ``++pos`` and ``push_front`` taking ``--neg``; ``evict`` takes the
  smallest counter.

The monitor's ghost recency (``G_o`` live, ``GR_o`` rank; ``gpos``/``gneg``) and the
observations of a step (``ret`` returned object or -1, ``retb`` for ``remove``, ``f_lru``
for ``lru.evicts_least_recent``) are state variables, as in every spec.

The ideal evictors are proved by 1-induction with strengthening lemmas, which are also
in the executable catalogue (``invariants/lru.py``, marked as lemmas).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import attrs
import z3

from kvmodel.components.lru import COUNTER
from kvmodel.components.lru import WALLCLOCK as WALL
from kvmodel.model.errors import InvalidInput, require_naturals
from kvmodel.model.quirks import validate
from kvmodel.specs.engine import Effect, Property, State, Step, TransitionSystem


@attrs.frozen
class LruUniverse:
    objects: int = 3
    max_queue: int = 6
    cleanup_threshold: int = 1

    def __attrs_post_init__(self) -> None:
        require_naturals(self, ("objects", "max_queue", "cleanup_threshold"))
        if self.objects < 1 or self.max_queue < 1:
            raise InvalidInput("objects and max_queue must be at least 1")

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def _b(x: bool) -> Any:
    return z3.BoolVal(x)


def _count(bs: list[Any], num: Any) -> Any:
    return z3.Sum([z3.If(b, num(1), num(0)) for b in bs]) if bs else num(0)


class LruSpec:
    def __init__(
        self, component: str, universe: LruUniverse | None = None, quirks: Iterable[str] = (), width: int | None = None
    ) -> None:
        if component not in (WALL, COUNTER):
            raise InvalidInput(f"not an LRU component: {component!r}")
        self.component = component
        self.u = universe or LruUniverse()
        self.quirks = validate(component, quirks)
        self.width = width
        self.wall = component == WALL
        self.ts = self._build()

    def num(self, v: int) -> Any:
        return z3.IntVal(v) if self.width is None else z3.BitVecVal(v, self.width)

    def exec_config(self) -> dict[str, Any]:
        return {"cleanup_threshold": self.u.cleanup_threshold} if self.wall else {}

    def universe_json(self) -> dict[str, Any]:
        return self.u.to_json() if self.wall else {"objects": self.u.objects}

    def bounded(self, depth: int) -> LruSpec:
        """Bit-vectors wide enough for ``depth`` steps: clocks grow by the tick, so ticks are
        capped at 1 in the bounded version (as the explorer does)."""
        top = max(depth + 2, self.u.objects, self.u.max_queue) + 2
        return LruSpec(self.component, self.u, self.quirks, width=max(6, top.bit_length() + 2))

    # ------------------------------------------------------------------ variables

    def variables(self) -> tuple[tuple[str, Any], ...]:
        NO, Q = self.u.objects, self.u.max_queue
        v: list[tuple[str, Any]] = []
        for o in range(NO):
            v += [(f"L{o}", "bool"), (f"TS{o}", "int"), (f"G{o}", "bool"), (f"GR{o}", "int")]
        if self.wall:
            for k in range(Q):
                v += [(f"QO{k}", "int"), (f"QT{k}", "int")]
            v += [("qlen", "nat"), ("clock", "nat"), ("n", "nat")]
        else:
            v += [("pos", "int"), ("neg", "int")]
        v += [("gpos", "int"), ("gneg", "int"), ("ret", "int"), ("retb", "bool"), ("f_lru", "bool")]
        return tuple(v)

    def init(self, s: State) -> Any:
        NO = self.u.objects
        cs = [s["gpos"] == 0, s["gneg"] == 0, s["ret"] == -1, z3.Not(s["f_lru"])]
        for o in range(NO):
            cs += [z3.Not(s[f"L{o}"]), z3.Not(s[f"G{o}"]), s[f"TS{o}"] == 0, s[f"GR{o}"] == 0]
        if self.wall:
            cs += [s["qlen"] == 0, s["clock"] == 0, s["n"] == 0]
            cs += [z3.And(s[f"QO{k}"] == 0, s[f"QT{k}"] == 0) for k in range(self.u.max_queue)]
        else:
            cs += [s["pos"] == 0, s["neg"] == 0]
        return z3.And(cs)

    def _objs(self, s: State, prefix: str) -> list[Any]:
        return [s[f"{prefix}{o}"] for o in range(self.u.objects)]

    def _ghost_min(self, G: list[Any], GR: list[Any]) -> Any:
        """The monitor's expected ``evict()``: the live object of smallest rank, or -1."""
        NO = self.u.objects
        e: Any = self.num(-1)
        for o in range(NO - 1, -1, -1):
            others = [z3.Implies(G[k], GR[o] < GR[k] if k > o else GR[o] <= GR[k]) for k in range(NO) if k != o]
            e = z3.If(z3.And(G[o], *others), self.num(o), e)
        return e

    # ------------------------------------------------------------------ operations

    def _insert(self, s: State, p: State, front: bool = False) -> Effect:
        NO, Q = self.u.objects, self.u.max_queue
        o = p["o"]
        guard = z3.And(o >= 0, o < NO)
        post: dict[str, Any] = {"ret": self.num(-1), "f_lru": _b(False)}
        L = self._objs(s, "L")
        if self.wall:
            tick = p["tick"]
            guard = z3.And(guard, tick >= 0, s["qlen"] < Q)
            if self.width is not None:
                guard = z3.And(guard, tick <= 1)
            clock = s["clock"] + tick
            n = s["n"] + 1
            stamp = clock if "equal_timestamp_stale_entry" in self.quirks else n
            L2 = [z3.Or(L[k], o == k) for k in range(NO)]
            TS2 = [z3.If(o == k, stamp, s[f"TS{k}"]) for k in range(NO)]
            QO = [z3.If(s["qlen"] == k, o, s[f"QO{k}"]) for k in range(Q)]
            QT = [z3.If(s["qlen"] == k, stamp, s[f"QT{k}"]) for k in range(Q)]
            qlen = s["qlen"] + 1
            # Cleanup: rebuild when longer than cleanup_threshold · len(table).
            clean = qlen > self.u.cleanup_threshold * _count(L2, self.num)
            keep = [
                z3.And(k < qlen, *[z3.Implies(QO[k] == x, z3.And(L2[x], TS2[x] == QT[k])) for x in range(NO)])
                for k in range(Q)
            ]
            pos = [_count(keep[:k], self.num) for k in range(Q)]  # new index of entry k when kept
            QO2, QT2 = [], []
            for j in range(Q):
                eo, et = s[f"QO{j}"], s[f"QT{j}"]  # slots past the end keep their old (irrelevant) values
                for k in range(Q - 1, j - 1, -1):
                    hit = z3.And(keep[k], pos[k] == j)
                    eo, et = z3.If(hit, QO[k], eo), z3.If(hit, QT[k], et)
                QO2.append(z3.If(clean, eo, QO[j]))
                QT2.append(z3.If(clean, et, QT[j]))
            post["qlen"] = z3.If(clean, _count(keep, self.num), qlen)
            post.update({f"QO{k}": QO2[k] for k in range(Q)})
            post.update({f"QT{k}": QT2[k] for k in range(Q)})
            post.update({"clock": clock, "n": n})
        else:
            if front:
                stamp = s["neg"] - 1
                post["neg"] = stamp
            else:
                stamp = s["pos"] + 1
                post["pos"] = stamp
            L2 = [z3.Or(L[k], o == k) for k in range(NO)]
            TS2 = [z3.If(o == k, stamp, s[f"TS{k}"]) for k in range(NO)]
        post.update({f"L{k}": L2[k] for k in range(NO)})
        post.update({f"TS{k}": TS2[k] for k in range(NO)})
        # Ghost: insert makes o the most recent; push_front the least recent.
        if front:
            grank = s["gneg"] - 1
            post["gneg"] = grank
        else:
            grank = s["gpos"] + 1
            post["gpos"] = grank
        post.update({f"G{k}": z3.Or(s[f"G{k}"], o == k) for k in range(NO)})
        post.update({f"GR{k}": z3.If(o == k, grank, s[f"GR{k}"]) for k in range(NO)})
        return guard, post

    def _push_front(self, s: State, p: State) -> Effect:
        return self._insert(s, p, front=True)

    def _remove(self, s: State, p: State) -> Effect:
        """``remove``: from the table only (the queue entry goes stale)."""
        NO = self.u.objects
        o = p["o"]
        guard = z3.And(o >= 0, o < NO)
        present = z3.Or([z3.And(o == k, s[f"L{k}"]) for k in range(NO)])
        expected = z3.Or([z3.And(o == k, s[f"G{k}"]) for k in range(NO)])
        post: dict[str, Any] = {f"L{k}": z3.And(s[f"L{k}"], o != k) for k in range(NO)}
        post.update({f"G{k}": z3.And(s[f"G{k}"], o != k) for k in range(NO)})
        post.update({"ret": self.num(-1), "retb": present, "f_lru": present != expected})
        return guard, post

    def _evict(self, s: State, p: State) -> Effect:
        NO, Q = self.u.objects, self.u.max_queue
        L = self._objs(s, "L")
        TS = self._objs(s, "TS")
        post: dict[str, Any] = {}
        nonempty = z3.Or(L)
        if self.wall:
            qlen = s["qlen"]
            match = []
            for k in range(Q):
                mk = z3.Or([z3.And(s[f"QO{k}"] == x, L[x], TS[x] == s[f"QT{k}"]) for x in range(NO)])
                match.append(z3.And(k < qlen, mk))
            first = [z3.And(match[k], *[z3.Not(match[j]) for j in range(k)]) for k in range(Q)]
            found = z3.And(nonempty, z3.Or(first))
            got: Any = self.num(-1)
            cut: Any = qlen  # entries popped: up to and including the match, or all of them
            for k in range(Q - 1, -1, -1):
                got = z3.If(first[k], s[f"QO{k}"], got)
                cut = z3.If(first[k], self.num(k + 1), cut)
            got = z3.If(found, got, self.num(-1))
            cut = z3.If(nonempty, cut, self.num(0))
            for j in range(Q):
                eo, et = s[f"QO{j}"], s[f"QT{j}"]
                for c in range(Q, 0, -1):
                    if j + c < Q:
                        eo = z3.If(cut == c, s[f"QO{j + c}"], eo)
                        et = z3.If(cut == c, s[f"QT{j + c}"], et)
                post[f"QO{j}"], post[f"QT{j}"] = eo, et
            post["qlen"] = qlen - cut
        else:
            got = self.num(-1)
            for o in range(NO - 1, -1, -1):
                others = [z3.Implies(L[k], TS[o] < TS[k] if k > o else TS[o] <= TS[k]) for k in range(NO) if k != o]
                got = z3.If(z3.And(L[o], *others), self.num(o), got)
        post.update({f"L{k}": z3.And(L[k], got != k) for k in range(NO)})
        expected = self._ghost_min(self._objs(s, "G"), self._objs(s, "GR"))
        post.update({f"G{k}": z3.And(s[f"G{k}"], expected != k) for k in range(NO)})
        post.update({"ret": got, "f_lru": got != expected})
        return _b(True), post

    def _len(self, s: State, p: State) -> Effect:
        return _b(True), {"ret": self.num(-1), "f_lru": _b(False)}

    # ------------------------------------------------------------------ properties

    def properties(self) -> tuple[Property, ...]:
        NO = self.u.objects
        num = self.num
        props = [
            Property("lru.evicts_least_recent", lambda s: z3.Not(s["f_lru"])),
            Property(
                "lru.len_matches",
                lambda s: _count(self._objs(s, "L"), num) == _count(self._objs(s, "G"), num),
            ),
        ]
        pairs = [(a, b) for a in range(NO) for b in range(NO) if a != b]
        props.append(
            Property(
                "lru.table_matches_live",
                lambda s: z3.And([s[f"L{o}"] == s[f"G{o}"] for o in range(NO)]),
                lemma=True,
            )
        )
        props.append(
            Property(
                "lru.table_order_matches_recency",
                lambda s: z3.And(
                    [z3.Implies(s[f"L{o}"], s[f"G{o}"]) for o in range(NO)]
                    + [
                        z3.Implies(
                            z3.And(s[f"L{a}"], s[f"L{b}"]),
                            z3.And(
                                s[f"TS{a}"] != s[f"TS{b}"], (s[f"TS{a}"] < s[f"TS{b}"]) == (s[f"GR{a}"] < s[f"GR{b}"])
                            ),
                        )
                        for a, b in pairs
                    ]
                ),
                lemma=True,
            )
        )
        if self.wall:
            Q = self.u.max_queue

            def increasing(s: State) -> Any:
                return z3.And(
                    [
                        z3.Implies(k2 < s["qlen"], s[f"QT{k1}"] < s[f"QT{k2}"])
                        for k1, k2 in itertools.combinations(range(Q), 2)
                    ]
                    + [
                        z3.Implies(
                            k < s["qlen"],
                            z3.And(s[f"QT{k}"] <= self._fresh_bound(s), s[f"QO{k}"] >= 0, s[f"QO{k}"] < NO),
                        )
                        for k in range(Q)
                    ]
                    + [s["qlen"] <= Q]
                )

            def covers(s: State) -> Any:
                return z3.And(
                    [
                        z3.Implies(
                            s[f"L{o}"],
                            z3.Or(
                                [z3.And(k < s["qlen"], s[f"QO{k}"] == o, s[f"QT{k}"] == s[f"TS{o}"]) for k in range(Q)]
                            ),
                        )
                        for o in range(NO)
                    ]
                )

            props.append(Property("lru.queue_stamps_increase", increasing, lemma=True))
            props.append(Property("lru.queue_covers_table", covers, lemma=True))
        props.append(
            Property(
                "lru.recency_bounds",
                lambda s: z3.And(
                    [
                        z3.Implies(s[f"G{o}"], z3.And(s["gneg"] <= s[f"GR{o}"], s[f"GR{o}"] <= s["gpos"]))
                        for o in range(NO)
                    ]
                    + (
                        []
                        if self.wall
                        else [
                            z3.Implies(s[f"L{o}"], z3.And(s["neg"] <= s[f"TS{o}"], s[f"TS{o}"] <= s["pos"]))
                            for o in range(NO)
                        ]
                    )
                    + (
                        [z3.Implies(s[f"L{o}"], s[f"TS{o}"] <= self._fresh_bound(s)) for o in range(NO)]
                        if self.wall
                        else []
                    )
                    + [s["gneg"] <= 0, s["gpos"] >= 0]
                    + ([] if self.wall else [s["neg"] <= 0, s["pos"] >= 0])
                ),
                lemma=True,
            )
        )
        return tuple(props)

    def _fresh_bound(self, s: State) -> Any:
        """Stamps handed out so far are at most this (the next stamp is larger, in the ideal
        evictor; with equal timestamps it may be equal)."""
        return s["clock"] if "equal_timestamp_stale_entry" in self.quirks else s["n"]

    def _build(self) -> TransitionSystem:
        # the operations are the evictor's action classes' (kvmodel/components/lru/actions.py),
        # each effect one of the methods below
        from kvmodel.components.lru.actions import ACTIONS

        ops = ACTIONS[self.component].operations(self)
        return TransitionSystem(self.component, self.variables(), self.init, ops, self.properties(), self.width)

    # ------------------------------------------------------------------ to and from the executable model

    def within_bounds(self, system: Any, op: str) -> bool:
        """Whether the executable step stays in the bounded universe (the wall-clock queue
        has ``max_queue`` slots; the executable queue is unbounded)."""
        return not (self.wall and op == "insert" and len(system.model.queue) >= self.u.max_queue)

    def step_json(self, step: Step) -> tuple[str, Any]:
        """A decoded step as the executable ``(op, args)``: the wall-clock insert's clock is
        the clock reading before the step plus the tick."""
        p = step.params
        if step.op == "insert" and self.wall:
            return "insert", {"object": p["o"], "clock": step.pre["clock"] + p["tick"]}
        if step.op in ("insert", "remove", "push_front"):
            return step.op, {"object": p["o"]}
        return step.op, {}

    def step_params(self, pre: Any, op: str, out: Any) -> tuple[str, dict[str, int]]:
        args = dict(out.args_json or {})
        if op == "insert" and self.wall:
            tick = int(args.get("clock", pre.model.clock + 1)) - pre.model.clock
            return "insert", {"o": int(args["object"]), "tick": tick}
        if op in ("insert", "remove", "push_front"):
            return op, {"o": int(args["object"])}
        return op, {}

    def state_constraint(self, system: Any, *, exact_stamps: bool) -> Any:
        m, mon = system.model, system.monitor
        NO = self.u.objects
        quirk = "equal_timestamp_stale_entry" in self.quirks

        def stamp(t: Any) -> int:
            # The model's ideal stamp is (clock, n): equality is decided by n; the quirky
            # stamp is the clock reading alone.
            if isinstance(t, tuple):
                return int(t[0] if quirk else t[1])
            return int(t)

        table = {o: stamp(t) for o, t in m.free_table.items()}
        order = list(mon.order)

        def constrain(s: State) -> Any:
            cs = []
            for o in range(NO):
                cs += [s[f"L{o}"] == (o in table), s[f"G{o}"] == (o in order)]
                if o in table:
                    cs.append(s[f"TS{o}"] == table[o])
            if self.wall:
                q = list(m.queue)
                cs.append(s["qlen"] == len(q))
                for k, (o, t) in enumerate(q):
                    cs += [s[f"QO{k}"] == o, s[f"QT{k}"] == stamp(t)]
                cs += [s["clock"] == m.clock, s["n"] == m._n]
            else:
                cs += [s["pos"] == m.positive_counter, s["neg"] == m.negative_counter]
            if exact_stamps:
                cs += [s[f"GR{o}"] == r + 1 for r, o in enumerate(order)]
                cs += [s["gpos"] == len(order), s["gneg"] == 0]
            else:
                cs += [s[f"GR{a}"] < s[f"GR{b}"] for a, b in itertools.pairwise(order)]
            return z3.And(cs)

        return constrain

    def post_constraint(self, system: Any, out: Any) -> Any:
        state = self.state_constraint(system, exact_stamps=False)
        broken = {v.invariant for v in out.violations}

        def constrain(s: State) -> Any:
            cs = [state(s), s["f_lru"] == ("lru.evicts_least_recent" in broken)]
            if out.op == "evict":
                cs.append(s["ret"] == (-1 if out.result is None else int(out.result)))
            if out.op == "remove":
                cs.append(s["retb"] == bool(out.result))
            return z3.And(cs)

        return constrain

    def describe(self, values: dict[str, Any] | None) -> str:
        if values is None:
            return "no successor (the guard rejects the step)"
        NO = self.u.objects
        live = [o for o in range(NO) if values[f"L{o}"]]
        out = f"table {[(o, values[f'TS{o}']) for o in live]}, ret {values['ret']}, fault {values['f_lru']}"
        if self.wall:
            out += f", queue {[(values[f'QO{k}'], values[f'QT{k}']) for k in range(values['qlen'])]}"
        return out


def make_spec(component: str, config: dict[str, Any] | None = None, quirks: Iterable[str] = ()) -> LruSpec:
    return LruSpec(component, LruUniverse(**dict(config or {})), quirks)
