"""Z3 spec of the G1 manager with the KVBM backend (``g1_kvbm``) on a single-block world.

The world: ``owners`` requests, each started from one of ``prompts`` one-block prompts
(:data:`SPEC_PROMPTS`: a caching block, a block whose PLH collides with it when fragments are
reduced modulo 2, a caching-disabled block with random hashes, a block with the other PLH),
a pool of ``capacity`` slots. Operations are the system's request-level moves:
``new_request.o.p``, ``allocate.o`` (the Use of the prompt's block), ``resend.o`` (the same
Use again: a second logical holder), ``free.o`` (the Deref of what it holds), and a one-slot
decode reservation (``reserve_decode``, ``release_decode``).

Hashes and PLHs are computed from the real sequences (``plh_fragments`` 2), so a trace of
the spec replays on :class:`~kvmodel.systems.G1KvbmSystem` with the same configuration.

State: per PLH ``j`` its status ``st`` (0 absent, 1 primary, 2 inactive) and insertion tick;
per hash ``h`` its logical references ``act`` and whether the PLH's shadow names it
(``nm``); free slots ``nfree``; per owner its prompt ``rq`` (−1: none) and how many times it
holds its block ``hd``; the router's view (announced count per hash ``an``); and the step's
observations (stream faults, the Use's result and newly taken slots). With a single block per
Use the Lineage index is plain LRU by tick.

Quirks modelled: ``plh_reuse_keeps_first_name`` (§6 #9), ``events_for_uncached_sequences``
(§6 #13), ``stored_before_removed`` (§6 #14), ``kvbm_active_counts_reservations`` (§6 #23, with
a one-slot decode reservation), ``use_ready_counts_entries`` (§6 #25). The others need partials,
multi-block Uses or malformed input, which this world leaves to the explorer and Hypothesis.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs
import z3

from kvmodel.model.errors import InvalidInput
from kvmodel.model.quirks import validate
from kvmodel.specs.engine import Operation, Property, State, Step, TransitionSystem

COMPONENT = "g1_kvbm"
SPEC_PROMPTS: tuple[tuple[tuple[int, ...], bool], ...] = (
    ((1, 2), True),
    ((7, 8), True),
    ((9, 10), False),
    ((15, 16), True),
)
FRAGMENTS = 2
MODELLED = frozenset(
    {
        "plh_reuse_keeps_first_name",
        "events_for_uncached_sequences",
        "stored_before_removed",
        "use_ready_counts_entries",
        "kvbm_active_counts_reservations",
    }
)


@attrs.frozen
class KvbmUniverse:
    owners: int = 2
    prompts: int = 4
    capacity: int = 2

    def to_json(self) -> dict[str, int]:
        return attrs.asdict(self)


class KvbmSpec:
    def __init__(self, u: KvbmUniverse, quirks: Iterable[str]) -> None:
        from kvmodel.model.g1.sequence import NewActiveSequence

        if not 1 <= u.prompts <= len(SPEC_PROMPTS) or u.owners < 1 or u.capacity < 1:
            raise InvalidInput(f"g1_kvbm spec: 1..{len(SPEC_PROMPTS)} prompts, ≥1 owner, capacity ≥1: {u}")
        self.u = u
        self.quirks = validate(COMPONENT, quirks)
        extra = self.quirks - MODELLED
        if extra:
            raise InvalidInput(f"g1_kvbm spec does not model {sorted(extra)} (it models {sorted(MODELLED)})")
        # name (hash) and PLH of (owner, prompt), from the real sequences
        hashes: list[int] = []
        plhs: list[Any] = []
        self.name: dict[tuple[int, int], int] = {}
        self.plh_of: dict[int, int] = {}
        self.cacheable: dict[int, bool] = {}
        for o in range(u.owners):
            for p in range(u.prompts):
                toks, caching = SPEC_PROMPTS[p]
                s = NewActiveSequence(list(toks), 8, 2, caching, name=f"r{o}", plh_fragments=FRAGMENTS)
                h, plh = s.seq_hashes[0], s.plhs[0]
                if h not in hashes:
                    hashes.append(h)
                if plh not in plhs:
                    plhs.append(plh)
                n = hashes.index(h)
                self.name[(o, p)] = n
                self.plh_of[n] = plhs.index(plh)
                self.cacheable[n] = caching
        self.H, self.J = len(hashes), len(plhs)
        self.modelled_quirks = MODELLED
        self.ts = self._build()

    def q(self, name: str) -> bool:
        return name in self.quirks

    # ------------------------------------------------------------------ protocol
    def exec_config(self) -> dict[str, Any]:
        return {"max_capacity": self.u.capacity, "plh_fragments": FRAGMENTS}

    def universe_json(self) -> dict[str, Any]:
        return self.u.to_json()

    def bounded(self, depth: int) -> KvbmSpec:
        return self

    def step_json(self, step: Step) -> tuple[str, Any]:
        kind, *rest = step.op.split(".")
        if kind == "new_request":
            toks, caching = SPEC_PROMPTS[int(rest[1])]
            return kind, {"owner": int(rest[0]), "tokens": list(toks), "caching": caching}
        if kind == "reserve_decode":
            return kind, {"count": 1}
        if kind == "release_decode":
            return kind, {}
        return kind, {"owner": int(rest[0])}

    def within_bounds(self, system: Any, op: str) -> bool:
        raise NotImplementedError("g1_kvbm spec: agreement runs go through trace replay")

    def step_params(self, pre: Any, op: str, out: Any) -> tuple[str, dict[str, int]]:
        raise NotImplementedError("g1_kvbm spec: agreement runs go through trace replay")

    def state_constraint(self, system: Any, *, exact_stamps: bool) -> Any:
        raise NotImplementedError("g1_kvbm spec: agreement runs go through trace replay")

    def post_constraint(self, system: Any, out: Any) -> Any:
        raise NotImplementedError("g1_kvbm spec: agreement runs go through trace replay")

    def describe(self, values: dict[str, Any] | None) -> str:
        if values is None:
            return "no successor (the guard rejects the step)"
        return ", ".join(f"{k}={v}" for k, v in sorted(values.items()))

    # ------------------------------------------------------------------ system
    def variables(self) -> tuple[tuple[str, Any], ...]:
        v: list[tuple[str, Any]] = [("nfree", "int"), ("T", "nat"), ("rs", "int")]
        for j in range(self.J):
            v += [(f"st{j}", "int"), (f"tk{j}", "nat")]
        for h in range(self.H):
            v += [(f"act{h}", "int"), (f"nm{h}", "bool"), (f"an{h}", "int")]
        for o in range(self.u.owners):
            v += [(f"rq{o}", "int"), (f"hd{o}", "int")]
        v += [
            ("f_rb", "bool"),  # a Removed after a Stored in this step
            ("f_unc", "bool"),  # an event named an uncached hash
            ("f_ru", "bool"),  # a Removed named an unannounced hash
            ("use", "bool"),  # this step was a successful Use
            ("ready", "int"),  # its Ready(n)
            ("fresh", "int"),  # the slots it newly took
        ]
        return tuple(v)

    def _init(self, s: State) -> Any:
        c = [
            s["nfree"] == self.u.capacity,
            s["T"] == 0,
            s["rs"] == 0,
            z3.Not(s["f_rb"]),
            z3.Not(s["f_unc"]),
            z3.Not(s["f_ru"]),
        ]
        c += [z3.Not(s["use"]), s["ready"] == 0, s["fresh"] == 0]
        c += [s[f"st{j}"] == 0 for j in range(self.J)] + [s[f"tk{j}"] == 0 for j in range(self.J)]
        for h in range(self.H):
            c += [s[f"act{h}"] == 0, z3.Not(s[f"nm{h}"]), s[f"an{h}"] == 0]
        c += [s[f"rq{o}"] == -1 for o in range(self.u.owners)] + [s[f"hd{o}"] == 0 for o in range(self.u.owners)]
        return z3.And(c)

    def _published(self, h: int) -> bool:
        return self.cacheable[h] or self.q("events_for_uncached_sequences")

    def _clear_obs(self) -> dict[str, Any]:
        return {"f_rb": z3.BoolVal(False), "f_unc": z3.BoolVal(False), "f_ru": z3.BoolVal(False)} | {
            "use": z3.BoolVal(False),
            "ready": z3.IntVal(0),
            "fresh": z3.IntVal(0),
        }

    def _names_of(self, j: int) -> list[int]:
        return [h for h in range(self.H) if self.plh_of[h] == j]

    def _new_request(self, o: int, p: int) -> Operation:
        def eff(s: State, _: State) -> Any:
            return s[f"rq{o}"] == -1, {f"rq{o}": z3.IntVal(p), f"hd{o}": z3.IntVal(0), **self._clear_obs()}

        return Operation(f"new_request.{o}.{p}", (), eff)

    def _owner_is(self, s: State, o: int, h: int) -> Any:
        ps = [p for p in range(self.u.prompts) if self.name[(o, p)] == h]
        return z3.Or([s[f"rq{o}"] == p for p in ps] or [z3.BoolVal(False)])

    def _allocate(self, o: int, p: int) -> Operation:
        """``allocate.o`` for an owner whose prompt is ``p`` (one operation per prompt: the
        guard picks it), so each effect is over fixed hash and PLH indices."""
        h, j = self.name[(o, p)], self.plh_of[self.name[(o, p)]]

        def eff(s: State, _: State) -> Any:
            post: dict[str, Any] = self._clear_obs()
            guard = z3.And(s[f"rq{o}"] == p, s[f"hd{o}"] == 0)
            active = s[f"act{h}"] > 0
            st = s[f"st{j}"]
            hit = z3.And(z3.Not(active), st != 0)  # matched: a primary or an inactive block
            fresh = z3.And(z3.Not(active), st == 0)
            inactive = [k for k in range(self.J) if k != j]
            n_inactive = z3.Sum([z3.If(s[f"st{k}"] == 2, 1, 0) for k in inactive] or [z3.IntVal(0)])
            can = z3.Or(s["nfree"] > 0, n_inactive > 0)
            ok = z3.Or(active, hit, can)
            evict = z3.And(fresh, s["nfree"] == 0)
            # the oldest inactive PLH (ticks are distinct among inactive ones)
            oldest = {
                k: z3.And(
                    s[f"st{k}"] == 2,
                    *[z3.Or(s[f"st{m}"] != 2, s[f"tk{k}"] < s[f"tk{m}"]) for m in inactive if m != k],
                )
                for k in inactive
            }
            alias = z3.And(
                hit,
                z3.Not(s[f"nm{h}"]),
                z3.BoolVal(not self.q("plh_reuse_keeps_first_name") and self.cacheable[h]),
            )
            post[f"act{h}"] = z3.If(ok, s[f"act{h}"] + 1, s[f"act{h}"])
            post[f"hd{o}"] = z3.If(ok, 1, 0)
            post[f"st{j}"] = z3.If(z3.And(ok, z3.Not(active)), 1, st)
            post["nfree"] = z3.If(z3.And(fresh, s["nfree"] > 0), s["nfree"] - 1, s["nfree"])
            stored = z3.Or(z3.And(fresh, can, z3.BoolVal(self._published(h))), alias)
            removed_any = z3.BoolVal(False)
            f_ru = z3.BoolVal(False)
            f_unc = z3.And(stored, z3.BoolVal(not self.cacheable[h]))
            # names of the shadow of j: a fresh registration names h alone; an ideal alias adds h
            for g in self._names_of(j):
                if g == h:
                    post[f"nm{g}"] = z3.Or(s[f"nm{g}"], z3.And(fresh, can), alias)
                else:
                    post[f"nm{g}"] = z3.If(z3.And(fresh, can), False, s[f"nm{g}"])
            an: dict[int, Any] = {g: s[f"an{g}"] for g in range(self.H)}
            an[h] = z3.If(stored, an[h] + 1, an[h])
            for k in inactive:
                ev = z3.And(evict, can, oldest[k])
                post[f"st{k}"] = z3.If(ev, 0, s[f"st{k}"])
                for g in self._names_of(k):
                    named = z3.And(ev, s[f"nm{g}"], z3.BoolVal(self._published(g)))
                    post[f"nm{g}"] = z3.If(ev, False, s[f"nm{g}"])
                    f_ru = z3.Or(f_ru, z3.And(named, an[g] <= 0))
                    f_unc = z3.Or(f_unc, z3.And(named, z3.BoolVal(not self.cacheable[g])))
                    an[g] = z3.If(z3.And(named, an[g] > 0), an[g] - 1, an[g])
                    removed_any = z3.Or(removed_any, named)
            for g in range(self.H):
                post[f"an{g}"] = an[g]
            post["f_rb"] = z3.And(removed_any, stored, z3.BoolVal(self.q("stored_before_removed")))
            post["f_unc"] = f_unc
            post["f_ru"] = f_ru
            post["use"] = ok
            post["fresh"] = z3.If(z3.And(ok, fresh), 1, 0)
            post["ready"] = z3.If(ok, 1 if self.q("use_ready_counts_entries") else z3.If(fresh, 1, 0), 0)
            return guard, post

        return Operation(f"allocate.{o}.{p}", (), eff)

    def _resend(self, o: int, p: int) -> Operation:
        h = self.name[(o, p)]

        def eff(s: State, _: State) -> Any:
            post = self._clear_obs()
            post[f"act{h}"] = s[f"act{h}"] + 1
            post[f"hd{o}"] = z3.IntVal(2)
            post["use"] = z3.BoolVal(True)
            post["ready"] = z3.IntVal(1 if self.q("use_ready_counts_entries") else 0)
            return z3.And(s[f"rq{o}"] == p, s[f"hd{o}"] == 1), post

        return Operation(f"resend.{o}.{p}", (), eff)

    def _free(self, o: int, p: int) -> Operation:
        h = self.name[(o, p)]
        j = self.plh_of[h]

        def eff(s: State, _: State) -> Any:
            post = self._clear_obs()
            left = s[f"act{h}"] - s[f"hd{o}"]
            post[f"act{h}"] = left
            others = z3.Or([s[f"act{g}"] > 0 for g in self._names_of(j) if g != h] or [z3.BoolVal(False)])
            drop = z3.And(s[f"hd{o}"] > 0, left == 0, z3.Not(others))
            post[f"st{j}"] = z3.If(drop, 2, s[f"st{j}"])
            post[f"tk{j}"] = z3.If(drop, s["T"], s[f"tk{j}"])
            post["T"] = z3.If(drop, s["T"] + 1, s["T"])
            post[f"rq{o}"] = z3.IntVal(-1)
            post[f"hd{o}"] = z3.IntVal(0)
            return s[f"rq{o}"] == p, post

        return Operation(f"free.{o}.{p}", (), eff)

    def _oldest(self, s: State, among: list[int]) -> dict[int, Any]:
        """Per inactive PLH: whether it is the oldest (ticks are distinct among inactive ones)."""
        return {
            k: z3.And(s[f"st{k}"] == 2, *[z3.Or(s[f"st{m}"] != 2, s[f"tk{k}"] < s[f"tk{m}"]) for m in among if m != k])
            for k in among
        }

    def _reserve_decode(self) -> Operation:
        """``reserve_decode_blocks(1)``: a free slot, else the oldest inactive block evicted (its
        Removed published at once), else CapacityExhausted with nothing changed."""

        def eff(s: State, _: State) -> Any:
            post: dict[str, Any] = self._clear_obs()
            J = list(range(self.J))
            n_inactive = z3.Sum([z3.If(s[f"st{k}"] == 2, 1, 0) for k in J])
            ok = z3.Or(s["nfree"] > 0, n_inactive > 0)
            evict = z3.And(s["nfree"] == 0, n_inactive > 0)
            oldest = self._oldest(s, J)
            post["rs"] = z3.If(ok, 1, 0)
            post["nfree"] = z3.If(s["nfree"] > 0, s["nfree"] - 1, s["nfree"])
            an: dict[int, Any] = {g: s[f"an{g}"] for g in range(self.H)}
            f_ru, f_unc = z3.BoolVal(False), z3.BoolVal(False)
            for k in J:
                ev = z3.And(evict, oldest[k])
                post[f"st{k}"] = z3.If(ev, 0, s[f"st{k}"])
                for g in self._names_of(k):
                    named = z3.And(ev, s[f"nm{g}"], z3.BoolVal(self._published(g)))
                    post[f"nm{g}"] = z3.If(ev, False, s[f"nm{g}"])
                    f_ru = z3.Or(f_ru, z3.And(named, an[g] <= 0))
                    f_unc = z3.Or(f_unc, z3.And(named, z3.BoolVal(not self.cacheable[g])))
                    an[g] = z3.If(z3.And(named, an[g] > 0), an[g] - 1, an[g])
            for g in range(self.H):
                post[f"an{g}"] = an[g]
            post["f_ru"], post["f_unc"] = f_ru, f_unc
            return s["rs"] == 0, post

        return Operation("reserve_decode", (), eff)

    def _release_decode(self) -> Operation:
        def eff(s: State, _: State) -> Any:
            post: dict[str, Any] = self._clear_obs()
            post["nfree"] = s["nfree"] + s["rs"]
            post["rs"] = z3.IntVal(0)
            return s["rs"] > 0, post

        return Operation("release_decode", (), eff)

    def _build(self) -> TransitionSystem:
        ops: list[Operation] = [self._reserve_decode(), self._release_decode()]
        for o in range(self.u.owners):
            ops += [self._new_request(o, p) for p in range(self.u.prompts)]
            for p in range(self.u.prompts):
                ops += [self._allocate(o, p), self._resend(o, p), self._free(o, p)]
        return TransitionSystem(
            "g1_kvbm", self.variables(), self._init, tuple(ops), tuple(self._properties()), width=None
        )

    def _properties(self) -> list[Property]:
        J, H, OW = range(self.J), range(self.H), range(self.u.owners)

        def count(s: State, v: int) -> Any:
            return z3.Sum([z3.If(s[f"st{j}"] == v, 1, 0) for j in J])

        def slots(s: State) -> Any:
            return z3.And(
                s["nfree"] >= 0, s["rs"] >= 0, s["nfree"] + s["rs"] + count(s, 1) + count(s, 2) == self.u.capacity
            )

        def active_held(s: State) -> Any:
            # num_active_blocks = total − available (faithful: reserved slots included)
            metric = self.u.capacity - s["nfree"] - count(s, 2)
            if not self.q("kvbm_active_counts_reservations"):
                metric = metric - s["rs"]
            return metric == count(s, 1)

        def shadow(s: State) -> Any:
            return z3.And([(s[f"st{j}"] != 0) == z3.Or([s[f"nm{h}"] for h in self._names_of(j)]) for j in J])

        def refs(s: State) -> Any:
            return z3.And([z3.Implies(s[f"act{h}"] > 0, s[f"st{self.plh_of[h]}"] == 1) for h in H])

        def holders(s: State) -> Any:
            return z3.And(
                [s[f"act{h}"] == z3.Sum([z3.If(self._owner_is(s, o, h), s[f"hd{o}"], 0) for o in OW]) for h in H]
            )

        def names_announced(s: State) -> Any:
            return z3.And([z3.Implies(s[f"act{h}"] > 0, s[f"an{h}"] > 0) for h in H if self.cacheable[h]])

        def announced_registered(s: State) -> Any:
            return z3.And([z3.Implies(s[f"an{h}"] > 0, s[f"nm{h}"]) for h in H])

        def ready(s: State) -> Any:
            return z3.Implies(s["use"], s["ready"] == s["fresh"])

        # lemmas: the shapes induction needs
        def l_state(s: State) -> Any:
            c = [z3.Or(s[f"st{j}"] == 0, s[f"st{j}"] == 1, s[f"st{j}"] == 2) for j in J]
            c += [z3.Implies(s[f"st{j}"] == 2, s[f"tk{j}"] < s["T"]) for j in J]
            c += [
                z3.Implies(z3.And(s[f"st{a}"] == 2, s[f"st{b}"] == 2), s[f"tk{a}"] != s[f"tk{b}"])
                for a in J
                for b in J
                if a < b
            ]
            c += [
                z3.Implies(s[f"st{j}"] == 1, z3.Or([s[f"act{h}"] > 0 for h in self._names_of(j)] or [False])) for j in J
            ]
            c += [z3.And(s[f"hd{o}"] >= 0, s[f"hd{o}"] <= 2) for o in OW]
            c += [z3.Implies(s[f"rq{o}"] == -1, s[f"hd{o}"] == 0) for o in OW]
            c += [z3.And(s[f"rq{o}"] >= -1, s[f"rq{o}"] < self.u.prompts) for o in OW]
            c += [s[f"act{h}"] >= 0 for h in H]
            c += [s["rs"] >= 0, s["rs"] <= 1]
            return z3.And(c)

        def l_announced(s: State) -> Any:
            # the router's view is exactly the published names of the shadows
            return z3.And(
                [
                    s[f"an{h}"] == z3.If(z3.And(s[f"nm{h}"], z3.BoolVal(self._published(h))), 1, 0)
                    for h in H
                    if self.cacheable[h] or self.q("events_for_uncached_sequences")
                ]
                + [s[f"an{h}"] == 0 for h in H if not self._published(h)]
            )

        def l_names(s: State) -> Any:
            # every active name is in its PLH's shadow (§6 #9 breaks it: the first name only)
            return z3.And([z3.Implies(s[f"act{h}"] > 0, s[f"nm{h}"]) for h in H if self.cacheable[h]])

        return [
            Property("kvbm.slot_conservation", slots),
            Property("kvbm.shadow_matches_registry", shadow),
            Property("kvbm.refs_positive", refs),
            Property("kvbm.active_count_held", active_held),
            Property("kvbm.refs_match_holders", holders),
            Property("kvbm.removed_only_announced", lambda s: z3.Not(s["f_ru"])),
            Property("kvbm.removed_before_stored", lambda s: z3.Not(s["f_rb"])),
            Property("kvbm.uncached_silent", lambda s: z3.Not(s["f_unc"])),
            Property("kvbm.active_names_announced", names_announced),
            Property("kvbm.announced_registered", announced_registered),
            Property("kvbm.use_reports_new_blocks", ready),
            Property("kvbm.primaries_held", l_state, lemma=True),
            Property("kvbm.announced_exact", l_announced, lemma=True),
            Property("kvbm.active_named", l_names, lemma=True),
        ]


def make_spec(config: dict[str, Any], quirks: Iterable[str]) -> KvbmSpec:
    allowed = set(attrs.fields_dict(KvbmUniverse))
    extra = set(config) - allowed
    if extra:
        raise InvalidInput(f"unknown g1_kvbm spec parameters {sorted(extra)} (known: {sorted(allowed)})")
    return KvbmSpec(KvbmUniverse(**config), quirks)
