"""Explicit-state exploration of the executable model: exhaustive BFS with symmetry reduction.

The explorer runs the same systems every other engine runs (``kvmodel.systems``): each
transition is ``System.apply`` on a clone of a frontier state, so every invariant is
checked on every transition and counterexamples are the BFS-shortest paths.

**Bounded configurations.** ``KvSpace`` fixes the universe: ``n_full`` full-block ids,
``partials`` partial-block names, and the actions: Use, Deref and Destroy of every sequence
of 1..``max_batch`` blocks over the universe, and Promote of any partial to any id with any
parent (or none). A guard keeps every refcount and held-reference count at most
``max_refcount``, so the space is finite.

**Symmetry.** Block ids are interchangeable (the actions range over all of them alike), and
every attribute the state gives an id is unary: its refcount, its position in the LRU
order, whether it is resident, in the router's view, and how many references callers hold.
There is no relation between two ids. So the multiset of per-id signatures is a complete
invariant of a state's orbit under renaming: sorting the signatures gives a canonical form
without searching permutations. Full ids and partial names are permuted separately. The
orbit size of a canonical state is the multinomial count of its distinct signatures, and
the test-suite checks that the orbit sizes sum to the unreduced count.

Only compact canonical keys, parent pointers and the frontier's live states are kept; the
networkx ``DiGraph`` is built when asked for (``graph=True``).
"""

from __future__ import annotations

import itertools
import math
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import attrs

from kvmodel import invariants, traces
from kvmodel.model.blocks import Deref, Destroy, FullBlock, MoveBlock, PartialBlock, Promote, UniqueBlock, Use
from kvmodel.model.errors import InvalidInput, require_naturals
from kvmodel.model.lru import WallClockLRU
from kvmodel.systems import KvManagerSystem, LruSystem, System


@attrs.frozen
class KvSpace:
    """The bounded universe and action set explored for the KV manager."""

    n_full: int = 3
    partials: int = 1
    max_batch: int = 2
    max_refcount: int = 2

    def __attrs_post_init__(self) -> None:
        require_naturals(self, ("n_full", "partials", "max_batch", "max_refcount"))
        if self.max_batch < 1 or self.max_refcount < 1:
            raise InvalidInput("max_batch and max_refcount must be at least 1")

    def blocks(self) -> list[UniqueBlock]:
        return [FullBlock(h) for h in range(self.n_full)] + [PartialBlock(f"p{i}") for i in range(self.partials)]

    def actions(self) -> list[MoveBlock]:
        alphabet = self.blocks()
        out: list[MoveBlock] = []
        for n in range(1, self.max_batch + 1):
            out += [Use(seq) for seq in itertools.product(alphabet, repeat=n)]
        for n in range(1, self.max_batch + 1):
            out += [Deref(seq) for seq in itertools.product(alphabet, repeat=n)]
            out += [Destroy(seq) for seq in itertools.product(alphabet, repeat=n)]
        for i in range(self.partials):
            for h in range(self.n_full):
                for parent in [None, *range(self.n_full)]:
                    out.append(Promote(f"p{i}", h, parent))
        return out

    def enabled(self, s: KvManagerSystem, sig: MoveBlock) -> bool:
        """The refcount bound: no count (in the model or held by callers) above max_refcount."""
        active, held, r = s.model.active, s.monitor.held, self.max_refcount
        if isinstance(sig, Use):
            for b, m in Counter(sig.blocks).items():
                if max(active.get(b, 0), held.get(b, 0)) + m > r:
                    return False
        elif isinstance(sig, Promote):
            p, f = PartialBlock(sig.uuid), FullBlock(sig.hash)
            if active.get(p, 0) + active.get(f, 0) > r or held.get(p, 0) + held.get(f, 0) > r:
                return False
        return True

    def to_json(self) -> dict[str, int]:
        return attrs.asdict(self)

    # -- the generic interface the explorer drives (see ``Space``)
    component = "kv_manager"

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System:
        return KvManagerSystem(config, list(quirks))

    def moves(self) -> list[Any]:
        return list(self.actions())

    def concrete(self, s: System, move: Any) -> tuple[str, Any, Any]:
        """(op, decoded arguments, JSON arguments) of a move in state ``s``."""
        return "process", move, move.to_json()

    def allows(self, s: System, move: Any) -> bool:
        assert isinstance(s, KvManagerSystem)
        return self.enabled(s, move)

    def key(self, s: System, symmetry: bool) -> bytes:
        assert isinstance(s, KvManagerSystem)
        return canonical(s, self, symmetry)

    def orbit(self, key: Any) -> int:
        return orbit_size(key, self)

    def move_kind(self, move: Any) -> str:
        return type(move).__name__


class Space(Protocol):
    """What the explorer needs of a component's bounded configuration."""

    @property
    def component(self) -> str: ...

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System: ...
    def moves(self) -> list[Any]: ...
    def concrete(self, s: System, move: Any) -> tuple[str, Any, Any]: ...
    def allows(self, s: System, move: Any) -> bool: ...
    def key(self, s: System, symmetry: bool) -> Any: ...
    def orbit(self, key: Any) -> int: ...
    def move_kind(self, move: Any) -> str: ...
    def to_json(self) -> dict[str, int]: ...


@attrs.frozen
class LruSpace:
    """Bounded LRU evictor: ``objects`` interchangeable objects; insert at the current clock
    reading or one tick later (the wall-clock evictor's clock is explicit), remove, evict,
    push_front (counter evictor only); the wall-clock evictor's queue holds at most
    ``max_queue`` entries."""

    component: str = "lru_evictor_wallclock"
    objects: int = 3
    max_queue: int = 6

    def __attrs_post_init__(self) -> None:
        if self.component not in ("lru_evictor_wallclock", "lru_evictor_counter"):
            raise InvalidInput(f"not an LRU component: {self.component!r}")
        if isinstance(self.objects, bool) or not isinstance(self.objects, int) or self.objects < 1:
            raise InvalidInput(f"objects must be a positive integer, got {self.objects!r}")

    def to_json(self) -> dict[str, int]:
        return {"objects": self.objects, "max_queue": self.max_queue}

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System:
        return LruSystem(self.component, config, list(quirks))

    def moves(self) -> list[Any]:
        out: list[Any] = [("insert", o, t) for o in range(self.objects) for t in (0, 1)]
        out += [("remove", o, 0) for o in range(self.objects)] + [("evict", None, 0)]
        if self.component == "lru_evictor_counter":
            out += [("push_front", o, 0) for o in range(self.objects)]
        return out

    def concrete(self, s: System, move: Any) -> tuple[str, Any, Any]:
        op, obj, tick = move
        if op == "evict":
            return op, {}, {}
        args: dict[str, Any] = {"object": obj}
        if op == "insert" and self.component == "lru_evictor_wallclock":
            assert isinstance(s.model, WallClockLRU)
            args["clock"] = s.model.clock + tick
        elif op == "insert" and tick:
            return "insert", None, None  # the counter evictor has no clock: one insert move suffices
        return op, args, dict(args)

    def allows(self, s: System, move: Any) -> bool:
        """The counter evictor has no clock tick; and the wall-clock evictor's lazy queue is
        bounded: with equal timestamps its cleanup keeps every duplicate entry, so repeated
        inserts within one tick grow it without limit (a leak of the real code, §6 #12)."""
        if move[0] != "insert":
            return True
        if self.component == "lru_evictor_counter":
            return not move[2]
        m = s.model
        assert isinstance(m, WallClockLRU)
        return len(m.queue) < self.max_queue

    def key(self, s: System, symmetry: bool) -> Any:
        """Objects in eviction order, plus, for the wall-clock evictor, its lazy queue and table
        with timestamps replaced by their ranks among all timestamps and the clock (only
        equality and order of timestamps are observable). With symmetry, objects are renamed
        in order of first appearance."""
        m, mon = s.model, s.monitor
        if isinstance(m, WallClockLRU) and m.stale_quirk:
            stamps = sorted({*m.free_table.values(), *(t for _, t in m.queue), m.clock}, key=_stamp_key)
            rank = {t: i for i, t in enumerate(stamps)}
            body: tuple[Any, ...] = (
                tuple((o, rank[t]) for o, t in m.queue),
                tuple(sorted((o, rank[t]) for o, t in m.free_table.items())),
                rank[m.clock],
            )
        else:
            body = (tuple(m.order()),)
        ghost = tuple(mon.order)
        if not symmetry:
            return (body, ghost)
        names: dict[Any, int] = {}
        for o in [*_objects(body), *ghost]:
            names.setdefault(o, len(names))
        return (_rename(body, names), tuple(names[o] for o in ghost))

    def orbit(self, key: Any) -> int:
        used = len({o for o in [*_objects(key[0]), *key[1]]})
        return math.perm(self.objects, used)

    def move_kind(self, move: Any) -> str:
        return str(move[0])


class _NoSymmetry:
    """For spaces whose moves name fixed slots: the system's own key, orbits of one, moves named
    by their first element."""

    def key(self, s: System, symmetry: bool) -> Any:
        return s.key()

    def orbit(self, key: Any) -> int:
        return 1

    def move_kind(self, move: Any) -> str:
        return str(move[0])


@attrs.frozen
class RegSpace(_NoSymmetry):
    """Bounded registry world: ``states`` block-state slots (each filled with a Complete block of
    one of ``hashes`` hashes), ``publish_handles`` and ``arcs`` slots for what register_block and
    remove_handle return, ``publishers`` publisher slots, and at most ``max_pending`` undrained
    drops per registry. The registries come from the configuration. Moves: fill a slot,
    register_block of a slot in any registry, drop of any value, remove_handle, take_handle
    (returned Arc discarded), publish, new and cloned publishers, one drain step of a registry.
    Names are fixed slot names, so the state key needs no renaming beyond the model's handle ids.
    """

    component = "kvbm_block_registry"
    hashes: int = 2
    states: int = 3
    publish_handles: int = 2
    arcs: int = 1
    publishers: int = 1
    max_pending: int = 2
    # The registries: one per storage tier by default, plus a second Device pool with ``shared``.
    shared: bool = False

    def registries(self) -> list[list[str]]:
        return [["device0", "Device"], *([["device1", "Device"]] if self.shared else []), ["host", "HostPinned"]]

    def __attrs_post_init__(self) -> None:
        require_naturals(self, ("hashes", "states", "publish_handles", "arcs", "publishers", "max_pending"))

    def to_json(self) -> dict[str, int]:
        return {k: int(v) for k, v in attrs.asdict(self).items()}

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System:
        from kvmodel.systems import RegistrySystem

        return RegistrySystem({"registries": self.registries(), **config}, list(quirks))

    def _names(self) -> list[str]:
        return (
            [f"s{i}" for i in range(self.states)]
            + [f"ph{i}" for i in range(self.publish_handles)]
            + [f"a{i}" for i in range(self.arcs)]
            + [f"pub{i}" for i in range(self.publishers)]
        )

    def moves(self) -> list[Any]:
        self_pools = [r[0] for r in self.registries()]
        out: list[Any] = [("complete", i, h) for i in range(self.states) for h in range(self.hashes)]
        out += [("register", p, i) for p in self_pools for i in range(self.states)]
        out += [("drop", n) for n in self._names()]
        out += [("remove_handle", j) for j in range(self.publish_handles)]
        out += [("take", k, j) for k in range(self.publishers) for j in range(self.publish_handles)]
        out += [("publish", k) for k in range(self.publishers)]
        out += [("new_publisher", k) for k in range(self.publishers)]
        out += [("clone_publisher", k, k2) for k in range(self.publishers) for k2 in range(self.publishers) if k != k2]
        out += [("drain", p) for p in self_pools]
        return out

    def _free(self, s: System, prefix: str, n: int) -> str | None:
        for i in range(n):
            if f"{prefix}{i}" not in s.model.values:
                return f"{prefix}{i}"
        return None

    def concrete(self, s: System, move: Any) -> tuple[str, Any, Any]:
        kind = move[0]
        if kind == "complete":
            a: dict[str, Any] = {"as": f"s{move[1]}", "block": {"hash": move[2], "parent": None}}
            op = "state_from_reset_apply_token_block"
        elif kind == "register":
            op, a = "register_block", {"registry": move[1], "state": f"s{move[2]}"}
            a["as"] = self._free(s, "ph", self.publish_handles)
        elif kind == "drop":
            op, a = "drop", {"value": move[1]}
        elif kind == "remove_handle":
            op, a = "remove_handle", {"publish_handle": f"ph{move[1]}", "as": self._free(s, "a", self.arcs)}
        elif kind == "take":
            op, a = "take_handle", {"publisher": f"pub{move[1]}", "publish_handle": f"ph{move[2]}"}
        elif kind == "publish":
            op, a = "publish", {"publisher": f"pub{move[1]}"}
        elif kind == "new_publisher":
            op, a = "new_publisher", {"as": f"pub{move[1]}"}
        elif kind == "clone_publisher":
            op, a = "clone_publisher", {"publisher": f"pub{move[1]}", "as": f"pub{move[2]}"}
        else:
            op, a = "drain", {"registry": move[1]}
        decoded = s.decode(op, a)
        return op, decoded, a

    def allows(self, s: System, move: Any) -> bool:
        """Names must exist (or be free) as Rust's types would demand; a register that may create a
        publish handle needs a free slot; a drop that tells a registry's task needs room in its
        channel (the bound); a drain needs something to receive."""
        m = s.model
        vals = m.values
        kind = move[0]
        if kind == "complete":
            return f"s{move[1]}" not in vals
        if kind == "register":
            st = vals.get(f"s{move[2]}")
            if st is None:
                return False
            return not self._creates_handle(s, move[1], st) or self._free(s, "ph", self.publish_handles) is not None
        if kind == "drop":
            v = vals.get(move[1])
            if v is None:
                return False
            bh = getattr(v, "bh", None)
            return bh is None or len(m.pools[m.block_handles[bh].pool].pending) < self.max_pending
        if kind == "remove_handle":
            return f"ph{move[1]}" in vals and self._free(s, "a", self.arcs) is not None
        if kind == "take":
            return f"pub{move[1]}" in vals and f"ph{move[2]}" in vals
        if kind == "publish":
            return f"pub{move[1]}" in vals
        if kind == "new_publisher":
            return f"pub{move[1]}" not in vals
        if kind == "clone_publisher":
            return f"pub{move[1]}" in vals and f"pub{move[2]}" not in vals
        return bool(m.pools[move[1]].pending)

    @staticmethod
    def _creates_handle(s: System, pool: str, st: Any) -> bool:
        """Whether register_block would succeed with a new PublishHandle (it needs a free slot)."""
        m = s.model
        if st.kind != "Complete" or m.is_registered(pool, st.block.sequence_hash):
            return False
        p = m.pools[pool]
        rid = m.globals[p.global_name].get(m._key(p, st.block.sequence_hash))
        return rid is None or not m.handles[rid].alive


def _stamp_key(t: Any) -> tuple[int, int]:
    return (t, 0) if isinstance(t, int) else (t[0], t[1])


def _objects(body: tuple[Any, ...]) -> list[Any]:
    out: list[Any] = []
    for part in body:
        if isinstance(part, tuple):
            for x in part:
                out.append(x[0] if isinstance(x, tuple) else x)
    return out


def _rename(body: tuple[Any, ...], names: dict[Any, int]) -> tuple[Any, ...]:
    out: list[Any] = []
    for part in body:
        if isinstance(part, tuple):
            out.append(tuple((names[x[0]], *x[1:]) if isinstance(x, tuple) else names[x] for x in part))
        else:
            out.append(part)
    if len(out) >= 2 and isinstance(out[1], tuple):
        out[1] = tuple(sorted(out[1]))
    return tuple(out)


Sig = tuple[int, int, bool, bool, int]


_BLOCKS: dict[tuple[int, int], tuple[list[tuple[int, FullBlock]], list[PartialBlock]]] = {}


def _universe(space: KvSpace) -> tuple[list[tuple[int, FullBlock]], list[PartialBlock]]:
    """The space's block objects, built once (hashing fresh attrs objects dominated the search)."""
    k = (space.n_full, space.partials)
    if k not in _BLOCKS:
        _BLOCKS[k] = (
            [(h, FullBlock(h)) for h in range(space.n_full)],
            [PartialBlock(f"p{i}") for i in range(space.partials)],
        )
    return _BLOCKS[k]


def signatures(s: KvManagerSystem, space: KvSpace) -> tuple[list[Sig], list[Sig]]:
    """Per-id signatures: (refcount, LRU position or -1, resident, in router view, held)."""
    m, mon = s.model, s.monitor
    active, res, view, held = m.active, m.all_blocks, mon.view, mon.held
    pos = {b: i for i, b in enumerate(m.inactive.order())}
    fb, pb = _universe(space)
    fulls: list[Sig] = [(active.get(b, 0), pos.get(b, -1), b in res, h in view, held.get(b, 0)) for h, b in fb]
    parts: list[Sig] = [(active.get(b, 0), pos.get(b, -1), b in res, False, held.get(b, 0)) for b in pb]
    return fulls, parts


SIG_BYTES = 5


def _pack(sigs: Iterable[Sig]) -> bytes:
    return bytes(x for r, p, a, v, h in sigs for x in (r, p + 1, a, v, h))


def canonical(s: KvManagerSystem, space: KvSpace, symmetry: bool) -> bytes:
    """The state as a compact byte string: 5 bytes per id, sorted per group with symmetry."""
    fulls, parts = signatures(s, space)
    if symmetry:
        fulls.sort()
        parts.sort()
    return _pack(fulls) + _pack(parts)


def orbit_size(key: bytes, space: KvSpace) -> int:
    """How many concrete states a canonical key stands for (multinomial of equal signatures)."""
    cut = space.n_full * SIG_BYTES
    total = 1
    for group in (key[:cut], key[cut:]):
        chunks = [group[i : i + SIG_BYTES] for i in range(0, len(group), SIG_BYTES)]
        n = math.factorial(len(chunks))
        for c in Counter(chunks).values():
            n //= math.factorial(c)
        total *= n
    return total


@attrs.define
class ExploreResult:
    component: str
    config: dict[str, Any]
    quirks: list[str]
    space: dict[str, int]
    symmetry: bool
    states: int = 0
    transitions: int = 0
    depth: int = 0
    seconds: float = 0.0
    complete: bool = True
    violations: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    witnesses: dict[str, int] = attrs.field(factory=dict)
    missing_witnesses: list[str] = attrs.field(factory=list)
    coverage: dict[str, dict[str, int]] = attrs.field(factory=dict)
    deadlocks: int = 0
    bytes_per_state: float = 0.0
    concrete_states: int | None = None
    graph: Any = None
    moves: list[Any] = attrs.field(factory=list, repr=False)
    space_obj: Any = attrs.field(default=None, repr=False)

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "config": self.config,
            "quirks": self.quirks,
            "mode": "ideal" if not self.quirks else "custom",
            "space": self.space,
            "symmetry": self.symmetry,
            "states": self.states,
            "concrete_states": self.concrete_states,
            "transitions": self.transitions,
            "depth": self.depth,
            "complete": self.complete,
            "seconds": round(self.seconds, 3),
            "states_per_second": round(self.states_per_second, 1),
            "bytes_per_state": round(self.bytes_per_state, 1),
            "violations": {
                k: {x: y for x, y in v.items() if x not in ("trace", "found_after_s")}
                for k, v in self.violations.items()
            },
            "witnesses": self.witnesses,
            "missing_witnesses": self.missing_witnesses,
            "coverage": self.coverage,
            "deadlocks": self.deadlocks,
        }


def _deep_size(obj: Any, seen: set[int] | None = None) -> int:
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(_deep_size(k, seen) + _deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, tuple | list | set | frozenset):
        size += sum(_deep_size(x, seen) for x in obj)
    return size


def explore(
    config: dict[str, Any] | None = None,
    quirks: Iterable[str] = (),
    space: Space | None = None,
    *,
    symmetry: bool = True,
    max_states: int = 2_000_000,
    graph: bool = False,
    progress: Callable[[int, int, int], None] | None = None,
    stop_on_violation: bool = False,
) -> ExploreResult:
    """Breadth-first search of a component's reachable states (KV manager by default)."""
    sp: Space = space or KvSpace()
    init = sp.system(config or {}, quirks)
    moves = sp.moves()
    ws = invariants.witnesses_for(sp.component)
    res = ExploreResult(sp.component, init.config, sorted(init.quirks), sp.to_json(), symmetry)
    k0 = sp.key(init, symmetry)
    # canonical key -> (parent key, index of the move, depth); the root's parent is None
    parent: dict[Any, tuple[Any, int, int]] = {k0: (None, -1, 0)}
    queue: deque[tuple[Any, System]] = deque([(k0, init)])
    cov: dict[str, Counter[str]] = {}
    edges: list[tuple[Any, Any, str]] = []
    t0 = time.perf_counter()

    def path_to(k: Any) -> list[int]:
        out: list[int] = []
        while True:
            pk, mi, _ = parent[k]
            if pk is None:
                break
            out.append(mi)
            k = pk
        out.reverse()
        return out

    def keys_to(k: Any) -> list[Any]:
        out = [k]
        while parent[out[-1]][0] is not None:
            out.append(parent[out[-1]][0])
        out.reverse()
        return out

    while queue:
        if stop_on_violation and res.violations:
            res.complete = False
            break
        k, s = queue.popleft()
        d = parent[k][2]
        ok_any = False
        for mi, move in enumerate(moves):
            kind = sp.move_kind(move)
            c = cov.setdefault(kind, Counter())
            if not sp.allows(s, move):
                c["disabled"] += 1
                continue
            op, decoded, _ = sp.concrete(s, move)
            nxt = s.clone()
            out = nxt.apply(op, decoded)
            res.transitions += 1
            if out.error is not None:
                c["rejected"] += 1
            else:
                c["ok"] += 1
                ok_any = True
            for v in out.violations:
                if v.invariant not in res.violations:
                    steps = [*path_to(k), mi]
                    res.violations[v.invariant] = {
                        "depth": d + 1,
                        "message": v.message,
                        "steps": len(steps),
                        "trace": steps,
                        "found_after_s": round(time.perf_counter() - t0, 4),
                    }
                    if graph:
                        res.violations[v.invariant]["path_keys"] = [*keys_to(k), sp.key(nxt, symmetry)]
            if out.ctx is not None:
                for w in ws:
                    if w.name not in res.witnesses and w.check(out.ctx):
                        res.witnesses[w.name] = d + 1
            k2 = sp.key(nxt, symmetry)
            if graph:
                edges.append((k, k2, kind))
            if k2 not in parent:
                if len(parent) >= max_states:
                    res.complete = False
                    continue
                parent[k2] = (k, mi, d + 1)
                res.depth = max(res.depth, d + 1)
                queue.append((k2, nxt))
        if not ok_any:
            res.deadlocks += 1
        if progress is not None and len(parent) % 5000 == 0:
            progress(len(parent), res.transitions, d)
    res.seconds = time.perf_counter() - t0
    res.states = len(parent)
    res.coverage = {k: dict(v) for k, v in sorted(cov.items())}
    res.missing_witnesses = sorted(w.name for w in ws if w.name not in res.witnesses)
    sample = list(itertools.islice(parent.items(), 200))
    if sample:
        per = sum(_deep_size(kv) for kv in sample) / len(sample)
        res.bytes_per_state = per + sys.getsizeof(parent) / max(1, len(parent)) + 8 * 3
    res.concrete_states = sum(sp.orbit(k) for k in parent) if symmetry else res.states
    res.moves = moves
    res.space_obj = sp
    if graph:
        import networkx as nx

        g = nx.DiGraph()
        ids = {k: i for i, k in enumerate(parent)}
        for k, i in ids.items():
            pk = parent[k][0]
            g.add_node(i, depth=parent[k][2], parent=-1 if pk is None else ids[pk])
        for a, b, kind in edges:
            if a in ids and b in ids:
                g.add_edge(ids[a], ids[b], op=kind)
        # each violation's shortest counterexample as a node path (its last state may lie
        # beyond max_states; then the path stops at its last kept state)
        g.graph["paths"] = {
            inv: [ids[x] for x in v.pop("path_keys") if x in ids] for inv, v in sorted(res.violations.items())
        }
        res.graph = g
    return res


def violation_trace(res: ExploreResult, invariant: str) -> dict[str, Any]:
    """The shortest counterexample to ``invariant`` as a trace in the trace format."""
    sp = res.space_obj
    s = sp.system(res.config, res.quirks)
    ops: list[tuple[str, Any]] = []
    for mi in res.violations[invariant]["trace"]:
        op, decoded, args = sp.concrete(s, res.moves[mi])
        ops.append((op, args))
        s.apply(op, decoded)
    return traces.record(
        res.component,
        res.config,
        res.quirks,
        ops,
        origin={"engine": "explore", "space": res.space, "symmetry": res.symmetry},
        target=[invariant],
    )


G1_PROMPTS: tuple[tuple[int, ...], ...] = ((1, 2, 5), (7,), (1, 2, 3, 4))


@attrs.frozen
class G1Space(_NoSymmetry):
    """Bounded G1 world (native backend): ``owners`` requests, each started from one of the
    prompts (block size 2: a full block and a partial; a lone partial; the same first block and one more),
    growing by ``pushes`` tokens at most; at most one decode reservation of ``decode`` slots.
    Moves: start a request, allocate it (with or without prefix reuse), push a token, finalize
    what it has, free it (leaf first) or Deref it in table order, reserve / release decode
    slots, reserve a destination for a prompt and activate or cancel it."""

    component = "g1_native"
    owners: int = 2
    prompts: int = 3
    pushes: int = 2
    decode: int = 1

    def __attrs_post_init__(self) -> None:
        require_naturals(self, ("owners", "prompts", "pushes", "decode"))
        if self.prompts > len(G1_PROMPTS):
            raise InvalidInput(f"at most {len(G1_PROMPTS)} prompts")

    def to_json(self) -> dict[str, int]:
        return {k: int(v) for k, v in attrs.asdict(self).items()}

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System:
        from kvmodel.systems import G1System

        return G1System({"max_capacity": 3, **config}, list(quirks))

    def moves(self) -> list[Any]:
        os_, ps = range(self.owners), range(self.prompts)
        out: list[Any] = [("new_request", o, p) for o in os_ for p in ps]
        out += [("allocate", o, r) for o in os_ for r in (False, True)]
        out += [(k, o) for k in ("push", "finalize", "free", "deref_in_order") for o in os_]
        if self.decode:
            out += [("reserve_decode",), ("release_decode",)]
        out += [("reserve_destination", o, p) for o in os_ for p in ps]
        out += [(k, o) for k in ("activate_destination", "cancel_destination") for o in os_]
        return out

    def concrete(self, s: System, move: Any) -> tuple[str, Any, Any]:
        kind = move[0]
        if kind in ("new_request", "reserve_destination"):
            a: dict[str, Any] = {"owner": move[1], "tokens": list(G1_PROMPTS[move[2]])}
        elif kind == "allocate":
            a = {"owner": move[1], "reuse": move[2]}
        elif kind == "push":
            a = {"owner": move[1], "token": 6}
        elif kind == "reserve_decode":
            a = {"count": self.decode}
        elif kind == "release_decode":
            a = {}
        else:
            a = {"owner": move[1]}
        return kind, dict(a), a

    def allows(self, s: System, move: Any) -> bool:
        from kvmodel.systems import G1System

        assert isinstance(s, G1System)
        kind = move[0]
        seq = s.seqs.get(move[1]) if len(move) > 1 else None
        if kind in ("new_request", "reserve_destination"):
            return seq is None
        if kind == "allocate":
            return seq is not None and seq.num_allocated_tokens == 0 and move[1] not in s.dest
        if kind == "push":
            # Decode follows allocation; a push that starts a new block (and so promotes the
            # completed tail) happens only once everything before it was computed and finalized
            # (the scheduler generates a token after the forward pass over its predecessors).
            return (
                seq is not None
                and move[1] in s.model.native.tables
                and ((len(seq) + 1) % seq.block_size != 1 or s.computed.get(move[1]) == len(seq))
                and len(seq) < seq.num_input_tokens + self.pushes
                and move[1] not in s.dest
            )
        if kind == "finalize":
            return seq is not None and move[1] not in s.dest
        if kind in ("free", "deref_in_order"):
            return seq is not None and move[1] in s.model.native.tables and move[1] not in s.dest
        if kind == "reserve_decode":
            return not s.decodes
        if kind == "release_decode":
            return bool(s.decodes)
        return move[1] in s.dest  # activate / cancel


# (tokens, prefix caching): two full blocks; a block whose PLH collides with the first one's
# when fragments are reduced modulo 2 (a different sequence hash, the same PLH); a
# caching-disabled block (random hashes); a block with another PLH and a partial; the first
# prompt and a partial (three blocks: more than a capacity-2 world holds).
KVBM_PROMPTS: tuple[tuple[tuple[int, ...], bool], ...] = (
    ((1, 2, 3, 4), True),
    ((7, 8), True),
    ((9, 10), False),
    ((15, 16, 5), True),
    ((1, 2, 3, 4, 5), True),
)


@attrs.frozen
class KvbmSpace(_NoSymmetry):
    """Bounded G1 world with the KVBM backend (capacity 3, block size 2, PLH fragments modulo
    2): ``owners`` requests started from one of ``prompts`` prompts, growing by ``pushes``
    tokens; at most one decode reservation of ``decode`` slots; destinations; a request's
    blocks named again (``resend``); and the malformed inputs (``bad_use``, ``bad_deref``)."""

    component = "g1_kvbm"
    owners: int = 2
    prompts: int = 3
    pushes: int = 1
    decode: int = 0
    bad: bool = True

    def __attrs_post_init__(self) -> None:
        require_naturals(self, ("owners", "prompts", "pushes", "decode"))
        if self.prompts > len(KVBM_PROMPTS):
            raise InvalidInput(f"at most {len(KVBM_PROMPTS)} prompts")

    def to_json(self) -> dict[str, int]:
        return {k: int(v) for k, v in attrs.asdict(self).items()}

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System:
        from kvmodel.systems import G1KvbmSystem

        return G1KvbmSystem({"max_capacity": 3, "plh_fragments": 2, **config}, list(quirks))

    def moves(self) -> list[Any]:
        os_, ps = range(self.owners), range(self.prompts)
        out: list[Any] = [("new_request", o, p) for o in os_ for p in ps]
        out += [(k, o) for k in ("allocate", "push", "resend", "free") for o in os_]
        if self.decode:
            out += [("reserve_decode",), ("release_decode",)]
            out += [("decode_push", o) for o in os_]
        out += [("reserve_destination", o, p) for o in os_ for p in ps]
        out += [(k, o) for k in ("activate_destination", "cancel_destination") for o in os_]
        if self.bad:
            out += [("bad_use", "dup_partial"), ("bad_use", "hash_two_plhs")]
            out += [("bad_deref", o) for o in os_]
        return out

    def concrete(self, s: System, move: Any) -> tuple[str, Any, Any]:
        kind = move[0]
        if kind in ("new_request", "reserve_destination"):
            toks, caching = KVBM_PROMPTS[move[2]]
            a: dict[str, Any] = {"owner": move[1], "tokens": list(toks), "caching": caching}
        elif kind in ("push", "decode_push"):
            a = {"owner": move[1], "token": 6}
        elif kind == "reserve_decode":
            a = {"count": self.decode}
        elif kind == "release_decode":
            a = {}
        elif kind == "bad_use":
            a = {"kind": move[1]}
        else:
            a = {"owner": move[1]}
        return kind, dict(a), a

    def allows(self, s: System, move: Any) -> bool:
        from kvmodel.systems import G1KvbmSystem

        assert isinstance(s, G1KvbmSystem)
        kind = move[0]
        if kind == "bad_use":
            # once: a faithful commit-time panic leaves the entry installed, and naming it
            # again would only grow its reference count without bound
            m = s.model.kvbm
            return s.BAD_HASH not in m.active_full and "bad" not in m.active_partial
        o: int = move[1] if len(move) > 1 else -1
        seq = s.seqs.get(o)
        held = s.holdings.get(o) or []
        if kind in ("new_request", "reserve_destination"):
            return seq is None
        if kind == "allocate":
            return seq is not None and not held and o not in s.dest
        if kind in ("push", "decode_push"):
            if seq is None or not held or o in s.dest or o in s.stalled:
                return False
            if len(seq) >= seq.num_input_tokens + self.pushes:
                return False
            if kind == "decode_push":
                return bool(s.decodes) and ((len(seq) + 1) % seq.block_size != 1 or bool(s.decodes[0].slots))
            return True
        if kind == "resend":
            return bool(held) and len(held) == len(set(held)) and o not in s.dest
        if kind in ("free", "bad_deref"):
            return seq is not None and o not in s.dest
        if kind == "reserve_decode":
            return not s.decodes
        if kind == "release_decode":
            return bool(s.decodes)
        return o in s.dest  # activate / cancel
