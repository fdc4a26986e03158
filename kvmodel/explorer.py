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

import contextlib
import itertools
import marshal
import math
import os
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import attrs

from kvmodel import explore_workers, invariants, membound, traces
from kvmodel.explore_workers import MAX_WORKERS, guards_of
from kvmodel.model.quirks import mode_label
from kvmodel.systems import System


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

    # optional: ``cannot_break()`` and ``cannot_reach()``, the invariants and witnesses no run of
    # the world can break or reach
    # optional: ``guarded(move) -> bool``, false for a move ``allows`` admits in every state
    # (the searches then skip its guard); ``state_free_moves``; ``move_classes(state, moves)``


class NoSymmetry:
    """For spaces whose moves name fixed slots: the system's own key and orbits of one (a space
    whose moves are action instances names them by their operation, ``actions.ActionMoves``)."""

    def key(self, s: System, symmetry: bool) -> Any:
        return s.key()

    def orbit(self, key: Any) -> int:
        return 1


def _renamed(s: Any, order: Sequence[int]) -> tuple[list[int], bytes]:
    """The renaming that gives the ``i``-th request of ``order`` the name ``i`` (``perm[o]`` is
    ``o``'s new name), and the state's key under it, spelled by ``marshal``."""
    perm = [0] * len(order)
    for new, o in enumerate(order):
        perm[o] = new
    identity = all(i == p for i, p in enumerate(perm))
    return perm, marshal.dumps(s.key() if identity else s.key_under(tuple(perm)), 2)


def owner_canonical(s: Any, owners: int) -> tuple[int, bytes]:
    """Request symmetry for a system with ``key_under(perm)`` (its key with request ``o``
    renamed ``perm[o]``) and ``owner_signature(o)`` (what request ``o`` alone looks like, the
    same for a request and its renamed image).

    The requests are renamed in the order of their signatures, and only requests with equal
    signatures are tried in every order: the canonical form is the least key over those
    renamings, each key spelled as bytes by ``marshal`` (format 2: no back-references, so equal
    keys give equal bytes, whatever objects they share; keys mix ``None`` and numbers, so they
    are compared spelled, not as tuples). The keys are tuples of integers, strings, booleans and
    ``None`` only (a test walks both G1 worlds to check it): a set or a dict would be spelled in
    its iteration order, which equal values need not share. Every state of an orbit tries the same
    set of images, so the form is canonical; with ``d`` distinct keys among the ``c`` renamings
    tried, the orbit has ``owners! * d / c`` states (the stabiliser lies among the renamings of
    equal signatures), so the concrete count stays known. Soundness rests on the model treating
    requests alike; the test-suite compares reduced and unreduced searches."""
    sigs = [s.owner_signature(o) for o in range(owners)]
    order = sorted(range(owners), key=lambda o: sigs[o])
    if all(sigs[a] != sigs[b] for a, b in itertools.pairwise(order)):
        # no two requests alike (most states): one renaming is tried, the one that puts the
        # requests in signature order; nothing but the identity fixes the state
        s.owner_stabilizer = ()
        return math.factorial(owners), _renamed(s, order)[1]
    groups: list[list[int]] = []
    for o in order:
        if groups and sigs[groups[-1][0]] == sigs[o]:
            groups[-1].append(o)
        else:
            groups.append([o])
    keys: set[bytes] = set()
    tried = 0
    first: bytes | None = None
    inv: list[int] = []  # the inverse of the first renaming tried
    fixing: list[tuple[int, ...]] = []
    for arrangement in itertools.product(*(itertools.permutations(g) for g in groups)):
        perm, b = _renamed(s, [o for g in arrangement for o in g])
        tried += 1
        keys.add(b)
        if first is None:
            first, inv = b, [0] * owners
            for o, new in enumerate(perm):
                inv[new] = o
        elif b == first:
            # renaming by ``perm`` gives the state renaming by the first one gives: the first's
            # inverse after ``perm`` leaves the state as it is
            fixing.append(tuple(inv[perm[o]] for o in range(owners)))
    s.owner_stabilizer = tuple(fixing)
    return math.factorial(owners) * len(keys) // tried, min(keys)


def owner_stabilizer(s: Any, owners: int) -> tuple[tuple[int, ...], ...]:
    """The renamings of the requests (``perm[o]`` is ``o``'s new name) other than the identity
    that leave the state's key as it is, among those :func:`owner_canonical` tries (only requests
    with equal signatures trade names, and a renaming that fixes the state keeps every request's
    signature, so these are all of them): recorded on the system when its canonical form was
    computed, else computed now."""
    got = getattr(s, "owner_stabilizer", None)
    if got is None:
        owner_canonical(s, owners)
        got = s.owner_stabilizer
    return got  # type: ignore[no-any-return]


@attrs.define
class ExploreResult:
    component: str
    config: dict[str, Any]
    quirks: list[str]
    space: dict[str, int]
    symmetry: bool
    states: int = 0
    transitions: int = 0
    # the transitions actually run: with symmetry a space may expand one move per class of moves
    # the state's own symmetries make alike (``move_classes``); ``transitions`` counts them all
    transitions_run: int = 0
    depth: int = 0
    seconds: float = 0.0
    complete: bool = True
    violations: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    witnesses: dict[str, int] = attrs.field(factory=dict)
    missing_witnesses: list[str] = attrs.field(factory=list)
    # the witnesses the world declares it cannot reach (``Space.cannot_reach``): not asked, and
    # never missing
    unreachable_witnesses: list[str] = attrs.field(factory=list)
    coverage: dict[str, dict[str, int]] = attrs.field(factory=dict)
    deadlocks: int = 0
    bytes_per_state: float = 0.0
    concrete_states: int | None = None
    # the invariants the search stops for once each has its shortest counterexample (``until``),
    # and whether it stopped so
    until: list[str] = attrs.field(factory=list)
    # what the world bounds that the real code does not (``bounds_of``)
    bounds: list[str] = attrs.field(factory=list)
    # why an incomplete search stopped: "states" (``max_states``), "memory" (``max_memory``),
    # "until" (every invariant asked for has its counterexample, ``stopped_early``), "violation"
    # (``stop_on_violation``); None for a complete search
    stopped_by: str | None = None
    # the bound on the search's resident memory (None: none kept) and, when it stopped the
    # search, the resident memory the watch saw
    max_memory_bytes: int | None = None
    memory_seen_bytes: int = 0
    peak_rss_bytes: int = 0
    # the processes that expanded states (``explore(..., workers=N)``; the result is the same)
    workers: int = 1
    # each worker's peak resident set size (empty in one process; ``peak_rss_bytes`` is the main
    # process's): the pages a worker shares with the main process since the fork count in both
    workers_peak_rss_bytes: list[int] = attrs.field(factory=list)
    graph: Any = None
    moves: list[Any] = attrs.field(factory=list, repr=False)
    space_obj: Any = attrs.field(default=None, repr=False)

    def keep_first(
        self,
        violations: Iterable[Any],
        step: tuple[Any, int, Any, int],
        t0: float,
        path_to: Callable[[Any], list[int]],
        keys_to: Callable[[Any], list[Any]] | None,
    ) -> None:
        """Keep the first counterexample to each invariant among ``violations`` (breadth-first
        order makes it a shortest one), found on ``step``: from the state keyed ``k`` by move
        ``mi`` to the state keyed ``k2`` at depth ``depth``. Kept: its depth, message, the moves
        that reach it, when it was found and, with a state graph (``keys_to``), the keys along it."""
        k, mi, k2, depth = step
        for v in violations:
            if v.invariant not in self.violations:
                steps = [*path_to(k), mi]
                got = self.violations[v.invariant] = {
                    "depth": depth,
                    "message": v.message,
                    "steps": len(steps),
                    "trace": steps,
                    "found_after_s": round(time.perf_counter() - t0, 4),
                }
                if keys_to is not None:
                    got["path_keys"] = [*keys_to(k), k2]

    @property
    def stopped_early(self) -> bool:
        """Whether the search stopped once every invariant in ``until`` had its counterexample."""
        return self.stopped_by == "until"

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds else 0.0

    def verdict(self, *, expect_witnesses: bool) -> str:
        """``violation`` for a counterexample (or, where the world should reach every witness, a
        witness missing from a complete search: the check was vacuous); ``inconclusive`` for a
        search stopped at its bound; else ``pass``."""
        if self.violations or (expect_witnesses and self.complete and self.missing_witnesses):
            return "violation"
        return "pass" if self.complete else "inconclusive"

    def describe(self, max_states: int, paths: dict[str, str]) -> list[str]:
        """The lines ``kvmodel explore`` prints."""
        lines = [
            f"{self.states} states ({self.concrete_states} without symmetry), {self.transitions} transitions"
            + ("" if self.transitions_run == self.transitions else f" ({self.transitions_run} run)")
            + ", "
            f"depth {self.depth}, {self.seconds:.2f}s ({self.states_per_second:,.0f} states/s, "
            f"{self.bytes_per_state:.0f} bytes/state{'' if self.workers == 1 else f', {self.workers} workers'})"
            + (
                ""
                if self.complete
                else f"; stopped once each of the {len(self.until)} invariants the quirks break had its shortest "
                "counterexample (--exhaustive searches on)"
                if self.stopped_early
                else f"; INCOMPLETE: stopped at the memory bound ({_gib(self.memory_seen_bytes)} resident, "
                f"--max-memory {_gib(self.max_memory_bytes or 0)})"
                if self.stopped_by == "memory"
                else f"; INCOMPLETE: stopped at {max_states} states"
            )
        ]
        lines += [f"bounded: {b}" for b in self.bounds]
        lines += [
            f"  {op:<8} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())) for op, c in self.coverage.items()
        ]
        missing = f"; MISSING: {', '.join(self.missing_witnesses)}" if self.missing_witnesses else ""
        outside = f"; not in this world: {', '.join(self.unreachable_witnesses)}" if self.unreachable_witnesses else ""
        lines.append(f"witnesses reached: {len(self.witnesses)}{missing}{outside}")
        lines.append(f"deadlocks: {self.deadlocks}")
        for inv, v in sorted(self.violations.items(), key=lambda x: (x[1]["depth"], x[0])):
            to = f" -> {paths[inv]}" if inv in paths else ""
            lines.append(f"VIOLATION {inv} at depth {v['depth']}: {v['message']}{to}")
        if not self.violations:
            lines.append("no invariant violated")
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "config": self.config,
            "quirks": self.quirks,
            "mode": mode_label(self.component, self.quirks),
            "space": self.space,
            "symmetry": self.symmetry,
            "states": self.states,
            "concrete_states": self.concrete_states,
            "transitions": self.transitions,
            "transitions_run": self.transitions_run,
            "depth": self.depth,
            "complete": self.complete,
            "stopped_early": self.stopped_early,
            "stopped_by": self.stopped_by,
            "until": self.until,
            "seconds": round(self.seconds, 3),
            "peak_rss_bytes": self.peak_rss_bytes,
            "states_per_second": round(self.states_per_second, 1),
            "bytes_per_state": round(self.bytes_per_state, 1),
            "violations": {
                k: {x: y for x, y in v.items() if x not in ("trace", "found_after_s")}
                for k, v in self.violations.items()
            },
            "witnesses": self.witnesses,
            "missing_witnesses": self.missing_witnesses,
            "unreachable_witnesses": self.unreachable_witnesses,
            "coverage": self.coverage,
            "deadlocks": self.deadlocks,
            "bounds": self.bounds,
            "workers": self.workers,
            "workers_peak_rss_bytes": self.workers_peak_rss_bytes,
            # the memory bound, where it stopped the search (the ``auto`` bound depends on what
            # the machine has free: a search it did not stop says nothing of it, so the same
            # search gives the same bytes)
            **(
                {"max_memory_bytes": self.max_memory_bytes, "memory_seen_bytes": self.memory_seen_bytes}
                if self.stopped_by == "memory"
                else {}
            ),
        }


def _gib(n: int) -> str:
    """A size in bytes for people (MiB under a GiB)."""
    return f"{n / (1 << 30):.2f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MiB"


def bounds_of(space: Any) -> list[str]:
    """What the world ``space`` declares it bounds that the real code does not (``Space.bounds``,
    optional): the explorer reports them, so that a finite search says what made it finite."""
    f = getattr(space, "bounds", None)
    return list(f()) if f is not None else []


def cannot_break(space: Any) -> frozenset[str]:
    """The invariants ``space`` declares no run of its world breaks (``Space.cannot_break``,
    optional; none by default)."""
    f = getattr(space, "cannot_break", None)
    return frozenset(f()) if f is not None else frozenset()


def cannot_reach(space: Any) -> frozenset[str]:
    """The witnesses ``space`` declares no run of its world reaches (``Space.cannot_reach``,
    optional; none by default): the search does not ask them, and a complete search without them
    is not vacuous (the world leaves out what they witness, on purpose)."""
    f = getattr(space, "cannot_reach", None)
    return frozenset(f()) if f is not None else frozenset()


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
    until: Iterable[str] | None = None,
    reduce_moves: bool = True,
    defer_state_checks: bool = True,
    workers: int = 1,
    max_memory: int | None = None,
) -> ExploreResult:
    """Breadth-first search of a component's reachable states in the bounded world ``space``
    (a component's ``Space``: ``kvmodel.components``).

    ``until``: invariants to stop for — once each has a counterexample the search ends
    (``stopped_early``, not ``complete``). Breadth-first order makes each first counterexample a
    shortest one, so nothing the search would still find is shorter. ``kvmodel explore`` passes
    the invariants its quirks break (``Quirk.breaks``); an invariant the world cannot break keeps
    the search going to its end or its bound.

    With ``symmetry`` and a space that has ``move_classes(state, moves)``, each state expands one
    move per class of moves its own symmetries make alike, weighted by the class's size in the
    transition and coverage counts (``reduce_moves=False`` expands every move: the peer of the
    test that both searches give the same result).

    ``defer_state_checks``: the ``state`` invariants run once per new state, at the first step
    that reaches it, not on every step (``invariants.state_checks_deferred``; ``False`` runs them
    on every step: the peer of the test that both give the same result). Deferring rests on the
    space's key deciding the state invariants' verdict, as it decides the search's (two states
    with one key are one state). Every shipped model's key does (the test compares both searches
    on every small manifest entry); a seeded bug need not — the mutation benchmark found a
    counter-evictor mutant whose depth-1 violation hides behind a known key — so the mutation
    runner checks every step.

    ``workers``: expand each level's states in this many forked processes
    (``kvmodel.explore_workers``); the result is the one-process search's, timings and
    ``workers`` apart. Where processes cannot be forked, one process searches.

    ``max_memory``: a bound in bytes on the resident memory of the search's processes, summed
    (``kvmodel.membound``; ``None``: none). Past it the search stops where it stands — in one
    process before the next state, with workers at the end of the level, whose records are
    dropped — and is incomplete (``stopped_by == "memory"``): where it stops depends on when the
    bound was passed, so only the states and counts up to there are the one-process search's.

    Python's cycle collector is paused for the search and given back as it was found
    (``membound.collector_paused``): the models leave no reference cycles, so it would only scan
    the stored states again and again; a full collection still runs each time they double."""
    if space is None:
        raise TypeError("explore() needs a space: a component's bounded world")
    if not isinstance(workers, int) or isinstance(workers, bool) or not 1 <= workers <= MAX_WORKERS:
        raise ValueError(f"workers must be an integer from 1 to {MAX_WORKERS}, not {workers!r:.40}")
    if max_memory is not None and (not isinstance(max_memory, int) or isinstance(max_memory, bool) or max_memory < 1):
        raise ValueError(f"max_memory must be a positive number of bytes or None, not {max_memory!r:.40}")
    sp: Space = space
    init = sp.system(config or {}, quirks)
    moves = sp.moves()
    outside = cannot_reach(sp)
    ws = tuple(w for w in invariants.witnesses_for(sp.component) if w.name not in outside)
    pending, found = list(ws), 0
    res = ExploreResult(sp.component, init.config, sorted(init.quirks), sp.to_json(), symmetry)
    wanted = frozenset(until or ())
    res.until = sorted(wanted)
    res.bounds = bounds_of(sp)
    classes: Callable[[System, list[Any]], list[tuple[int, int]]] | None = (
        getattr(sp, "move_classes", None) if symmetry and reduce_moves else None
    )
    every = [(i, 1) for i in range(len(moves))]
    kinds = [sp.move_kind(m) for m in moves]
    allows, key = sp.allows, sp.key
    guarded = guards_of(sp, moves)
    # a space whose moves decode alike in every state (``state_free_moves``) decodes each once
    fixed = [sp.concrete(init, m) for m in moves] if getattr(sp, "state_free_moves", False) else None
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

    if workers > 1 and not explore_workers.available():
        workers = 1
    res.workers = workers
    res.max_memory_bytes = max_memory if membound.readable() else None
    tripped = membound.event(workers)
    pids: list[int] = [os.getpid()]
    with (
        membound.collector_paused() as collector,
        membound.watching(res.max_memory_bytes, tripped, lambda: pids) as watch,
    ):
        if workers > 1:
            with explore_workers.started(
                workers,
                space=sp,
                moves=moves,
                fixed=fixed,
                classes=classes,
                symmetry=symmetry,
                witnesses=pending,
                graph=graph,
                defer_state_checks=defer_state_checks,
                stop=tripped,
                pids=pids,
            ) as conns:
                explore_workers.levels(
                    conns,
                    init=init,
                    k0=k0,
                    kinds=kinds,
                    witnesses=pending,
                    res=res,
                    parent=parent,
                    cov=cov,
                    edges=edges,
                    graph=graph,
                    max_states=max_states,
                    progress=progress,
                    stop_on_violation=stop_on_violation,
                    wanted=wanted,
                    t0=t0,
                    path_to=path_to,
                    keys_to=keys_to,
                    tripped=tripped,
                    collector=collector,
                )
                res.workers_peak_rss_bytes = explore_workers.peak_rss_of(conns)
            queue.clear()
        with invariants.state_checks_deferred() if defer_state_checks else contextlib.nullcontext():
            while queue:
                if stop_on_violation and res.violations:
                    res.complete, res.stopped_by = False, "violation"
                    break
                if wanted and wanted <= res.violations.keys():
                    res.complete, res.stopped_by = False, "until"
                    break
                if tripped.is_set():  # past the memory bound (the result says so below)
                    break
                k, s = queue.popleft()
                collector.tick(len(parent))
                d = parent[k][2]
                ok_any = False
                counted = run = 0
                for mi, weight in every if classes is None else classes(s, moves):
                    move = moves[mi]
                    kind = kinds[mi]
                    c = cov.get(kind)
                    if c is None:  # (``setdefault`` would build a Counter per move)
                        c = cov[kind] = Counter()
                    if guarded[mi] and not allows(s, move):
                        c["disabled"] += weight
                        continue
                    op, decoded, args = sp.concrete(s, move) if fixed is None else fixed[mi]
                    nxt = s.clone()
                    out = nxt.apply(op, decoded, args)
                    counted += weight
                    run += 1
                    if out.error is not None:
                        c["rejected"] += weight
                    else:
                        c["ok"] += weight
                        ok_any = True
                    # a step its system knows changed nothing reaches the state it left (same key)
                    k2 = k if out.unchanged else key(nxt, symmetry)
                    new = k2 not in parent
                    violations = out.violations
                    if new and defer_state_checks and out.ctx is not None:
                        # the state invariants, deferred (``invariants.state_checks_deferred``): once per
                        # state, at the first step that reaches it (a step to a known state would give
                        # the verdict that state already had)
                        violations = out.violations = invariants.check_state(sp.component, out.ctx, violations)
                    if violations:
                        res.keep_first(violations, (k, mi, k2, d + 1), t0, path_to, keys_to if graph else None)
                    if pending and out.ctx is not None:
                        for w in pending:
                            if w.check(out.ctx):
                                res.witnesses[w.name] = d + 1
                        if len(res.witnesses) > found:  # ask only the witnesses not yet seen
                            found = len(res.witnesses)
                            pending = [w for w in pending if w.name not in res.witnesses]
                    if graph:
                        edges.append((k, k2, kind))
                    if new:
                        if len(parent) >= max_states:
                            res.complete, res.stopped_by = False, "states"
                            continue
                        parent[k2] = (k, mi, d + 1)
                        res.depth = max(res.depth, d + 1)
                        queue.append((k2, nxt))
                res.transitions += counted
                res.transitions_run += run
                if not ok_any:
                    res.deadlocks += 1
                if progress is not None and len(parent) % 5000 == 0:
                    progress(len(parent), res.transitions, d)
    if tripped.is_set():
        res.complete, res.stopped_by = False, "memory"
        res.memory_seen_bytes = watch.seen if watch is not None else 0
    res.seconds = time.perf_counter() - t0
    res.peak_rss_bytes = explore_workers.peak_rss()
    res.states = len(parent)
    res.coverage = {k: dict(v) for k, v in sorted(cov.items())}
    res.missing_witnesses = sorted(w.name for w in ws if w.name not in res.witnesses)
    res.unreachable_witnesses = sorted(outside)
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
