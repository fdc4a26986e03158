"""The request harness both G1 systems share: the G1 manager (``model/g1/g1_manager.py``) driven
request by request, as the mocker's scheduler drives it.

A subclass names its component and backend and its operations, one typed action class each
(:class:`G1Action`, in the backend's ``actions`` module: the arguments, their checks and what the
operation does to the system); :meth:`G1RequestSystem.apply` dispatches on the action (no chain
of name tests), and around every step does what both need: the request bookkeeping (sequences,
decode and destination reservations, plus the subclass's own, :meth:`_bookkeeping`) is restored
when the manager rejects the step — the operated request's sequence is copied first, since a
signal's sequence-side change (a promoted tail, a pushed token) precedes the rejection — then the
events are drained into the monitor and the component's invariants are checked on the step.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Self

import attrs
from hypothesis import strategies as st

from kvmodel import argspec as A
from kvmodel.actions import Action, ActionMoves, Actions
from kvmodel.invariants import StepContext
from kvmodel.model.blocks import FullBlock, PartialBlock
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.g1.acquire import CapacityExhausted, Ready
from kvmodel.model.g1.vllm_block_pool import MAX_SLOTS
from kvmodel.model.quirks import resolve
from kvmodel.systems import Outcome, System, check_config


def _ints(x: Any) -> list[int]:
    """Every integer in a nested key (tuples, lists, dicts, frozensets)."""
    out: list[int] = []
    stack = [x]
    while stack:
        v = stack.pop()
        if isinstance(v, int) and not isinstance(v, bool):
            out.append(v)
        elif isinstance(v, tuple | list | frozenset | set):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
    return out


def renaming(perm: tuple[int, ...] | None) -> tuple[Callable[[int], int], Callable[[str], str]]:
    """The request renaming ``o -> perm[o]`` on request ids and on the partial names their
    sequences mint (``r<o>.u<n>``, the systems' naming), or the identity."""
    if perm is None:
        return (lambda o: o), (lambda u: u)
    p = perm

    def uuid(u: str) -> str:
        head, dot, rest = u.partition(".")
        if not (dot and head[:1] == "r" and head[1:].isdigit()):
            return u  # not a request's name (the malformed-input moves' fixed names)
        return f"r{p[int(head[1:])]}{dot}{rest}"

    return (lambda o: p[o]), uuid


def _block_text(b: Any, uuid: Callable[[str], str]) -> str:
    t = type(b)
    if t is FullBlock:
        return f"FullBlock(hash={b.hash!r})"  # repr(b), without attrs' generic repr
    if t is PartialBlock:
        return f"PartialBlock(uuid={uuid(b.uuid)!r})"
    return repr(b)


def renamed_blocks(blocks: Iterable[Any], uuid: Callable[[str], str]) -> tuple[str, ...]:
    """The blocks' reprs (as the systems' keys hold them), partial names renamed by ``uuid``."""
    return tuple(_block_text(b, uuid) for b in blocks)


TOKENS = st.integers(1, 9)


@st.composite
def drawn_prompts(draw: Any, table: tuple[tuple[int, ...], ...], most: int) -> tuple[tuple[int, ...], ...]:
    """Up to ``most`` prompts Hypothesis draws beside a world's literal ``table`` (the machines'
    worlds; the explorer keeps its literal tables alone): each a prefix of one of the table's
    prompts cut anywhere (on a block boundary or inside a block: whole blocks shared, a block's
    first tokens shared, or nothing) with a drawn tail of up to four tokens. Hypothesis shrinks
    them away, to the literal world."""
    out = []
    for _ in range(draw(st.integers(0, most))):
        base = draw(st.sampled_from(table))
        cut = draw(st.integers(0, len(base)))
        tail = draw(st.lists(TOKENS, max_size=4))
        out.append(tuple(base[:cut]) + tuple(tail) or base)
    return tuple(out)


def prompt_table(v: Any) -> tuple[tuple[int, ...], ...]:
    """A table of prompts as a world holds it (tuples; JSON gives lists)."""
    return tuple(tuple(int(t) for t in p) for p in v)


class G1Action(Action, abc.ABC):
    """One request-level operation of a G1 system: it runs on the system (the manager and the
    request bookkeeping beside it, as the mocker's scheduler keeps it), not on the bare manager
    (after a model error the system restores the request bookkeeping). ``owner``, where the
    operation has one, is the request it operates on."""


@attrs.frozen
class Push(G1Action):
    """A decoded token: the sequence's Promote of a completed tail and Use of a new partial, each
    through ``process_for_request`` (only a request that decodes: the backend's ``_push``)."""

    op = "push"
    RETURNS = '[Ready(n) | "CapacityExhausted"]'
    MEANS = "the signals' results, one per signal the token caused (list)"
    ARGS: ClassVar[A.Spec] = {"owner": (A.REQUIRED, A.owner), "token": (A.REQUIRED, A.u32)}
    owner: int
    token: int

    def run(self, system: Any) -> Any:
        return system._push(self.owner, self.token)


@attrs.frozen
class ReserveDecode(G1Action):
    """``reserve_decode_blocks(count)``: ``Ready`` (the reservation kept) or ``CapacityExhausted``."""

    op = "reserve_decode"
    RETURNS = '"Ready" | "CapacityExhausted"'
    MEANS = "`Ready`, or `CapacityExhausted`"
    ARGS: ClassVar[A.Spec] = {"count": (A.REQUIRED, A.usize)}
    count: int

    def run(self, system: Any) -> Any:
        return system._reserve_decode(self.count)


@attrs.frozen
class ActivateDestination(G1Action):
    """The transfer landed (``G1Manager::activate_destination``): the request's prompt is
    computed and it runs on what the reservation held (the backend's ``_activated``)."""

    op = "activate_destination"
    RETURNS = "null"
    MEANS = "`null`; the transfer landed: the request runs"
    ARGS: ClassVar[A.Spec] = {"owner": (A.REQUIRED, A.owner)}
    owner: int

    def run(self, system: Any) -> None:
        o = self.owner
        r = system._destination(o)
        held = system._held_by(r)
        system.model.activate_destination(r)
        s = system.seqs[o]
        s.commit_allocation(s.num_input_tokens)
        system._activated(o, held)
        del system.dest[o]


@attrs.frozen
class ReleaseDecode(G1Action):
    """Release the oldest outstanding decode reservation (``G1Manager::release_decode_reservation``)."""

    op = "release_decode"
    RETURNS = "null"
    MEANS = "`null`; the oldest outstanding decode reservation goes back"

    def run(self, system: Any) -> None:
        if not system.decodes:
            raise InvalidInput("no decode reservation outstanding")
        system.model.release_decode_reservation(system.decodes[0])
        system.decodes.pop(0)


@attrs.frozen
class Free(G1Action):
    """The request's terminal Deref of what it holds, leaf first; the request leaves (the
    system's ``_deref``)."""

    op = "free"
    RETURNS = "Ready(n)"
    MEANS = "the terminal Deref's result (`Ready(n)`)"
    ARGS: ClassVar[A.Spec] = {"owner": (A.REQUIRED, A.owner)}
    owner: int

    def run(self, system: Any) -> Any:
        return system._deref(self.owner, False)


@attrs.frozen
class CancelDestination(G1Action):
    """The transfer was abandoned: the destination reservation is released
    (``G1Manager::cancel_destination``) and the request leaves."""

    op = "cancel_destination"
    RETURNS = "null"
    MEANS = "`null`; the reservation goes back"
    ARGS: ClassVar[A.Spec] = {"owner": (A.REQUIRED, A.owner)}
    owner: int

    def run(self, system: Any) -> None:
        o = self.owner
        system.model.cancel_destination(system._destination(o))
        system._forget(o)
        del system.dest[o]


@attrs.frozen
class Counts(G1Action):
    """The manager's three counts: active blocks, inactive blocks, active block references."""

    op = "counts"
    RETURNS = "{num_active_blocks: usize, num_inactive_blocks: usize, num_active_block_refs: usize}"
    MEANS = "`{num_active_blocks, num_inactive_blocks, num_active_block_refs}`"

    def run(self, system: Any) -> dict[str, int]:
        g = system.model
        return {
            "num_active_blocks": g.num_active_blocks(),
            "num_inactive_blocks": g.num_inactive_blocks(),
            "num_active_block_refs": g.num_active_block_refs(),
        }


class G1Moves(ActionMoves):
    """The guards both G1 worlds share (``ActionMoves.GUARDS``): what the scheduler ensures of a
    request before each call, whichever backend the manager runs."""

    # a move is its action in every state (``ActionMoves.concrete``): the explorer decodes each
    # once (its outcomes' JSON is the explorer's own and never leaves it)
    state_free_moves = True

    def symmetric(self, s: Any) -> bool:
        """Whether requests are interchangeable in the world, for the system ``s`` (``KvbmSpace``
        says when not)."""
        return True

    def move_classes(self, s: System, moves: list[Any]) -> list[tuple[int, int]]:
        """The moves up to the state's own request symmetries, as (index of the first move of each
        class, size of the class), in index order (the KV world's ``move_classes`` does the same
        for ids alike).

        A renaming of the requests that leaves the state's key as it is
        (``explorer.owner_stabilizer``) maps each move to the same move on the renamed requests,
        which leads to a renamed image of the same successor: the same canonical form, allowed
        alike, breaking the same invariants (what the request symmetry of the canonical form
        already rests on). So the moves fall into classes, the orbits of the state's stabiliser;
        the first move of each is the one the full expansion meets first, so expanding only
        these finds the same parents, depths and counterexamples, and the explorer weights each
        by its class's size, so its counts are the full expansion's."""
        from kvmodel.explorer import owner_stabilizer

        n = len(moves)
        fixing = owner_stabilizer(s, self.owners) if self.symmetric(s) else ()  # type: ignore[attr-defined]
        if not fixing:
            return _every(n)
        tables = [_renamed_moves(self, moves, perm) for perm in fixing]
        out: list[tuple[int, int]] = []
        seen = bytearray(n)
        for i in range(n):
            if seen[i]:
                continue
            orbit = {i, *(t[i] for t in tables)}
            for j in orbit:
                seen[j] = 1
            out.append((i, len(orbit)))
        return out

    def bounds(self) -> list[str]:
        """What the world bounds that the real code does not (``kvmodel explore`` reports it)."""
        out = [
            f"owners={self.owners} request ids (reused once a request leaves), prompts={self.prompts}",  # type: ignore[attr-defined]
            f"a request grows by at most pushes={self.pushes} tokens",  # type: ignore[attr-defined]
        ]
        if self.decode:  # type: ignore[attr-defined]
            out.append(f"at most one decode reservation, of decode={self.decode} blocks, outstanding")  # type: ignore[attr-defined]
        return out

    def _fresh(self, s: G1RequestSystem, a: Any) -> bool:
        """A request id not in use."""
        return s.seqs.get(a.owner) is None

    def _running(self, s: G1RequestSystem, a: Any) -> bool:
        """A request that exists and is not a pending destination."""
        return s.seqs.get(a.owner) is not None and a.owner not in s.dest

    def _no_decode(self, s: G1RequestSystem, a: Any) -> bool:
        """At most one decode reservation outstanding (the worlds' bound)."""
        return not s.decodes

    def _a_decode(self, s: G1RequestSystem, a: Any) -> bool:
        """A decode reservation outstanding."""
        return bool(s.decodes)

    def _transferring(self, s: G1RequestSystem, a: Any) -> bool:
        """A pending destination reservation."""
        return a.owner in s.dest


def _same(o: int) -> int:
    return o


_EVERY: dict[int, list[tuple[int, int]]] = {}
# per (world, renaming of the requests): each move's index -> the index of the same move on the
# renamed requests
_RENAMED: dict[tuple[Any, tuple[int, ...]], list[int]] = {}


def _every(n: int) -> list[tuple[int, int]]:
    got = _EVERY.get(n)
    if got is None:
        got = _EVERY[n] = [(i, 1) for i in range(n)]
    return got


def _renamed_moves(space: Any, moves: list[Any], perm: tuple[int, ...]) -> list[int]:
    """Where each of the world's moves goes when request ``o`` is renamed ``perm[o]`` (a move
    without an ``owner`` stays). The world lists every move for every request alike, so each
    image is a move of the world (asserted)."""
    got = _RENAMED.get((space, perm))
    if got is None or len(got) != len(moves):
        index = {repr(m): i for i, m in enumerate(moves)}
        got = []
        for i, m in enumerate(moves):
            o = getattr(m, "owner", None)
            if o is None:
                got.append(i)
                continue
            image = index.get(repr(attrs.evolve(m, owner=perm[o])))
            if image is None:
                raise AssertionError(f"{m!r} renamed by {perm} is not a move of the world")
            got.append(image)
        _RENAMED[(space, perm)] = got
    return got


class G1RequestSystem(System):
    """The G1 manager of one backend, with the requests, decode reservations and destination
    reservations a scheduler keeps beside it."""

    COMPONENT: ClassVar[str]
    BACKEND: ClassVar[str]
    ACTIONS: ClassVar[Actions]
    OPS: ClassVar[tuple[str, ...]]
    DEFAULTS: ClassVar[dict[str, Any]]
    MANAGER_OPTIONS: ClassVar[tuple[str, ...]]  # the configuration keys G1Manager takes

    def __init__(self, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> None:
        from kvmodel.model.g1.g1_manager import G1Manager

        self.component = self.COMPONENT
        self.config = check_config(
            self.component, config or {}, self.DEFAULTS, bounds={"max_capacity": (0, MAX_SLOTS + 1)}
        )
        self.quirks = resolve(self.component, quirks)
        c = self.config
        self.model = G1Manager(
            c["max_capacity"],
            c["block_size"],
            backend=self.BACKEND,
            quirks=self.quirks,
            **{k: c[k] for k in self.MANAGER_OPTIONS},
        )
        self.monitor = self._monitor()
        self.seqs: dict[int, Any] = {}
        self.decodes: list[Any] = []
        self.dest: dict[int, Any] = {}
        self._pre: Any = None  # the step's record while it runs (an action may add to it)
        # the manager's key, ``_of_model()`` and the reservations' key (``None`` without one),
        # while the system is as it was cloned
        self._source: tuple[Any, Any, Any] | None = None
        # the request renamings that fix this state (``explorer.owner_stabilizer``), once its
        # canonical form was computed; a step drops them
        self.owner_stabilizer: tuple[tuple[int, ...], ...] | None = None

    # -- what a subclass brings
    @abc.abstractmethod
    def _monitor(self) -> Any: ...

    def _bookkeeping(self) -> tuple[Any, ...]:
        """A copy of the subclass's own request bookkeeping (restored on a rejection)."""
        return ()

    def _restore(self, saved: tuple[Any, ...]) -> None:
        return None

    def _copy_own(self, c: Any) -> None:
        """Copy the subclass's own fields into the clone ``c``."""

    def _forget(self, o: int) -> None:
        """Request ``o`` leaves (a terminal Deref, a cancelled transfer): drop its sequence and
        whatever of the subclass's own bookkeeping names it (a subclass extends this)."""
        del self.seqs[o]

    def _of_model(self) -> Any:
        """What the step's ``Before`` reads of the manager alone, before the step; ``None`` where
        that is nothing or cheap. Read only: the clones of one state share it, as they share its
        model key (the explorer clones a state once per move)."""
        return None

    @abc.abstractmethod
    def _before(self, of_model: Any) -> Any:
        """The component's record (its invariants' ``Before``) of what they need from before the
        step; ``of_model`` is :meth:`_of_model` of the manager as the step finds it."""
        ...

    @abc.abstractmethod
    def _observe(self) -> list[Any]:
        """Drain the step's events into the monitor; the events."""
        ...

    def _after(self, pre: Any) -> None:
        """Add what the invariants need from after the step."""

    @abc.abstractmethod
    def _reservations(self, owner: Callable[[int], int]) -> Any:
        """The decode and destination reservations as the key spells them, request ``o`` named
        ``owner(o)``."""
        ...

    def _held(self) -> Any:
        """The reservations' key, or ``None`` when there is none (most states)."""
        return self._reservations(_same) if self.decodes or self.dest else None

    def _grows(self) -> Any:
        """What of the subclass's own state a rejected step may change without restoring it
        (``apply`` compares it before and after a rejection); ``None`` where nothing is."""
        return None

    def owner_signature(self, o: int) -> tuple[Any, ...]:
        """What request ``o`` alone looks like (its tokens, caching, allocated tokens, whether it
        is a destination in transfer), without its id: the explorer's request symmetry orders
        the requests by it (``explorer.owner_canonical``)."""
        s = self.seqs.get(o)
        if s is None:
            return (0, (), False, 0, False, 0)
        return (1, tuple(s.tokens), bool(s.caching), s.num_allocated_tokens, o in self.dest, s.generation)

    def _generation(self, o: int, caching: bool) -> int:
        """The generation of request ``o``'s new sequence (:func:`~kvmodel.model.g1.sequence.fresh_generation`):
        0 with caching on; with caching off, the first whose random hashes neither the manager
        nor another request's sequence holds, so that a request id reused after ``free`` never
        finds its earlier sequence's blocks (Rust draws fresh hashes for every sequence)."""
        if caching:
            return 0
        from kvmodel.model.g1.sequence import fresh_generation

        held = set(_ints(self.model.key()))
        for k, other in self.seqs.items():
            if k != o:
                held.update(other.seq_hashes)
                held.update(p[0] for p in other.plhs)
        return fresh_generation(f"r{o}", held)

    # -- the shared part
    def clone(self) -> Self:
        c = type(self).__new__(type(self))
        c.component, c.config, c.quirks = self.component, self.config, self.quirks
        c.model = self.model.clone()
        c.monitor = self.monitor.copy()
        # copy-on-write: the sequences are shared until a step on their request copies its own
        # (``apply``: a step changes only its own request's sequence)
        c.seqs = dict(self.seqs)
        # reservations point into the manager's bookkeeping only by value: copy them
        c.decodes = [r.copy() for r in self.decodes]
        c.dest = {k: v.copy() for k, v in self.dest.items()}
        c._pre = None
        c.owner_stabilizer = None
        # the explorer clones one state once per move: what its steps read of the manager before
        # them is the source's, computed once (the manager changes only in ``apply``, which
        # drops it)
        if self._source is None:
            self._source = (self.model.key(), self._of_model(), self._held())
        c._source = self._source
        self._copy_own(c)
        return c

    def decode(self, op: str, args: Any) -> Any:
        return self.ACTIONS.decode(op, args)

    def _seq(self, owner: Any) -> Any:
        s = self.seqs.get(owner)
        if s is None:
            raise InvalidInput(f"no request {owner!r}")
        return s

    def _reserve_decode(self, count: int) -> Any:
        r = self.model.reserve_decode_blocks(count)
        if isinstance(r, CapacityExhausted):
            return r
        self.decodes.append(r)
        return Ready()

    @abc.abstractmethod
    def _push(self, o: int, token: int) -> Any:
        """A decoded token of request ``o``: its signals through the manager, their results."""

    def _held_by(self, reservation: Any) -> Any:
        """What a destination reservation holds that its request will hold once it lands, read
        before the activation (none by default)."""
        return None

    @abc.abstractmethod
    def _activated(self, o: int, held: Any) -> None:
        """Request ``o``'s destination landed; ``held`` is :meth:`_held_by`'s reading."""

    def _destination(self, owner: Any) -> Any:
        r = self.dest.get(owner)
        if r is None:
            raise InvalidInput(f"no destination reservation for request {owner}")
        return r

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        from kvmodel.invariants import check_all

        action = decoded if isinstance(decoded, Action) else self.decode(op, decoded)
        if action.op != op:
            raise InvalidInput(f"{self.component}: a {action.op} action applied as {op!r}")
        # the reservations are restored by reference (a rejected step may have changed one in
        # place) and the subclass's growing state not at all: both are compared after a rejection
        pre_key, of_model, held = (
            self._source if self._source is not None else (self.model.key(), self._of_model(), self._held())
        )
        self._source = None
        self.owner_stabilizer = None
        self._pre = pre = self._before(of_model)
        out = Outcome(op, args_json if args_json is not None else action.to_json())
        seqs = dict(self.seqs)
        owner = getattr(action, "owner", None)
        if isinstance(owner, (int, str)) and owner in seqs:
            # the step works on its own copy of its request's sequence (a signal's sequence-side
            # change, a promoted tail or a pushed token, precedes a rejection); the saved one, as
            # a clone shares it, is left as it was
            self.seqs[owner] = seqs[owner].copy()
        saved = (seqs, list(self.decodes), dict(self.dest), self._bookkeeping())
        grows = self._grows()
        try:
            out.result = action.run(self)
        except ModelError as e:
            out.error = e.with_traceback(None)  # no frame held: no cycle left for the collector
            # the manager keeps what it did before the panic; the request bookkeeping (the
            # sequences too: Rust changes a sequence before the manager panics, but its process
            # dies there, and the scheduler's invariants describe a live one) is as it was
            self.seqs, self.decodes, self.dest = saved[0], saved[1], saved[2]
            self._restore(saved[3])
        out.events = self._observe()
        self._after(pre)
        ctx = StepContext(self.model, self.monitor, op, action, out.result, out.error, out.events, pre_key, pre)
        if out.error is not None or isinstance(out.result, CapacityExhausted):
            # the step invariants of a failed step compare the manager's key with the one before
            post = ctx.post_key = self.model.key()
            # a rejection restored the requests' bookkeeping: if the manager, the stream (no
            # event), the reservations and the subclass's growing state are as they were, the
            # system's key is the source's (the explorer then does not spell it again)
            out.unchanged = (
                out.error is not None
                and not out.events
                and post == pre_key
                and self._held() == held
                and self._grows() == grows
            )
        out.violations = check_all(self.component, ctx)
        out.ctx = ctx
        # the step's record lives on in ``out.ctx`` only: a successor the explorer keeps in its
        # level does not hold it (about 270 bytes a faithful KVBM state)
        self._pre = None
        return out
