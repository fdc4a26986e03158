"""Operation sequences for the differential check (:func:`kvmodel.api.check_implementation`).

A workload is drawn as a list of integers (*picks*; Hypothesis draws and shrinks them). Each
pick chooses one **operation group** uniformly — every kind of explorer move of the component's
API world (``Use``, ``Deref``, ``register``, ``allocate``, ...) is a group, and so is every
:class:`ApiOp` the component declares (its queries and the operations its explorer world does not
move, e.g. the KV manager's ``probe_new_blocks`` or the registry's ``add_tokens``) — and then an
instance of it. Choosing the group first is what makes every operation appear in a default run:
the KV manager's world has thousands of ``Use`` moves and one ``num_inactive_blocks``.

An odd pick looks (by a stride) for an instance the model accepts, so that workloads reach full
pools, evictions and shared blocks; an even pick takes the instance as drawn, rejections
included. A step the model answers with a panic that changed its state (a faithful revision's
mutation before a panic) ends the workload: Rust's engine does not go on from there. An instance
the model rejects as malformed (``InvalidInput``: a name not bound, an argument of the wrong kind)
is never emitted: workloads contain only inputs the real code's types admit, so an adapter need
not validate its inputs before acting on them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from kvmodel.model.errors import InvalidInput


@attrs.frozen
class ApiOp:
    """One operation the generator draws besides the explorer's moves: ``args(system, rnd)`` gives
    its JSON arguments in the current state (``None``: not applicable now); ``weight`` how many
    groups' worth of picks it gets."""

    op: str
    args: Callable[[Any, random.Random], Any]
    weight: int = 1


def const(op: str, args: Any = None) -> ApiOp:
    """An operation with fixed arguments (a query such as ``num_active_blocks``)."""
    value = {} if args is None else args
    return ApiOp(op, lambda _s, _r: dict(value))


MOVE_WEIGHT = 2  # an explorer move kind gets twice a declared operation's share of picks
STRIDE = 97
GROUP_STRIDE = 7919
SEARCH = 64


@attrs.frozen
class Group:
    """Picks of one kind: explorer moves of one ``move_kind``, one declared operation, or one
    kind of *run* (``runs``: short sequences of explorer moves drawn as one pick, each step
    accepted by the model)."""

    name: str
    moves: tuple[Any, ...] = ()
    api: ApiOp | None = None
    runs: tuple[tuple[Any, ...], ...] = ()


def groups(sp: Any, extra: Sequence[ApiOp], weights: Mapping[str, int] | None = None) -> list[Group]:
    """The operation groups of an API world, each repeated by its weight (in a stable order;
    ``weights``: a move kind's or run kind's weight when not ``MOVE_WEIGHT``). A world may
    declare runs (``sp.runs()``: run kind → sequences of moves): a state several steps away that
    single picks rarely build in order, such as a request admitted and freed, whose blocks are
    then cached and evictable."""
    weights = weights or {}
    kinds: dict[str, list[Any]] = {}
    for m in sp.moves():
        kinds.setdefault(str(sp.move_kind(m)), []).append(m)
    out: list[Group] = []
    for k, ms in kinds.items():
        out += [Group(k, tuple(ms))] * weights.get(k, MOVE_WEIGHT)
    runs = getattr(sp, "runs", None)
    for k, rs in (runs() if runs is not None else {}).items():
        out += [Group(k, runs=tuple(rs))] * weights.get(k, MOVE_WEIGHT)
    for a in extra:
        out += [Group(a.op, api=a)] * max(1, a.weight)
    return out


def concrete(
    sp: Any,
    extra: Sequence[ApiOp],
    system: Any,
    picks: Sequence[int],
    weights: Mapping[str, int] | None = None,
    only: frozenset[str] | None = None,
) -> list[tuple[str, Any]]:
    """The operation list a sequence of picks stands for, run from ``system`` (left unchanged);
    picks with nothing applicable are skipped. ``only``: the operations an adapter implements
    (``None``: all); no other operation is drawn."""
    gs = groups(sp, extra, weights)
    if only is not None:
        gs = [g for g in gs if g.api is None or g.api.op in only] or gs
    s = system
    ops: list[tuple[str, Any]] = []
    for pick in picks:
        want_ok = bool(pick & 1)
        n = (pick >> 1) // len(gs)
        chosen: tuple[list[tuple[str, Any]], Any, bool] | None = None
        # the drawn group first; when nothing of it applies here, the others in a scattered
        # order (a prime stride longer than the list), so no group inherits a disabled one's share
        for j in range(len(gs)):
            g = gs[((pick >> 1) + j * GROUP_STRIDE) % len(gs)]
            chosen = _run(sp, g, s, n, only) if g.runs else _instance(sp, g, s, n, want_ok, only)
            if chosen is not None:
                break
        if chosen is None:
            continue
        s = chosen[1]
        ops += chosen[0]
        if chosen[2]:  # a panic that left effects: Rust's task is gone, nothing follows it
            break
    return ops


def _run(
    sp: Any, g: Group, s: Any, n: int, only: frozenset[str] | None = None
) -> tuple[list[tuple[str, Any]], Any, bool] | None:
    """A run of group ``g`` whose every step the model accepts from ``s``, found by a stride from
    index ``n``: (its operations with their JSON arguments, the state after it, ``False``)."""
    for k in range(min(SEARCH, len(g.runs))):
        run = g.runs[(n + STRIDE * k) % len(g.runs)]
        t = s.clone()
        ops: list[tuple[str, Any]] = []
        for m in run:
            if not sp.allows(t, m):
                break
            op, decoded, args = sp.concrete(t, m)
            if op is None or args is None or (only is not None and op not in only):
                break
            if t.apply(op, decoded).error is not None:
                break
            ops.append((op, args))
        else:
            return ops, t, False
    return None


def _instance(
    sp: Any, g: Group, s: Any, n: int, want_ok: bool, only: frozenset[str] | None = None
) -> tuple[list[tuple[str, Any]], Any, bool] | None:
    """An instance of group ``g`` valid in ``s`` (accepted by the model when ``want_ok``), found
    by a stride from index ``n``: ([(op, JSON arguments)], the state after it, whether it
    panicked after changing the state).

    A step the model rejects and that changed nothing is a rejection the caller sees and goes on
    from. A step that raised *and changed the state* is a panic that left effects (a quirk of the
    revision: what Rust mutated before panicking); Rust's engine task dies there, so the state
    after it is one no real run continues from, and the workload ends with that step."""
    for k in range(SEARCH):
        if g.api is not None:
            raw = g.api.args(s, random.Random(n * 1_000_003 + k))
            if raw is None:
                return None
            op, args = g.api.op, raw
            try:
                decoded = s.decode(op, args)
            except InvalidInput:
                continue
        else:
            m = g.moves[(n + STRIDE * k) % len(g.moves)]
            if not sp.allows(s, m):
                continue
            op, decoded, args = sp.concrete(s, m)
            if op is None or args is None:
                continue
            if only is not None and op not in only:
                return None
        t = s.clone()
        err = t.apply(op, decoded).error
        if isinstance(err, InvalidInput) or (want_ok and err is not None):
            continue
        # a rejection that is a returned ``Err`` (``returned``: the router's event errors) is
        # gone on from even when it changed the state, as the Rust caller does
        halts = err is not None and not getattr(err, "returned", False) and t.key() != s.key()
        return [(op, args)], t, halts
    return None
