"""The explorer's breadth-first search spread over worker processes (``explore(..., workers=N)``,
``kvmodel explore --workers N``), with the same result as the search in one process.

**How.** The search goes level by level over ``N`` processes forked once, at the start. A
worker expands the states it is given exactly as the one-process loop does (guard, clone,
``apply``, key) and sends back, per state, one record per move. The main process then **merges
the records in the one-process order** — level, then state, then move — and does everything
that order decides: which successor is new (the parent map is only there), the parent, depth
and path of each new state, the first counterexample to each invariant, the first depth of
each witness, coverage, deadlocks, the stop for ``until`` / ``stop_on_violation``, and the
``max_states`` bound. So the parents, depths, counterexamples, counts and their order are the
one-process search's whatever ``N`` is (the test-suite compares both on every explorable
component, with quirks, stops and bounds).

**What a worker knows.** Every key stored before the level began (each level's new keys are
sent to every worker) and the keys it met during the level, in the order it met them; it
expands its states in the level's order. A successor met here for the first time, not stored
before, is a *first meeting*: the worker runs the deferred state invariants on it
(``invariants.check_state``), keeps the state, and sends its key; every other record names its
successor by reference (the state it left, a stored key, or an earlier first meeting), so most
records carry no key. A state new to the search is a first meeting of the worker that met it
first in the merge order — an earlier meeting in the same worker would come earlier in that
order — so it arrives with its state checks, and its worker holds it. Likewise only a worker's
first counterexample to an invariant, and its first meeting of a witness, can come first in the
merge: the others are not sent.

**Who expands what.** A new state stays with the worker holding it, except that a worker
holding more than its share of the level gives its last ones to those holding fewer
(:func:`balance`): those, and only those, cross two process boundaries, pickled (about 40 µs
each way for a G1 state, against about 400 µs to expand it). Every worker keeps a copy of the
stored keys.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any

from kvmodel import invariants, membound, signals

# the most worker processes ``explore`` will start (``kvmodel explore --workers`` is bounded too)
MAX_WORKERS = 64


def available() -> bool:
    """Whether worker processes can be forked here (the workers inherit the world and its moves
    by ``fork``; where there is none the search runs in one process)."""
    return "fork" in multiprocessing.get_all_start_methods()


class WorkerError(RuntimeError):
    """A worker process failed (its traceback is the message) or ended without answering."""

    def summary(self) -> str:
        """One line: what happened and, for a failure, the worker's exception."""
        lines = [x for x in str(self).splitlines() if x.strip()]
        return lines[0].rstrip(":") + (f": {lines[-1].strip()}" if len(lines) > 1 else "")


# A record per move, in the state's move order:
#   (mi, weight, 0)                                  the guard disallows the move
#   (mi, weight, cat, seen, k2, cand, step, full, wits)
#       the move ran: ``cat`` 1 rejected, 2 accepted. ``seen`` says where the successor's key is:
#       SAME (the state it left), KNOWN (stored before the level), or the index of the key among
#       those this worker met first in this level — ``k2`` is the key itself the first time
#       (else None, and always with ``graph``); ``cand`` the index of the worker's copy of that
#       first meeting (-1: none, not new here; -2: not kept, the level has no room); ``step``
#       the step's violations (None for none); ``full`` the step's and the state's on a first
#       meeting (None for none or not a first meeting); ``wits`` the witnesses it met (None for
#       none). Only first meetings carry keys: most steps reach a state stored before.
Record = tuple[Any, ...]
SAME, KNOWN = -1, -2


def _worker(conn: Connection, job: dict[str, Any]) -> None:
    """A worker's loop: expand the states of each level it is sent (see the module's text). It dies
    with the main process and leaves Ctrl-C to it (:func:`kvmodel.signals.as_worker`)."""
    signals.as_worker()
    try:
        with invariants.state_checks_deferred() if job["defer"] else contextlib.nullcontext():
            _serve(conn, job)
    except BaseException:  # reported to the main process, which raises it
        with contextlib.suppress(Exception):
            conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()


def _serve(conn: Connection, job: dict[str, Any]) -> None:
    # the collector, paused for the search (``membound.collector_paused``), as the main process
    # pauses it in the one-process loop
    with membound.collector_paused() as collector:
        _expand_levels(conn, job, collector)


def guards_of(sp: Any, moves: list[Any]) -> list[bool]:
    """Per move, whether the space's guard can refuse it (``guarded``; every move when the space
    does not say)."""
    guarded = getattr(sp, "guarded", None)
    return [True] * len(moves) if guarded is None else [bool(guarded(m)) for m in moves]


def _expand_levels(conn: Connection, job: dict[str, Any], collector: membound.PausedCollector) -> None:
    sp, moves, fixed, symmetry = job["space"], job["moves"], job["fixed"], job["symmetry"]
    component, defer, ws, graph = job["component"], job["defer"], job["witnesses"], job["graph"]
    classes, halt = job["classes"], job["stop"]

    allows, key = sp.allows, sp.key
    guarded = guards_of(sp, moves)
    every = [(i, 1) for i in range(len(moves))]
    known: set[Any] = set()
    held: list[Any] = []  # the states kept in the last level, by their index in its records
    while True:
        msg = conn.recv()
        if msg[0] == "stop":
            return
        if msg[0] == "rss":  # the search is over: this process's peak resident set size
            conn.send(("ok", peak_rss()))
            continue
        if msg[0] == "give":  # states of the last level another worker will expand
            conn.send(("ok", [pickle.dumps(held[i], pickle.HIGHEST_PROTOCOL) for i in msg[1]]))
            continue
        _, items, new_keys, pending_names, room, recorded = msg
        known.update(new_keys)
        collector.tick(len(known))
        told = set(recorded)
        pending = [w for w in ws if w.name in pending_names]
        met: dict[Any, int] = {}
        cands: list[Any] = []
        out: list[list[Record]] = []
        for n, ref in enumerate(items):
            if n % 64 == 63 and halt.is_set():  # past the memory bound: the level is dropped
                break
            s = held[ref] if isinstance(ref, int) else pickle.loads(ref)
            recs: list[Record] = []
            for mi, weight in every if classes is None else classes(s, moves):
                move = moves[mi]
                if guarded[mi] and not allows(s, move):
                    recs.append((mi, weight, 0))
                    continue
                op, decoded, args = sp.concrete(s, move) if fixed is None else fixed[mi]
                nxt = s.clone()
                o = nxt.apply(op, decoded, args)
                step = o.violations or None
                full = None
                cand = -1
                if o.unchanged:
                    seen, k2 = SAME, None
                else:
                    k2 = key(nxt, symmetry)
                    if k2 in known:
                        seen = KNOWN
                        if not graph:
                            k2 = None
                    else:
                        got = met.get(k2)
                        if got is not None:
                            seen = got
                            if not graph:
                                k2 = None
                        else:
                            seen = met[k2] = len(met)
                            if defer and o.ctx is not None:
                                full = invariants.check_state(component, o.ctx, o.violations) or None
                            else:
                                full = step
                            # at most ``room`` states are stored this level, and a worker's stored
                            # ones are among its first ``room`` met: the others need not be kept
                            if len(cands) < room:
                                cand = len(cands)
                                cands.append(nxt)
                            else:
                                cand = -2
                wits = None
                if pending and o.ctx is not None:
                    hit = [w.name for w in pending if w.check(o.ctx)]
                    if hit:
                        wits = hit
                        pending = [w for w in pending if w.name not in hit]
                # the main process keeps the first counterexample to each invariant: only this
                # worker's first of each, not already kept, can be it (see ``levels``)
                if step is not None:
                    step = [v for v in step if v.invariant not in told] or None
                if full is not None:
                    full = [v for v in full if v.invariant not in told] or None
                    if full is not None:
                        told.update(v.invariant for v in full)
                if step is not None:
                    told.update(v.invariant for v in step)
                cat = 2 if o.error is None else 1
                if k2 is None and cand == -1 and step is None and full is None and wits is None:
                    recs.append((mi, weight, cat, seen))
                else:
                    recs.append((mi, weight, cat, seen, k2, cand, step, full, wits))
            out.append(recs)
        held = cands
        conn.send(("ok", out))


@contextlib.contextmanager
def started(
    workers: int,
    *,
    space: Any,
    moves: list[Any],
    fixed: list[Any] | None,
    classes: Callable[..., list[tuple[int, int]]] | None,
    symmetry: bool,
    witnesses: list[Any],
    graph: bool,
    defer_state_checks: bool,
    stop: Any,
    pids: list[int],
) -> Iterator[list[Connection]]:
    """``workers`` processes forked with what a worker needs to expand states (the world, its
    moves, the witnesses), as the connections to them; every one is stopped and joined on the
    way out, however the search ended. ``stop``: an event that, once set (the memory bound,
    ``membound``), makes each worker end its level early; each worker's pid is added to
    ``pids``."""
    job = {
        "space": space,
        "moves": moves,
        "fixed": fixed,
        "symmetry": symmetry,
        "component": space.component,
        "defer": defer_state_checks,
        "witnesses": witnesses,
        "classes": classes,
        "graph": graph,
        "stop": stop,
    }
    ctx = multiprocessing.get_context("fork")
    conns: list[Connection] = []
    procs: list[Any] = []
    try:
        for _ in range(workers):
            mine, theirs = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(theirs, job), daemon=True)
            p.start()
            theirs.close()
            conns.append(mine)
            procs.append(p)
            assert p.pid is not None  # (started)
            pids.append(p.pid)
        yield conns
    except BaseException:  # an error, an interrupt, a signal: the workers go now, not in 5 s
        for p in procs:
            with contextlib.suppress(Exception):
                p.kill()
        raise
    finally:
        for c in conns:
            with contextlib.suppress(OSError):
                c.send(("stop",))
            c.close()
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)


def peak_rss_of(conns: list[Connection]) -> list[int]:
    """Each worker's peak resident set size in bytes, asked once the search is over (pages it
    shares with the main process, from the fork, count in both)."""
    for c in conns:
        _send(c, ("rss",))
    return [int(_receive(c)) for c in conns]


def _send(conn: Connection, msg: Any) -> None:
    try:
        conn.send(msg)
    except OSError:  # the worker is gone (killed, say, by the kernel for memory)
        raise WorkerError("an explorer worker ended without answering") from None


def _receive(conn: Connection) -> Any:
    try:
        msg = conn.recv()
    except EOFError:
        raise WorkerError("an explorer worker ended without answering") from None
    if msg[0] == "error":
        raise WorkerError(f"an explorer worker failed:\n{msg[1]}")
    return msg[1]


def balance(holders: list[int], workers: int) -> list[int]:
    """Who expands each state of a level, given who holds it: its holder, except that a worker
    holding more than its share gives its last states to the workers holding fewer, lowest
    first (a state given away crosses two process boundaries; one kept, none). Every worker
    ends with ``len(holders) // workers`` or one more."""
    n = len(holders)
    share, extra = divmod(n, workers)
    want = [share + (1 if w < extra else 0) for w in range(workers)]
    have = Counter(holders)
    # the receivers, each as many times as it is short
    short = [w for w in range(workers) for _ in range(max(0, want[w] - have[w]))]
    over = {w: have[w] - want[w] for w in range(workers) if have[w] > want[w]}
    out = list(holders)
    j = 0
    for p in range(n - 1, -1, -1):
        w = holders[p]
        if over.get(w, 0) > 0:
            over[w] -= 1
            out[p] = short[j]
            j += 1
    return out


def levels(
    conns: list[Connection],
    *,
    init: Any,
    k0: Any,
    kinds: list[str],
    witnesses: list[Any],
    res: Any,
    parent: dict[Any, tuple[Any, int, int]],
    cov: dict[str, Counter[str]],
    edges: list[tuple[Any, Any, str]],
    graph: bool,
    max_states: int,
    progress: Callable[[int, int, int], None] | None,
    stop_on_violation: bool,
    wanted: frozenset[str],
    t0: float,
    path_to: Callable[[Any], list[int]],
    keys_to: Callable[[Any], list[Any]],
    tripped: Any,
    collector: membound.PausedCollector,
) -> None:
    """The one-process loop of ``explorer.explore`` over the workers behind ``conns``
    (:func:`started`): level by level, each worker expands its share and the records are merged
    in the one-process order, filling ``res``, ``parent``, ``cov`` and ``edges`` as that loop
    does (the module's text says how)."""
    n = len(conns)
    # a level: (key, the worker holding the state, its index there; the root: -1, held by none)
    level: list[tuple[Any, int, int]] = [(k0, -1, -1)]
    root = pickle.dumps(init, pickle.HIGHEST_PROTOCOL)
    fresh: list[Any] = [k0]  # keys stored since the workers were last told
    pending = [w.name for w in witnesses]

    def stop() -> bool:
        """The one-process loop's test before it takes the next state."""
        if stop_on_violation and res.violations:
            res.complete, res.stopped_by = False, "violation"
            return True
        if wanted and wanted <= res.violations.keys():
            res.complete, res.stopped_by = False, "until"
            return True
        return False

    while level:
        if stop() or tripped.is_set():
            return
        collector.tick(len(parent))
        d = parent[level[0][0]][2]
        holders = [0 if h < 0 else h for _, h, _ in level]
        who = balance(holders, n)
        # the states changing hands, fetched from their holders
        gives: dict[int, list[int]] = {}
        for p, (_, h, _) in enumerate(level):
            if h >= 0 and who[p] != h:
                gives.setdefault(h, []).append(p)
        for h, ps in gives.items():
            _send(conns[h], ("give", [level[p][2] for p in ps]))
        blobs: dict[int, bytes] = {}
        for h, ps in gives.items():
            blobs.update(zip(ps, _receive(conns[h]), strict=True))
        # what each worker expands, in the level's order: a state it holds, by its index there,
        # or one it is given, pickled
        items: list[list[int | bytes]] = [[] for _ in range(n)]
        for p, (_, h, i) in enumerate(level):
            items[who[p]].append(root if h < 0 else blobs[p] if p in blobs else i)
        for c, mine in zip(conns, items, strict=True):
            _send(c, ("expand", mine, fresh, pending, max_states - len(parent), list(res.violations)))
        replies = [iter(_receive(c)) for c in conns]
        if tripped.is_set():
            # past the memory bound (``membound``): the workers may have stopped within the level,
            # so its records are dropped; the explorer reports the stop
            return
        names: list[list[Any]] = [[] for _ in range(n)]  # per worker, the keys it met first
        fresh = []
        nxt: list[tuple[Any, int, int]] = []
        for p, (k, _, _) in enumerate(level):
            w = who[p]
            recs = next(replies[w])
            if stop():
                return
            ok_any = False
            for rec in recs:
                mi, weight, cat = rec[0], rec[1], rec[2]
                kind = kinds[mi]
                tally = cov.get(kind)
                if tally is None:
                    tally = cov[kind] = Counter()
                if cat == 0:
                    tally["disabled"] += weight
                    continue
                if len(rec) == 4:
                    seen, k2, cand, step, full, wits = rec[3], None, -1, None, None, None
                else:
                    _, _, _, seen, k2, cand, step, full, wits = rec
                res.transitions += weight
                res.transitions_run += 1
                if cat == 1:
                    tally["rejected"] += weight
                else:
                    tally["ok"] += weight
                    ok_any = True
                if seen == SAME:
                    k2, new = k, False
                elif seen == KNOWN:
                    new = False
                else:
                    firsts = names[w]
                    if seen == len(firsts):
                        firsts.append(k2)
                    else:
                        k2 = firsts[seen]
                    new = k2 not in parent
                # a state new to the search is new to the worker that met it first (``cand``),
                # with its state checks; met again before it could be stored (``max_states``),
                # its state verdict is the one already recorded
                found = full if new and full is not None else step
                if found:
                    res.keep_first(found, (k, mi, k2, d + 1), t0, path_to, keys_to if graph else None)
                if wits:
                    for name in wits:
                        if name not in res.witnesses:
                            res.witnesses[name] = d + 1
                if graph:
                    edges.append((k, k2, kind))
                if new:
                    if len(parent) >= max_states:
                        res.complete, res.stopped_by = False, "states"
                        continue
                    if cand < 0:  # pragma: no cover - ruled out by the module's arguments
                        raise WorkerError(f"a new state came without its worker's copy (move {mi}, depth {d})")
                    parent[k2] = (k, mi, d + 1)
                    res.depth = max(res.depth, d + 1)
                    nxt.append((k2, w, cand))
                    fresh.append(k2)
            if not ok_any:
                res.deadlocks += 1
            if progress is not None and len(parent) % 5000 == 0:
                progress(len(parent), res.transitions, d)
        pending = [name for name in pending if name not in res.witnesses]
        level = nxt


def peak_rss() -> int:
    """This process's peak resident set size in bytes (``getrusage``; 0 where unavailable)."""
    try:
        import resource
    except ImportError:  # not on this platform
        return 0
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def default_workers() -> int:
    """The cores this process may use (the scheduler's affinity where known)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on this platform
        return max(1, os.cpu_count() or 1)
