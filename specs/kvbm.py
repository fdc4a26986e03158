"""Z3 spec of the G1 manager with the KVBM backend (``g1_kvbm``) on a two-block-chain world.

The world: ``owners`` requests, each started from one of ``prompts`` prompts
(:data:`SPEC_PROMPTS`): a two-block chain ``A0 A1``; a chain ``B0 B1`` whose first block has
``A0``'s PLH under another hash once fragments are reduced modulo 2 (§6 #9's alias); one
caching-disabled block with random hashes; and ``A0 A1`` with a trailing partial block. The
pool has ``capacity`` slots. Operations are the system's request-level moves:
``new_request.o.p``; ``allocate.o.p`` (the creation Use of the prompt's blocks);
``resend.o.p`` (the held blocks named again in one Use: a second logical holder);
``free.o.p`` (the Deref of what the request holds, leaf first); ``bad_deref.o.p`` (that
Deref with an unknown block at the end); ``bad_use.dup`` and ``bad_use.two`` (the malformed
Uses: a partial named twice, one hash under two PLHs); and a one-slot decode reservation
(``reserve_decode``, ``release_decode``).

Hashes and PLHs are computed from the real sequences (``plh_fragments`` 2), so a trace of
the spec replays on :class:`~kvmodel.systems.G1KvbmSystem` with the same configuration.

State, per PLH ``j``: the primaries registered under it ``pr`` and its inactive entries
``ia`` (two counters, so that one-primary-per-PLH is a property of the registration path,
not of the encoding), and its insertion tick ``tk``. Per hash ``h``: the logical references
``act``, whether the PLH's shadow names it ``nm``, and how many times the router has it
announced ``an``. Free slots ``nfree``, mutable slots held by partials ``mut``, the decode
reservation ``rs``, the index clock ``T``, the publisher's next event id ``eid`` and the
monitor's ``mid``. Per owner: its prompt ``rq`` (−1: none), how many times it holds the
prompt's full blocks ``hd`` and its partial ``hp`` (the system's ghost), and whether the
manager has its partial active ``ap``. A faithful step that leaves the holdings and the
manager out of step (§6 #8, a Deref that releases before it panics) sets ``dirty``, after
which the spec stops: the invariant that step breaks is already broken.

The Use follows ``process_use`` (semantics §2.4.3, ``kvbm_backend.rs``): classify by hash,
match the others by PLH (a primary gains a handle, an inactive entry is resurrected), count
the slots still needed (fresh full blocks and a fresh partial), fail with nothing changed
when free + inactive cannot cover them (faithful §6 #7: the matched entries go back as the
newest), else take free slots and then evict the Lineage index's oldest leaf (a parent
whose child is inactive is not a candidate), publish one Removed for the evicted names,
register the fresh blocks and walk the list publishing one Stored per run of fresh
registrations (and, ideal, of aliases) whose parent is the block before the run.

Quirks modelled: every ``g1_kvbm`` quirk but ``commit_asserts_after_partial_commit`` (§6 #24:
its panic leaves stale shadows and leaked slots, which the explorer and Hypothesis cover).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs
import z3

from kvmodel.components.g1_kvbm import NAME as COMPONENT
from kvmodel.components.g1_kvbm.actions import Allocate, BadDeref, BadUse, NewRequest, Resend
from kvmodel.components.g1_requests import Free, ReleaseDecode, ReserveDecode
from kvmodel.model.errors import InvalidInput
from kvmodel.model.g1.acquire import Ready
from kvmodel.model.quirks import validate
from kvmodel.specs.engine import Operation, Property, State, Step, TransitionSystem

SPEC_PROMPTS: tuple[tuple[tuple[int, ...], bool], ...] = (
    ((1, 2, 3, 4), True),
    ((7, 8, 5, 6), True),
    ((9, 10), False),
    ((1, 2, 3, 4, 5), True),
)
FRAGMENTS = 2
MODELLED = frozenset(
    {
        "failed_use_reorders_inactive",
        "active_partial_use_noop",
        "plh_reuse_keeps_first_name",
        "events_for_uncached_sequences",
        "stored_before_removed",
        "kvbm_active_counts_reservations",
        "use_ready_counts_entries",
        "deref_releases_before_panic",
    }
)
OBS: tuple[tuple[str, Any], ...] = (
    ("f_rb", "bool"),  # a Removed after a Stored in this step
    ("f_unc", "bool"),  # an event named an uncached hash
    ("f_lin", "bool"),  # a Stored whose blocks are no hash chain under its parent (random hashes)
    ("f_ru", "bool"),  # a Removed named an unannounced hash
    ("f_par", "bool"),  # a Stored named a parent that is not announced
    ("f_id", "bool"),  # an event id was not the one the monitor expected
    ("f_atom", "bool"),  # a CapacityExhausted Use changed the state or published
    ("f_ord", "bool"),  # a CapacityExhausted Use changed the inactive order
    ("f_rej", "bool"),  # a rejected step changed the state or published
    ("use", "bool"),  # this step was a successful Use
    ("ready", "int"),  # its Ready(n)
    ("fresh", "int"),  # the slots it newly took
)
FALSE = z3.BoolVal(False)


@attrs.frozen
class KvbmUniverse:
    owners: int = 2
    prompts: int = 4
    capacity: int = 3

    def to_json(self) -> dict[str, int]:
        return attrs.asdict(self)


@attrs.frozen
class _Prompt:
    fulls: tuple[tuple[int, int], ...]  # (hash index, PLH index) per full block, in order
    partial: bool
    caching: bool


class _Step:
    """One step's symbolic execution: the state's current values and its observations."""

    def __init__(self, spec: KvbmSpec, s: State) -> None:
        self.spec, self.s = spec, s
        self.v: dict[str, Any] = {n: s[n] for n, _ in spec.state_vars}
        self.obs: dict[str, Any] = {n: (FALSE if t == "bool" else z3.IntVal(0)) for n, t in OBS}
        self.events = z3.IntVal(0)

    def emit(self, cond: Any) -> None:
        """One published event: the monitor expects the publisher's next id."""
        v = self.v
        self.obs["f_id"] = z3.Or(self.obs["f_id"], z3.And(cond, v["eid"] != v["mid"]))
        nxt = v["eid"] + 1
        v["mid"] = z3.If(cond, nxt, v["mid"])
        v["eid"] = z3.If(cond, nxt, v["eid"])
        self.events = self.events + z3.If(cond, 1, 0)

    def changed(self, names: Iterable[str]) -> Any:
        return z3.Or([self.v[n] != self.s[n] for n in names] + [self.events > 0])


class KvbmSpec:
    def __init__(self, u: KvbmUniverse, quirks: Iterable[str]) -> None:
        from kvmodel.model.g1.sequence import ActiveSequence

        if not 1 <= u.prompts <= len(SPEC_PROMPTS) or u.owners < 1 or u.capacity < 1:
            raise InvalidInput(f"g1_kvbm spec: 1..{len(SPEC_PROMPTS)} prompts, ≥1 owner, capacity ≥1: {u}")
        self.u = u
        self.quirks = validate(COMPONENT, quirks)
        extra = self.quirks - MODELLED
        if extra:
            raise InvalidInput(f"g1_kvbm spec does not model {sorted(extra)} (it models {sorted(MODELLED)})")
        hashes: list[int] = []
        plhs: list[Any] = []
        self.plh_of: dict[int, int] = {}
        self.cacheable: dict[int, bool] = {}
        self.prompt: dict[tuple[int, int], _Prompt] = {}
        for o in range(u.owners):
            for p in range(u.prompts):
                toks, caching = SPEC_PROMPTS[p]
                s = ActiveSequence(list(toks), 8, 2, caching, name=f"r{o}", plh_fragments=FRAGMENTS)
                fulls = []
                for h, plh in zip(s.seq_hashes, s.plhs, strict=True):
                    if h not in hashes:
                        hashes.append(h)
                    if plh not in plhs:
                        plhs.append(plh)
                    n = hashes.index(h)
                    if self.plh_of.setdefault(n, plhs.index(plh)) != plhs.index(plh):
                        raise InvalidInput(f"g1_kvbm spec world: hash {h} under two PLHs")
                    self.cacheable[n] = caching
                    fulls.append((n, plhs.index(plh)))
                if len({j for _, j in fulls}) != len(fulls):
                    raise InvalidInput(f"g1_kvbm spec world: prompt {toks} repeats a PLH")
                self.prompt[(o, p)] = _Prompt(tuple(fulls), len(toks) % 2 == 1, caching)
        # The Lineage graph over the world's PLHs: node key (position, fragment), parent key
        # (position − 1, parent fragment). Two PLHs under one key would make an insert panic
        # (an artefact of reduced fragments), so the world must not have them.
        keys = {j: (plh[2], plh[0]) for j, plh in enumerate(plhs)}
        if len(set(keys.values())) != len(keys):
            raise InvalidInput("g1_kvbm spec world: two PLHs share a Lineage key")
        self.children: dict[int, list[int]] = {
            j: [
                k for k, plh in enumerate(plhs) if plh[1] is not None and plh[2] > 0 and (plh[2] - 1, plh[1]) == keys[j]
            ]
            for j in keys
        }
        self.H, self.J = len(hashes), len(plhs)
        self.hashes, self.plhs = hashes, plhs
        self.modelled_quirks = MODELLED
        self.state_vars = self._state_vars()
        self.ts = self._build()
        self._effects: dict[str, tuple[State, Any, dict[str, Any]]] = {}
        self._pre = self.ts.state("pre")
        self._model: tuple[Any, Any] | None = None
        self.last_dirty = False

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
        """A decoded step as the executable ``(op, args)``: its operation's action (a fresh JSON:
        a list argument shared by every trace would be one object)."""
        a = step.action
        return a.op, {k: list(v) if isinstance(v, list) else v for k, v in a.to_json().items()}

    # The executable -> spec direction is checked state by state by :func:`agreement`
    # (through :meth:`abstract` and :meth:`agree`), not through constraints.
    # ------------------------------------------------------------------ agreement
    FLAGS: tuple[tuple[str, str], ...] = (
        ("f_rb", "kvbm.removed_before_stored"),
        ("f_unc", "kvbm.uncached_silent"),
        ("f_ru", "kvbm.removed_only_announced"),
        ("f_par", "kvbm.stored_parent_announced"),
        ("f_lin", "kvbm.stored_lineage"),
        ("f_id", "kvbm.event_ids_consecutive"),
        ("f_atom", "kvbm.atomic_failure"),
        ("f_ord", "kvbm.failure_keeps_eviction_order"),
        ("f_rej", "kvbm.rejection_no_trace"),
    )

    def abstract(self, system: Any) -> dict[str, Any]:
        """The spec state of a :class:`~kvmodel.systems.G1KvbmSystem` in this world (``tk``
        only for inactive PLHs: the spec leaves stale ticks elsewhere, and reads none)."""
        from kvmodel.model.blocks import FullBlock, PartialBlock

        m = system.model.kvbm
        sub = m.sub
        out: dict[str, Any] = {
            "nfree": len(sub.free),
            "mut": len(m.active_partial),
            "rs": sum(len(r.slots) for r in system.decodes),
            "T": sub.tick,
            "eid": m.next_event_id,
            "mid": system.monitor.next_id,
        }
        for j, plh in enumerate(self.plhs):
            out[f"pr{j}"] = 1 if plh in sub.primaries else 0
            out[f"ia{j}"] = 1 if sub.inactive.contains(plh) else 0
            if out[f"ia{j}"]:
                out[f"tk{j}"] = next(n.tick for n in sub.inactive.nodes.values() if n.plh == plh)
        for h, hv in enumerate(self.hashes):
            e = m.active_full.get(hv)
            out[f"act{h}"] = 0 if e is None else e.refs
            sh = m.registered.get(self.plhs[self.plh_of[h]])
            out[f"nm{h}"] = sh is not None and hv in sh.names()
            out[f"an{h}"] = system.monitor.announced.get(hv, 0)
        for o in range(self.u.owners):
            s = system.seqs.get(o)
            rq = -1
            if s is not None:
                rq = next(p for p in range(self.u.prompts) if (tuple(s.tokens), s.caching) == SPEC_PROMPTS[p])
            held = system.holdings.get(o, [])
            fulls = self.prompt[(o, rq)].fulls if rq >= 0 else ()
            first = [b for b in held if isinstance(b, FullBlock) and fulls and b.hash == self.hashes[fulls[0][0]]]
            out[f"rq{o}"] = rq
            out[f"hd{o}"] = len(first)
            out[f"hp{o}"] = sum(1 for b in held if isinstance(b, PartialBlock))
            out[f"ap{o}"] = sum(1 for u in m.active_partial if u.startswith(f"r{o}."))
        return out

    def agree(self, system: Any, op: str) -> list[str]:
        """Run spec operation ``op`` on ``system`` and on the spec from its abstract state;
        return the differences (state, observations, violated flags). ``system`` is advanced;
        ``last_dirty`` says whether the spec stops after this step."""
        if op not in self._effects:
            pre = self._pre
            oper = next(o for o in self.ts.operations if o.name == op)
            guard, post = oper.effect(pre, self.ts.state("params"))
            self._effects[op] = (pre, guard, {n: post.get(n, pre[n]) for n, _ in self.variables()})
        pre, guard, post = self._effects[op]
        a = self.abstract(system)
        # the spec stops once dirty, so a step it runs starts clean; observations start cleared
        a["dirty"] = False
        key = tuple(sorted(a.items()))
        if self._model is None or self._model[0] != key:
            solver = z3.Solver()
            solver.add([pre[n] == _val(a.get(n, 0), t) for n, t in self.state_vars])
            solver.add([pre[n] == _val(False if t == "bool" else 0, t) for n, t in OBS])
            assert solver.check() == z3.sat
            self._model = (key, solver.model())
        model = self._model[1]

        def ev(e: Any) -> Any:
            r = model.eval(e, model_completion=True)
            return z3.is_true(r) if z3.is_bool(r) else r.as_long()

        if not ev(guard):
            return [f"{op}: the spec's guard rejects it"]
        action = next(o.action for o in self.ts.operations if o.name == op)
        name, args = self.step_json(Step(op, {}, action=action))
        out = system.apply(name, system.decode(name, args), args)
        got = self.abstract(system)
        self.last_dirty = bool(ev(post["dirty"]))
        diffs = []
        for n, _ in self.state_vars:
            if n == "dirty" or (n.startswith("tk") and not got.get(f"ia{n[2:]}")):
                continue
            want = ev(post[n])
            if want != got.get(n, 0):
                diffs.append(f"{op}: {n} spec {want} model {got.get(n, 0)}")
        broken = {v.invariant for v in out.violations}
        for f, inv in self.FLAGS:
            if ev(post[f]) != (inv in broken):
                diffs.append(f"{op}: {f} spec {ev(post[f])}, model {'breaks' if inv in broken else 'holds'} {inv}")
        ok = isinstance(out.result, Ready)
        if name in ("allocate", "resend"):
            if ev(post["use"]) != ok:
                diffs.append(f"{op}: use spec {ev(post['use'])} model {out.result!r} {out.error}")
            elif ok and ev(post["ready"]) != out.result.n:
                diffs.append(f"{op}: Ready spec {ev(post['ready'])} model {out.result}")
        return diffs

    def describe(self, values: dict[str, Any] | None) -> str:
        if values is None:
            return "no successor (the guard rejects the step)"
        return ", ".join(f"{k}={v}" for k, v in sorted(values.items()))

    # ------------------------------------------------------------------ system
    def _state_vars(self) -> tuple[tuple[str, Any], ...]:
        v: list[tuple[str, Any]] = [
            ("nfree", "int"),
            ("mut", "int"),
            ("rs", "int"),
            ("T", "nat"),
            ("eid", "nat"),
            ("mid", "nat"),
            ("dirty", "bool"),
        ]
        for j in range(self.J):
            v += [(f"pr{j}", "int"), (f"ia{j}", "int"), (f"tk{j}", "nat")]
        for h in range(self.H):
            v += [(f"act{h}", "int"), (f"nm{h}", "bool"), (f"an{h}", "int")]
        for o in range(self.u.owners):
            v += [(f"rq{o}", "int"), (f"hd{o}", "int"), (f"hp{o}", "int"), (f"ap{o}", "int")]
        return tuple(v)

    def variables(self) -> tuple[tuple[str, Any], ...]:
        return self.state_vars + OBS

    def _init(self, s: State) -> Any:
        c = [s["nfree"] == self.u.capacity, z3.Not(s["dirty"])]
        c += [s[n] == 0 for n in ("mut", "rs", "T", "eid", "mid")]
        c += [s[n] == (False if t == "bool" else 0) for n, t in OBS]
        for j in range(self.J):
            c += [s[f"pr{j}"] == 0, s[f"ia{j}"] == 0, s[f"tk{j}"] == 0]
        for h in range(self.H):
            c += [s[f"act{h}"] == 0, z3.Not(s[f"nm{h}"]), s[f"an{h}"] == 0]
        for o in range(self.u.owners):
            c += [s[f"rq{o}"] == -1, s[f"hd{o}"] == 0, s[f"hp{o}"] == 0, s[f"ap{o}"] == 0]
        return z3.And(c)

    def _published(self, h: int) -> bool:
        return self.cacheable[h] or self.q("events_for_uncached_sequences")

    def _names_of(self, j: int) -> list[int]:
        return [h for h in range(self.H) if self.plh_of[h] == j]

    def _post(self, st: _Step) -> dict[str, Any]:
        return {**st.v, **st.obs}

    # -- shared pieces of the substrate
    def _evict_oldest(self, st: _Step, cond: Any, removed: dict[int, Any]) -> None:
        """``evict()`` on the Lineage index when ``cond``: the oldest leaf (an inactive PLH
        with no inactive child) leaves, its shadow with it; its published names join
        ``removed`` (one Removed per operation)."""
        v = st.v
        leaf = {j: z3.And(v[f"ia{j}"] > 0, *[v[f"ia{c}"] == 0 for c in self.children[j]]) for j in range(self.J)}
        for j in range(self.J):
            oldest = z3.And(
                leaf[j], *[z3.Or(z3.Not(leaf[m]), v[f"tk{j}"] < v[f"tk{m}"]) for m in range(self.J) if m != j]
            )
            ev = z3.And(cond, oldest)
            v[f"ia{j}"] = z3.If(ev, v[f"ia{j}"] - 1, v[f"ia{j}"])
            for g in self._names_of(j):
                if self._published(g):
                    removed[g] = z3.Or(removed.get(g, FALSE), z3.And(ev, v[f"nm{g}"]))
                v[f"nm{g}"] = z3.And(v[f"nm{g}"], z3.Not(ev))

    def _publish_removed(self, st: _Step, removed: dict[int, Any]) -> Any:
        """One Removed naming every evicted published name (if any); returns whether sent."""
        v = st.v
        any_ = z3.Or(list(removed.values()) or [FALSE])
        st.emit(any_)
        for g, named in removed.items():
            st.obs["f_ru"] = z3.Or(st.obs["f_ru"], z3.And(named, v[f"an{g}"] <= 0))
            st.obs["f_unc"] = z3.Or(st.obs["f_unc"], z3.And(named, z3.BoolVal(not self.cacheable[g])))
            v[f"an{g}"] = z3.If(z3.And(named, v[f"an{g}"] > 0), v[f"an{g}"] - 1, v[f"an{g}"])
        return any_

    def _drop(self, st: _Step, j: int, cond: Any) -> None:
        """The last handle on primary ``j`` dropped (when ``cond``): it becomes the index's
        newest entry."""
        v = st.v
        v[f"pr{j}"] = z3.If(cond, v[f"pr{j}"] - 1, v[f"pr{j}"])
        v[f"ia{j}"] = z3.If(cond, v[f"ia{j}"] + 1, v[f"ia{j}"])
        v[f"tk{j}"] = z3.If(cond, v["T"], v[f"tk{j}"])
        v["T"] = z3.If(cond, v["T"] + 1, v["T"])

    def _others_active(self, st: _Step, j: int, h: int) -> Any:
        return z3.Or([st.v[f"act{g}"] > 0 for g in self._names_of(j) if g != h] or [FALSE])

    def _rejected(self, s: State) -> dict[str, Any]:
        """A step that panics before it changes anything."""
        st = _Step(self, s)
        st.obs["f_rej"] = st.changed(n for n, _ in self.state_vars)
        return self._post(st)

    # -- operations
    def _new_request(self, o: int, p: int) -> Operation:
        """``new_request.o.p``. A caching-disabled prompt's hashes are the request's first
        generation of random draws (``model/g1/sequence.py``: ``fresh_generation``); the model
        draws a later generation while the manager or the router's view still holds one of them,
        which the spec's fixed hash indices cannot express: the spec takes the step only where
        none is held (no active count, not registered, not announced)."""
        pr = self.prompt[(o, p)]

        def eff(s: State, _: State) -> Any:
            st = _Step(self, s)
            st.v.update({f"rq{o}": z3.IntVal(p), f"hd{o}": z3.IntVal(0), f"hp{o}": z3.IntVal(0)})
            guard = [s[f"rq{o}"] == -1, z3.Not(s["dirty"])]
            if not pr.caching:
                guard += [z3.And(s[f"act{h}"] == 0, z3.Not(s[f"nm{h}"]), s[f"an{h}"] == 0) for h, _ in pr.fulls]
            return z3.And(guard), self._post(st)

        toks, caching = SPEC_PROMPTS[p]
        return Operation(f"new_request.{o}.{p}", (), eff, NewRequest(o, list(toks), caching))

    def _use(self, o: int, p: int, again: bool) -> Operation:
        """``allocate.o.p`` (``again`` false: the creation Use, the request holding nothing) or
        ``resend.o.p`` (the held blocks named again)."""
        pr = self.prompt[(o, p)]
        n = len(pr.fulls)
        silent = not (pr.caching or self.q("events_for_uncached_sequences"))

        def eff(s: State, _params: State) -> Any:
            st = _Step(self, s)
            v = st.v
            guard = z3.And(s[f"rq{o}"] == p, s[f"hd{o}"] == (1 if again else 0), z3.Not(s["dirty"]))
            if again and pr.partial and not self.q("active_partial_use_noop"):
                # ideal: a Use naming an already active partial is rejected up front
                return guard, self._rejected(s)
            # classify by hash, then match the rest by PLH (a primary first, else the index)
            active = [s[f"act{h}"] > 0 for h, _ in pr.fulls]
            from_primary = [z3.And(z3.Not(a), s[f"pr{j}"] > 0) for a, (_, j) in zip(active, pr.fulls, strict=True)]
            from_index = [
                z3.And(z3.Not(a), s[f"pr{j}"] == 0, s[f"ia{j}"] > 0) for a, (_, j) in zip(active, pr.fulls, strict=True)
            ]
            matched = [z3.Or(a, b) for a, b in zip(from_primary, from_index, strict=True)]
            fresh = [z3.And(z3.Not(a), z3.Not(m)) for a, m in zip(active, matched, strict=True)]
            partial_fresh = pr.partial and not again
            need = z3.Sum([z3.If(f, 1, 0) for f in fresh] + [z3.IntVal(1 if partial_fresh else 0)])
            for i, (_, j) in enumerate(pr.fulls):
                v[f"ia{j}"] = z3.If(from_index[i], v[f"ia{j}"] - 1, v[f"ia{j}"])
                v[f"pr{j}"] = z3.If(from_index[i], v[f"pr{j}"] + 1, v[f"pr{j}"])
            avail = v["nfree"] + z3.Sum([v[f"ia{j}"] for j in range(self.J)])
            fail = need > avail
            ok = z3.Not(fail)

            # --- failure: the matched handles are dropped again
            saved = {k: s[k] for k in [f"ia{j}" for j in range(self.J)] + [f"tk{j}" for j in range(self.J)] + ["T"]}
            fst = _Step(self, s)
            fst.v = dict(v)
            for i, (_, j) in enumerate(pr.fulls):
                last = z3.And(matched[i], z3.Not(self._others_active(fst, j, -1)))
                self._drop(fst, j, last)
            if not self.q("failed_use_reorders_inactive"):
                fst.v.update(saved)  # ideal: the index and its clock as they were
            fail_v = fst.v

            # --- success: free slots first, then the Lineage index's oldest leaves
            take = z3.If(need <= v["nfree"], need, v["nfree"])
            evict = need - take
            v["nfree"] = v["nfree"] - take
            removed: dict[int, Any] = {}
            for k in range(n + (1 if partial_fresh else 0)):
                self._evict_oldest(st, z3.And(ok, evict > k), removed)
            if not self.q("stored_before_removed"):
                removed_sent = self._publish_removed(st, removed)
            appendable = []
            for i, (h, j) in enumerate(pr.fulls):
                if self.q("plh_reuse_keeps_first_name") or not self._published(h):
                    alias = FALSE
                else:
                    shadow = z3.Or([v[f"nm{g}"] for g in self._names_of(j)] or [FALSE])
                    alias = z3.And(matched[i], shadow, z3.Not(v[f"nm{h}"]))
                v[f"act{h}"] = z3.If(ok, v[f"act{h}"] + 1, v[f"act{h}"])
                v[f"pr{j}"] = z3.If(z3.And(ok, fresh[i]), v[f"pr{j}"] + 1, v[f"pr{j}"])
                for g in self._names_of(j):
                    if g == h:
                        v[f"nm{g}"] = z3.Or(v[f"nm{g}"], z3.And(ok, z3.Or(fresh[i], alias)))
                    else:
                        v[f"nm{g}"] = z3.And(v[f"nm{g}"], z3.Not(z3.And(ok, fresh[i])))
                appendable.append(z3.Or(fresh[i], alias))
            # one Stored per maximal run of appendable blocks; its parent is the block before
            stored_any: Any = FALSE
            for a in range(n):
                for b in range(a, n):
                    run = z3.And(
                        ok,
                        *appendable[a : b + 1],
                        *([z3.Not(appendable[a - 1])] if a > 0 else []),
                        *([z3.Not(appendable[b + 1])] if b + 1 < n else []),
                    )
                    if silent:
                        continue
                    st.emit(run)
                    stored_any = z3.Or(stored_any, run)
                    if a > 0:
                        parent = pr.fulls[a - 1][0]
                        st.obs["f_par"] = z3.Or(st.obs["f_par"], z3.And(run, v[f"an{parent}"] <= 0))
                    for h, _ in pr.fulls[a : b + 1]:
                        if not self.cacheable[h]:
                            # a caching-off block's random hash chains onto nothing
                            st.obs["f_unc"] = z3.Or(st.obs["f_unc"], run)
                            st.obs["f_lin"] = z3.Or(st.obs["f_lin"], run)
                        v[f"an{h}"] = z3.If(run, v[f"an{h}"] + 1, v[f"an{h}"])
            if self.q("stored_before_removed"):
                removed_sent = self._publish_removed(st, removed)
                st.obs["f_rb"] = z3.And(removed_sent, stored_any)
            if partial_fresh:
                v["mut"] = z3.If(ok, v["mut"] + 1, v["mut"])
                v[f"ap{o}"] = z3.If(ok, 1, v[f"ap{o}"])
            held = 2 if again else 1
            v[f"hd{o}"] = z3.If(ok, held, v[f"hd{o}"])
            if pr.partial:
                v[f"hp{o}"] = z3.If(ok, v[f"hp{o}"] + 1, v[f"hp{o}"])
                if again:  # §6 #8: the partial entry is a no-op, the request holds it twice
                    v["dirty"] = ok

            # --- the step: one of the two branches
            post: dict[str, Any] = {}
            for name, _ in self.state_vars:
                post[name] = z3.If(fail, fail_v[name], v[name])
            st.v = post
            st.obs["use"] = ok
            st.obs["fresh"] = z3.If(ok, need, 0)
            entries = n + (1 if pr.partial else 0)
            st.obs["ready"] = z3.If(ok, entries if self.q("use_ready_counts_entries") else need, 0)
            parts = ["nfree", "mut", "rs"] + [f"{x}{j}" for j in range(self.J) for x in ("pr", "ia")]
            parts += [f"{x}{h}" for h in range(self.H) for x in ("act", "nm", "an")]
            parts += [f"ap{w}" for w in range(self.u.owners)]
            st.obs["f_atom"] = z3.And(fail, z3.Or([post[x] != s[x] for x in parts]))
            pairs = [(a, b) for a in range(self.J) for b in range(self.J) if a < b]
            st.obs["f_ord"] = z3.And(
                fail,
                z3.Or(
                    [
                        z3.And(
                            s[f"ia{a}"] > 0,
                            s[f"ia{b}"] > 0,
                            (s[f"tk{a}"] < s[f"tk{b}"]) != (post[f"tk{a}"] < post[f"tk{b}"]),
                        )
                        for a, b in pairs
                    ]
                    or [FALSE]
                ),
            )
            return guard, self._post(st)

        action = Resend(o) if again else Allocate(o)
        return Operation(f"{action.op}.{o}.{p}", (), eff, action)

    def _release(self, st: _Step, o: int, p: int) -> None:
        """The Deref of what request ``o`` holds, leaf first: its partial back to the free
        list, then each full block's references; a primary whose last handle goes becomes
        the index's newest entry (the child before its parent)."""
        pr = self.prompt[(o, p)]
        v = st.v
        if pr.partial:
            rel = v[f"hp{o}"] > 0
            v["mut"] = z3.If(rel, v["mut"] - 1, v["mut"])
            v["nfree"] = z3.If(rel, v["nfree"] + 1, v["nfree"])
            v[f"ap{o}"] = z3.If(rel, 0, v[f"ap{o}"])
        hd = v[f"hd{o}"]
        for h, j in reversed(pr.fulls):
            left = v[f"act{h}"] - hd
            last = z3.And(hd > 0, left == 0, z3.Not(self._others_active(st, j, h)))
            v[f"act{h}"] = left
            self._drop(st, j, last)

    def _valid_deref(self, s: State, o: int, p: int) -> Any:
        pr = self.prompt[(o, p)]
        c = [s[f"act{h}"] >= s[f"hd{o}"] for h, _ in pr.fulls]
        if pr.partial:
            c.append(z3.Implies(s[f"hp{o}"] > 0, s[f"ap{o}"] == 1))
        return z3.And(c)

    def _free(self, o: int, p: int) -> Operation:
        def eff(s: State, _: State) -> Any:
            st = _Step(self, s)
            self._release(st, o, p)
            st.v.update({f"rq{o}": z3.IntVal(-1), f"hd{o}": z3.IntVal(0), f"hp{o}": z3.IntVal(0)})
            post = self._post(st)
            rej = self._rejected(s)
            valid = self._valid_deref(s, o, p)
            return z3.And(s[f"rq{o}"] == p, z3.Not(s["dirty"])), {k: z3.If(valid, post[k], rej[k]) for k in post}

        return Operation(f"free.{o}.{p}", (), eff, Free(o))

    def _bad_deref(self, o: int, p: int) -> Operation:
        """The Deref with an unknown hash at the end. Ideal: validated first, rejected with
        nothing changed. Faithful: the held blocks are released, then the panic; the request
        still holds them."""

        def eff(s: State, _: State) -> Any:
            guard = z3.And(s[f"rq{o}"] == p, z3.Not(s["dirty"]))
            if not self.q("deref_releases_before_panic"):
                return guard, self._rejected(s)
            st = _Step(self, s)
            self._release(st, o, p)
            st.v["dirty"] = z3.Or(s[f"hd{o}"] > 0, s[f"hp{o}"] > 0)
            st.obs["f_rej"] = st.changed(n for n, _ in self.state_vars if n != "dirty")
            return guard, self._post(st)

        return Operation(f"bad_deref.{o}.{p}", (), eff, BadDeref(o))

    def _bad_use(self, kind: str) -> Operation:
        def eff(s: State, _: State) -> Any:
            return z3.Not(s["dirty"]), self._rejected(s)

        return Operation(f"bad_use.{kind}", (), eff, BadUse({"dup": "dup_partial", "two": "hash_two_plhs"}[kind]))

    def _reserve_decode(self) -> Operation:
        """``reserve_decode_blocks(1)``: a free slot, else the oldest leaf evicted (its Removed
        published at once), else CapacityExhausted with nothing changed."""

        def eff(s: State, _: State) -> Any:
            st = _Step(self, s)
            v = st.v
            n_inactive = z3.Sum([v[f"ia{j}"] for j in range(self.J)])
            ok = z3.Or(v["nfree"] > 0, n_inactive > 0)
            removed: dict[int, Any] = {}
            self._evict_oldest(st, z3.And(v["nfree"] == 0, n_inactive > 0), removed)
            self._publish_removed(st, removed)
            v["nfree"] = z3.If(s["nfree"] > 0, s["nfree"] - 1, s["nfree"])
            v["rs"] = z3.If(ok, 1, 0)
            return z3.And(s["rs"] == 0, z3.Not(s["dirty"])), self._post(st)

        return Operation("reserve_decode", (), eff, ReserveDecode(1))

    def _release_decode(self) -> Operation:
        def eff(s: State, _: State) -> Any:
            st = _Step(self, s)
            st.v["nfree"] = s["nfree"] + s["rs"]
            st.v["rs"] = z3.IntVal(0)
            return z3.And(s["rs"] > 0, z3.Not(s["dirty"])), self._post(st)

        return Operation("release_decode", (), eff, ReleaseDecode())

    def _build(self) -> TransitionSystem:
        ops: list[Operation] = [self._reserve_decode(), self._release_decode()]
        ops += [self._bad_use("dup"), self._bad_use("two")]
        for o in range(self.u.owners):
            ops += [self._new_request(o, p) for p in range(self.u.prompts)]
            for p in range(self.u.prompts):
                ops += [self._use(o, p, False), self._use(o, p, True), self._free(o, p), self._bad_deref(o, p)]
        return TransitionSystem(
            COMPONENT, self.variables(), self._init, tuple(ops), tuple(self._properties()), width=None
        )

    def _holds(self, s: State, o: int, h: int) -> Any:
        """How many times request ``o`` holds hash ``h`` (0 unless its prompt has ``h``)."""
        ps = [p for p in range(self.u.prompts) if any(g == h for g, _ in self.prompt[(o, p)].fulls)]
        return z3.If(z3.Or([s[f"rq{o}"] == p for p in ps] or [FALSE]), s[f"hd{o}"], 0)

    def _properties(self) -> list[Property]:
        J, H, OW = range(self.J), range(self.H), range(self.u.owners)

        def total(s: State, x: str) -> Any:
            return z3.Sum([s[f"{x}{j}"] for j in J])

        def slots(s: State) -> Any:
            parts = s["nfree"] + s["rs"] + s["mut"] + total(s, "pr") + total(s, "ia")
            return z3.And(s["nfree"] >= 0, s["rs"] >= 0, s["mut"] >= 0, parts == self.u.capacity)

        def one_primary(s: State) -> Any:
            return z3.And(
                [z3.And(s[f"pr{j}"] <= 1, s[f"ia{j}"] <= 1, z3.Or(s[f"pr{j}"] == 0, s[f"ia{j}"] == 0)) for j in J]
            )

        def active_held(s: State) -> Any:
            # num_active_blocks = total − available − reserved (faithful: reserved included)
            metric = self.u.capacity - s["nfree"] - total(s, "ia")
            if not self.q("kvbm_active_counts_reservations"):
                metric = metric - s["rs"]
            return metric == total(s, "pr") + z3.Sum([s[f"ap{o}"] for o in OW])

        def shadow(s: State) -> Any:
            return z3.And(
                [(s[f"pr{j}"] + s[f"ia{j}"] > 0) == z3.Or([s[f"nm{h}"] for h in self._names_of(j)]) for j in J]
            )

        def refs(s: State) -> Any:
            c = [z3.Implies(s[f"act{h}"] > 0, s[f"pr{self.plh_of[h]}"] > 0) for h in H]
            return z3.And(*c, s["mut"] == z3.Sum([s[f"ap{o}"] for o in OW]))

        def holders(s: State) -> Any:
            c = [s[f"act{h}"] == z3.Sum([self._holds(s, o, h) for o in OW]) for h in H]
            return z3.And(*c, *[s[f"ap{o}"] == s[f"hp{o}"] for o in OW])

        def names_announced(s: State) -> Any:
            return z3.And([z3.Implies(s[f"act{h}"] > 0, s[f"an{h}"] > 0) for h in H if self.cacheable[h]] or [True])

        def announced_registered(s: State) -> Any:
            return z3.And([z3.Implies(s[f"an{h}"] > 0, s[f"nm{h}"]) for h in H])

        def ready(s: State) -> Any:
            return z3.Implies(s["use"], s["ready"] == s["fresh"])

        def flag(name: str) -> Any:
            return lambda s: z3.Not(s[name])

        # lemmas: the shapes induction needs
        def l_state(s: State) -> Any:
            c = [z3.And(s[f"pr{j}"] >= 0, s[f"ia{j}"] >= 0) for j in J]
            c += [z3.Implies(s[f"ia{j}"] > 0, s[f"tk{j}"] < s["T"]) for j in J]
            c += [
                z3.Implies(z3.And(s[f"ia{a}"] > 0, s[f"ia{b}"] > 0), s[f"tk{a}"] != s[f"tk{b}"])
                for a in J
                for b in J
                if a < b
            ]
            c += [
                z3.Implies(s[f"pr{j}"] > 0, z3.Or([s[f"act{h}"] > 0 for h in self._names_of(j)] or [FALSE])) for j in J
            ]
            for o in OW:
                partial = [p for p in range(self.u.prompts) if self.prompt[(o, p)].partial]
                in_partial = z3.Or([s[f"rq{o}"] == p for p in partial] or [FALSE])
                c += [z3.And(s[f"hd{o}"] >= 0, s[f"hd{o}"] <= 2), z3.Implies(s[f"rq{o}"] == -1, s[f"hd{o}"] == 0)]
                c += [z3.And(s[f"rq{o}"] >= -1, s[f"rq{o}"] < self.u.prompts)]
                c += [s[f"hp{o}"] == z3.If(z3.And(in_partial, s[f"hd{o}"] > 0), 1, 0)]
            c += [s[f"act{h}"] >= 0 for h in H] + [s[f"an{h}"] >= 0 for h in H]
            c += [s["rs"] >= 0, s["rs"] <= 1, z3.Not(s["dirty"])]
            return z3.And(c)

        def l_announced(s: State) -> Any:
            # the router's view is exactly the published names of the shadows
            return z3.And([s[f"an{h}"] == z3.If(s[f"nm{h}"], 1, 0) for h in H if self._published(h)])

        def l_names(s: State) -> Any:
            # every active name is in its PLH's shadow (§6 #9 breaks it: the first name only)
            return z3.And([z3.Implies(s[f"act{h}"] > 0, s[f"nm{h}"]) for h in H if self.cacheable[h]] or [True])

        def l_unpublished(s: State) -> Any:
            return z3.And([s[f"an{h}"] == 0 for h in H if not self._published(h)] or [True])

        return [
            Property("kvbm.slot_conservation", slots),
            Property("kvbm.one_primary_per_plh", one_primary),
            Property("kvbm.shadow_matches_registry", shadow),
            Property("kvbm.refs_positive", refs),
            Property("kvbm.refs_match_holders", holders),
            Property("kvbm.active_count_held", active_held),
            Property("kvbm.stored_parent_announced", flag("f_par")),
            Property("kvbm.stored_lineage", flag("f_lin")),
            Property("kvbm.removed_only_announced", flag("f_ru")),
            Property("kvbm.event_ids_consecutive", flag("f_id")),
            Property("kvbm.removed_before_stored", flag("f_rb")),
            Property("kvbm.uncached_silent", flag("f_unc")),
            Property("kvbm.active_names_announced", names_announced),
            Property("kvbm.announced_registered", announced_registered),
            Property("kvbm.atomic_failure", flag("f_atom")),
            Property("kvbm.failure_keeps_eviction_order", flag("f_ord")),
            Property("kvbm.rejection_no_trace", flag("f_rej")),
            Property("kvbm.use_reports_new_blocks", ready),
            Property("kvbm.primaries_held", lambda s: z3.And(l_state(s), l_unpublished(s)), lemma=True),
            Property("kvbm.announced_exact", l_announced, lemma=True),
            Property("kvbm.active_named", l_names, lemma=True),
            Property("kvbm.stream_position", lambda s: s["eid"] == s["mid"], lemma=True),
        ]


def agreement(config: dict[str, Any], quirks: Iterable[str] = (), max_states: int = 100_000) -> dict[str, Any]:
    """Breadth-first search of the executable system through the spec's operations, checking
    every transition with :meth:`KvbmSpec.agree`: the spec's effect on the abstraction of the
    state before must be the abstraction of the state after, with the same Use result and
    faults. Stops at the first difference. Returns the states, transitions and differences."""
    from collections import deque

    from kvmodel.components.g1_kvbm.system import G1KvbmSystem

    spec = make_spec(config, quirks)
    start = G1KvbmSystem(spec.exec_config(), spec.quirks)
    seen = {start.key()}
    queue = deque([start])
    transitions = 0
    while queue and len(seen) < max_states:
        system = queue.popleft()
        for op in spec.ts.operations:
            nxt = system.clone()
            diffs = spec.agree(nxt, op.name)
            if diffs and "guard rejects" in diffs[0]:
                continue
            transitions += 1
            if diffs:
                return {"states": len(seen), "transitions": transitions, "diffs": diffs, "complete": False}
            if spec.last_dirty:
                continue
            k = nxt.key()
            if k not in seen:
                seen.add(k)
                queue.append(nxt)
    return {"states": len(seen), "transitions": transitions, "diffs": [], "complete": not queue}


def _val(x: Any, sort: str) -> Any:
    return z3.BoolVal(bool(x)) if sort == "bool" else z3.IntVal(int(x))


def make_spec(config: dict[str, Any], quirks: Iterable[str]) -> KvbmSpec:
    allowed = set(attrs.fields_dict(KvbmUniverse))
    extra = set(config) - allowed
    if extra:
        raise InvalidInput(f"unknown g1_kvbm spec parameters {sorted(extra)} (known: {sorted(allowed)})")
    return KvbmSpec(KvbmUniverse(**config), quirks)
